import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IPV4_RESOURCE, POD_IP_ANNOTATION } from '../../../shared/k8s/ipam-names.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import { Counter } from '../prometheus.ts';
import { readKeyPair, watchCertificateDirectory } from './cert-directory.ts';
import { describeCertificate, type IssuedCertificate, issueCertificate, joinBundle } from './certificates.ts';
import { mutatePod } from './mutate-pod.ts';
import { MUTATING_WEBHOOK, VALIDATING_WEBHOOK } from './names.ts';
import { type AdmissionCounter, startWebhookServer, type WebhookServer } from './server.ts';
import { eventually, post, review } from './testing/webhook.ts';
import { ControllerIdentities, validatePod } from './validate-pod.ts';

const NAME = 'serverless-ccm-relay-webhook.kube-system.svc';
/** Windows IPAM on: the webhooks act (ipam-switch.ts). */
const IPAM_ON = { enabled: async () => true };
const DAY = 24 * 60 * 60 * 1000;
const issue = (lifetimeMs = 30 * DAY) => issueCertificate({ dnsNames: [NAME], now: Date.now(), lifetimeMs });

let server: WebhookServer | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const c of cleanups.splice(0)) c();
});

async function start(tls: IssuedCertificate, admissions?: AdmissionCounter) {
  server = await startWebhookServer({
    port: 0,
    host: '127.0.0.1',
    tls,
    log: silentLog,
    admissions,
    webhooks: [
      { ...MUTATING_WEBHOOK, handle: (r) => mutatePod(r, IPAM_ON) },
      { ...VALIDATING_WEBHOOK, handle: (r) => validatePod(r, new ControllerIdentities(['ccm']), IPAM_ON) },
    ],
  });
  return server;
}

const windowsPod = { spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'a' }] } };

describe('webhook HTTPS server', () => {
  it('answers an AdmissionReview over TLS with the patch, and counts it', async () => {
    const tls = await issue();
    const admissions: AdmissionCounter = new Counter('relay_admissions_total', 'test', ['webhook', 'result']);
    const { port } = await start(tls, admissions);

    const answer = await post(
      port,
      MUTATING_WEBHOOK.path,
      review({ uid: 'u-1', operation: 'CREATE', object: windowsPod }),
      {
        ca: tls.ca,
        servername: NAME,
      },
    );
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.body);
    expect(body).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: true, patchType: 'JSONPatch' },
    });
    expect(JSON.parse(Buffer.from(body.response.patch, 'base64').toString())).toEqual([
      {
        op: 'add',
        path: '/spec/containers/0/resources',
        value: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } },
      },
    ]);

    const refused = await post(
      port,
      VALIDATING_WEBHOOK.path,
      review({
        uid: 'u-2',
        operation: 'CREATE',
        userInfo: { username: 'bob' },
        object: { metadata: { annotations: { [POD_IP_ANNOTATION]: '10.0.0.1/24' } } },
      }),
      { ca: tls.ca, servername: NAME },
    );
    expect(JSON.parse(refused.body).response).toMatchObject({ uid: 'u-2', allowed: false, status: { code: 403 } });
    expect(admissions.get({ webhook: 'mpod.vpc.k8s.aws', result: 'patched' })).toBe(1);
    expect(admissions.get({ webhook: 'vpod.vpc.k8s.aws', result: 'denied' })).toBe(1);
  });

  it('answers a malformed review with 400 naming the problem, and an unknown path with 404', async () => {
    const tls = await issue();
    const admissions: AdmissionCounter = new Counter('relay_admissions_total', 'test', ['webhook', 'result']);
    const { port } = await start(tls, admissions);
    const bad = await post(port, MUTATING_WEBHOOK.path, JSON.stringify({ kind: 'AdmissionReview' }), {
      ca: tls.ca,
      servername: NAME,
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('apiVersion must be admission.k8s.io/v1');
    expect(admissions.get({ webhook: 'mpod.vpc.k8s.aws', result: 'malformed' })).toBe(1);
    expect((await post(port, '/nope', '{}', { ca: tls.ca, servername: NAME })).status).toBe(404);
  });

  it('is not trusted by a client that does not trust its CA', async () => {
    const tls = await issue();
    const other = await issue();
    const { port } = await start(tls);
    await expect(post(port, MUTATING_WEBHOOK.path, '{}', { ca: other.ca, servername: NAME })).rejects.toThrow();
  });

  it('serves a new certificate after setCertificate, and keeps the old one when the pair does not fit', async () => {
    const first = await issue(30 * DAY);
    const second = await issue(60 * DAY);
    const webhooks = await start(first);
    // A client trusting both CAs, as the caBundle does during a rotation.
    const both = { ca: joinBundle([first.ca, second.ca]), servername: NAME };
    const served = async () => (await post(webhooks.port, '/nope', '', both)).servedNotAfter;
    expect(await served()).toBe(describeCertificate(first.cert).notAfter);

    expect(() => webhooks.setCertificate({ cert: second.cert, key: first.key })).toThrow();
    expect(await served()).toBe(describeCertificate(first.cert).notAfter);

    webhooks.setCertificate(second);
    expect(await served()).toBe(describeCertificate(second.cert).notAfter);
  });
});

describe('cert-manager certificate directory', () => {
  it('reloads the served certificate when the mounted files change', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const first = await issue();
    const second = await issue();
    writeFileSync(join(directory, 'tls.crt'), first.cert);
    writeFileSync(join(directory, 'tls.key'), first.key);
    const initial = readKeyPair(directory);
    const webhooks = await start({ ...first, ...initial });
    const watch = watchCertificateDirectory(directory, initial, (pair) => webhooks.setCertificate(pair), {
      pollMs: 50,
      log: silentLog,
    });
    cleanups.push(() => watch.stop());

    const trusts = async (ca: string) =>
      post(webhooks.port, '/nope', '', { ca, servername: NAME }).then(
        () => true,
        () => false,
      );
    expect(await trusts(first.ca)).toBe(true);
    // The key first: for a moment the files do not fit together, and the old pair keeps being served.
    writeFileSync(join(directory, 'tls.key'), second.key);
    watch.check();
    expect(await trusts(first.ca)).toBe(true);
    writeFileSync(join(directory, 'tls.crt'), second.cert);
    // Picked up by the directory watch or the next poll; no check() call here.
    await eventually(() => trusts(second.ca), 'the new certificate served');
    expect(await trusts(first.ca)).toBe(false);
  });

  it('names the missing file', () => {
    const directory = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    expect(() => readKeyPair(directory)).toThrow(`reading ${join(directory, 'tls.crt')}`);
  });
});
