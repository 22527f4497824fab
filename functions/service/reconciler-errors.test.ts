import { beforeEach, describe, expect, it } from 'vitest';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { ANNOTATION } from './annotations.ts';
import { serviceReconciler } from './reconciler.ts';
import { serviceTesting } from './testing/service.ts';

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
});
const { service, hostname, eventsOf, onlyLb, create } = serviceTesting(() => w);

describe('what is not ours, and what cannot be built', () => {
  beforeEach(() => {
    w.addNode(1);
  });

  it.each([
    [
      { [ANNOTATION.healthcheckInterval]: 'often' },
      /aws-load-balancer-healthcheck-interval: "often" must be a whole number of seconds from 5 to 300/,
    ],
    [{ [ANNOTATION.nlbTargetType]: 'pod' }, /aws-load-balancer-nlb-target-type: "pod" must be "instance" or "ip"/],
    [
      { [ANNOTATION.scheme]: 'internal', [ANNOTATION.internal]: 'false' },
      /aws-load-balancer-scheme: "internal" contradicts/,
    ],
    [{ [ANNOTATION.name]: '-bad-' }, /aws-load-balancer-name: "-bad-" must be 1-32 letters/],
    [
      { [ANNOTATION.sslPorts]: '443' },
      /aws-load-balancer-ssl-ports: needs service.beta.kubernetes.io\/aws-load-balancer-ssl-cert/,
    ],
  ])(
    'invalid annotations %j: a Warning Event naming the annotation, nothing created, no finalizer',
    async (annotations, pattern) => {
      w.putService('web', { annotations });
      expect(await w.reconcile(w.serviceKey('web'))).toEqual({ batchItemFailures: [] });
      expect(eventsOf('SyncLoadBalancerFailed')).toEqual([expect.stringMatching(pattern)]);
      expect(w.awsCalls()).toBe(0);
      expect(service().metadata.finalizers).toBeUndefined();
      expect(w.metrics.total(MetricName.LoadBalancerSyncFailures, { reason: 'InvalidAnnotation' })).toBe(1);
    },
  );

  it('one Service with a bad annotation does not hold up the others in its batch', async () => {
    w.putService('bad', { annotations: { [ANNOTATION.crossZone]: 'maybe' } });
    w.putService('good');
    await w.converge([w.serviceKey('bad'), w.serviceKey('good')]);
    expect(onlyLb().name).toMatch(/-good-/);
    expect(eventsOf('SyncLoadBalancerFailed', 'bad')).toHaveLength(1);
  });

  it.each([
    ['a ClusterIP Service', { spec: { type: 'ClusterIP' as const } }],
    ['another loadBalancerClass', { spec: { loadBalancerClass: 'service.k8s.aws/nlb' } }],
    ['type nlb-ip (the AWS Load Balancer Controller)', { annotations: { [ANNOTATION.type]: 'nlb-ip' } }],
  ])('%s is left alone', async (_, options) => {
    w.putService('web', options);
    await w.converge([w.serviceKey('web')]);
    expect(w.awsCalls()).toBe(0);
    expect(w.kube.writeCount()).toBe(0);
  });

  it('the configured loadBalancerClass is ours', async () => {
    w.putService('web', { spec: { loadBalancerClass: 'example.com/nlb' } });
    await w.converge([w.serviceKey('web')], { ...w.serviceDeps, loadBalancerClass: 'example.com/nlb' });
    expect(onlyLb()).toBeDefined();
  });

  it('a Service served by a Classic ELB (in-tree provider) is detected and left alone', async () => {
    w.putService('legacy', { annotations: {} });
    w.kube.mutateService('default', 'legacy', (s) => {
      s.metadata.finalizers = [FINALIZER_LOAD_BALANCER_CLEANUP];
      s.status = { loadBalancer: { ingress: [{ hostname: 'a1b2c3-1234567890.eu-west-1.elb.amazonaws.com' }] } };
    });
    await w.converge([w.serviceKey('legacy')]);
    expect(w.awsCalls()).toBe(0);
    expect(w.metrics.total(MetricName.ServicesSkipped, { reason: 'classic' })).toBe(1);
  });

  it('two Services can never share a load balancer: the second one asking for a taken name is refused', async () => {
    await create('first', { annotations: { [ANNOTATION.name]: 'shared-name' } });
    const lb = onlyLb();
    await create('second', { annotations: { [ANNOTATION.name]: 'shared-name' } });
    expect(eventsOf('SyncLoadBalancerFailed', 'second')).toEqual([
      expect.stringMatching(/load balancer name shared-name is taken by default\/first/),
    ]);
    expect(onlyLb()).toEqual(lb);
    expect(w.elbv2.listenersOf(lb.arn)).toHaveLength(1);
    expect(hostname('second')).toBeUndefined();
  });

  it('never adopts a load balancer without our cluster tag', async () => {
    w.elbv2.putLoadBalancer({
      name: 'someone-elses',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: makeSubnet({ index: 10 }).subnetId }],
      securityGroups: [],
      tags: {},
    });
    await create('web', { annotations: { [ANNOTATION.name]: 'someone-elses' } });
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toMatch(/taken by a load balancer this cluster does not own/);
    expect(w.elbv2.loadBalancers.size).toBe(1);
  });

  it('no usable subnet: an Event saying which tags to set', async () => {
    for (const subnet of [...w.ec2.subnets.values()]) w.ec2.subnets.delete(subnet.subnetId);
    await create('web');
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toMatch(
      /no public .* subnet found .* tag subnets kubernetes.io\/role\/elb=1/,
    );
    expect(w.elbv2.loadBalancers.size).toBe(0);
  });
});

describe('AWS trouble', () => {
  beforeEach(() => {
    w.addNode(1);
  });

  it('throttling: retried with backoff, no Event, and the load balancer still made once', async () => {
    w.elbv2.throttle('CreateLoadBalancer', 2);
    w.ec2.throttle('DescribeSecurityGroups', 1);
    await create('web');
    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(eventsOf('SyncLoadBalancerFailed')).toEqual([]);
    expect(w.metrics.total(MetricName.ReconcileErrors, { errorClass: 'throttled' })).toBeGreaterThan(0);
  });

  it('an AWS error is reported on the Service with its code, and retried', async () => {
    w.elbv2.queueError(
      'CreateTargetGroup',
      new AwsServiceError('TooManyTargetGroups', 'You have reached the maximum number of target groups', 400),
    );
    w.putService('web');
    const first = await w.reconcile(w.serviceKey('web'));
    expect(first.batchItemFailures).toHaveLength(0);
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toMatch(/TooManyTargetGroups/);
    expect(w.metrics.total(MetricName.LoadBalancerSyncFailures, { reason: 'TooManyTargetGroups' })).toBe(1);
    // A later pass (the resync) completes it.
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.targetGroups.size).toBe(1);
  });

  it('a 409 on the finalizer re-reads the Service and tries again', async () => {
    w.putService('web');
    w.kube.queueError('patchService', new KubernetesApiError(409, 'Conflict', 'the object has been modified'));
    expect(await w.reconcile(w.serviceKey('web'))).toMatchObject({ batchItemFailures: [expect.anything()] });
    expect(w.kube.callCount('patchService')).toBe(2);
    expect(w.kube.callCount('getService')).toBe(2);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
  });

  it('refuses keys of other kinds, naming what it takes', async () => {
    const result = await w.invoke(serviceReconciler, w.serviceDeps, []);
    expect(result).toEqual({ batchItemFailures: [] });
    await expect(
      serviceReconciler.reconcile({ kind: 'Node', name: 'n' }, w.serviceDeps, undefined as never, {
        hints: [],
        payloads: [],
        receiveCount: 1,
      }),
    ).rejects.toThrow(/takes Service keys with a namespace, or the garbage collection key/);
  });
});
