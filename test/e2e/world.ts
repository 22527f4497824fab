import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { loadAll } from 'js-yaml';
import { bundleFunction } from '../../scripts/build.ts';
import { FUNCTION_DEFAULTS, VISIBILITY_TIMEOUT_FACTOR } from '../../stacks/config.ts';
import { EMULATOR_CREDENTIALS, EMULATOR_REGION, type Emulator, startEmulator } from '../helpers/emulator.ts';
import type { KubeLabAccess } from '../helpers/kube-lab.ts';
import { type EventSourceMapping, startEventSourceMapping } from './event-source-mapping.ts';
import { kubeHttp } from './kube-http.ts';
import { type LocalLambda, startLambda } from './lambda.ts';
import { buildRelay, deploymentEnvironment, type RunningRelay, relayServiceAccountToken, startRelay } from './relay.ts';

/**
 * The deployed shape on one machine: moto as AWS (SQS FIFO queues, EC2, ELBv2, Secrets Manager), the lab's
 * kube-apiserver as the cluster, the relay built and run as its container runs it, and each Lambda built by
 * scripts/build.ts (what `npm run build` runs) and driven by a local event source mapping from its queue.
 */

export const CLUSTER = 'e2e';

/** The reconcilers run here, with their queues (the stack's `<stage>-<name>.fifo`; the relay's deployment names them). */
export type FunctionName = 'node' | 'node-lifecycle' | 'service' | 'ec2-events' | 'interruption';

/** The queues the relay's Deployment names, and those the stacks add: ec2-events (EventBridge's target), interruption. */
const QUEUES = ['node', 'node-lifecycle', 'route', 'service', 'ec2-events', 'interruption'] as const;
export type QueueName = (typeof QUEUES)[number];

export interface Queue {
  url: string;
  arn: string;
}

/** Each function's Secrets Manager secret (token mode): `{"token", "ca"}`, as deploy/README-deploy.md makes it. */
const tokenSecret = (name: FunctionName) => `serverless-ccm/e2e-${name}`;

export interface E2eWorld {
  emulator: Emulator;
  queues: Record<QueueName, Queue>;
  relay: RunningRelay;
  lambdas: Map<FunctionName, LocalLambda>;
  mappings: Map<FunctionName, EventSourceMapping>;
  /** Every function's and the relay's output (the last `limit` characters of each), for a failing test's message. */
  output(limit?: number): string;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * What the stacks give each function (stacks/function.ts: cluster, IP families, logging and Kubernetes access,
 * stacks/kubernetes-access.ts; then each function's own: stacks/ec2-events.ts, stacks/service.ts,
 * stacks/config-interruption.ts), for token mode: the Secrets Manager secret holding the API server's token and CA.
 * Plus what Lambda's runtime sets (AWS_REGION, credentials) and the endpoint of the AWS stand-in.
 */
function functionEnvironment(
  name: FunctionName,
  queues: Record<QueueName, Queue>,
  lab: KubeLabAccess,
  emulator: Emulator,
  vpcId: string | undefined,
): Record<string, string> {
  const common = {
    CLUSTER_NAME: CLUSTER,
    NODE_IP_FAMILIES: 'ipv4',
    // The stack's default; E2E_LOG_LEVEL=DEBUG for the reconcilers' debug lines in a failing test's message.
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'INFO',
    AWS_CALL_METRICS: 'operation',
    KUBERNETES_AUTH_MODE: 'token',
    KUBERNETES_API_ENDPOINT: lab.url,
    KUBERNETES_TOKEN_SECRET_ID: tokenSecret(name),
    AWS_REGION: EMULATOR_REGION,
    AWS_ACCESS_KEY_ID: EMULATOR_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: EMULATOR_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL: emulator.endpoint,
  };
  const own: Record<FunctionName, Record<string, string>> = {
    node: {},
    'node-lifecycle': {},
    service: {
      ...(vpcId ? { VPC_ID: vpcId } : {}),
      SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'nlb',
      // The shortest waits the settings allow (the stack's defaults are a minute apart).
      SERVICE_PROVISIONING_REQUEUE_SECONDS: '5',
      SERVICE_CLEANUP_REQUEUE_SECONDS: '5',
      SERVICE_REPLACEMENT_GRACE_SECONDS: '0',
    },
    'ec2-events': {
      NODE_LIFECYCLE_QUEUE_URL: queues['node-lifecycle'].url,
      INTERRUPTION_QUEUE_URL: queues.interruption.url,
      NODE_INDEX_TTL_SECONDS: '60',
    },
    interruption: {
      INTERRUPTION_OUT_OF_SERVICE_TAINT: 'false',
      INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'true',
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: '5',
    },
  };
  return { ...common, ...own[name] };
}

/** What the deployment is made of: the relay's image bundle and the Lambda packages, built into `dir`. */
export interface Built {
  dir: string;
  relayEntry: string;
  bundles: Map<FunctionName, string>;
}

/**
 * Builds the relay (its Dockerfile's command) and the functions (scripts/build.ts's bundleFunction, what `npm run
 * build` runs, into a folder of the test's own rather than dist/, which other runs may be rebuilding).
 */
export async function buildDeployment(
  functions: readonly FunctionName[],
  dir = mkdtempSync(join(tmpdir(), 'ccm-e2e-')),
): Promise<Built> {
  const [relayEntry, ...built] = await Promise.all([
    buildRelay(join(dir, 'relay')),
    ...functions.map((name) => bundleFunction(name, join(dir, 'functions'))),
  ]);
  const bundles = new Map(functions.map((name, i) => [name, (built[i] as { file: string }).file]));
  return { dir, relayEntry, bundles };
}

type Kube = ReturnType<typeof kubeHttp>;

/**
 * Each function's Kubernetes identity: the ClusterRole `serverless-ccm:<function>` from deploy/README-deploy.md
 * ("Grant the functions their Kubernetes permissions"), bound to a ServiceAccount of the function's own, and a
 * token for it (the TokenRequest API: the lab has no controller-manager to fill the README's token Secret). One
 * account per function rather than the README's one for all in token mode: each bundle then has exactly its own
 * role, as in eks mode, so a call its role misses fails here.
 */
async function functionTokens(kube: Kube, names: readonly FunctionName[]): Promise<Map<FunctionName, string>> {
  const readme = readFileSync('deploy/README-deploy.md', 'utf8');
  const section = readme.slice(readme.indexOf('### Grant the functions their Kubernetes permissions'));
  const start = section.indexOf('```yaml\n') + '```yaml\n'.length;
  const roles = loadAll(section.slice(start, section.indexOf('```', start))) as {
    kind: string;
    metadata: { name: string };
  }[];
  const ok = async (what: string, answer: Promise<{ status: number; text: string; body: unknown }>) => {
    const { status, text, body } = await answer;
    if (status !== 201) throw new Error(`${what}: ${text}`);
    return body;
  };
  const tokens = new Map<FunctionName, string>();
  for (const name of names) {
    const roleName = `serverless-ccm:${name}`;
    const role = roles.find((r) => r.kind === 'ClusterRole' && r.metadata.name === roleName);
    if (!role) throw new Error(`deploy/README-deploy.md gives no ClusterRole ${roleName}`);
    const account = `serverless-ccm-${name}`;
    await ok(roleName, kube('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', role));
    await ok(account, kube('POST', '/api/v1/namespaces/kube-system/serviceaccounts', { metadata: { name: account } }));
    await ok(
      `${roleName} binding`,
      kube('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        metadata: { name: roleName },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace: 'kube-system' }],
      }),
    );
    const request = await ok(
      `${account} token`,
      kube('POST', `/api/v1/namespaces/kube-system/serviceaccounts/${account}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      }),
    );
    tokens.set(name, (request as { status: { token: string } }).status.token);
  }
  return tokens;
}

export interface WorldOptions {
  /** The service reconciler's VPC (VPC_ID), made by the test before the world starts. */
  vpcId?: string;
}

export async function startWorld(
  lab: KubeLabAccess,
  emulator: Emulator,
  built: Built,
  options: WorldOptions = {},
): Promise<E2eWorld> {
  const { dir, relayEntry, bundles } = built;
  const sqs = new SQSClient(emulator.clientConfig);
  const secrets = new SecretsManagerClient(emulator.clientConfig);
  const queues = Object.fromEntries(
    await Promise.all(
      QUEUES.map(async (name): Promise<[QueueName, Queue]> => {
        // As stacks/queues.ts makes them: FIFO, no content-based deduplication (senders give IDs), a visibility
        // timeout of six times the function's timeout. So a failed message comes back within a test only when the
        // runner shortened its visibility (ChangeMessageVisibility), as it does for a retry or a requeue.
        // The EC2 events' queue is a standard one (EventBridge sets no per-key group: stacks/ec2-events.ts).
        const visibility = String(FUNCTION_DEFAULTS[name].timeoutSeconds * VISIBILITY_TIMEOUT_FACTOR);
        const fifo = name !== 'ec2-events';
        const { QueueUrl } = await sqs.send(
          new CreateQueueCommand({
            QueueName: `${CLUSTER}-${name}${fifo ? '.fifo' : ''}`,
            Attributes: fifo
              ? { FifoQueue: 'true', ContentBasedDeduplication: 'false', VisibilityTimeout: visibility }
              : { VisibilityTimeout: visibility },
          }),
        );
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
        );
        return [name, { url: QueueUrl!, arn: Attributes!.QueueArn! }];
      }),
    ),
  ) as Record<QueueName, Queue>;
  // token mode: each function's secret holds the token of a ServiceAccount bound to its ClusterRole only.
  const tokens = await functionTokens(kubeHttp(lab), [...built.bundles.keys()]);
  for (const [name, token] of tokens) {
    await secrets.send(
      new CreateSecretCommand({ Name: tokenSecret(name), SecretString: JSON.stringify({ token, ca: lab.caData }) }),
    );
  }

  const lambdas = new Map<FunctionName, LocalLambda>();
  const mappings = new Map<FunctionName, EventSourceMapping>();
  let relay: RunningRelay | undefined;
  const close = async () => {
    await relay?.stop();
    await Promise.all([...mappings.values()].map((m) => m.stop()));
    await Promise.all([...lambdas.values()].map((l) => l.stop()));
    sqs.destroy();
    secrets.destroy();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const [name, bundle] of bundles) {
      const env = functionEnvironment(name, queues, lab, emulator, options.vpcId);
      lambdas.set(name, await startLambda(name, bundle, env, FUNCTION_DEFAULTS[name].timeoutSeconds));
    }
    for (const [name, lambda] of lambdas) {
      mappings.set(
        name,
        startEventSourceMapping(sqs, { queueUrl: queues[name].url, queueArn: queues[name].arn, lambda }),
      );
    }
    const relayEnv = {
      ...deploymentEnvironment((queue) => {
        if (!(QUEUES as readonly string[]).includes(queue)) throw new Error(`no queue ${queue} made for the relay`);
        return queues[queue as QueueName].url;
      }),
      // Commented out in the Deployment ("With the service controller"): uncommented when it runs.
      ...(bundles.has('service') ? { SERVICE_QUEUE_URL: queues.service.url } : {}),
      // What IRSA's webhook gives the Pod (region, credentials), and the endpoint of the AWS stand-in.
      AWS_REGION: EMULATOR_REGION,
      AWS_ACCESS_KEY_ID: EMULATOR_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: EMULATOR_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_SQS: emulator.endpoint,
    };
    // The relay's own ServiceAccount and RBAC from deploy/relay, not the lab's admin.
    const token = await relayServiceAccountToken(kubeHttp(lab), bundles.has('service'));
    relay = await startRelay({
      entry: relayEntry,
      workDir: dir,
      env: relayEnv,
      access: { ...lab, token },
      port: await freePort(),
    });
  } catch (err) {
    await close();
    throw err;
  }
  const running = relay;
  return {
    emulator,
    queues,
    relay: running,
    lambdas,
    mappings,
    output: (limit = 6_000) =>
      [
        `relay (${running.mode}):\n${running.output().slice(-limit)}`,
        ...[...lambdas.values()].map((l) => `${l.name}:\n${l.output().slice(-limit)}`),
        ...[...mappings].map(([n, m]) => `${n} mapping: ${JSON.stringify(m.stats)}`),
      ].join('\n\n'),
    close,
  };
}

export { startEmulator };
