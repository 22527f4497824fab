/**
 * A stand-in for the three AWS APIs the plugin calls, on 127.0.0.1, for tests and the benchmark that run the
 * real SDK (or the built executable) end to end. The SDK is pointed at it with `AWS_ENDPOINT_URL_ECR`,
 * `AWS_ENDPOINT_URL_ECR_PUBLIC` and `AWS_ENDPOINT_URL_STS` (or `endpoint` in tests), so the production binary
 * needs no test-only switch. Never part of the bundle: only tests and benches import it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
}

export interface FakeAwsServer {
  url: string;
  requests: FakeAwsRequest[];
  /** The password inside the tokens handed out; the user name is always `AWS`. */
  password: string;
  expiresAt: Date;
  /** The next request gets this error instead of an answer. */
  failNext(error: FakeAwsError): void;
  close(): Promise<void>;
}

const ECR_TARGET = 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken';
const ECR_PUBLIC_TARGET = 'SpencerFrontendService.GetAuthorizationToken';

export async function startFakeAwsServer(
  options: { password?: string; expiresAt?: Date } = {},
): Promise<FakeAwsServer> {
  const requests: FakeAwsRequest[] = [];
  const errors: FakeAwsError[] = [];
  const password = options.password ?? 'fake-ecr-password';
  const expiresAt = options.expiresAt ?? new Date(Date.now() + 12 * 3600 * 1000);
  const token = Buffer.from(`AWS:${password}`).toString('base64');

  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => answer(req, res, body),
      () => res.destroy(),
    );
  });

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
        res.writeHead(error.status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-errortype': error.code });
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
    url: `http://127.0.0.1:${port}`,
    requests,
    password,
    expiresAt,
    failNext: (error) => errors.push(error),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
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
