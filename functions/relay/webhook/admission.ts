import * as z from 'zod';

/**
 * AdmissionReview v1, the body the API server posts to a webhook and expects back.
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#request
 */

const RequestSchema = z.object({
  uid: z.string().min(1, 'request.uid is required'),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT'], { error: 'request.operation is not an operation' }),
  userInfo: z.object({ username: z.string().optional(), groups: z.array(z.string()).optional() }).optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  object: z.record(z.string(), z.unknown()).nullish(),
  oldObject: z.record(z.string(), z.unknown()).nullish(),
  dryRun: z.boolean().optional(),
});

const ReviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1', { error: 'apiVersion must be admission.k8s.io/v1' }),
  kind: z.literal('AdmissionReview', { error: 'kind must be AdmissionReview' }),
  request: RequestSchema,
});

export type AdmissionRequest = z.output<typeof RequestSchema>;

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
  patchType?: 'JSONPatch';
  /** base64 of a JSON Patch (RFC 6902) array. */
  patch?: string;
}

export interface AdmissionReviewResponse {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** The review could not be read: the server answers 400 (the API server then applies failurePolicy). */
export class MalformedReviewError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MalformedReviewError';
  }
}

export function parseAdmissionReview(body: string): AdmissionRequest {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new MalformedReviewError('reading the AdmissionReview: the body is not JSON', { cause: err });
  }
  const parsed = ReviewSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(review)'}: ${i.message}`).join('; ');
    throw new MalformedReviewError(`reading the AdmissionReview: ${issues}`, { cause: parsed.error });
  }
  return parsed.data.request;
}

export function reviewResponse(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

export const allow = (uid: string): AdmissionResponse => ({ uid, allowed: true });

export const deny = (uid: string, message: string): AdmissionResponse => ({
  uid,
  allowed: false,
  status: { code: 403, reason: 'Forbidden', message },
});

export type JsonPatchOperation = { op: 'add' | 'replace'; path: string; value: unknown };

export const withPatch = (uid: string, patch: JsonPatchOperation[]): AdmissionResponse => ({
  uid,
  allowed: true,
  patchType: 'JSONPatch',
  patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
});

/** One reference token of a JSON Pointer (RFC 6901): `~` and `/` escaped. */
export function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}
