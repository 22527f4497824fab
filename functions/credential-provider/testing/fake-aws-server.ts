/**
 * A stand-in for the three AWS APIs the plugin calls, on 127.0.0.1, for tests and the benchmark that run the
 * real SDK (or the built executable) end to end. The SDK is pointed at it with `AWS_ENDPOINT_URL_ECR`,
 * `AWS_ENDPOINT_URL_ECR_PUBLIC` and `AWS_ENDPOINT_URL_STS` (or `endpoint` in tests), so the production binary
 * needs no test-only switch. Never part of the bundle: only tests and benches import it.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { HttpRequest } from '@smithy/core/protocols';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

export interface FakeAwsRequest {
  /** `ecr:GetAuthorizationToken`, `ecr-public:GetAuthorizationToken` or `sts:AssumeRoleWithWebIdentity`. */
  operation: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface FakeAwsError {
  status: number;
  code: string;
  message: string;
  /** Extra response headers, e.g. a `date` far from the caller's clock. */
  headers?: Record<string, string>;
}

/** The instance role the fake IMDS hands out (`AWS_EC2_METADATA_SERVICE_ENDPOINT` = the server's url). */
export const IMDS_ROLE = {
  name: 'node-role',
  accessKeyId: 'ASIAFAKEIMDSKEY',
  secretAccessKey: 'fake-imds-secret',
  sessionToken: 'fake-imds-session',
};

export interface FakeAwsServer {
  url: string;
  requests: FakeAwsRequest[];
  /** The password inside the tokens handed out; the user name is always `AWS`. */
  password: string;
  expiresAt: Date;
  /** The next request gets this error instead of an answer. */
  failNext(error: FakeAwsError): void;
  /** IMDS requests (token, role name, credentials), apart from `requests`. */
  imdsRequests: { method: string; path: string; token?: string }[];
  close(): Promise<void>;
}

const ECR_TARGET = 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken';
const ECR_PUBLIC_TARGET = 'SpencerFrontendService.GetAuthorizationToken';

export interface FakeAwsOptions {
  password?: string;
  expiresAt?: Date;
  /**
   * Secret keys by access key id. When given, every signed request's SigV4 signature is recomputed with the SDK's
   * signer and a mismatch or an unknown key is answered like AWS does (403); without it signatures are not checked.
   */
  secrets?: Record<string, string>;
  /**
   * Serve HTTPS with the loopback certificate (`LOOPBACK_TLS`), as the real ECR and STS endpoints only answer
   * HTTPS. A client trusts it through `NODE_EXTRA_CA_CERTS=LOOPBACK_TLS.cert` and nothing else.
   */
  tls?: boolean;
}

/** A self-signed certificate for 127.0.0.1 and localhost, and its key: for the stand-in only (test/fixtures/tls). */
export const LOOPBACK_TLS = {
  cert: new URL('../../../test/fixtures/tls/loopback.crt', import.meta.url).pathname,
  key: new URL('../../../test/fixtures/tls/loopback.key', import.meta.url).pathname,
};

export async function startFakeAwsServer(options: FakeAwsOptions = {}): Promise<FakeAwsServer> {
  const requests: FakeAwsRequest[] = [];
  const imdsRequests: FakeAwsServer['imdsRequests'] = [];
  const errors: FakeAwsError[] = [];
  const password = options.password ?? 'fake-ecr-password';
  const expiresAt = options.expiresAt ?? new Date(Date.now() + 12 * 3600 * 1000);
  const token = Buffer.from(`AWS:${password}`).toString('base64');

  const listener: RequestListener = (req, res) => {
    readBody(req).then(
      async (body) => {
        if (req.url?.startsWith('/latest/')) return answerImds(req, res, imdsRequests);
        const refusal = options.secrets ? await checkSignature(req, body, options.secrets) : undefined;
        if (refusal) {
          res.writeHead(403, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-errortype': refusal.code });
          res.end(JSON.stringify({ __type: refusal.code, message: refusal.message }));
          return;
        }
        answer(req, res, body);
      },
      () => res.destroy(),
    );
  };
  const server = options.tls
    ? createTlsServer({ cert: readFileSync(LOOPBACK_TLS.cert), key: readFileSync(LOOPBACK_TLS.key) }, listener)
    : createServer(listener);

  function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    const target = req.headers['x-amz-target'];
    const isQuery = body.includes('Action=AssumeRoleWithWebIdentity');
    const operation =
      target === ECR_TARGET
        ? 'ecr:GetAuthorizationToken'
        : target === ECR_PUBLIC_TARGET
          ? 'ecr-public:GetAuthorizationToken'
          : isQuery
            ? 'sts:AssumeRoleWithWebIdentity'
            : `unknown:${String(target)}`;
    requests.push({ operation, headers: req.headers, body });

    const error = errors.shift();
    if (error) {
      if (operation.startsWith('sts:')) {
        sendXml(
          res,
          error.status,
          `<ErrorResponse><Error><Type>Sender</Type><Code>${error.code}</Code><Message>${error.message}</Message></Error><RequestId>fake</RequestId></ErrorResponse>`,
        );
      } else {
        res.writeHead(error.status, {
          'content-type': 'application/x-amz-json-1.1',
          'x-amzn-errortype': error.code,
          ...error.headers,
        });
        res.end(JSON.stringify({ __type: error.code, message: error.message }));
      }
      return;
    }

    // The JSON protocols carry timestamps as epoch seconds.
    const data = { authorizationToken: token, expiresAt: expiresAt.getTime() / 1000 };
    switch (operation) {
      case 'ecr:GetAuthorizationToken':
        sendJson(res, { authorizationData: [{ ...data, proxyEndpoint: 'https://111122223333.dkr.ecr.fake' }] });
        return;
      case 'ecr-public:GetAuthorizationToken':
        sendJson(res, { authorizationData: data });
        return;
      case 'sts:AssumeRoleWithWebIdentity':
        sendXml(
          res,
          200,
          '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">' +
            '<AssumeRoleWithWebIdentityResult><Credentials>' +
            '<AccessKeyId>ASIAFAKEROLEKEY</AccessKeyId><SecretAccessKey>fake-role-secret</SecretAccessKey>' +
            `<SessionToken>fake-role-session</SessionToken><Expiration>${new Date(Date.now() + 3600_000).toISOString()}</Expiration>` +
            '</Credentials></AssumeRoleWithWebIdentityResult>' +
            '<ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>',
        );
        return;
      default:
        res.writeHead(400, {
          'content-type': 'application/x-amz-json-1.1',
          'x-amzn-errortype': 'UnknownOperationException',
        });
        res.end(
          JSON.stringify({ __type: 'UnknownOperationException', message: `fake AWS does not know ${operation}` }),
        );
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    password,
    expiresAt,
    failNext: (error) => errors.push(error),
    imdsRequests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** IMDSv2 as the SDK uses it: a session token, then the role's name, then its credentials. */
function answerImds(req: IncomingMessage, res: ServerResponse, imdsRequests: FakeAwsServer['imdsRequests']): void {
  const token = req.headers['x-aws-ec2-metadata-token'];
  imdsRequests.push({
    method: req.method ?? '',
    path: req.url ?? '',
    ...(typeof token === 'string' ? { token } : {}),
  });
  const base = '/latest/meta-data/iam/security-credentials/';
  if (req.method === 'PUT' && req.url === '/latest/api/token') {
    res.end('fake-imds-token');
  } else if (token !== 'fake-imds-token') {
    res.writeHead(401).end();
  } else if (req.url === base) {
    res.end(IMDS_ROLE.name);
  } else if (req.url === `${base}${IMDS_ROLE.name}`) {
    res.end(
      JSON.stringify({
        Code: 'Success',
        Type: 'AWS-HMAC',
        AccessKeyId: IMDS_ROLE.accessKeyId,
        SecretAccessKey: IMDS_ROLE.secretAccessKey,
        Token: IMDS_ROLE.sessionToken,
        Expiration: new Date(Date.now() + 6 * 3600_000).toISOString(),
        LastUpdated: new Date().toISOString(),
      }),
    );
  } else {
    res.writeHead(404).end();
  }
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

/**
 * AWS's check, with the SDK's signer as the reference: the request rebuilt from exactly the headers it says it
 * signed, signed again with the key's secret at its own `x-amz-date`, must give the same signature. Unsigned
 * requests (STS AssumeRoleWithWebIdentity) pass.
 */
async function checkSignature(
  req: IncomingMessage,
  body: string,
  secrets: Record<string, string>,
): Promise<{ code: string; message: string } | undefined> {
  const authorization = req.headers.authorization;
  if (authorization === undefined) return undefined;
  const match = AUTHORIZATION.exec(authorization);
  if (!match) return { code: 'IncompleteSignatureException', message: `malformed Authorization: ${authorization}` };
  const [, accessKeyId, , region, service, signedHeaders, signature] = match as unknown as string[];
  const secretAccessKey = secrets[accessKeyId!];
  if (secretAccessKey === undefined) {
    return { code: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  const headers: Record<string, string> = {};
  for (const name of signedHeaders!.split(';')) headers[name] = String(req.headers[name] ?? '');
  const url = new URL(req.url ?? '/', 'http://fake');
  const amzDate = headers['x-amz-date'] ?? '';
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const token = headers['x-amz-security-token'];
  const signer = new SignatureV4({
    credentials: { accessKeyId: accessKeyId!, secretAccessKey, ...(token ? { sessionToken: token } : {}) },
    region: region!,
    service: service!,
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: headers['x-amz-content-sha256'] !== undefined,
  });
  const expected = await signer.sign(
    new HttpRequest({ method: req.method ?? 'POST', hostname: 'fake', path: url.pathname, headers, body }),
    { signingDate, signableHeaders: new Set(signedHeaders!.split(';')) },
  );
  const computed = /Signature=([0-9a-f]{64})$/.exec(String(expected.headers.authorization))?.[1];
  return computed === signature
    ? undefined
    : { code: 'InvalidSignatureException', message: 'The request signature we calculated does not match.' };
}

function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
  res.end(JSON.stringify(body));
}

function sendXml(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/xml' });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
