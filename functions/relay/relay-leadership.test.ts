import { afterEach, describe, expect, it } from 'vitest';
import type { Node } from '../../shared/k8s/types.ts';
import { keysOn, RecordingSqs, reconcilerQueues, setReady, until } from './testing/objects.ts';
import { cluster, N1, relayFor, serve, settled, start, stopStarted } from './testing/relay.ts';

/**
 * The relay's leadership end to end: two replicas on one Lease, and a LeaderMigrationConfiguration
 * holding keys while another controller manager holds the migration lock.
 */

afterEach(stopStarted);

describe('relay: high availability', () => {
  const election = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 };

  it('two relays on one Lease never forward at once; the standby takes over within the lease duration', async () => {
    const c = cluster();
    const api = await serve(c);
    const shared = reconcilerQueues();
    const sqsA = new RecordingSqs(shared.sqs, 'a');
    const sqsB = new RecordingSqs(shared.sqs, 'b');
    const queues = { 'node-lifecycle': shared.urls['node-lifecycle'] };
    const a = start(relayFor(api, sqsA, queues, { identity: 'a', token: 'token-a', election }));
    await until(() => a.status().leader && a.status().synced, 'a to lead');
    const b = start(relayFor(api, sqsB, queues, { identity: 'b', token: 'token-b', election }));
    await until(() => b.status().ready, 'b to be ready as a standby');

    // Changes keep coming; a keeps forwarding, b watches nothing.
    let flips = 0;
    const churn = setInterval(() => c.mutate<Node>('Node', N1, (n) => setReady(n, flips++ % 2 === 0)), 20);
    try {
      await until(() => sqsA.sends.length >= 5, 'a to forward');
      expect(sqsB.sends).toHaveLength(0);
      expect(api.requests.filter((r) => r.token === 'token-b' && r.kind)).toHaveLength(0);

      // a is cut off from the Lease (not from the rest): it must stop before b starts.
      api.cut('token-a', '/apis/coordination.k8s.io');
      const cutAt = Date.now();
      await until(() => b.status().leader, 'b to take over', 3_000);
      const tookOver = Date.now() - cutAt;
      await until(() => sqsB.sends.length >= 3, 'b to forward');
      expect(a.status().leader).toBe(false);
      // Within the lease duration of a's last renew, plus b's retry period and jitter.
      expect(tookOver).toBeLessThan(election.leaseDurationMs + 2 * election.retryPeriodMs + 200);

      // a heals and stays a standby: b keeps renewing.
      api.heal('token-a');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(a.status().leader).toBe(false);

      // b stops gracefully and releases the Lease: a takes over at its next attempt, well before it would expire.
      const stoppedAt = Date.now();
      await b.stop(1_000);
      await until(() => a.status().leader, 'a to take over again', 3_000);
      expect(Date.now() - stoppedAt).toBeLessThan(election.leaseDurationMs);
      await until(() => sqsA.sends.some((s) => s.at > stoppedAt), 'a to forward again');
    } finally {
      clearInterval(churn);
    }

    // Never both: every send of one relay is before or after every send of the other, per term.
    const timeline = [...sqsA.sends, ...sqsB.sends].sort((x, y) => x.at - y.at).map((s) => s.who);
    const terms = timeline.filter((who, i) => i === 0 || timeline[i - 1] !== who);
    expect(terms).toEqual(['a', 'b', 'a']);
    const lease = c.leases.peek('kube-system', 'serverless-ccm-relay')!;
    expect(lease.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 2 });
  });
});

describe('relay: leader migration', () => {
  it('holds the keys of controllers whose migration lock another component holds, and sends them all once it is free', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const now = Date.now();
    c.leases.put({
      metadata: { name: 'cloud-provider-extraction-migration', namespace: 'kube-system' },
      spec: {
        holderIdentity: 'master-1_4b0f',
        leaseDurationSeconds: 1,
        renewTime: new Date(now).toISOString().replace('Z', '000Z'),
      },
    });
    const relay = start(
      relayFor(api, sqs, urls, {
        migration: {
          component: 'cloud-controller-manager',
          pollMs: 50,
          config: {
            apiVersion: 'controllermanager.config.k8s.io/v1',
            kind: 'LeaderMigrationConfiguration',
            leaderName: 'cloud-provider-extraction-migration',
            controllerLeaders: [
              { name: 'route', component: 'cloud-controller-manager' },
              { name: 'service', component: '*' },
              { name: 'cloud-node-lifecycle', component: 'kube-controller-manager' },
            ],
          },
        },
      }),
    );
    await settled(relay, c);

    // cloud-node is not migrating; route and service wait for the lock; lifecycle belongs to kube-controller-manager.
    expect(keysOn(sqs, 'node')).toHaveLength(2);
    expect(keysOn(sqs, 'ipam')).toHaveLength(1);
    expect(keysOn(sqs, 'route')).toHaveLength(0);
    expect(keysOn(sqs, 'service')).toHaveLength(0);
    expect(keysOn(sqs, 'node-lifecycle')).toHaveLength(0);
    expect(relay.metrics.changesFiltered.get({ kind: 'Service', reason: 'held' })).toBe(2);

    // kube-controller-manager stops renewing (it was upgraded away): after the lease duration the lock is free.
    await until(() => keysOn(sqs, 'service').length === 2, 'the held Service keys', 4_000);
    await until(() => keysOn(sqs, 'route').length >= 1, 'the held route key');
    expect(keysOn(sqs, 'service').map((k) => k.hint?.eventType)).toEqual(['RESYNC', 'RESYNC']);
    expect(keysOn(sqs, 'node-lifecycle')).toHaveLength(0);
    expect(relay.metrics.migrationHeld.get({ reconciler: 'node-lifecycle' })).toBe(1);
    expect(relay.metrics.migrationHeld.get({ reconciler: 'service' })).toBe(0);
  });
});
