import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import { restClients } from '../kube-clients.ts';
import { Registry } from '../prometheus.ts';
import { FakeCluster, type FakeKubeApi, restConfigFor, startFakeKubeApi } from '../testing/fake-kube-api.ts';
import { makeVpcCniConfigMap } from '../testing/objects.ts';
import { MUTATING_WEBHOOK } from './names.ts';
import { type AdmissionWebhookSettings, type AdmissionWebhooks, startAdmissionWebhooks } from './start.ts';
import { FakeTlsStore } from './testing/fake-tls-store.ts';
import { eventually, post, review } from './testing/webhook.ts';

/** The webhooks as the relay process starts them (functions/relay/main.ts), in each TLS mode. */

const SETTINGS: AdmissionWebhookSettings = {
  port: 0,
  host: '127.0.0.1',
  mode: 'self-signed',
  namespace: 'kube-system',
  service: 'serverless-ccm-relay-webhook',
  secret: 'serverless-ccm-webhook-tls',
  configuration: 'serverless-ccm-ipam-webhook',
  certDir: '/nonexistent',
  controllerUsernames: ['system:serviceaccount:kube-system:serverless-ccm'],
  refreshMs: 60_000,
  pollMs: 60_000,
};

let webhooks: AdmissionWebhooks | undefined;
let api: FakeKubeApi | undefined;
afterEach(async () => {
  await webhooks?.close();
  webhooks = undefined;
  await api?.close();
  api = undefined;
});

/** The relay's list and watch client on an API server holding the VPC CNI ConfigMap (IPAM on). */
async function source() {
  const cluster = new FakeCluster();
  cluster.apply('ConfigMap', makeVpcCniConfigMap());
  api = await startFakeKubeApi(cluster);
  return restClients(restConfigFor(api)).source;
}

describe('startAdmissionWebhooks', () => {
  it('self-signed: serves a certificate for the Service that the caBundle it wrote trusts, and counts admissions', async () => {
    const store = new FakeTlsStore({ mutating: ['mpod.vpc.k8s.aws'], validating: ['vpod.vpc.k8s.aws'] });
    const registry = new Registry();
    webhooks = await startAdmissionWebhooks(SETTINGS, {
      tlsStore: () => store,
      log: silentLog,
      clock: new FakeClock(Date.now()),
      registry,
      source: await source(),
    });
    await webhooks.ready;
    const caBundle = store.bundles[0]!.caBundle;
    expect(caBundle).toContain('BEGIN CERTIFICATE');
    const answer = await post(
      webhooks.port()!,
      MUTATING_WEBHOOK.path,
      review({ uid: 'u', operation: 'CREATE', object: { spec: { containers: [{ name: 'a' }] } } }),
      { ca: caBundle, servername: 'serverless-ccm-relay-webhook.kube-system.svc' },
    );
    expect(JSON.parse(answer.body).response).toEqual({ uid: 'u', allowed: true });
    expect(registry.render()).toContain('relay_admissions_total{webhook="mpod.vpc.k8s.aws",result="allowed"} 1');
    await eventually(async () => registry.render().includes('relay_windows_ipam_enabled 1'), 'the IPAM switch on');
  });

  it('cert-manager: refuses to start without the mounted certificate, naming the file', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    try {
      await expect(
        startAdmissionWebhooks(
          { ...SETTINGS, mode: 'cert-manager', certDir: directory },
          {
            // cert-manager mode never reads or writes the Secret.
            tlsStore: () => {
              throw new Error('no TLS store in cert-manager mode');
            },
            log: silentLog,
            clock: new FakeClock(),
            source: await source(),
          },
        ),
      ).rejects.toThrow(`reading ${join(directory, 'tls.crt')}`);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
