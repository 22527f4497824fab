import * as z from 'zod';
import { parseEnvironment } from '../../shared/config/config.ts';
import { csv } from '../../shared/config/csv.ts';
import { CONTROLLERS, RECONCILERS, type Reconciler } from './controllers/index.ts';
import { WATCHED_KINDS } from './kinds.ts';

/**
 * The relay's settings, from the environment the Deployment sets (deploy/relay/deployment.yaml). A
 * missing or malformed one stops the relay at start-up with a ConfigError naming the variable.
 */

/** The variable holding each reconciler's queue URL (its module's `queueUrlVariable`); only reconcilers with one get keys. */
export const QUEUE_URL_VARIABLES = Object.fromEntries(
  RECONCILERS.map((reconciler) => [reconciler, CONTROLLERS[reconciler].queueUrlVariable]),
) as { readonly [R in Reconciler]: (typeof CONTROLLERS)[R]['queueUrlVariable'] };

type QueueUrlVariable = (typeof QUEUE_URL_VARIABLES)[Reconciler];

const queueUrl = z
  .url({
    protocol: /^https?$/,
    error: 'must be an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>.fifo)',
  })
  .refine((url) => url.endsWith('.fifo'), 'must be a FIFO queue (its name ends in .fifo): keys need group IDs');

/** One optional queue URL per controller in the table: a controller added there gets its variable here. */
const queueUrls = Object.fromEntries(
  Object.values(QUEUE_URL_VARIABLES).map((variable) => [variable, queueUrl.optional()]),
) as Record<QueueUrlVariable, z.ZodOptional<typeof queueUrl>>;

const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a Kubernetes namespace name (lowercase RFC 1123 label)');
const dnsSubdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Kubernetes object name (lowercase RFC 1123 subdomain)');

const seconds = (min: number, max: number, fallback: number) =>
  z.coerce
    .number({ error: 'must be a number of seconds' })
    .int('must be whole seconds')
    .min(min)
    .max(max)
    .default(fallback);

const bool = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

const kinds = csv(
  z.enum(WATCHED_KINDS, { error: `each kind must be one of ${WATCHED_KINDS.join(', ')}` }),
  'must name at least one kind',
);

/**
 * Who the IPAM controller is to the API server, as `request.userInfo.username` names it: in `token` mode the
 * service account of deploy/README-deploy.md, `system:serviceaccount:kube-system:serverless-ccm`; in `eks` mode the
 * username the stack gives the function's access entry, `serverless-ccm:ipam` (stacks/kubernetes-access.ts).
 */
export const DEFAULT_CONTROLLER_USERNAMES = ['system:serviceaccount:kube-system:serverless-ccm', 'serverless-ccm:ipam'];

const usernames = csv(
  z.string().refine((u) => u !== '*', 'a lone * would let everyone write the annotation'),
  'must name at least one username',
);

export const RelayConfigSchema = z
  .object({
    ...queueUrls,
    AWS_REGION: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region name such as eu-west-1')
      .optional(),
    /** Namespace of the Lease (and the relay's own); in a Pod, the downward API sets it. */
    RELAY_NAMESPACE: dnsLabel.optional(),
    RELAY_LEASE_NAME: dnsSubdomain.default('serverless-ccm-relay'),
    /** holderIdentity in the Lease; default `<hostname>_<random>` (client-go's form). */
    RELAY_IDENTITY: z.string().min(1).max(128).optional(),
    RELAY_KINDS: z._default(kinds, [...WATCHED_KINDS]),
    RELAY_LEADER_ELECT: bool.default(true),
    RELAY_LEASE_DURATION_SECONDS: seconds(2, 300, 15),
    RELAY_RENEW_DEADLINE_SECONDS: seconds(1, 299, 10),
    RELAY_RETRY_PERIOD_SECONDS: seconds(1, 60, 2),
    RELAY_LEADER_MIGRATION_CONFIG: z.string().min(1).optional(),
    RELAY_MIGRATION_COMPONENT: z.string().min(1).default('cloud-controller-manager'),
    RELAY_WATCH_TIMEOUT_SECONDS: seconds(30, 3600, 300),
    RELAY_SILENT_WATCH_SECONDS: seconds(30, 3600, 180),
    RELAY_RELIST_SECONDS: seconds(0, 86_400, 1800),
    RELAY_PAGE_SIZE: z.coerce.number({ error: 'must be a number' }).int().min(10).max(5000).default(500),
    RELAY_PORT: z.coerce.number({ error: 'must be a port number' }).int().min(1).max(65_535).default(8080),
    RELAY_SHUTDOWN_FLUSH_SECONDS: seconds(0, 300, 20),
    /** A kubeconfig file (local runs); otherwise $KUBECONFIG, ~/.kube/config, or the in-cluster service account. */
    RELAY_KUBECONFIG: z.string().min(1).optional(),
    /** The IPAM admission webhooks (functions/relay/webhook/), HTTPS on their own port. */
    RELAY_WEBHOOK_ENABLED: bool.default(false),
    RELAY_WEBHOOK_PORT: z.coerce.number({ error: 'must be a port number' }).int().min(1).max(65_535).default(9443),
    RELAY_WEBHOOK_TLS: z
      .enum(['self-signed', 'cert-manager'], { error: 'must be self-signed or cert-manager' })
      .default('self-signed'),
    /** The Service in front of the webhooks, in RELAY_NAMESPACE: the serving certificate's names. */
    RELAY_WEBHOOK_SERVICE: dnsLabel.default('serverless-ccm-relay-webhook'),
    /** self-signed: the Secret holding the CA bundle and serving certificate, in RELAY_NAMESPACE. */
    RELAY_WEBHOOK_SECRET: dnsSubdomain.default('serverless-ccm-webhook-tls'),
    /** self-signed: the name of both webhook configurations, whose caBundle the relay writes. */
    RELAY_WEBHOOK_CONFIGURATION: dnsSubdomain.default('serverless-ccm-ipam-webhook'),
    /** Whether the IPAM webhooks (mpod.vpc.k8s.aws, vpod.vpc.k8s.aws) are served, with RELAY_WEBHOOK_ENABLED. */
    RELAY_WEBHOOK_IPAM: bool.default(true),
    /**
     * Whether the TargetGroupBinding webhooks (vtargetgroupbinding.elbv2.k8s.aws, mpod.elbv2.k8s.aws) are served, with
     * RELAY_WEBHOOK_ENABLED (deploy/relay/webhook-tgb.yaml).
     */
    RELAY_WEBHOOK_TGB: bool.default(false),
    /** self-signed: the name of both TargetGroupBinding webhook configurations, whose caBundle the relay writes. */
    RELAY_WEBHOOK_TGB_CONFIGURATION: dnsSubdomain.default('serverless-ccm-tgb-webhook'),
    /** cert-manager: the mounted certificate Secret (tls.crt, tls.key). */
    RELAY_WEBHOOK_CERT_DIR: z.string().min(1).default('/etc/serverless-ccm-relay/webhook-tls'),
    RELAY_WEBHOOK_CONTROLLER_USERNAMES: z._default(usernames, DEFAULT_CONTROLLER_USERNAMES),
    RELAY_WEBHOOK_REFRESH_SECONDS: seconds(5, 3600, 60),
    LOG_LEVEL: z
      .enum(['DEBUG', 'INFO', 'WARN', 'ERROR'], { error: 'must be DEBUG, INFO, WARN or ERROR' })
      .default('INFO'),
  })
  .superRefine((c, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    const urls = Object.values(QUEUE_URL_VARIABLES).filter((v) => c[v] !== undefined);
    if (urls.length === 0) {
      issue('(queues)', `set at least one of ${Object.values(QUEUE_URL_VARIABLES).join(', ')}`);
    }
    const first = urls.length > 0 ? c[urls[0]!]! : undefined;
    if (!c.AWS_REGION && first && URL.canParse(first) && !regionOf(first)) {
      issue('AWS_REGION', 'is required (the queue URLs do not name a region)');
    }
    if (c.RELAY_RENEW_DEADLINE_SECONDS >= c.RELAY_LEASE_DURATION_SECONDS) {
      issue('RELAY_RENEW_DEADLINE_SECONDS', 'must be shorter than RELAY_LEASE_DURATION_SECONDS');
    }
    if (c.RELAY_WEBHOOK_ENABLED && !c.RELAY_WEBHOOK_IPAM && !c.RELAY_WEBHOOK_TGB) {
      issue('RELAY_WEBHOOK_ENABLED', 'serves no webhook: RELAY_WEBHOOK_IPAM and RELAY_WEBHOOK_TGB are both false');
    }
    if (
      c.RELAY_WEBHOOK_IPAM &&
      c.RELAY_WEBHOOK_TGB &&
      c.RELAY_WEBHOOK_CONFIGURATION === c.RELAY_WEBHOOK_TGB_CONFIGURATION
    ) {
      issue('RELAY_WEBHOOK_TGB_CONFIGURATION', 'must differ from RELAY_WEBHOOK_CONFIGURATION (each pair has its own)');
    }
    if (c.RELAY_WEBHOOK_ENABLED && c.RELAY_WEBHOOK_PORT === c.RELAY_PORT) {
      issue('RELAY_WEBHOOK_PORT', 'must differ from RELAY_PORT (the operations server listens there)');
    }
    if (c.RELAY_RETRY_PERIOD_SECONDS >= c.RELAY_RENEW_DEADLINE_SECONDS) {
      issue('RELAY_RETRY_PERIOD_SECONDS', 'must be shorter than RELAY_RENEW_DEADLINE_SECONDS');
    }
  });

export type RelayConfig = z.output<typeof RelayConfigSchema>;

/** Parse the environment; throws ConfigError listing every bad or missing setting. */
export function loadRelayConfig(env: Record<string, string | undefined> = process.env): RelayConfig {
  return parseEnvironment(RelayConfigSchema, env);
}

/** Queue URL per reconciler, for the reconcilers that have one. */
export function queuesOf(config: RelayConfig): Partial<Record<Reconciler, string>> {
  const queues: Partial<Record<Reconciler, string>> = {};
  for (const [reconciler, variable] of Object.entries(QUEUE_URL_VARIABLES) as [Reconciler, keyof RelayConfig][]) {
    const url = config[variable];
    if (typeof url === 'string') queues[reconciler] = url;
  }
  return queues;
}

/** The region of an SQS queue URL (`https://sqs.<region>.amazonaws.com/...`), when it names one. */
export function regionOf(queueUrl: string): string | undefined {
  // Also called on values that failed their own check (zod runs object refinements regardless).
  if (!URL.canParse(queueUrl)) return undefined;
  const host = new URL(queueUrl).hostname;
  return host.match(/^sqs\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com(?:\.cn)?$/)?.[1];
}

export function regionFor(config: RelayConfig): string {
  const fromUrl = Object.values(queuesOf(config)).map(regionOf).find(Boolean);
  return config.AWS_REGION ?? fromUrl!;
}
