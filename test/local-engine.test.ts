import { describe, expect, it } from 'vitest';
import { createEngine, QUEUES } from '../bin/engine.ts';
import { Ec2Adapter } from '../shared/aws/ec2-adapter.ts';
import { FakeEc2 } from '../shared/aws/ec2-fake.ts';
import { Elbv2Adapter } from '../shared/aws/elbv2-adapter.ts';
import { FakeElbv2 } from '../shared/aws/elbv2-fake.ts';
import { FakeClock } from '../shared/clock.ts';
import { FakeKubernetes } from '../shared/k8s/fake.ts';
import { parseCidr } from '../shared/net/cidr.ts';
import { silentLog } from '../shared/observability/log.ts';
import { RecordingMetrics } from '../shared/observability/metrics.ts';

/**
 * The local engine's resync is the only trigger a local run against a real cluster has (no relay, no
 * EventBridge): it must reach every controller that is on, like functions/resync does, even with no Node.
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
    ...(options.routes ? { routes: { clusterCidrs: [cidr.cidr], routeTableLimit: 50 } } : {}),
    ...(options.services
      ? {
          services: {
            vpcId: 'vpc-0a1b2c3d',
            elbv2: new Elbv2Adapter(new FakeElbv2(clock, ec2)),
            kube,
            externalManagedTags: ['x'],
          },
        }
      : {}),
  });
  return e;
}

describe('local engine resync', () => {
  it('with routes and services on: the route table key, every LoadBalancer Service and the garbage collection key', async () => {
    const e = engine({ routes: true, services: true });
    expect(await e.resync(1)).toBe(0);
    expect(e.sqs.bodies(QUEUES.route).map((b) => JSON.parse(b).kind)).toEqual(['RouteTable']);
    expect(e.sqs.bodies(QUEUES.service).map((b) => JSON.parse(b).name)).toEqual(['web', 'garbage-collection']);
  });

  it('a second round is new work; the same round again is deduplicated', async () => {
    const e = engine({ routes: true, services: true });
    await e.resync(1);
    await e.resync(1);
    expect(e.sqs.depth(QUEUES.service)).toBe(2);
    await e.resync(2);
    expect(e.sqs.depth(QUEUES.service)).toBe(4);
  });

  it('controllers that are off get nothing', async () => {
    const e = engine({});
    await e.resync(1);
    expect(e.sqs.depth(QUEUES.route)).toBe(0);
    expect(e.sqs.depth(QUEUES.service)).toBe(0);
  });
});
