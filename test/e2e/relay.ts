import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { load, loadAll } from 'js-yaml';

/**
 * The relay as its container runs it: the bundle deploy/relay/Dockerfile builds (its own esbuild command, read
 * from the Dockerfile, only the output folder changed), started as the image starts it (node, the CMD's file, in
 * the output folder), with the environment deploy/relay/deployment.yaml gives the container. In a Pod it reaches
 * the API server as a service account: KUBERNETES_SERVICE_HOST/_PORT and the token and CA mounted at
 * /var/run/secrets/kubernetes.io/serviceaccount. The relay here gets the same, the mount made in a mount
 * namespace of its own (`unshare`, a tmpfs over /run that only it sees), so it runs in in-cluster mode over the
 * REST client exactly as deployed; where unshare is not allowed it falls back to a kubeconfig (RELAY_KUBECONFIG,
 * client-node), and says which it ran in.
 */

const DOCKERFILE = 'deploy/relay/Dockerfile';
const DEPLOYMENT = 'deploy/relay/deployment.yaml';
export const RELAY_POD_NAMESPACE = 'kube-system';
export const RELAY_POD_NAME = 'serverless-ccm-relay-e2e-0';

/** The Dockerfile's instructions, continuation lines joined. */
function dockerfileInstructions(): string[] {
  return readFileSync(DOCKERFILE, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/** Builds the relay with the Dockerfile's esbuild command into `outDir`; answers the entry file the CMD runs. */
export async function buildRelay(outDir: string): Promise<string> {
  const instructions = dockerfileInstructions();
  const run = instructions.find((l) => /^RUN npx esbuild /.test(l));
  if (!run?.includes('--outdir=/out')) throw new Error(`${DOCKERFILE}: no "RUN npx esbuild ... --outdir=/out"`);
  const cmd = instructions.find((l) => l.startsWith('CMD '));
  const entry = cmd ? (JSON.parse(cmd.slice(4)) as string[])[0] : undefined;
  if (!entry) throw new Error(`${DOCKERFILE}: no CMD ["<file>"]`);
  // The image copies the build's /out to its WORKDIR and runs the CMD there; here the output folder is both.
  await promisify(execFile)('sh', ['-c', run.slice(4).replace('--outdir=/out', `--outdir=${outDir}`)]);
  return join(outDir, entry);
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

/**
 * The relay container's environment in deploy/relay/deployment.yaml, with the downward API's values for this Pod
 * and each queue URL's `CLUSTER-<name>.fifo` pointed at the queue of that name made for the test.
 */
export function deploymentEnvironment(queueUrlFor: (queueName: string) => string): Record<string, string> {
  const deployment = load(readFileSync(DEPLOYMENT, 'utf8')) as {
    spec: { template: { spec: { containers: { name: string; env: EnvVar[] }[] } } };
  };
  const relay = deployment.spec.template.spec.containers.find((c) => c.name === 'relay');
  if (!relay) throw new Error(`${DEPLOYMENT}: no relay container`);
  const fields: Record<string, string> = { 'metadata.namespace': RELAY_POD_NAMESPACE, 'metadata.name': RELAY_POD_NAME };
  const env: Record<string, string> = {};
  for (const v of relay.env) {
    const path = v.valueFrom?.fieldRef?.fieldPath;
    const value = path ? fields[path] : v.value;
    if (value === undefined) throw new Error(`${DEPLOYMENT}: ${v.name} has neither a value nor a known fieldRef`);
    env[v.name] = v.name.endsWith('_QUEUE_URL') ? queueUrlFor(queueNameOf(value)) : value;
  }
  return env;
}

/** `https://sqs.REGION.amazonaws.com/ACCOUNT/CLUSTER-node.fifo` -> `node`. */
export function queueNameOf(url: string): string {
  const match = url.match(/\/CLUSTER-([a-z-]+)\.fifo$/);
  if (!match) throw new Error(`${DEPLOYMENT}: queue URL ${url} is not .../CLUSTER-<name>.fifo`);
  return match[1]!;
}

/** Whether this process may make a mount namespace (root, or unprivileged user namespaces). */
function canUnshare(): boolean {
  try {
    execFileSync('unshare', ['--mount', '--propagation', 'private', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface RelayAccess {
  /** `https://127.0.0.1:<port>` */
  url: string;
  caData: string;
  token: string;
  kubeconfig: string;
}

export interface RunningRelay {
  mode: 'in-cluster' | 'kubeconfig';
  metricsUrl: string;
  output(): string;
  stop(): Promise<void>;
}

export async function startRelay(options: {
  entry: string;
  workDir: string;
  env: Record<string, string>;
  access: RelayAccess;
  port: number;
}): Promise<RunningRelay> {
  const { entry, workDir, env, access, port } = options;
  const api = new URL(access.url);
  const inCluster = canUnshare();
  const accountDir = join(workDir, 'serviceaccount');
  mkdirSync(accountDir, { recursive: true });
  writeFileSync(join(accountDir, 'token'), access.token);
  writeFileSync(join(accountDir, 'ca.crt'), Buffer.from(access.caData, 'base64'));
  writeFileSync(join(accountDir, 'namespace'), RELAY_POD_NAMESPACE);
  const environment = {
    PATH: process.env.PATH ?? '',
    ...env,
    // The container has its own network namespace; here the operations server needs a free port.
    RELAY_PORT: String(port),
    ...(inCluster
      ? { KUBERNETES_SERVICE_HOST: api.hostname, KUBERNETES_SERVICE_PORT: api.port }
      : { RELAY_KUBECONFIG: access.kubeconfig }),
  };
  const node = process.execPath;
  const child: ChildProcess = inCluster
    ? spawn(
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          'sh',
          '-c',
          // /var/run is /run: a tmpfs there, seen only in this namespace, holds the service account's files.
          'set -e; mount -t tmpfs tmpfs /run; d=/var/run/secrets/kubernetes.io/serviceaccount; mkdir -p "$d"; ' +
            'cp "$1"/token "$1"/ca.crt "$1"/namespace "$d"/; cd "$2"; exec "$3" "$4"',
          'sh',
          accountDir,
          join(entry, '..'),
          node,
          entry,
        ],
        { env: environment, stdio: ['ignore', 'pipe', 'pipe'] },
      )
    : spawn(node, [entry], { cwd: join(entry, '..'), env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-200_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const metricsUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the relay exited with ${child.exitCode}: ${output}`);
    const ready = await fetch(`${metricsUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the relay was not ready within 20 s: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    mode: inCluster ? 'in-cluster' : 'kubeconfig',
    metricsUrl,
    output: () => output,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        // As the kubelet stops it: SIGTERM, the relay flushes and releases its Lease.
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      }),
  };
}

type Kube = (method: string, path: string, body?: unknown) => Promise<{ status: number; text: string; body: unknown }>;

/** Where each kind the relay's manifests hold is created. */
const COLLECTIONS: Record<string, (namespace: string) => string> = {
  ServiceAccount: (ns) => `/api/v1/namespaces/${ns}/serviceaccounts`,
  ClusterRole: () => '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  ClusterRoleBinding: () => '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  Role: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
  RoleBinding: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`,
};

/**
 * The relay's identity as deployed: its ServiceAccount and RBAC applied from deploy/relay (serviceaccount.yaml,
 * rbac.yaml, and rbac-service.yaml when the service controller runs, as kustomization.yaml says), and a token
 * for the account (the TokenRequest API, what the kubelet mounts). A permission the manifests miss fails the
 * relay here as it would in a cluster.
 */
export async function relayServiceAccountToken(kube: Kube, withServices: boolean): Promise<string> {
  const files = ['serviceaccount.yaml', 'rbac.yaml', ...(withServices ? ['rbac-service.yaml'] : [])];
  for (const file of files) {
    for (const doc of loadAll(readFileSync(join('deploy/relay', file), 'utf8'))) {
      const object = doc as { kind: string; metadata: { namespace?: string } };
      const collection = COLLECTIONS[object.kind];
      if (!collection) throw new Error(`deploy/relay/${file}: no collection known for ${object.kind}`);
      const created = await kube('POST', collection(object.metadata.namespace ?? RELAY_POD_NAMESPACE), object);
      if (created.status !== 201) throw new Error(`applying deploy/relay/${file} ${object.kind}: ${created.text}`);
    }
  }
  const request = await kube(
    'POST',
    `/api/v1/namespaces/${RELAY_POD_NAMESPACE}/serviceaccounts/serverless-ccm-relay/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  );
  if (request.status !== 201) throw new Error(`a token for the relay's ServiceAccount: ${request.text}`);
  return (request.body as { status: { token: string } }).status.token;
}
