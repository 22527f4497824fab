/**
 * Where the self-managed webhook TLS lives: one Secret (type kubernetes.io/tls, plus `ca.crt`) both
 * replicas read, and the `caBundle` of every webhook in the two webhook configurations. PEM text in,
 * PEM text out: the adapter does the base64. Writes are optimistic: `update` with a stale
 * resourceVersion, or `create` of an existing Secret, fails with a 409 KubernetesApiError.
 */

export const TLS_CERT = 'tls.crt';
export const TLS_KEY = 'tls.key';
export const CA_BUNDLE = 'ca.crt';
/** The next serving certificate while a rotation waits for its CA to reach every caBundle. */
export const NEXT_CERT = 'next.crt';
export const NEXT_KEY = 'next.key';
/** When the next certificate's CA was added to the bundle (RFC 3339). */
export const NEXT_SINCE_ANNOTATION = 'serverless-ccm.io/next-certificate-since';

export interface TlsSecret {
  resourceVersion?: string;
  annotations: Record<string, string>;
  data: Record<string, string>;
}

export interface WebhookCaBundle {
  configuration: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';
  webhook: string;
  /** PEM; empty when unset. */
  caBundle: string;
}

export interface WebhookTlsStore {
  getSecret(): Promise<TlsSecret | undefined>;
  createSecret(secret: TlsSecret): Promise<TlsSecret>;
  updateSecret(secret: TlsSecret): Promise<TlsSecret>;
  /** The caBundle of every webhook of both configurations. */
  caBundles(): Promise<WebhookCaBundle[]>;
  /** Set `bundle` as the caBundle of every webhook of both configurations. */
  setCaBundles(bundle: string): Promise<void>;
}

/** Where the webhooks' TLS Secret lives and which configurations carry the CA bundle. */
export interface TlsStoreNames {
  namespace: string;
  secret: string;
  configuration: string;
}

/** The `kubernetes.io/tls` Secret holding `secret`, as either client writes it. */
export function tlsSecretObject(names: TlsStoreNames, secret: TlsSecret) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: names.secret,
      namespace: names.namespace,
      labels: { 'app.kubernetes.io/name': 'serverless-ccm-relay', 'app.kubernetes.io/part-of': 'serverless-ccm' },
      annotations: secret.annotations,
      ...(secret.resourceVersion ? { resourceVersion: secret.resourceVersion } : {}),
    },
    data: Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}
