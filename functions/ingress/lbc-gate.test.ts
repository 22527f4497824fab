import { beforeEach, describe, expect, it } from 'vitest';
import { type GroupId, groupKey } from '../../shared/ingress/membership.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { LBC_ACTIVE_REASON, LBC_GATE_REQUEUES, LBC_LEASE, LBC_RECHECK_SECONDS } from '../../shared/k8s/lbc-lease.ts';
import { ingressGarbageCollectionMessage } from '../../shared/queue/ingress-gc-key.ts';
import type { ReconcileContext } from '../../shared/queue/runner.ts';
import { createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';
import { ingressReconciler } from './reconciler.ts';

/**
 * The Lease gate (docs/adr/0016-taking-over-from-the-reference-controller.md): while the AWS Load Balancer Controller
 * holds its leader Lease, an IngressGroup's pass does nothing in AWS or on its Ingresses but tell every member why,
 * and the work starts by itself once the Lease expires.
 */

let w: IngressWorld;
const SHOP: GroupId = { explicit: true, name: 'shop' };
const REFERENCE = 'aws-load-balancer-controller-7d9f_1a2b';
const context = (receiveCount = 1): ReconcileContext => ({ hints: [], payloads: [], receiveCount });

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  w.kube.putService(makeService({ name: 'web' }));
  w.kube.putService(
    makeService({
      name: 'api',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 9090, nodePort: 30090 }],
    }),
  );
  for (const [name, service, p] of [
    ['web', 'web', '/'],
    ['api', 'api', '/api'],
  ] as const) {
    w.ingresses.putIngress(
      makeIngress({
        name,
        annotations: { 'group.name': 'shop', scheme: 'internet-facing' },
        rules: [rule('shop.example.com', path(p, 'Prefix', backend(service, 80)))],
      }),
    );
  }
});

const gateWarnings = (name: string) => w.eventsOf(name, LBC_ACTIVE_REASON);

describe('an IngressGroup while the reference controller holds its leader Lease', () => {
  it('writes nothing: no AWS call, no finalizer, no status; a Warning on every member naming the holder', async () => {
    w.kube.workloads.leases.holdLbcLease(REFERENCE, { durationSeconds: 15 });
    const elbv2Calls = w.elbv2.callCount();
    const ec2Calls = w.ec2.callCount();

    const result = await ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, context());

    expect(result).toEqual({ requeueAfterSeconds: LBC_RECHECK_SECONDS });
    expect(w.elbv2.callCount() - elbv2Calls).toBe(0);
    expect(w.ec2.callCount() - ec2Calls).toBe(0);
    expect(w.loadBalancers()).toEqual([]);
    for (const name of ['web', 'api']) {
      expect(w.ingress(name)!.metadata.finalizers ?? []).toEqual([]);
      expect(w.hostname(name)).toBeUndefined();
      expect(gateWarnings(name)).toEqual([
        expect.stringContaining(
          `holds its leader Lease ${LBC_LEASE.namespace}/${LBC_LEASE.name} (holder ${REFERENCE})`,
        ),
      ]);
    }
    // The only Kubernetes writes are the two Events.
    expect(w.kube.callCount('getLease')).toBe(1);
    expect(w.kube.eventsFor('Ingress', 'web').filter((e) => e.reason !== LBC_ACTIVE_REASON)).toEqual([]);
  });

  it('starts the work by itself once the Lease expires: the requeued key builds the group', async () => {
    w.kube.workloads.leases.holdLbcLease(REFERENCE, { durationSeconds: 15 });
    const start = w.clock.now();
    await w.converge([SHOP]);

    const lbs = w.loadBalancers();
    expect(lbs).toHaveLength(1);
    for (const name of ['web', 'api']) {
      expect(gateWarnings(name)).toHaveLength(1);
      expect(w.hostname(name)).toBe(lbs[0]!.dnsName.toLowerCase());
      expect(w.eventsOf(name, 'SuccessfullyReconciled').length).toBeGreaterThan(0);
    }
    // The pass that built it came a recheck later, the Lease expired by then.
    expect(w.clock.now() - start).toBeGreaterThanOrEqual(LBC_RECHECK_SECONDS * 1000);
  });

  it('waits as long as the reference renews it, and goes ahead at once when it releases it on shutdown', async () => {
    for (let look = 1; look <= 3; look++) {
      w.kube.workloads.leases.holdLbcLease(REFERENCE, { durationSeconds: 15 });
      await ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, context(look));
      w.clock.advance(LBC_RECHECK_SECONDS * 1000);
    }
    expect(w.loadBalancers()).toEqual([]);
    expect(gateWarnings('web')).toHaveLength(3);

    w.kube.workloads.leases.releaseLbcLease();
    await ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, context(4));
    expect(w.loadBalancers()).toHaveLength(1);
  });

  it('waits for a Lease whose holder renews less often than the recheck: until its own expiry', async () => {
    w.kube.workloads.leases.holdLbcLease(REFERENCE, { durationSeconds: 300 });
    const result = await ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, context());
    expect(result).toEqual({ requeueAfterSeconds: 301 });
  });

  it('lets the key go after a bounded number of requeues, so a long-running reference never fills the DLQ', async () => {
    w.kube.workloads.leases.holdLbcLease(REFERENCE, { durationSeconds: 15 });
    const early = await ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, context(1));
    const late = await ingressReconciler.reconcile(
      groupKey(SHOP),
      w.ingressDeps,
      undefined,
      context(LBC_GATE_REQUEUES),
    );
    expect(early).toEqual({ requeueAfterSeconds: LBC_RECHECK_SECONDS });
    expect(late).toBeUndefined();
    expect(w.loadBalancers()).toEqual([]);
  });

  it('holds the garbage collection too, with no Event', async () => {
    await w.converge([SHOP]);
    const arn = w.loadBalancers()[0]!.arn;
    // Both Ingresses go while the reference runs: nothing of the group is deleted, not even by the collector.
    w.kube.workloads.leases.holdLbcLease(REFERENCE, { durationSeconds: 15 });
    const events = w.kube.eventsFor('Ingress', 'web').length;
    const gc = ingressGarbageCollectionMessage({ eventType: 'RESYNC', eventId: 'r1' });
    const result = await ingressReconciler.reconcile(gc, w.ingressDeps, undefined, context());
    expect(result).toEqual({ requeueAfterSeconds: LBC_RECHECK_SECONDS });
    expect(w.loadBalancers().map((l) => l.arn)).toEqual([arn]);
    expect(w.kube.eventsFor('Ingress', 'web')).toHaveLength(events);
  });

  it('never takes an unreadable Lease as free: the key fails and is retried, nothing written', async () => {
    w.kube.queueError('getLease', new KubernetesApiError(403, 'Forbidden', 'leases.coordination.k8s.io is forbidden'));
    await expect(ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, context())).rejects.toThrow(
      /reading the AWS Load Balancer Controller leader Lease/,
    );
    expect(w.elbv2.callCount()).toBe(0);
    expect(w.ingress('web')!.metadata.finalizers ?? []).toEqual([]);
  });

  it('reads no Lease and writes no Warning when it does not exist', async () => {
    await w.converge([SHOP]);
    expect(w.loadBalancers()).toHaveLength(1);
    expect(gateWarnings('web')).toEqual([]);
    expect(w.kube.callCount('getLease')).toBeGreaterThan(0);
  });
});
