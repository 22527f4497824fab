import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.ts';
import type { KubernetesRestClient, RestRequest } from '../../../shared/k8s/rest-client.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import type { ListWatchSource } from '../kube-source.ts';
import { Registry } from '../prometheus.ts';
import { MUTATING_WEBHOOK, POD_READINESS_WEBHOOK, TGB_VALIDATING_WEBHOOK } from './names.ts';
import { type AdmissionWebhookSettings, type AdmissionWebhooks, startAdmissionWebhooks } from './start.ts';
import { FakeTgbAdmissionReads } from './testing/fake-tgb-reads.ts';
import { FakeTlsStore } from './testing/fake-tls-store.ts';
import { post, review } from './testing/webhook.ts';
import { RestTgbAdmissionReads } from './tgb-admission-reads.ts';

/** The TargetGroupBinding webhooks as the relay process starts them, beside the IPAM pair or alone. */

const SETTINGS: AdmissionWebhookSettings = {
  port: 0,
  host: '127.0.0.1',
  mode: 'self-signed',
  namespace: 'kube-system',
  service: 'serverless-ccm-relay-webhook',
  secret: 'serverless-ccm-webhook-tls',
  configuration: 'serverless-ccm-ipam-webhook',
  ipam: false,
  tgb: { configuration: 'serverless-ccm-tgb-webhook' },
  certDir: '/nonexistent',
  controllerUsernames: ['system:serviceaccount:kube-system:serverless-ccm'],
  refreshMs: 60_000,
  pollMs: 60_000,
};

const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef';
const SERVER_NAME = 'serverless-ccm-relay-webhook.kube-system.svc';

/** A list and watch client that must not be used: without the IPAM pair nothing is watched. */
const UNUSED_SOURCE: ListWatchSource = {
  list: () => Promise.reject(new Error('the IPAM switch listed although the IPAM webhooks are off')),
  watch: () => Promise.reject(new Error('the IPAM switch watched although the IPAM webhooks are off')),
};

let webhooks: AdmissionWebhooks | undefined;
afterEach(async () => {
  await webhooks?.close();
  webhooks = undefined;
});

function stores() {
  const byName = new Map([
    [
      'serverless-ccm-ipam-webhook',
      new FakeTlsStore({ mutating: ['mpod.vpc.k8s.aws'], validating: ['vpod.vpc.k8s.aws'] }),
    ],
    [
      'serverless-ccm-tgb-webhook',
      new FakeTlsStore({ mutating: ['mpod.elbv2.k8s.aws'], validating: ['vtargetgroupbinding.elbv2.k8s.aws'] }),
    ],
  ]);
  return { byName, tlsStore: (name: string) => byName.get(name)! };
}

describe('startAdmissionWebhooks: the TargetGroupBinding pair', () => {
  it('alone: serves both webhooks, writes the CA into their configurations only, and watches nothing', async () => {
    const { byName, tlsStore } = stores();
    const reads = new FakeTgbAdmissionReads();
    reads.bindings.push({
      metadata: { namespace: 'shop', name: 'web' },
      spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: ARN },
    });
    const registry = new Registry();
    webhooks = await startAdmissionWebhooks(SETTINGS, {
      tlsStore,
      tgbReads: () => reads,
      log: silentLog,
      clock: new FakeClock(Date.now()),
      registry,
      source: UNUSED_SOURCE,
    });
    await webhooks.ready;
    const tgb = byName.get('serverless-ccm-tgb-webhook')!;
    const caBundle = tgb.bundles[0]!.caBundle;
    expect(caBundle).toContain('BEGIN CERTIFICATE');
    expect(tgb.bundles.every((b) => b.caBundle === caBundle)).toBe(true);
    expect(byName.get('serverless-ccm-ipam-webhook')!.bundles.every((b) => b.caBundle === '')).toBe(true);

    const second = {
      metadata: { namespace: 'other', name: 'web' },
      spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: ARN },
    };
    const refused = await post(
      webhooks.port()!,
      TGB_VALIDATING_WEBHOOK.path,
      review({ uid: 'u1', operation: 'CREATE', namespace: 'other', name: 'web', object: second }),
      { ca: caBundle, servername: SERVER_NAME },
    );
    expect(JSON.parse(refused.body).response).toMatchObject({ uid: 'u1', allowed: false });
    expect(JSON.parse(refused.body).response.status.message).toContain('already bound by shop/web');

    const ungated = await post(
      webhooks.port()!,
      POD_READINESS_WEBHOOK.path,
      review({ uid: 'u2', operation: 'CREATE', namespace: 'shop', object: { metadata: { labels: { app: 'x' } } } }),
      { ca: caBundle, servername: SERVER_NAME },
    );
    expect(JSON.parse(ungated.body).response).toEqual({ uid: 'u2', allowed: true });
    // The IPAM pair is not served.
    const ipam = await post(webhooks.port()!, MUTATING_WEBHOOK.path, review({ uid: 'u3', operation: 'CREATE' }), {
      ca: caBundle,
      servername: SERVER_NAME,
    });
    expect(ipam.status).toBe(404);
    const metrics = registry.render();
    expect(metrics).toContain('relay_admissions_total{webhook="vtargetgroupbinding.elbv2.k8s.aws",result="denied"} 1');
    expect(metrics).toContain('relay_admissions_total{webhook="mpod.elbv2.k8s.aws",result="allowed"} 1');
    expect(metrics).not.toContain('relay_windows_ipam_enabled');
  });

  it('beside the IPAM pair: one certificate, its CA in the configurations of both', async () => {
    const { byName, tlsStore } = stores();
    webhooks = await startAdmissionWebhooks(
      { ...SETTINGS, ipam: true },
      {
        tlsStore,
        tgbReads: () => new FakeTgbAdmissionReads(),
        log: silentLog,
        clock: new FakeClock(Date.now()),
        // The IPAM switch lists (and fails here): the webhooks still start, reading IPAM as off.
        source: { ...UNUSED_SOURCE, list: () => Promise.reject(new Error('no API server in this test')) },
      },
    );
    await webhooks.ready;
    const bundles = [...byName.values()].flatMap((store) => store.bundles);
    expect(bundles).toHaveLength(4);
    expect(new Set(bundles.map((b) => b.caBundle)).size).toBe(1);
    expect(bundles[0]!.caBundle).toContain('BEGIN CERTIFICATE');
    // One Secret: the first pair's store holds it.
    expect(byName.get('serverless-ccm-ipam-webhook')!.secret).toBeDefined();
    expect(byName.get('serverless-ccm-tgb-webhook')!.calls.createSecret).toBe(0);
  });

  it('refuses to start the pair without a client for its lists, or with no webhook at all', async () => {
    const { tlsStore } = stores();
    const deps = { tlsStore, log: silentLog, clock: new FakeClock(Date.now()), source: UNUSED_SOURCE };
    await expect(startAdmissionWebhooks(SETTINGS, deps)).rejects.toThrow('need a client to list');
    const { tgb: _tgb, ...none } = SETTINGS;
    await expect(startAdmissionWebhooks(none, deps)).rejects.toThrow('no admission webhooks to serve');
  });
});

describe('RestTgbAdmissionReads', () => {
  function client(pages: Record<string, unknown[]>) {
    const requests: RestRequest[] = [];
    const fake = {
      send: async (req: RestRequest) => {
        requests.push(req);
        const queue = pages[req.path];
        if (!queue?.length) throw Object.assign(new Error(`unexpected ${req.path}`));
        const next = queue.shift();
        if (next instanceof Error) throw next;
        return next;
      },
    };
    return { requests, reads: new RestTgbAdmissionReads(fake as unknown as KubernetesRestClient) };
  }

  it('lists bindings of every namespace or one, and a namespace Services, page by page', async () => {
    const { requests, reads } = client({
      '/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings': [
        { items: [{ metadata: { name: 'a' } }], metadata: { continue: 'next' } },
        { items: [{ metadata: { name: 'b' } }], metadata: {} },
      ],
      '/apis/elbv2.k8s.aws/v1beta1/namespaces/shop/targetgroupbindings': [{ items: null }],
      '/api/v1/namespaces/shop/services': [{ items: [{ metadata: { name: 'web' } }] }],
    });
    expect((await reads.listTargetGroupBindings()).map((b) => b.metadata.name)).toEqual(['a', 'b']);
    expect(await reads.listTargetGroupBindings('shop')).toEqual([]);
    expect((await reads.listServices('shop')).map((s) => s.metadata.name)).toEqual(['web']);
    expect(requests.map((r) => [r.method, r.path, r.query])).toEqual([
      ['GET', '/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings', { limit: 500, continue: undefined }],
      ['GET', '/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings', { limit: 500, continue: 'next' }],
      ['GET', '/apis/elbv2.k8s.aws/v1beta1/namespaces/shop/targetgroupbindings', { limit: 500, continue: undefined }],
      ['GET', '/api/v1/namespaces/shop/services', { limit: 500, continue: undefined }],
    ]);
  });

  it('answers no bindings when the CRD is not installed (404), and passes other errors on', async () => {
    const { KubernetesApiError } = await import('../../../shared/k8s/errors.ts');
    const { reads } = client({
      '/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings': [
        new KubernetesApiError(404, 'NotFound', 'the server could not find the requested resource'),
        new KubernetesApiError(403, 'Forbidden', 'targetgroupbindings is forbidden'),
      ],
    });
    expect(await reads.listTargetGroupBindings()).toEqual([]);
    await expect(reads.listTargetGroupBindings()).rejects.toThrow('forbidden');
  });
});
