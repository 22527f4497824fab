import type { SQSRecord } from 'aws-lambda';
import { NodeIndex } from '../functions/ec2-events/node-index.ts';
import { routeEc2Events } from '../functions/ec2-events/router.ts';
import { type NodeDeps, nodeReconciler } from '../functions/node/reconciler.ts';
import { type LifecycleDeps, nodeLifecycleReconciler } from '../functions/node-lifecycle/reconciler.ts';
import { Ec2Facts } from '../shared/aws/ec2-facts.ts';
import { FakeEc2, makeInstance } from '../shared/aws/ec2-fake.ts';
import type { Instance, InstanceState } from '../shared/aws/ec2-port.ts';
import { FakeClock } from '../shared/clock.ts';
import { FakeKubernetes } from '../shared/k8s/fake.ts';
import { isNodeReady, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import type { Node } from '../shared/k8s/types.ts';
import type { Log } from '../shared/observability/log.ts';
import { RecordingMetrics } from '../shared/observability/metrics.ts';
import { FakeSqs } from '../shared/queue/fake-sqs.ts';
import type { KeyMessage } from '../shared/queue/message.ts';
import { type Reconciler, type RunnerDeps, runBatch } from '../shared/queue/runner.ts';

export const SIM_CLUSTER = 'local-sim';
const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];

export interface SimulationOptions {
  nodes: number;
  /** Real milliseconds each simulated EC2 call takes. */
  ec2LatencyMs: number;
  /** Throttle this many DescribeInstances calls early on, to show backoff at work. */
  throttleDescribes: number;
  log: Log;
}

type Step = { at: number; what: string; run: () => void | Promise<void> };

/**
 * The embedded simulated AWS account and cluster: the fakes the tests use, wired to the real
 * reconcilers through an in-process SQS that keeps the FIFO workqueue semantics. A stand-in for the
 * relay turns Node changes that matter into keys; EC2 state changes become EventBridge events on
 * the events queue, as in AWS. Scenario time is simulated (the clock jumps when nothing is due);
 * EC2 latency is real.
 */
export function createSimulation(options: SimulationOptions) {
  const clock = new FakeClock();
  const start = clock.now();
  const ec2 = new FakeEc2();
  ec2.latencyMs = options.ec2LatencyMs;
  const kube = new FakeKubernetes(clock);
  const metrics = new RecordingMetrics();
  const sqs = new FakeSqs(clock);
  const log = options.log;
  sqs.createQueue('node.fifo', { maxReceiveCount: 10, deadLetterQueue: 'node-dlq.fifo', visibilityTimeoutSeconds: 60 });
  sqs.createQueue('node-lifecycle.fifo', { maxReceiveCount: 10, deadLetterQueue: 'node-lifecycle-dlq.fifo' });
  sqs.createQueue('ec2-events', { fifo: false, maxReceiveCount: 5, deadLetterQueue: 'ec2-events-dlq' });

  const t = () => `t+${((clock.now() - start) / 1000).toFixed(1)}s`;
  const facts = new Ec2Facts(ec2, clock);
  const nodeDeps: NodeDeps = {
    clusterName: SIM_CLUSTER,
    region: 'eu-west-1',
    ipFamilies: ['ipv4'],
    kube,
    ec2,
    facts,
    clock,
    log,
    metrics,
  };
  const lifecycleDeps: LifecycleDeps = { kube, ec2, clock, log, metrics };
  const runner: RunnerDeps = { log, metrics, queue: sqs, clock };
  const routerDeps = {
    index: new NodeIndex(kube, clock),
    sqs,
    routes: { 'state-change': sqs.urlOf('node-lifecycle.fifo') },
    log,
    metrics,
  };

  // Relay stand-in: forward a Node key only when a field some reconciler reads has changed.
  const fingerprints = new Map<string, string>();
  kube.onChange = (_kind, name, node) => {
    const fp = node ? fingerprint(node) : 'deleted';
    if (fingerprints.get(name) === fp) return;
    fingerprints.set(name, fp);
    const key: KeyMessage = {
      kind: 'Node',
      name,
      hint: { resourceVersion: node?.metadata.resourceVersion ?? 'deleted', eventType: node ? 'MODIFIED' : 'DELETED' },
    };
    void sqs.sendKeys(sqs.urlOf('node.fifo'), [key]);
    void sqs.sendKeys(sqs.urlOf('node-lifecycle.fifo'), [key]);
  };
  const recordEvent = kube.recordEvent.bind(kube);
  kube.recordEvent = async (event) => {
    await recordEvent(event);
    log.info(`${t()} event ${event.type} ${event.reason} ${event.involvedObject.kind}/${event.involvedObject.name}`, {
      message: event.message,
    });
  };

  // The scenario: instances boot and their kubelets register; later one stops and one terminates.
  const steps: Step[] = [];
  const instances: Instance[] = [];
  const at = (seconds: number, what: string, run: Step['run']) => steps.push({ at: start + seconds * 1000, what, run });
  const setState = (instance: Instance, state: InstanceState) => {
    ec2.setState(instance.instanceId, state);
    sqs.send(
      'ec2-events',
      JSON.stringify({
        version: '0',
        id: `sim-${instance.instanceId}-${state}`,
        'detail-type': 'EC2 Instance State-change Notification',
        source: 'aws.ec2',
        account: '000000000000',
        time: new Date(clock.now()).toISOString(),
        region: 'eu-west-1',
        resources: [`arn:aws:ec2:eu-west-1:000000000000:instance/${instance.instanceId}`],
        detail: { 'instance-id': instance.instanceId, state },
      }),
    );
  };
  const setReady = (name: string, status: 'True' | 'Unknown') => {
    kube.mutateNode(name, (n) => {
      n.status!.conditions = [
        { type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'NodeStatusUnknown' },
      ];
    });
  };

  for (let i = 0; i < options.nodes; i++) {
    const instance = makeInstance({
      index: 1 + i,
      availabilityZone: ZONES[i % ZONES.length],
      clusterName: SIM_CLUSTER,
      state: 'pending',
      instanceType: i % 2 ? 'm5.large' : 't3.medium',
    });
    instances.push(instance);
    const launch = 1 + i * 0.5;
    at(launch, `launch ${instance.instanceId}`, () => {
      // New instances are not visible to every EC2 endpoint at once.
      ec2.putInstance(instance, { invisibleForCalls: i % 3 === 0 ? 1 : 0 });
    });
    at(launch + 8, `${instance.instanceId} running`, () => setState(instance, 'running'));
    at(launch + 20, `kubelet registers ${instance.privateDnsName}`, () => {
      kube.putNode({
        metadata: { name: instance.privateDnsName!, labels: { 'kubernetes.io/hostname': instance.privateDnsName! } },
        spec: { taints: [{ key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
        status: {
          addresses: [{ type: 'Hostname', address: instance.privateDnsName! }],
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        },
      });
    });
  }
  const stopped = instances[1];
  const terminated = instances[2];
  const end = 1 + options.nodes * 0.5 + 30;
  if (stopped) {
    at(end, `stop ${stopped.instanceId}`, () => setState(stopped, 'stopped'));
    at(end + 40, `kubelet of ${stopped.privateDnsName} goes silent`, () =>
      setReady(stopped.privateDnsName!, 'Unknown'),
    );
  }
  if (terminated) {
    const dns = terminated.privateDnsName!;
    at(end + 10, `terminate ${terminated.instanceId}`, () => setState(terminated, 'terminated'));
    at(end + 50, `kubelet of ${dns} goes silent`, () => setReady(dns, 'Unknown'));
  }
  if (options.throttleDescribes > 0) {
    at(1 + options.nodes * 0.25 + 20, 'EC2 starts throttling DescribeInstances', () =>
      ec2.throttle('DescribeInstances', options.throttleDescribes),
    );
  }
  steps.sort((a, b) => a.at - b.at);

  const queues: [string, (records: SQSRecord[]) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>][] = [
    ['ec2-events', (records) => routeEc2Events(records, routerDeps)],
    ['node.fifo', (records) => run(nodeReconciler, nodeDeps, records)],
    ['node-lifecycle.fifo', (records) => run(nodeLifecycleReconciler, lifecycleDeps, records)],
  ];
  const run = <D, B>(reconciler: Reconciler<D, B>, deps: D, records: SQSRecord[]) =>
    runBatch(reconciler, records, deps, runner);

  /** Run the scenario to the end and until every queue is empty. Bounded. */
  async function runToCompletion(onTick?: () => void, maxTicks = 10_000): Promise<void> {
    for (let tick = 0; tick < maxTicks; tick++) {
      while (steps.length > 0 && steps[0]!.at <= clock.now()) {
        const step = steps.shift()!;
        log.info(`${t()} scenario: ${step.what}`);
        await step.run();
      }
      const handled = await Promise.all(queues.map(([name, handler]) => sqs.pump(name, handler)));
      onTick?.();
      if (handled.some((n) => n > 0)) {
        clock.advance(100); // a poll of the event source mapping
        continue;
      }
      const waits = [
        ...queues.map(([name]) => sqs.nextVisibleInMs(name)),
        steps[0] ? steps[0].at - clock.now() : undefined,
      ].filter((x): x is number => x !== undefined);
      if (waits.length === 0) return;
      clock.advance(Math.max(100, Math.min(...waits)));
    }
    throw new Error(`simulation did not settle in ${maxTicks} ticks`);
  }

  /** What a converged cluster looks like; each problem is one line. */
  function problems(): string[] {
    const out: string[] = [];
    for (const instance of instances) {
      const live = ec2.instances.get(instance.instanceId);
      const node = kube.nodes.get(instance.privateDnsName!);
      if (live?.state === 'terminated') {
        if (node) out.push(`Node ${node.metadata.name} of terminated ${instance.instanceId} still exists`);
        continue;
      }
      if (!node) {
        out.push(`Node for ${instance.instanceId} missing`);
        continue;
      }
      if (!node.spec?.providerID) out.push(`Node ${node.metadata.name} not initialized`);
      if (node.spec?.taints?.some((x) => x.key === TAINT_UNINITIALIZED))
        out.push(`${node.metadata.name} still tainted uninitialized`);
      const shutdownTainted = node.spec?.taints?.some((x) => x.key === 'node.cloudprovider.kubernetes.io/shutdown');
      if (live?.state === 'stopped' && !isNodeReady(node) && !shutdownTainted) {
        out.push(`Node ${node.metadata.name} of stopped ${instance.instanceId} lacks the shutdown taint`);
      }
    }
    for (const dlq of ['node-dlq.fifo', 'node-lifecycle-dlq.fifo', 'ec2-events-dlq']) {
      if (sqs.depth(dlq) > 0) out.push(`${sqs.depth(dlq)} message(s) in ${dlq}`);
    }
    return out;
  }

  return {
    clock,
    start,
    ec2,
    kube,
    sqs,
    metrics,
    instances,
    runToCompletion,
    problems,
    elapsed: () => clock.now() - start,
  };
}

function fingerprint(node: Node): string {
  return JSON.stringify([
    node.spec?.providerID ?? '',
    (node.spec?.taints ?? []).map((x) => x.key).sort(),
    isNodeReady(node),
    Boolean(node.metadata.deletionTimestamp),
  ]);
}

export type Simulation = ReturnType<typeof createSimulation>;
