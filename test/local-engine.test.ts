import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEngine, EC2_EVENTS_QUEUE, CONTROLLER_QUEUES as QUEUES } from '../bin/engine.ts';
import { Ec2Adapter } from '../shared/aws/ec2-adapter.ts';
import { Elbv2Adapter } from '../shared/aws/elbv2-adapter.ts';
import { FakeEc2 } from '../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElbv2 } from '../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { FakeClock } from '../shared/clock.ts';
import { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import { parseCidr } from '../shared/net/cidr.ts';
import { silentLog } from '../shared/observability/log.ts';
import { RecordingMetrics } from '../shared/observability/metrics.ts';
import { makeNode } from './helpers/nodes.ts';

/**
 * The local engine's resync is functions/resync's round on the in-process queues: the safety net of a
 * local run against a real cluster, as the schedule is in AWS. It must reach every controller that is
 * on, even with no Node; the EC2 events hook must reach the same router the Lambda runs.
 */
function engine(options: { routes?: boolean; services?: boolean }) {
  const clock = new FakeClock();
  const ec2 = new FakeEc2(clock);
  const kube = new FakeKubernetes(clock);
  kube.putService({
    metadata: { name: 'web', namespace: 'shop' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80, nodePort: 30080 }] },
  });
  kube.putService({ metadata: { name: 'api', namespace: 'shop' }, spec: { type: 'ClusterIP', ports: [{ port: 80 }] } });
  // Was a LoadBalancer: its load balancer must still go, so the resync keeps sending it.
  kube.putService({
    metadata: { name: 'was-lb', namespace: 'shop', finalizers: ['service.kubernetes.io/load-balancer-cleanup'] },
    spec: { type: 'ClusterIP', ports: [{ port: 80 }] },
  });
  const cidr = parseCidr('10.244.0.0/16');
  if (!cidr.ok) throw new Error(cidr.error);
  const e = createEngine({
    clusterName: 'prod',
    region: 'eu-west-1',
    ipFamilies: ['ipv4'],
    clock,
    ec2: new Ec2Adapter(ec2),
    kube,
    log: silentLog,
    metrics: new RecordingMetrics(),
    controllers: {
      ...(options.routes ? { route: { clusterCidrs: [cidr.cidr], routeTableLimit: 50 } } : {}),
      ...(options.services
        ? {
            service: {
              vpcId: 'vpc-0a1b2c3d',
              elbv2: new Elbv2Adapter(new FakeElbv2(clock, ec2)),
              kube,
              externalManagedTags: ['x'],
            },
          }
        : {}),
    },
  });
  return { e, kube };
}

describe('local engine resync (functions/resync)', () => {
  it('with routes and services on: the route table key, every LoadBalancer or finalizer-holding Service and the garbage collection key', async () => {
    const { e } = engine({ routes: true, services: true });
    expect(await e.resync('round-1')).toEqual({ sent: 4 });
    expect(e.sqs.bodies(QUEUES.route).map((b) => JSON.parse(b).kind)).toEqual(['RouteTable']);
    expect(e.sqs.bodies(QUEUES.service).map((b) => JSON.parse(b).name)).toEqual([
      'web',
      'was-lb',
      'garbage-collection',
    ]);
  });

  it('sends every Node once per node queue, not a Service list per Node', async () => {
    const { e, kube } = engine({ routes: true, services: true });
    for (const name of ['a', 'b', 'c']) kube.putNode(makeNode(name));
    kube.resetCalls();
    await e.resync('round-1');
    // The node sweep: uninitialized Nodes go to the node reconciler; Ready ones give node-lifecycle nothing to judge.
    expect(e.sqs.depth(QUEUES.node)).toBe(3);
    expect(e.sqs.depth(QUEUES['node-lifecycle'])).toBe(0);
    expect(e.sqs.depth(QUEUES.route)).toBe(1);
    expect(kube.callCount('listServices')).toBe(1);
  });

  it('a second round is new work; the same round again is deduplicated', async () => {
    const { e } = engine({ routes: true, services: true });
    await e.resync('round-1');
    await e.resync('round-1');
    expect(e.sqs.depth(QUEUES.service)).toBe(3);
    await e.resync('round-2');
    expect(e.sqs.depth(QUEUES.service)).toBe(6);
  });

  it('controllers that are off get nothing, and neither do those the caller holds back', async () => {
    const { e, kube } = engine({ routes: true });
    kube.putNode(makeNode('a', { ready: false }));
    await e.resync('round-1', (reconciler) => reconciler !== 'node');
    expect(e.sqs.depth(QUEUES.node)).toBe(0);
    // A NotReady uninitialized Node: the node sweep sends it to node-lifecycle to judge.
    expect(e.sqs.depth(QUEUES['node-lifecycle'])).toBe(1);
    expect(e.sqs.depth(QUEUES.route)).toBe(1);
    expect(e.sqs.depth(QUEUES.service)).toBe(0);
  });
});

describe('local engine EC2 events hook', () => {
  it('a raw EventBridge body goes through the functions/ec2-events router to the lifecycle queue', async () => {
    const { e, kube } = engine({});
    kube.putNode(makeNode('ip-10-0-1-5', { providerID: 'aws:///eu-west-1a/i-0a1b2c3d4e5f60718' }));
    await e.enqueueEc2Event(readFileSync('test/fixtures/events/ec2-state-change-stopped.json', 'utf8'));
    expect(await e.pumpOnce((queue) => queue === EC2_EVENTS_QUEUE)).toBe(1);
    expect(e.sqs.bodies(QUEUES['node-lifecycle']).map((b) => JSON.parse(b))).toEqual([
      expect.objectContaining({
        kind: 'Node',
        name: 'ip-10-0-1-5',
        hint: expect.objectContaining({ eventType: 'EC2' }),
      }),
    ]);
  });
});
