import type { Readable, Writable } from 'node:stream';
import { awsErrorCode } from '../../shared/aws/errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { AwsCallError, CredentialProviderError, InvalidRequestError, InvalidTokenError } from './errors.ts';
import type { AuthorizationToken, AwsCredentials, EcrPort, EcrPublicPort, StsPort } from './ports.ts';
import { ECR_PUBLIC_DNS_SUFFIX, ECR_PUBLIC_REGION, type EcrRegistry, ecrRegistryOfImage } from './registry.ts';
import {
  type CredentialProviderRequest,
  type CredentialProviderResponse,
  ECR_ROLE_ANNOTATION,
  MAX_REQUEST_BYTES,
  parseRequest,
} from './request.ts';
import { cacheDurationFor, decodeAuthorizationToken } from './token.ts';

export interface PluginDeps {
  ecr: EcrPort;
  ecrPublic: EcrPublicPort;
  sts: StsPort;
  clock: Clock;
  /** `AWS_ECR_ROLE_ARN`: the role for service-account pulls whose annotations name none. */
  defaultRoleArn?: string;
}

/**
 * One kubelet exchange: read a CredentialProviderRequest from `input`, write one CredentialProviderResponse to
 * `output`. On failure it rejects and writes nothing, so kubelet never sees half an answer; the error message
 * has every credential it touched blanked out.
 */
export async function runPlugin(input: Readable, output: Writable, deps: PluginDeps): Promise<void> {
  const secrets = new Set<string>();
  try {
    const request = parseRequest(await readRequest(input));
    if (request.serviceAccountToken) secrets.add(request.serviceAccountToken);
    const response = await respondTo(request, deps, secrets);
    await writeResponse(output, `${JSON.stringify(response)}\n`);
  } catch (err) {
    throw withoutSecrets(err, secrets);
  }
}

async function respondTo(
  request: CredentialProviderRequest,
  deps: PluginDeps,
  secrets: Set<string>,
): Promise<CredentialProviderResponse> {
  const registry = ecrRegistryOfImage(request.image);
  const credentials = await credentialsForServiceAccount(request, registry, deps);
  if (credentials) {
    secrets.add(credentials.secretAccessKey);
    if (credentials.sessionToken) secrets.add(credentials.sessionToken);
  }
  const source = registry.kind === 'private' ? 'ECR' : 'ECR Public';
  const token = await authorizationTokenFor(registry, credentials, deps);
  secrets.add(token.authorizationToken);
  const login = decodeAuthorizationToken(token.authorizationToken, source);
  secrets.add(login.password);
  const cacheDuration = cacheDurationFor(token.expiresAt, deps.clock.now());
  return {
    apiVersion: request.apiVersion,
    kind: 'CredentialProviderResponse',
    // A token is good for every repository of a registry, so one cache entry per registry is enough.
    cacheKeyType: 'Registry',
    ...(cacheDuration === undefined ? {} : { cacheDuration }),
    auth: { [registry.host]: login },
  };
}

/**
 * Service-account mode (kubelet `tokenAttributes`, KEP-4412): the pod's projected token is exchanged for the
 * role its service account names, so pulls are authorised per workload instead of by the node role. Without a
 * token or without a role the node's default credential chain is used, as in the classic mode.
 */
async function credentialsForServiceAccount(
  request: CredentialProviderRequest,
  registry: EcrRegistry,
  deps: PluginDeps,
): Promise<AwsCredentials | undefined> {
  if (!request.serviceAccountToken) return undefined;
  const annotated = request.serviceAccountAnnotations[ECR_ROLE_ANNOTATION]?.trim();
  const roleArn = annotated || deps.defaultRoleArn?.trim();
  if (!roleArn) return undefined;
  const origin = annotated ? `annotation ${ECR_ROLE_ANNOTATION}` : 'AWS_ECR_ROLE_ARN';
  if (!/^arn:aws[a-z-]*:iam::\d{12}:role\/\S+$/.test(roleArn)) {
    throw new InvalidRequestError(
      `role ${JSON.stringify(roleArn.slice(0, 200))} from ${origin} is not an IAM role ARN`,
    );
  }
  const region = registry.kind === 'private' ? registry.region : ECR_PUBLIC_REGION;
  const partition =
    registry.kind === 'private'
      ? { dnsSuffix: registry.dnsSuffix, fips: registry.fips, dualStack: registry.dualStack }
      : { dnsSuffix: ECR_PUBLIC_DNS_SUFFIX, fips: false, dualStack: false };
  try {
    return await deps.sts.assumeRoleWithWebIdentity({
      roleArn,
      webIdentityToken: request.serviceAccountToken,
      // Shows up in CloudTrail next to the role; seconds are enough to tell pulls apart.
      roleSessionName: `ecr-credential-provider-${Math.floor(deps.clock.now() / 1000)}`,
      region,
      ...partition,
    });
  } catch (err) {
    throw awsCallError(`assuming role ${roleArn} (from ${origin}) with the service account token in ${region}`, err);
  }
}

async function authorizationTokenFor(
  registry: EcrRegistry,
  credentials: AwsCredentials | undefined,
  deps: PluginDeps,
): Promise<AuthorizationToken> {
  const doing =
    registry.kind === 'private'
      ? `getting an ECR authorization token in ${registry.region} for ${registry.host}`
      : `getting an ECR Public authorization token in ${ECR_PUBLIC_REGION} for ${registry.host}`;
  let token: AuthorizationToken | undefined;
  try {
    token =
      registry.kind === 'private'
        ? await deps.ecr.getAuthorizationToken(
            {
              region: registry.region,
              dnsSuffix: registry.dnsSuffix,
              fips: registry.fips,
              dualStack: registry.dualStack,
            },
            credentials,
          )
        : await deps.ecrPublic.getAuthorizationToken(credentials);
  } catch (err) {
    throw awsCallError(doing, err);
  }
  if (!token?.authorizationToken) throw new InvalidTokenError(`${doing}: AWS returned no authorization data`);
  return token;
}

/** What to check for the errors people actually hit; the AWS message alone rarely says which knob to turn. */
const HINTS: Record<string, string> = {
  AccessDeniedException:
    'the credentials in use lack ecr:GetAuthorizationToken (ECR Public also needs sts:GetServiceBearerToken)',
  AccessDenied: "the role's trust policy must allow AssumeRoleWithWebIdentity for this service account",
  InvalidIdentityToken: "the cluster's OIDC issuer must be registered as an IAM identity provider",
  ExpiredTokenException: 'the service account token expired before it reached STS',
  CredentialsProviderError:
    'no AWS credentials found: give the node an instance role (IMDS reachable) or set AWS_* env in the provider config',
};

function awsCallError(doing: string, err: unknown): AwsCallError {
  const code = awsErrorCode(err) ?? 'UnknownError';
  const detail = err instanceof Error ? err.message : String(err);
  const hint = HINTS[code];
  return new AwsCallError(`${doing}: ${code}: ${detail}${hint ? ` (${hint})` : ''}`, code, { cause: err });
}

/**
 * The whole of stdin, at most MAX_REQUEST_BYTES. Plain `data`/`end` listeners rather than `for await`: the
 * stream's async iterator costs about 2 ms to set up on a cold start, which kubelet pays at every pull.
 */
function readRequest(input: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buffer.length;
      if (size > MAX_REQUEST_BYTES) {
        cleanUp();
        input.destroy();
        reject(new InvalidRequestError(`reading the request: more than ${MAX_REQUEST_BYTES} bytes on stdin`));
        return;
      }
      chunks.push(buffer);
    };
    const onEnd = () => {
      cleanUp();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error) => {
      cleanUp();
      reject(new InvalidRequestError(`reading the request: ${err.message}`, { cause: err }));
    };
    const cleanUp = () => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.off('error', onError);
    };
    input.on('data', onData);
    input.once('end', onEnd);
    input.once('error', onError);
  });
}

function writeResponse(output: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    output.write(text, (err) =>
      err ? reject(new CredentialProviderError('writing the response', { cause: err })) : resolve(),
    );
  });
}

/** Errors leave through stderr; make sure no credential seen during the exchange goes with them. */
function withoutSecrets(err: unknown, secrets: Set<string>): CredentialProviderError {
  const wrapped =
    err instanceof CredentialProviderError
      ? err
      : new CredentialProviderError(`unexpected failure: ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
  for (const secret of secrets) {
    if (secret.length >= 4) wrapped.message = wrapped.message.replaceAll(secret, '[redacted]');
  }
  return wrapped;
}
