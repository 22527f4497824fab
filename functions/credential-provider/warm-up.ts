/**
 * The build-time warm-up: while the startup snapshot is being built (scripts/build-credential-provider.ts), the
 * whole exchange runs once per kind of request (ECR, ECR Public, service account through STS) against canned
 * answers, so that the snapshot holds the SDK and the plugin after their first run (compiled functions, lazily
 * built schemas and middleware) instead of before it. The numbers are in docs/credential-provider.md.
 *
 * Nothing of the build machine and nothing of the warm-up may stay in the snapshot. So the warm-up clients are
 * given every value the SDK would otherwise read from the environment or ~/.aws (the SDK caches its reads of the
 * shared config files in module state), and an in-memory request handler instead of the network; reading a file
 * during the warm-up fails the build. The state the SDK and Node.js keep in module scope regardless is kept out
 * or cleared: the endpoint resolvers' caches are bypassed, SigV4's cache of derived signing keys is emptied, and
 * random UUIDs come from a stub (Node.js buffers random bytes for them, which would otherwise be baked in).
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { EndpointCache } from '@smithy/core/endpoints';
import { clearCredentialCache } from '@smithy/signature-v4';
import { systemClock } from '../../shared/clock.ts';
import { createAwsPorts, type SdkOverrides } from './aws-ports.ts';
import { PROGRAM, runCommand } from './cli.ts';
import { MemoryOutput, request } from './in-memory.ts';

const PASSWORD = 'warm-up-password';
const TOKEN = Buffer.from(`AWS:${PASSWORD}`).toString('base64');

interface CannedRequest {
  headers: Record<string, string | undefined>;
}

/** What ECR, ECR Public and STS would answer, by the operation the request names. */
function cannedResponse(req: CannedRequest) {
  const target = req.headers['x-amz-target'] ?? '';
  const expiresAt = Date.now() / 1000 + 12 * 3600;
  let body: string;
  let contentType = 'application/x-amz-json-1.1';
  if (target.endsWith('V20150921.GetAuthorizationToken')) {
    body = JSON.stringify({ authorizationData: [{ authorizationToken: TOKEN, expiresAt }] });
  } else if (target.endsWith('.GetAuthorizationToken')) {
    body = JSON.stringify({ authorizationData: { authorizationToken: TOKEN, expiresAt } });
  } else {
    contentType = 'text/xml';
    body =
      '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">' +
      '<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAWARMUP</AccessKeyId>' +
      '<SecretAccessKey>warm-up-role-secret</SecretAccessKey><SessionToken>warm-up-session</SessionToken>' +
      `<Expiration>${new Date(expiresAt * 1000).toISOString()}</Expiration></Credentials>` +
      '</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>';
  }
  return {
    statusCode: 200,
    reason: 'OK',
    headers: { 'content-type': contentType, 'x-amzn-requestid': 'warm-up' },
    body: Readable.from([Buffer.from(body)]),
  };
}

const requestHandler = {
  handle: (req: CannedRequest) => Promise.resolve({ response: cannedResponse(req) }),
  updateHttpClientConfig: () => {},
  httpHandlerConfigs: () => ({}),
  destroy: () => {},
} as unknown as SdkOverrides['requestHandler'];

const OVERRIDES: SdkOverrides = {
  credentials: { accessKeyId: 'AKIDWARMUP', secretAccessKey: 'warm-up-secret' },
  requestHandler,
  retryMode: 'standard',
  useFipsEndpoint: false,
  useDualstackEndpoint: false,
  ignoreConfiguredEndpointUrls: true,
  defaultsMode: 'legacy',
  userAgentAppId: () => Promise.resolve(undefined),
  authSchemePreference: [],
  // The SDK's default for this is a memoized config lookup in module scope: it must never run at build time.
  disableClockSkewCorrection: false,
};

const REQUESTS = [
  request('111122223333.dkr.ecr.us-east-1.amazonaws.com/warm/up:1'),
  request('public.ecr.aws/warm/up:1', 'credentialprovider.kubelet.k8s.io/v1alpha1'),
  request('111122223333.dkr.ecr.us-east-1.amazonaws.com/warm/up:1', undefined, {
    serviceAccountToken: 'warm-up-token',
    serviceAccountAnnotations: { 'eks.amazonaws.com/ecr-role-arn': 'arn:aws:iam::111122223333:role/warm-up' },
  }),
];

/** Replaces `target[key]` until the returned function is called. */
function replace<T extends object, K extends keyof T>(target: T, key: K, value: T[K]): () => void {
  const own = Object.getOwnPropertyDescriptor(target, key);
  Object.defineProperty(target, key, { value, configurable: true, writable: true });
  return () => {
    if (own) Object.defineProperty(target, key, own);
    else delete target[key];
  };
}

/** The guards described at the top; returns what undoes them and what the warm-up tried to read. */
function guard(): { restore: () => void; files: string[]; endpointLookups: () => number } {
  const files: string[] = [];
  const refuse = (path: unknown) => {
    files.push(String(path));
    throw new Error(`the warm-up must not read files (${String(path)})`);
  };
  let lookups = 0;
  const undo = [
    replace(fs, 'readFileSync', refuse as typeof fs.readFileSync),
    replace(fs, 'readFile', refuse as unknown as typeof fs.readFile),
    replace(fs.promises, 'readFile', (async (path: unknown) => refuse(path)) as typeof fs.promises.readFile),
    replace(EndpointCache.prototype, 'get', function get(this: EndpointCache, ...args) {
      lookups++;
      return args[1]();
    }),
    replace(globalThis.crypto, 'randomUUID', () => '00000000-0000-4000-8000-000000000000' as const),
  ];
  const restore = () => {
    for (const fn of undo.reverse()) fn();
  };
  return { restore, files, endpointLookups: () => lookups };
}

/** Runs the warm-up; rejects (failing the build) if an answer is wrong or the SDK reached for a file. */
export async function warmUp(version: string): Promise<void> {
  const { restore, files, endpointLookups } = guard();
  try {
    for (const text of REQUESTS) {
      const stdout = new MemoryOutput();
      const stderr = new MemoryOutput();
      const code = await runCommand(
        { args: [], stdin: Readable.from([Buffer.from(text)]), stdout, stderr },
        {
          version,
          deps: () => ({
            ...createAwsPorts({ userAgent: `${PROGRAM}/${version}`, sdkOverrides: OVERRIDES }),
            clock: systemClock,
          }),
        },
      );
      if (code !== 0 || !stdout.text.includes(PASSWORD)) {
        throw new Error(`warm-up request failed (${code}): ${stderr.text.trim()}`);
      }
    }
  } finally {
    restore();
    clearCredentialCache();
  }
  if (files.length > 0) throw new Error(`the warm-up read files: ${files.join(', ')}`);
  // Proves the bypassed cache class is the one the bundled clients use: at least one lookup per client.
  if (endpointLookups() < REQUESTS.length + 1) {
    throw new Error(`the warm-up bypassed only ${endpointLookups()} endpoint cache lookups`);
  }
}
