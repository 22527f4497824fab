/**
 * The floor of the credential provider's start time: the least a Node.js program does to answer kubelet for a
 * private ECR image with keys in the environment. It reads the request, signs one GetAuthorizationToken with the
 * SDK's SigV4 signer and JavaScript SHA-256 (as the executable signs), sends it on a socket of its own with the
 * executable's HTTP/1.1 exchange (http1.ts, over `node:net` or `node:tls`), prints the answer and exits. No
 * credential chain, retries, validation or error reporting: it is not a provider, only what the bench sets the
 * executable beside, packaged the same way (`buildOneScriptExecutable`, scripts/build-credential-provider.ts).
 * stdin and stdout are read and written synchronously, the cheapest way.
 */
import { readFileSync, writeSync } from 'node:fs';
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';
import { exchangeOnce } from '../../functions/credential-provider/http1.ts';
import { CALL_BOUNDS } from '../../functions/credential-provider/ports.ts';

const { apiVersion, image } = JSON.parse(readFileSync(0, 'utf8')) as { apiVersion: string; image: string };
const registry = image.split('/')[0]!;
const endpoint = new URL(process.env.AWS_ENDPOINT_URL_ECR!);
const signer = new SignatureV4({
  credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID!, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY! },
  region: registry.split('.')[3]!,
  service: 'ecr',
  sha256: Sha256,
});
const unsigned = new HttpRequest({
  method: 'POST',
  protocol: endpoint.protocol,
  hostname: endpoint.hostname,
  port: Number(endpoint.port),
  path: '/',
  headers: {
    'content-type': 'application/x-amz-json-1.1',
    'x-amz-target': 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken',
    host: endpoint.host,
  },
  body: '{}',
});

signer.sign(unsigned).then(async (signed) => {
  const { body } = await exchangeOnce(
    {
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      port: Number(endpoint.port),
      method: 'POST',
      path: '/',
      headers: signed.headers,
      body: '{}',
    },
    CALL_BOUNDS,
  );
  const { authorizationData } = JSON.parse(body.toString('utf8')) as {
    authorizationData: { authorizationToken: string }[];
  };
  const [username, password] = Buffer.from(authorizationData[0]!.authorizationToken, 'base64')
    .toString('utf8')
    .split(':');
  const answer = { apiVersion, kind: 'CredentialProviderResponse', auth: { [registry]: { username, password } } };
  writeSync(1, `${JSON.stringify(answer)}\n`);
  process.exit(0);
});
