import { beforeEach, describe, expect, it } from 'vitest';
import { LBC_ACTIVE_REASON, LBC_GATE_REQUEUES, LBC_RECHECK_SECONDS } from '../../shared/k8s/lbc-lease.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { createServiceWorld, SERVICE_QUEUE_ARN, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { serviceReconciler } from './reconciler.ts';
import { lbcWorld, putLbcService } from './testing/lbc.ts';
import { serviceTesting } from './testing/service.ts';

/**
 * While a running AWS Load Balancer Controller holds its leader Lease, its Services are left to it: a Warning says why,
 * the key comes back later, and nothing is written, in AWS or on the Service. In-tree Services are not held back.
 */

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
beforeEach(() => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  w.addNode(1);
});
const { service, eventsOf } = serviceTesting(() => w);
const leases = () => w.kube.workloads.leases;

describe('the reference holds its Lease', () => {
  it('a Warning, a requeue, and nothing written', async () => {
    leases().holdLbcLease('aws-load-balancer-controller-6b7f_0a1b');
    putLbcService(w);
    w.resetCounters();

    const result = await lbc.pass();

    expect(result.batchItemFailures).toHaveLength(1);
    expect(w.metrics.total(MetricName.Requeues)).toBe(1);
    expect(w.metrics.total(MetricName.ServicesSkipped)).toBe(1);
    expect(eventsOf(LBC_ACTIVE_REASON)).toEqual([
      expect.stringContaining('holder aws-load-balancer-controller-6b7f_0a1b'),
    ]);
    expect(w.awsWrites()).toBe(0);
    expect(w.awsCalls()).toBe(0);
    expect(service().metadata.finalizers ?? []).toEqual([]);
    expect(w.elbv2.loadBalancers.size).toBe(0);
  });

  it('the work starts by itself once the Lease expires', async () => {
    leases().holdLbcLease('aws-load-balancer-controller-6b7f_0a1b', { durationSeconds: 15 });
    putLbcService(w);
    await lbc.pass();
    expect(w.elbv2.loadBalancers.size).toBe(0);

    // The requeue comes back after the recheck: by then the holder stopped renewing.
    w.clock.advance(LBC_RECHECK_SECONDS * 1000);
    await lbc.converge();

    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(service().metadata.finalizers).toEqual(['service.k8s.aws/resources']);
  });

  it('a key requeued LBC_GATE_REQUEUES times is let go (the resync brings it back), never walked into the DLQ', async () => {
    leases().holdLbcLease('aws-load-balancer-controller-6b7f_0a1b');
    putLbcService(w);
    const key = { kind: 'Service' as const, namespace: 'default', name: 'web' };
    const at = (receiveCount: number) =>
      w.invoke(serviceReconciler, lbc.deps, [fifoRecord(key, { queueArn: SERVICE_QUEUE_ARN, receiveCount })]);

    expect((await at(LBC_GATE_REQUEUES - 1)).batchItemFailures).toHaveLength(1);
    const last = await at(LBC_GATE_REQUEUES);
    expect(last.batchItemFailures).toEqual([]);
    expect(w.awsWrites()).toBe(0);
    expect(w.elbv2.loadBalancers.size).toBe(0);
  });

  it('a Lease released on shutdown is free at once', async () => {
    leases().holdLbcLease('aws-load-balancer-controller-6b7f_0a1b');
    leases().releaseLbcLease();
    putLbcService(w);
    await lbc.converge();
    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(eventsOf(LBC_ACTIVE_REASON)).toEqual([]);
  });

  it('a deletion waits too: the load balancer stays and so does the finalizer', async () => {
    putLbcService(w);
    await lbc.converge();
    leases().holdLbcLease('aws-load-balancer-controller-6b7f_0a1b');
    w.kube.deleteService('default', 'web');
    w.resetCounters();

    await lbc.pass();

    expect(w.awsWrites()).toBe(0);
    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(service().metadata.finalizers).toEqual(['service.k8s.aws/resources']);
    expect(eventsOf(LBC_ACTIVE_REASON)).toHaveLength(1);
  });

  it('an in-tree Service is served meanwhile, without reading the Lease', async () => {
    leases().holdLbcLease('aws-load-balancer-controller-6b7f_0a1b');
    w.putService('plain');
    await lbc.converge('plain');
    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(lbc.leaseReads()).toBe(0);
  });

  it('one read of the Lease serves every Service of an invocation', async () => {
    putLbcService(w);
    putLbcService(w, { name: 'api' });
    await w.invoke(
      serviceReconciler,
      lbc.deps,
      ['web', 'api'].map((name, i) =>
        fifoRecord(
          { kind: 'Service', namespace: 'default', name, hint: { eventType: 'RESYNC', eventId: `one-${i}` } },
          { queueArn: SERVICE_QUEUE_ARN },
        ),
      ),
    );
    expect(lbc.leaseReads()).toBe(1);
    // Both went past the gate.
    expect(eventsOf('EnsuringLoadBalancer', 'web')).toHaveLength(1);
    expect(eventsOf('EnsuringLoadBalancer', 'api')).toHaveLength(1);
  });

  it('a Lease that cannot be read is never taken as free', async () => {
    w.kube.queueError('getLease', Object.assign(new Error('forbidden'), { statusCode: 403 }));
    putLbcService(w);
    const result = await lbc.pass();
    expect(result.batchItemFailures).toHaveLength(1);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(service().metadata.finalizers ?? []).toEqual([]);
  });
});
