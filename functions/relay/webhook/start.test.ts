import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import { Registry } from '../prometheus.ts';
import { MUTATING_WEBHOOK } from './names.ts';
import { type AdmissionWebhookSettings, type AdmissionWebhooks, startAdmissionWebhooks } from './start.ts';
import { FakeTlsStore } from './testing/fake-tls-store.ts';
import { post, review } from './testing/webhook.ts';

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
afterEach(async () => {
  await webhooks?.close();
  webhooks = undefined;
});

describe('startAdmissionWebhooks', () => {
  it('self-signed: serves a certificate for the Service that the caBundle it wrote trusts, and counts admissions', async () => {
    const store = new FakeTlsStore({ mutating: ['mpod.vpc.k8s.aws'], validating: ['vpod.vpc.k8s.aws'] });
    const registry = new Registry();
    webhooks = await startAdmissionWebhooks(SETTINGS, {
      tlsStore: () => store,
      log: silentLog,
      clock: new FakeClock(Date.now()),
      registry,
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
          },
        ),
      ).rejects.toThrow(`reading ${join(directory, 'tls.crt')}`);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
