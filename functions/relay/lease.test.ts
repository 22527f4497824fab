import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../shared/clock.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { KubernetesRestClient } from '../../shared/k8s/rest-client.ts';
import { silentLog } from '../../shared/observability/log.ts';
import { ClientNodeLeases } from './client-node-leases.ts';
import { LeaderElector, type LeasePort, microTime } from './lease.ts';
import { RestLeases } from './rest-source.ts';
import {
  FakeCluster,
  type FakeKubeApi,
  kubeConfigFor,
  restConfigFor,
  startFakeKubeApi,
} from './testing/fake-kube-api.ts';
import { FakeLeaseStore } from './testing/fake-leases.ts';
import { until } from './testing/objects.ts';

/** Leader election with client-go's rules, against the in-memory store; the adapters against the HTTPS server. */

const TIMING = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 50 };
const electors: LeaderElector[] = [];

afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop(false)));
});

function candidate(
  identity: string,
  leases: LeasePort,
  options: Partial<typeof TIMING> = {},
  onStart: () => void = () => undefined,
) {
  const state = { leading: false, starts: 0, stops: 0 };
  const elector = new LeaderElector(
    { namespace: 'kube-system', name: 'relay', identity, ...TIMING, ...options },
    {
      leases,
      clock: systemClock,
      log: silentLog,
      onStartedLeading: () => {
        state.leading = true;
        state.starts++;
        onStart();
      },
      onStoppedLeading: () => {
        state.leading = false;
        state.stops++;
      },
    },
  );
  electors.push(elector);
  return { elector, state };
}

describe('LeaderElector', () => {
  it('creates the Lease when there is none, in the API form', async () => {
    const store = new FakeLeaseStore();
    const a = candidate('a', store);
    a.elector.start();
    await until(() => a.state.leading, 'a to lead');

    expect(store.peek('kube-system', 'relay')!.spec).toMatchObject({
      holderIdentity: 'a',
      leaseDurationSeconds: 1,
      leaseTransitions: 0,
      renewTime: expect.stringMatching(/\.\d{6}Z$/),
    });
    expect(a.elector.isLeader()).toBe(true);
  });

  it('of candidates starting together exactly one leads; the other waits while the holder renews', async () => {
    const store = new FakeLeaseStore();
    const all = ['a', 'b', 'c'].map((id) => candidate(id, store));
    for (const c of all) c.elector.start();
    await until(() => all.some((c) => c.state.leading), 'a leader');
    await new Promise((resolve) => setTimeout(resolve, TIMING.leaseDurationMs + 100));

    expect(all.filter((c) => c.state.leading)).toHaveLength(1);
    expect(all.reduce((n, c) => n + c.state.starts, 0)).toBe(1);
    expect(store.calls.create).toBeGreaterThanOrEqual(1);
  });

  it('a holder cut off stops leading at the renew deadline, before another can take over', async () => {
    const store = new FakeLeaseStore();
    const linkA = store.connect();
    const a = candidate('a', linkA.port);
    a.elector.start();
    await until(() => a.state.leading, 'a to lead');
    // The moment b starts leading, a must already consider itself no leader: its forwarding gate
    // (isLeader, by the clock, not by a timer that may fire late) has closed.
    let aLeaderWhenBStarted: boolean | undefined;
    const b = candidate('b', store, {}, () => {
      aLeaderWhenBStarted = a.elector.isLeader();
    });
    b.elector.start();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(b.state.leading).toBe(false);

    linkA.cut();
    await until(() => b.state.leading, 'b to take over', 3_000);

    expect(aLeaderWhenBStarted).toBe(false);
    await until(() => !a.state.leading, 'a to step down');
    expect(store.peek('kube-system', 'relay')!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });

    linkA.heal();
    await new Promise((resolve) => setTimeout(resolve, 3 * TIMING.retryPeriodMs));
    expect(a.state.leading).toBe(false);
  });

  it('releases the Lease on stop so a standby takes over at once', async () => {
    const store = new FakeLeaseStore();
    const a = candidate('a', store, { leaseDurationMs: 5_000, renewDeadlineMs: 3_000 });
    a.elector.start();
    await until(() => a.state.leading, 'a to lead');
    const b = candidate('b', store, { leaseDurationMs: 5_000, renewDeadlineMs: 3_000 });
    b.elector.start();
    await new Promise((resolve) => setTimeout(resolve, 100));

    const stoppedAt = Date.now();
    await a.elector.stop(true);
    expect(a.state).toMatchObject({ leading: false, stops: 1 });
    await until(() => b.state.leading, 'b to take over');
    expect(Date.now() - stoppedAt).toBeLessThan(1_000);
  });

  it('treats a Lease whose holder stopped renewing as free only after the lease duration on its own clock', async () => {
    const store = new FakeLeaseStore();
    // Written by a holder whose clock is an hour ahead: the timestamps must not matter.
    store.put({
      metadata: { name: 'relay', namespace: 'kube-system' },
      spec: { holderIdentity: 'gone', leaseDurationSeconds: 1, renewTime: microTime(Date.now() + 3_600_000) },
    });
    const a = candidate('a', store);
    const startedAt = Date.now();
    a.elector.start();
    await until(() => a.state.leading, 'a to take over', 3_000);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_000 - 20);
  });

  it('refuses timings where the renew deadline is not shorter than the lease', () => {
    expect(() => candidate('a', new FakeLeaseStore(), { renewDeadlineMs: 600 })).toThrow(/renewDeadline/);
  });
});

/** Both Lease adapters against the fake API server: the REST one of a relay in a Pod, client-node's from a kubeconfig. */
const LEASE_CLIENTS: [string, (api: FakeKubeApi) => LeasePort][] = [
  ['RestLeases', (api) => new RestLeases(new KubernetesRestClient(restConfigFor(api)))],
  ['ClientNodeLeases', (api) => new ClientNodeLeases(kubeConfigFor(api))],
];

describe.each(LEASE_CLIENTS)('%s', (_name, leasesFor) => {
  let api: FakeKubeApi | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('gets, creates and updates Leases, with 404 as undefined and 409 on a stale write', async () => {
    const cluster = new FakeCluster();
    api = await startFakeKubeApi(cluster);
    const leases = leasesFor(api);

    expect(await leases.get('kube-system', 'relay')).toBeUndefined();
    const now = Date.parse('2026-11-02T08:00:00.123Z');
    const created = await leases.create({
      metadata: { name: 'relay', namespace: 'kube-system' },
      spec: { holderIdentity: 'a', leaseDurationSeconds: 15, renewTime: microTime(now), acquireTime: microTime(now) },
    });
    expect(created.spec).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      renewTime: '2026-11-02T08:00:00.123000Z',
      acquireTime: '2026-11-02T08:00:00.123000Z',
    });
    const updated = await leases.update({ ...created, spec: { ...created.spec, holderIdentity: 'b' } });
    expect((await leases.get('kube-system', 'relay'))?.spec?.holderIdentity).toBe('b');

    await expect(leases.update({ ...created, spec: { holderIdentity: 'c' } })).rejects.toMatchObject({
      statusCode: 409,
      reason: 'Conflict',
    });
    await expect(leases.create(updated)).rejects.toBeInstanceOf(KubernetesApiError);
    const writes = api.requests.filter((r) => r.path.includes('/leases'));
    expect(writes.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/relay',
      'POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases',
      'PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/relay',
      'GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/relay',
      'PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/relay',
      'POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases',
    ]);
  });

  it('microTime has the six fractional digits the API server requires', () => {
    expect(microTime(Date.parse('2026-11-02T08:00:00Z'))).toBe('2026-11-02T08:00:00.000000Z');
  });
});
