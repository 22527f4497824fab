import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.ts';
import { KubernetesApiError } from '../../../shared/k8s/errors.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import { describeCertificate, issuerIn, splitBundle } from './certificates.ts';
import { SelfSignedTls, SelfSignedTlsError } from './self-signed-tls.ts';
import { FakeTlsStore } from './testing/fake-tls-store.ts';
import { CA_BUNDLE, NEXT_CERT, TLS_CERT, TLS_KEY } from './tls-store.ts';

const DAY = 24 * 60 * 60 * 1000;
const NAMES = [
  'serverless-ccm-relay-webhook.kube-system.svc',
  'serverless-ccm-relay-webhook.kube-system.svc.cluster.local',
];
const OPTIONS = { dnsNames: NAMES, lifetimeMs: 90 * DAY, renewFraction: 1 / 3, promoteAfterMs: 5 * 60 * 1000 };

function replica(store: FakeTlsStore, clock: FakeClock) {
  return new SelfSignedTls(OPTIONS, { store, clock, log: silentLog });
}

const signedBy = async (bundle: string, cert: string) => (await issuerIn(splitBundle(bundle), cert)) !== undefined;

describe('SelfSignedTls', () => {
  it('creates the CA and serving certificate in the Secret and writes the CA into every webhook', async () => {
    const store = new FakeTlsStore({ mutating: ['mpod.vpc.k8s.aws'], validating: ['vpod.vpc.k8s.aws'] });
    const clock = new FakeClock();
    const serving = await replica(store, clock).reconcile();

    const data = store.secret!.data;
    expect(serving).toEqual({ cert: data[TLS_CERT], key: data[TLS_KEY], caBundle: data[CA_BUNDLE] });
    expect(splitBundle(data[CA_BUNDLE]!)).toHaveLength(1);
    expect(await signedBy(data[CA_BUNDLE]!, data[TLS_CERT]!)).toBe(true);
    expect(describeCertificate(serving.cert)).toMatchObject({ dnsNames: NAMES, notAfter: clock.now() + 90 * DAY });
    expect(store.bundles.map((b) => [b.configuration, b.webhook, b.caBundle])).toEqual([
      ['MutatingWebhookConfiguration', 'mpod.vpc.k8s.aws', data[CA_BUNDLE]],
      ['ValidatingWebhookConfiguration', 'vpod.vpc.k8s.aws', data[CA_BUNDLE]],
    ]);
  });

  it('leaves a current certificate and written bundles alone', async () => {
    const store = new FakeTlsStore();
    const clock = new FakeClock();
    const first = await replica(store, clock).reconcile();
    clock.advance(59 * DAY); // more than a third of 90 days left
    const again = await replica(store, clock).reconcile();
    expect(again).toEqual(first);
    expect(store.calls).toMatchObject({ createSecret: 1, updateSecret: 0, setCaBundles: 1 });
  });

  it('settles a create race by reading the winner: both replicas serve the same certificate', async () => {
    const store = new FakeTlsStore();
    const clock = new FakeClock();
    const a = replica(store, clock);
    const b = replica(store, clock);
    let fromB: Awaited<ReturnType<SelfSignedTls['reconcile']>> | undefined;
    // B creates the Secret between A's read (none) and A's create.
    store.beforeNextWrite = () => {
      void b.reconcile().then((s) => {
        fromB = s;
      });
    };
    const fromA = await a.reconcile();
    await expect.poll(() => fromB).toBeDefined();
    expect(fromA.cert).toBe(fromB!.cert);
    expect(store.calls.createSecret).toBe(2);
    expect(store.secret!.data[TLS_CERT]).toBe(fromA.cert);
  });

  it('rotates in two steps: the new CA reaches every caBundle before the serving certificate switches', async () => {
    const store = new FakeTlsStore();
    const clock = new FakeClock();
    const a = replica(store, clock);
    const standby = replica(store, clock);
    const old = await a.reconcile();

    clock.advance(61 * DAY); // less than a third of 90 days left
    const during = await a.reconcile();
    // The intermediate state: the old certificate is still served, the bundle trusts both CAs.
    const bundle = store.secret!.data[CA_BUNDLE]!;
    const next = store.secret!.data[NEXT_CERT]!;
    expect(during.cert).toBe(old.cert);
    expect(splitBundle(bundle)).toHaveLength(2);
    expect(store.bundles.every((b) => b.caBundle === bundle)).toBe(true);
    expect(await signedBy(bundle, old.cert)).toBe(true);
    expect(await signedBy(bundle, next)).toBe(true);
    expect(await signedBy(old.caBundle, next)).toBe(false);
    // A standby reading now still gets the old certificate, which the written bundle trusts.
    expect((await standby.reconcile()).cert).toBe(old.cert);

    clock.advance(OPTIONS.promoteAfterMs);
    const after = await standby.reconcile();
    expect(after.cert).toBe(next);
    expect(store.secret!.data[NEXT_CERT]).toBeUndefined();
    // The old CA stays in the bundle: a replica that has not reloaded yet still serves the old certificate.
    expect(after.caBundle).toBe(bundle);
    expect((await a.reconcile()).cert).toBe(next);
    expect(describeCertificate(next).notAfter).toBe(clock.now() - OPTIONS.promoteAfterMs + 90 * DAY);

    // The next rotation drops the CA nothing is signed by any more.
    clock.advance(61 * DAY);
    await a.reconcile();
    const third = splitBundle(store.secret!.data[CA_BUNDLE]!);
    expect(third).toHaveLength(2);
    expect(await issuerIn(third, old.cert)).toBeUndefined();
    expect(await issuerIn(third, next)).toBeDefined();
  });

  it('replaces a certificate that does not name the Service', async () => {
    const store = new FakeTlsStore();
    const clock = new FakeClock();
    const old = await new SelfSignedTls(
      { ...OPTIONS, dnsNames: ['old.kube-system.svc'] },
      { store, clock, log: silentLog },
    ).reconcile();
    await replica(store, clock).reconcile();
    expect(store.secret!.data[TLS_CERT]).toBe(old.cert);
    clock.advance(OPTIONS.promoteAfterMs);
    const serving = await replica(store, clock).reconcile();
    expect(describeCertificate(serving.cert).dnsNames).toEqual(NAMES);
  });

  it('writes the bundle again when a webhook lost it (the configuration was re-applied)', async () => {
    const store = new FakeTlsStore();
    const clock = new FakeClock();
    const serving = await replica(store, clock).reconcile();
    store.bundles[1]!.caBundle = '';
    await replica(store, clock).reconcile();
    expect(store.bundles.map((b) => b.caBundle)).toEqual([serving.caBundle, serving.caBundle]);
  });

  it('reads again after a conflicting update, and gives up with the cause after other errors', async () => {
    const store = new FakeTlsStore();
    const clock = new FakeClock();
    await replica(store, clock).reconcile();
    clock.advance(61 * DAY);
    store.failNext('updateSecret', new KubernetesApiError(409, 'Conflict', 'modified'));
    await replica(store, clock).reconcile();
    expect(store.secret!.data[NEXT_CERT]).toBeDefined();

    store.failNext('getSecret', new KubernetesApiError(403, 'Forbidden', 'secrets is forbidden'));
    const failure = replica(store, clock).reconcile();
    await expect(failure).rejects.toThrow(SelfSignedTlsError);
    await expect(failure).rejects.toThrow('managing the webhook certificate: secrets is forbidden');
  });
});
