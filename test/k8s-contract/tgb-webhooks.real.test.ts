import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kindsFor } from '../../functions/relay/forwarding.ts';
import { RestListWatch } from '../../functions/relay/rest-source.ts';
import { ClientNodeTgbAdmissionReads } from '../../functions/relay/webhook/client-node-tgb-admission-reads.ts';
import { POD_READINESS_WEBHOOK, TGB_VALIDATING_WEBHOOK } from '../../functions/relay/webhook/names.ts';
import { RestTlsStore } from '../../functions/relay/webhook/rest-tls-store.ts';
import { type AdmissionWebhooks, startAdmissionWebhooks } from '../../functions/relay/webhook/start.ts';
import { RestTgbAdmissionReads } from '../../functions/relay/webhook/tgb-admission-reads.ts';
import { tokenKubeConfig } from '../../shared/k8s/lambda-access.ts';
import { KubernetesRestClient, path } from '../../shared/k8s/rest-client.ts';
import { READINESS_GATE_INJECT_LABEL, type TargetGroupBinding } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { silentLog } from '../../shared/observability/log.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { AdminApi, uniqueNamespace } from './backends.ts';
import { useKubeLab } from './lab.ts';

/**
 * The relay's TargetGroupBinding webhooks called by a real API server: deploy/crds/targetgroupbindings.yaml and the
 * configurations of deploy/relay/webhook-tgb.yaml installed as they are, the webhook server of
 * functions/relay/webhook/start.ts running here (self-signed) and listing bindings and Services with the relay's own
 * ServiceAccount and RBAC (deploy/relay/rbac-target-group-binding.yaml). As in webhooks.real.test.ts, the webhook
 * Service becomes an ExternalName of `localhost`, the port is the test server's, and each webhook is narrowed to
 * this test's namespaces (the readiness gate one keeps its own label selector too). Its certificate Secret is its
 * own, written as the administrator, so the IPAM webhook test sharing the API server keeps its Secret to itself.
 * The relay's ServiceAccount is the one the other relay tests of the run bind their files to as well: run alone,
 * this file shows rbac.yaml and rbac-target-group-binding.yaml suffice; in a full run it shows no less.
 */

const DEPLOY = join(import.meta.dirname, '../../deploy');
const SYSTEM = 'kube-system';
const SERVICE = 'serverless-ccm-relay-webhook';
const SECRET = 'serverless-ccm-webhook-tls-tgb-test';
const CONFIGURATION = 'serverless-ccm-tgb-webhook';
const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef';

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } & Record<
  string,
  unknown
>;

const manifests = (file: string): Manifest[] =>
  (loadAll(readFileSync(join(DEPLOY, file), 'utf8')) as (Manifest | null)[]).filter((m): m is Manifest => m !== null);

const PLURALS: Record<string, string> = {
  Service: 'services',
  ServiceAccount: 'serviceaccounts',
  Role: 'roles',
  RoleBinding: 'rolebindings',
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
  CustomResourceDefinition: 'customresourcedefinitions',
};

function collection(m: Manifest): string {
  const base = m.apiVersion === 'v1' ? ['api', 'v1'] : ['apis', ...m.apiVersion.split('/')];
  const scope = m.metadata.namespace ? ['namespaces', m.metadata.namespace] : [];
  return path(...base, ...scope, PLURALS[m.kind]!);
}

/** Create, or replace what is there (`replace: false`: keep it, as for the CRD other files install too). */
async function apply(api: AdminApi, m: Manifest, replace = true): Promise<void> {
  try {
    await api.post(collection(m), m);
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 409 || !replace) {
      if ((err as { statusCode?: number }).statusCode === 409) return;
      throw err;
    }
    const at = `${collection(m)}/${encodeURIComponent(m.metadata.name)}`;
    const current = await api.get<{ metadata: { resourceVersion: string } }>(at);
    await api.put(at, { ...m, metadata: { ...m.metadata, resourceVersion: current.metadata.resourceVersion } });
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
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

const refusal = (err: unknown) => (err as { statusCode?: number; message?: string }) ?? {};

describe('the TargetGroupBinding webhooks called by the real API server', () => {
  if (!KUBE_LAB_AVAILABLE) {
    it.skip(KUBE_LAB_SKIPPED_MESSAGE);
    return;
  }
  const lab = useKubeLab();
  let api: AdminApi;
  let webhooks: AdmissionWebhooks | undefined;
  let relay: KubernetesRestClient;
  let relayToken: string;
  /** Two namespaces labelled for readiness gates, and one not. */
  const [shop, other, plain] = [uniqueNamespace(), uniqueNamespace(), uniqueNamespace()];

  const bindings = (namespace: string, name = '') =>
    `${path('apis', 'elbv2.k8s.aws', 'v1beta1', 'namespaces', namespace, 'targetgroupbindings')}${name ? `/${name}` : ''}`;
  const binding = (namespace: string, name: string, spec: Record<string, unknown> = {}) => ({
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'TargetGroupBinding',
    metadata: { namespace, name },
    spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: ARN, targetType: 'ip', ...spec },
  });
  const pod = (namespace: string, name: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'web' } },
    spec: { containers: [{ name: 'app', image: 'registry.example/web:1' }] },
  });

  beforeAll(async () => {
    const access = lab();
    api = new AdminApi(access);
    for (const name of [shop, other, plain]) {
      const labels = name === plain ? {} : { [READINESS_GATE_INJECT_LABEL]: 'enabled' };
      await api.post('/api/v1/namespaces', { metadata: { name, labels } });
      await api.post(path('api', 'v1', 'namespaces', name, 'serviceaccounts'), { metadata: { name: 'default' } });
    }
    for (const m of manifests('crds/targetgroupbindings.yaml')) await apply(api, m, false);
    await until('the TargetGroupBinding CRD to be served', async () =>
      api.get(bindings(shop)).then(
        () => true,
        () => undefined,
      ),
    );
    for (const file of ['relay/serviceaccount.yaml', 'relay/rbac.yaml', 'relay/rbac-target-group-binding.yaml']) {
      for (const m of manifests(file)) await apply(api, m);
    }
    const port = await freePort();
    const service = manifests('relay/webhook.yaml').find((m) => m.kind === 'Service')!;
    await apply(api, {
      ...service,
      spec: { type: 'ExternalName', externalName: 'localhost', ports: (service.spec as { ports: unknown }).ports },
    });
    const ours = { key: 'kubernetes.io/metadata.name', operator: 'In', values: [shop, other, plain] };
    for (const m of manifests('relay/webhook-tgb.yaml')) {
      if (!m.kind.endsWith('WebhookConfiguration')) {
        await apply(api, m);
        continue;
      }
      const hooks = (
        m.webhooks as {
          clientConfig: { service: Record<string, unknown> };
          namespaceSelector?: { matchExpressions?: unknown[] };
        }[]
      ).map((w) => ({
        ...w,
        clientConfig: { ...w.clientConfig, service: { ...w.clientConfig.service, port } },
        namespaceSelector: { matchExpressions: [...(w.namespaceSelector?.matchExpressions ?? []), ours] },
      }));
      await apply(api, { ...m, webhooks: hooks });
    }

    const token = await api.post<{ status: { token: string } }>(
      `${path('api', 'v1', 'namespaces', SYSTEM, 'serviceaccounts', 'serverless-ccm-relay')}/token`,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    );
    relayToken = token.status.token;
    relay = new KubernetesRestClient({ server: access.url, caData: access.caData, token: relayToken });
    webhooks = await startAdmissionWebhooks(
      {
        port,
        host: '127.0.0.1',
        mode: 'self-signed',
        namespace: SYSTEM,
        service: SERVICE,
        secret: SECRET,
        configuration: 'serverless-ccm-ipam-webhook',
        ipam: false,
        tgb: { configuration: CONFIGURATION },
        certDir: '',
        controllerUsernames: ['nobody'],
        refreshMs: 500,
        pollMs: 1_000,
      },
      {
        tlsStore: (configuration) => new RestTlsStore(api.client, { namespace: SYSTEM, secret: SECRET, configuration }),
        tgbReads: () => new RestTgbAdmissionReads(relay),
        source: {
          list: () => Promise.reject(new Error('nothing is watched without the IPAM webhooks')),
          watch: () => Promise.reject(new Error('nothing is watched without the IPAM webhooks')),
        },
        log: silentLog,
        clock: { now: () => Date.now() },
      },
    );
    await webhooks.ready;
    // The API server reads webhook configurations through informers: wait until it calls the validating webhook.
    await until('the API server to call the validating webhook', () =>
      api.client
        .send({
          method: 'POST',
          path: bindings(shop),
          query: { dryRun: 'All' },
          body: binding(shop, 'probe', { targetGroupARN: undefined }),
        })
        .then(
          () => undefined,
          (err) => (refusal(err).message?.includes('spec.targetGroupARN or spec.targetGroupName') ? true : undefined),
        ),
    );
  }, 90_000);

  afterAll(async () => {
    await webhooks?.close();
    // The configurations are the run's API server's: other files must not call a webhook that is gone.
    for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
      await api?.delete(`/apis/admissionregistration.k8s.io/v1/${kind}/${CONFIGURATION}`).catch(() => undefined);
    }
  });

  it('lets the relay list and watch every kind the binding module reads, with rbac.yaml and rbac-target-group-binding.yaml', async () => {
    const source = new RestListWatch(relay);
    const kinds = kindsFor(['target-group-binding']);
    expect(kinds).toEqual(['Node', 'Service', 'EndpointSlice', 'Pod', 'TargetGroupBinding']);
    for (const kind of kinds) {
      const page = await source.list(kind, { limit: 10 });
      const ended: unknown[] = [];
      const watch = await source.watch(
        kind,
        { resourceVersion: page.resourceVersion, timeoutSeconds: 30, inactivityMs: 10_000 },
        () => {},
        (error) => ended.push(error ?? 'closed'),
      );
      watch.stop();
      // A watch refused (403) would have ended before its headers came.
      expect(ended, kind).toEqual([]);
    }
  });

  it('refuses a second binding of a target group in another namespace, until every binding of it shares it', async () => {
    const first = await api.post<TargetGroupBinding>(bindings(shop), binding(shop, 'web'));
    const second = await api.post(bindings(other), binding(other, 'web')).catch((err: unknown) => err);
    expect(refusal(second).statusCode).toBe(403);
    expect(refusal(second).message).toContain(`admission webhook "${TGB_VALIDATING_WEBHOOK.name}" denied the request`);
    expect(refusal(second).message).toContain(`already bound by ${shop}/web`);
    // The first one turns multi-cluster on (an update that adds sharing: allowed), then the second may bind it too.
    await api.patch(bindings(shop, first.metadata.name), { spec: { multiClusterTargetGroup: true } });
    await api.post(bindings(other), binding(other, 'web', { multiClusterTargetGroup: true }));
  });

  it('refuses a change of an immutable field and nodeSelector with ip targets, naming the field', async () => {
    await api.post(bindings(shop), binding(shop, 'api', { targetGroupARN: `${ARN}-api` }));
    const changed = await api
      .patch(bindings(shop, 'api'), { spec: { targetType: 'instance' } })
      .catch((err: unknown) => err);
    expect(refusal(changed).message).toContain('spec.targetType is immutable once set');
    const selecting = await api
      .post(
        bindings(shop),
        binding(shop, 'nodes', { targetGroupARN: `${ARN}-nodes`, nodeSelector: { matchLabels: { a: 'b' } } }),
      )
      .catch((err: unknown) => err);
    expect(refusal(selecting).message).toContain('spec.nodeSelector');
  });

  it('gates a new Pod of a labelled namespace on the IP bindings whose Service selects it', async () => {
    await api.post(path('api', 'v1', 'namespaces', plain, 'services'), {
      metadata: { name: 'web', namespace: plain },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    await api.post(bindings(plain), binding(plain, 'web', { targetGroupARN: `${ARN}-plain` }));
    await api.post(path('api', 'v1', 'namespaces', shop, 'services'), {
      metadata: { name: 'web', namespace: shop },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    const gated = await api.post<Pod>(path('api', 'v1', 'namespaces', shop, 'pods'), pod(shop, 'web-1'));
    // Both IP bindings of its namespace name that Service (shop/api was created above).
    expect(gated.spec?.readinessGates).toEqual([
      { conditionType: 'target-health.elbv2.k8s.aws/api' },
      { conditionType: 'target-health.elbv2.k8s.aws/web' },
    ]);
    // A namespace without the label is not sent to the webhook at all.
    const ungated = await api.post<Pod>(path('api', 'v1', 'namespaces', plain, 'pods'), pod(plain, 'web-1'));
    expect(ungated.spec?.readinessGates).toBeUndefined();
    expect(POD_READINESS_WEBHOOK.name).toBe('mpod.elbv2.k8s.aws');
  });

  it('the webhooks read the same bindings and Services over either client (in a Pod, and from a kubeconfig)', async () => {
    const access = lab();
    const rest = new RestTgbAdmissionReads(relay);
    const clientNode = new ClientNodeTgbAdmissionReads(
      tokenKubeConfig({ endpoint: access.url, caData: access.caData }, relayToken),
    );
    const ours = (bindings: TargetGroupBinding[]) =>
      bindings
        .filter((b) => [shop, other, plain].includes(b.metadata.namespace!))
        .map((b) => `${b.metadata.namespace}/${b.metadata.name}`)
        .sort();
    const all = ours(await rest.listTargetGroupBindings());
    expect(all).toContain(`${shop}/web`);
    expect(ours(await clientNode.listTargetGroupBindings())).toEqual(all);
    expect(ours(await clientNode.listTargetGroupBindings(shop))).toEqual(
      ours(await rest.listTargetGroupBindings(shop)),
    );
    const names = (services: { metadata: { name: string } }[]) => services.map((s) => s.metadata.name).sort();
    expect(names(await clientNode.listServices(shop))).toEqual(names(await rest.listServices(shop)));
    expect(names(await rest.listServices(shop))).toEqual(['web']);
  });
});
