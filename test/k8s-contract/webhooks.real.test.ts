import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestListWatch } from '../../functions/relay/rest-source.ts';
import { splitBundle } from '../../functions/relay/webhook/certificates.ts';
import { RestTlsStore } from '../../functions/relay/webhook/rest-tls-store.ts';
import { type AdmissionWebhooks, startAdmissionWebhooks } from '../../functions/relay/webhook/start.ts';
import { CA_BUNDLE, NEXT_CERT, TLS_CERT } from '../../functions/relay/webhook/tls-store.ts';
import { IPV4_RESOURCE, POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';
import { KubernetesRestClient, path } from '../../shared/k8s/rest-client.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE, type KubeLabAccess } from '../helpers/kube-lab.ts';
import { RecordingLog } from '../helpers/recording-log.ts';
import { AdminApi, uniqueNamespace } from './backends.ts';
import { useKubeLab } from './lab.ts';

/**
 * The relay's admission webhooks called by a real API server: the configurations of deploy/relay/webhook.yaml
 * installed as they are, the webhook server of functions/relay/webhook/start.ts running here in self-signed mode
 * with the relay's own RBAC (deploy/relay/rbac-webhook.yaml, rbac-ipam.yaml, a ServiceAccount token), writing its
 * generated CA into the configurations' caBundle. The API server calls it over HTTPS, checking the certificate
 * against that caBundle and the Service's DNS name, as in a cluster.
 *
 * Two changes make the deployed configuration reachable here: the webhook Service becomes an ExternalName of
 * `localhost` (the API server resolves a webhook's Service to its ClusterIP, which nothing routes here, and an
 * ExternalName to that name; the TLS name it checks stays `<service>.<namespace>.svc`, the one the relay's
 * certificate carries), and the webhook's port is the test server's. Each webhook also gets a namespaceSelector
 * for this test's namespace, so the other files sharing the run's API server never meet it.
 */

const DEPLOY = join(import.meta.dirname, '../../deploy/relay');
const NAMESPACE = 'kube-system';
const SERVICE = 'serverless-ccm-relay-webhook';
const SECRET = 'serverless-ccm-webhook-tls';
const CONFIGURATION = 'serverless-ccm-ipam-webhook';
const RELAY_ACCOUNT = 'serverless-ccm-relay';
/** One of the relay's default controller identities (functions/relay/config.ts). */
const CONTROLLER_ACCOUNT = 'serverless-ccm';
/** The relay's certificates are backdated an hour; the test's clock may run ahead of the API server's by less. */
const LIFETIME_MS = 72 * 60_000;
const PROMOTE_AFTER_MS = 60_000;

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } & Record<
  string,
  unknown
>;

function manifests(file: string): Manifest[] {
  return (loadAll(readFileSync(join(DEPLOY, file), 'utf8')) as (Manifest | null)[]).filter(
    (m): m is Manifest => m !== null,
  );
}

/** Where the API serves a kind, for the kinds these manifests hold. */
function collection(m: Manifest): string {
  const plural: Record<string, string> = {
    Service: 'services',
    ConfigMap: 'configmaps',
    ServiceAccount: 'serviceaccounts',
    Role: 'roles',
    RoleBinding: 'rolebindings',
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
    ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
  };
  const base = m.apiVersion === 'v1' ? ['api', 'v1'] : ['apis', ...m.apiVersion.split('/')];
  const scope = m.metadata.namespace ? ['namespaces', m.metadata.namespace] : [];
  return path(...base, ...scope, plural[m.kind]!);
}

/** kubectl apply, roughly: create, or replace what is there. */
async function apply(api: AdminApi, m: Manifest): Promise<void> {
  try {
    await api.post(collection(m), m);
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 409) throw err;
    const at = `${collection(m)}/${encodeURIComponent(m.metadata.name)}`;
    const current = await api.get<Manifest>(at);
    await api.put(at, {
      ...m,
      metadata: {
        ...m.metadata,
        resourceVersion: (current.metadata as Manifest['metadata'] & { resourceVersion: string }).resourceVersion,
      },
    });
  }
}

/** A bearer token of a ServiceAccount (TokenRequest, what `kubectl create token` does). */
async function serviceAccountToken(api: AdminApi, namespace: string, name: string): Promise<string> {
  const answer = await api.post<{ status: { token: string } }>(
    `${path('api', 'v1', 'namespaces', namespace, 'serviceaccounts', name)}/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  );
  return answer.status.token;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The certificate the webhook server presents, as the SHA-256 of its DER. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, servername: `${SERVICE}.${NAMESPACE}.svc`, rejectUnauthorized: false },
      () => {
        const der = socket.getPeerCertificate().raw;
        socket.end();
        resolve(createHash('sha256').update(der).digest('hex'));
      },
    );
    socket.on('error', reject);
  });
}

const fingerprintOf = (pem: string) =>
  createHash('sha256')
    .update(Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64'))
    .digest('hex');

describe('the relay webhooks called by the real API server', () => {
  if (!KUBE_LAB_AVAILABLE) {
    it.skip(KUBE_LAB_SKIPPED_MESSAGE);
    return;
  }
  const lab = useKubeLab();
  let api: AdminApi;
  let namespace: string;
  let webhooks: AdmissionWebhooks;
  let port: number;
  let offset = 0;
  const log = new RecordingLog();
  const asUser = (access: KubeLabAccess, token: string) =>
    new KubernetesRestClient({ server: access.url, caData: access.caData, token });

  const podPath = (name = '') => `${path('api', 'v1', 'namespaces', namespace, 'pods')}${name ? `/${name}` : ''}`;
  const pod = (name: string, extra: { windows?: boolean; annotations?: Record<string, string> } = {}): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      ...(extra.windows ? { nodeSelector: { 'kubernetes.io/os': 'windows' } } : {}),
      containers: [{ name: 'app', image: 'mcr.microsoft.com/windows/servercore:ltsc2022' }],
    },
  });
  const requested = (p: Pod | undefined) =>
    (
      p?.spec?.containers as { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }[]
    )?.[0]?.resources;
  /** A Windows Pod through the API server, dry run: mutated once the API server calls the webhook. */
  const mutatedDryRun = async () => {
    const created = await api.client.send<Pod>({
      method: 'POST',
      path: podPath(),
      query: { dryRun: 'All' },
      body: pod(`probe-${Date.now()}`, { windows: true }),
    });
    return requested(created)?.requests?.[IPV4_RESOURCE] === '1' ? created : undefined;
  };
  const mutatingBundle = async () => {
    const config = await api.get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${CONFIGURATION}`,
    );
    return Buffer.from(config.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString();
  };
  const secret = async () => {
    const stored = await api.get<{ data: Record<string, string> }>(
      path('api', 'v1', 'namespaces', NAMESPACE, 'secrets', SECRET),
    );
    return Object.fromEntries(Object.entries(stored.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
  };

  beforeAll(async () => {
    const access = lab();
    api = new AdminApi(access);
    namespace = uniqueNamespace();
    await api.post('/api/v1/namespaces', { metadata: { name: namespace } });
    await api.post(path('api', 'v1', 'namespaces', namespace, 'serviceaccounts'), { metadata: { name: 'default' } });
    port = await freePort();

    // What the relay's deployment brings: its ServiceAccount and the RBAC of the webhooks and of IPAM.
    for (const file of ['serviceaccount.yaml', 'rbac-webhook.yaml', 'rbac-ipam.yaml']) {
      for (const m of manifests(file)) await apply(api, m);
    }
    for (const m of manifests('webhook.yaml')) {
      if (m.kind === 'Service') {
        await apply(api, {
          ...m,
          spec: { type: 'ExternalName', externalName: 'localhost', ports: (m.spec as { ports: unknown }).ports },
        });
        continue;
      }
      const hooks = (m.webhooks as { clientConfig: { service: Record<string, unknown> } }[]).map((w) => ({
        ...w,
        clientConfig: { ...w.clientConfig, service: { ...w.clientConfig.service, port } },
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
      }));
      await apply(api, { ...m, webhooks: hooks });
    }
    // Windows IPAM on: the webhooks act only then (functions/relay/webhook/ipam-switch.ts).
    await apply(api, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: VPC_CNI_CONFIGMAP.name, namespace: VPC_CNI_CONFIGMAP.namespace },
      data: { 'enable-windows-ipam': 'true' },
    } as Manifest);
    // A controller identity of the validating webhook, allowed to patch Pods of the test's namespace.
    await apply(api, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: CONTROLLER_ACCOUNT, namespace: NAMESPACE },
    });
    await apply(api, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pod-annotator', namespace },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }],
    });
    await apply(api, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pod-annotator', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-annotator' },
      subjects: [{ kind: 'ServiceAccount', name: CONTROLLER_ACCOUNT, namespace: NAMESPACE }],
    });

    const relay = asUser(access, await serviceAccountToken(api, NAMESPACE, RELAY_ACCOUNT));
    webhooks = await startAdmissionWebhooks(
      {
        port,
        host: '127.0.0.1',
        mode: 'self-signed',
        namespace: NAMESPACE,
        service: SERVICE,
        secret: SECRET,
        configuration: CONFIGURATION,
        certDir: '',
        controllerUsernames: [`system:serviceaccount:${NAMESPACE}:${CONTROLLER_ACCOUNT}`],
        refreshMs: 200,
        pollMs: 1_000,
        lifetimeMs: LIFETIME_MS,
        promoteAfterMs: PROMOTE_AFTER_MS,
      },
      {
        tlsStore: () => new RestTlsStore(relay, { namespace: NAMESPACE, secret: SECRET, configuration: CONFIGURATION }),
        source: new RestListWatch(relay),
        log,
        clock: { now: () => Date.now() + offset },
      },
    );
    await webhooks.ready;
    // The API server reads webhook configurations and Services through informers: wait until it calls the webhook.
    await until('the API server to call the mutating webhook', mutatedDryRun);
  }, 60_000);

  afterAll(async () => {
    await webhooks?.close();
    // The configurations are the run's API server's: other files must not call a webhook that is gone.
    for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
      await api?.delete(`/apis/admissionregistration.k8s.io/v1/${kind}/${CONFIGURATION}`).catch(() => undefined);
    }
  });

  it('wrote its generated CA into the caBundle of every webhook, with its own ServiceAccount', async () => {
    const stored = await secret();
    expect(splitBundle(await mutatingBundle())).toEqual(splitBundle(stored[CA_BUNDLE]!));
    expect(log.lines.filter((l) => l.level === 'ERROR')).toEqual([]);
  });

  it('mutates a Windows Pod created through the API server: one address requested and limited', async () => {
    const created = await api.post<Pod>(podPath(), pod('win-0', { windows: true }));
    expect(requested(created)).toEqual({ requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } });
    const linux = await api.post<Pod>(podPath(), pod('linux-0'));
    expect(requested(linux)).toEqual({});
  });

  it('refuses a new Pod carrying the address annotation, with the webhook message', async () => {
    const refused = await api
      .post(podPath(), pod('win-1', { windows: true, annotations: { [POD_IP_ANNOTATION]: '10.0.0.7/19' } }))
      .catch((err: unknown) => err);
    expect(refused).toMatchObject({
      statusCode: 403,
      message: expect.stringContaining(
        `admission webhook "vpod.vpc.k8s.aws" denied the request: annotation ${POD_IP_ANNOTATION} cannot be set on a new Pod`,
      ),
    });
    await expect(api.get(podPath('win-1'))).rejects.toMatchObject({ statusCode: 404 });
  });

  it('lets only the controller identity write the annotation of an existing Pod', async () => {
    await api.post(podPath(), pod('win-2', { windows: true }));
    const patch = { metadata: { annotations: { [POD_IP_ANNOTATION]: '10.0.0.8/19' } } };
    const byAdmin = await api.patch(podPath('win-2'), patch).catch((err: unknown) => err);
    expect(byAdmin).toMatchObject({
      statusCode: 403,
      message: expect.stringContaining('can only be added by the IP address controller'),
    });
    const controller = asUser(lab(), await serviceAccountToken(api, NAMESPACE, CONTROLLER_ACCOUNT));
    const written = await controller.send<Pod>({
      method: 'PATCH',
      path: podPath('win-2'),
      body: patch,
      contentType: 'application/merge-patch+json',
    });
    expect(written.metadata.annotations?.[POD_IP_ANNOTATION]).toBe('10.0.0.8/19');
  });

  it('keeps admitting through a certificate rotation: the middle state (two CAs, the old certificate served), then the new one', async () => {
    const before = await secret();
    expect(await servedFingerprint(port)).toBe(fingerprintOf(before[TLS_CERT]!));
    // Two thirds of the certificate's life later, the next pass starts a rotation.
    offset = LIFETIME_MS - LIFETIME_MS / 3 + 60_000;
    const middle = await until('a rotation to start', async () => {
      const s = await secret();
      return s[NEXT_CERT] && splitBundle(await mutatingBundle()).length === 2 ? s : undefined;
    });
    expect(splitBundle(middle[CA_BUNDLE]!)).toHaveLength(2);
    expect(await servedFingerprint(port)).toBe(fingerprintOf(before[TLS_CERT]!));
    expect(await until('the API server to call the webhook in the middle state', mutatedDryRun)).toBeDefined();
    const created = await api.post<Pod>(podPath(), pod('win-middle', { windows: true }));
    expect(requested(created)?.limits?.[IPV4_RESOURCE]).toBe('1');

    offset += PROMOTE_AFTER_MS + 60_000;
    const next = middle[NEXT_CERT]!;
    await until('the new certificate to be served', async () =>
      (await servedFingerprint(port)) === fingerprintOf(next) ? true : undefined,
    );
    const after = await api.post<Pod>(podPath(), pod('win-after', { windows: true }));
    expect(requested(after)?.limits?.[IPV4_RESOURCE]).toBe('1');
  }, 30_000);
});
