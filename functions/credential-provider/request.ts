import { InvalidRequestError } from './errors.ts';

/**
 * The kubelet credential provider exchange
 * (https://kubernetes.io/docs/reference/config-api/kubelet-credentialprovider.v1/). kubelet rejects a response
 * whose apiVersion differs from the request's, so every version it may speak is answered in kind: v1 (kubelet
 * 1.26+), and v1beta1 / v1alpha1 for older kubelets or configs that were never updated.
 */
export const API_VERSIONS = [
  'credentialprovider.kubelet.k8s.io/v1',
  'credentialprovider.kubelet.k8s.io/v1beta1',
  'credentialprovider.kubelet.k8s.io/v1alpha1',
] as const;

export type ApiVersion = (typeof API_VERSIONS)[number];

/** The service-account annotation naming the role to assume for pulls on behalf of that service account. */
export const ECR_ROLE_ANNOTATION = 'eks.amazonaws.com/ecr-role-arn';

/** A request is a few hundred bytes; anything this large is not from kubelet and is not worth buffering. */
export const MAX_REQUEST_BYTES = 1024 * 1024;

export interface CredentialProviderRequest {
  apiVersion: ApiVersion;
  image: string;
  /** Only v1 kubelets with `tokenAttributes` in their config send these (KEP-4412). */
  serviceAccountToken?: string;
  serviceAccountAnnotations: Record<string, string>;
}

export type CacheKeyType = 'Image' | 'Registry' | 'Global';

export interface CredentialProviderResponse {
  apiVersion: ApiVersion;
  kind: 'CredentialProviderResponse';
  cacheKeyType: CacheKeyType;
  /** Go duration string; absent means kubelet falls back to the provider's `defaultCacheDuration`. */
  cacheDuration?: string;
  auth: Record<string, { username: string; password: string }>;
}

/** Values we did not expect are echoed back so a misconfiguration is obvious, but never at length. */
function shown(value: unknown): string {
  if (typeof value !== 'string') return `(${value === null ? 'null' : `a ${typeof value}`})`;
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
}

function unexpected(field: string, expected: string) {
  return (input: unknown) =>
    input === undefined ? `${field} is missing (expected ${expected})` : `${field} ${shown(input)} is not ${expected}`;
}

const annotationsError = 'serviceAccountAnnotations must map strings to strings';

/**
 * The request's five fields, checked by hand rather than with a schema library: kubelet starts a process for every
 * pull whose cached token expired, and zod (even zod/mini) was a fifth of the executable's main script and about
 * 3 ms of every start (docs/credential-provider.md, "Size and start time"), to check five fields. Fields we do not
 * know are ignored, so a newer kubelet's additions do not break pulls.
 */
function problemsOf(json: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const { apiVersion, kind, image, serviceAccountToken: token, serviceAccountAnnotations: annotations } = json;
  if (!(API_VERSIONS as readonly unknown[]).includes(apiVersion)) {
    problems.push(unexpected('apiVersion', `one of ${API_VERSIONS.join(', ')}`)(apiVersion));
  }
  if (kind !== 'CredentialProviderRequest') problems.push(unexpected('kind', 'CredentialProviderRequest')(kind));
  if (typeof image !== 'string') problems.push(unexpected('image', 'a string')(image));
  else if (image.trim() === '') problems.push('image is empty');
  // Never echo what was sent here: it is a bearer token.
  if (token != null && typeof token !== 'string') problems.push('serviceAccountToken must be a string');
  if (annotations != null && !isStringMap(annotations)) problems.push(annotationsError);
  return problems;
}

function isStringMap(value: unknown): value is Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((entry) => typeof entry === 'string');
}

/**
 * Parses the bytes kubelet wrote on stdin. Errors name the offending field but never quote the input as a
 * whole, because it may carry a service-account token.
 */
export function parseRequest(text: string): CredentialProviderRequest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes a slice of the input, which may be the token: say only what and where.
    throw new InvalidRequestError(
      text.trim() === '' ? 'reading the request: stdin was empty' : 'reading the request: stdin is not valid JSON',
    );
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new InvalidRequestError('reading the request: expected a JSON object');
  }
  const fields = json as Record<string, unknown>;
  const problems = problemsOf(fields);
  if (problems.length > 0) throw new InvalidRequestError(`reading the request: ${problems.join('; ')}`);
  const serviceAccountToken = fields.serviceAccountToken as string | null | undefined;
  const serviceAccountAnnotations = fields.serviceAccountAnnotations as Record<string, string> | null | undefined;
  return {
    apiVersion: fields.apiVersion as ApiVersion,
    image: (fields.image as string).trim(),
    // kubelet omits empty fields, but treat an empty token as absent in case another caller does not.
    ...(serviceAccountToken ? { serviceAccountToken } : {}),
    serviceAccountAnnotations: serviceAccountAnnotations ?? {},
  };
}
