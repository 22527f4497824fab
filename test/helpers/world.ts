import type { SQSRecord } from 'aws-lambda';
import type { NodeDeps } from '../../functions/node/reconciler.ts';
import type { LifecycleDeps } from '../../functions/node-lifecycle/reconciler.ts';
import type { RouteDeps } from '../../functions/route/deps.ts';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import { FakeEc2 } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeSqs } from '../../shared/aws/fakes/sqs/fake-sqs.ts';
import { FakeClock } from '../../shared/clock.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import { type Cidr, parseCidr } from '../../shared/net/cidr.ts';
import { silentLog } from '../../shared/observability/log.ts';
import { RecordingMetrics } from '../../shared/observability/metrics.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import { type Reconciler, type RunnerDeps, runBatch } from '../../shared/queue/runner.ts';

export const CLUSTER = 'test-cluster';
/** The route tests' --cluster-cidr: a dual-stack pair outside the fake VPC's 10.0.0.0/16. */
export const CLUSTER_CIDRS = ['10.244.0.0/16', 'fd00:10:244::/56'];

export function cidrs(texts: readonly string[]): Cidr[] {
  return texts.map((text) => {
    const result = parseCidr(text);
    if (!result.ok) throw new Error(result.error);
    return result.cidr;
  });
}

/**
 * Fakes wired together the way the Lambdas wire the real clients: one world per test. `ec2` is the fake EC2 API
 * (its account and counters); the reconcilers reach it through the real adapter, `ec2Port`, as they reach EC2.
 */
export function createWorld() {
  const clock = new FakeClock();
  const ec2 = new FakeEc2();
  const ec2Port = new Ec2Adapter(ec2);
  const kube = new FakeKubernetes(clock);
  const metrics = new RecordingMetrics();
  const sqs = new FakeSqs(clock);
  sqs.createQueue('node.fifo', { maxReceiveCount: 8, deadLetterQueue: 'node-dlq.fifo' });
  sqs.createQueue('node-lifecycle.fifo', { maxReceiveCount: 8, deadLetterQueue: 'node-lifecycle-dlq.fifo' });
  sqs.createQueue('route.fifo', { maxReceiveCount: 8, deadLetterQueue: 'route-dlq.fifo' });
  const log = silentLog;
  const facts = new Ec2Facts(ec2Port, clock);
  const nodeDeps: NodeDeps = {
    clusterName: CLUSTER,
    region: 'eu-west-1',
    ipFamilies: ['ipv4'],
    kube,
    ec2: ec2Port,
    facts,
    clock,
    log,
    metrics,
  };
  const lifecycleDeps: LifecycleDeps = { kube, ec2: ec2Port, clock, log, metrics };
  const routeDeps: RouteDeps = {
    clusterName: CLUSTER,
    clusterCidrs: cidrs(CLUSTER_CIDRS),
    routeTableLimit: 50,
    kube,
    ec2: ec2Port,
    clock,
    log,
    metrics,
  };
  const runner: RunnerDeps = { log, metrics, queue: sqs, clock, random: () => 0.5 };

  /** Run one reconciler over explicit records (a single Lambda invocation). */
  const invoke = <D, B>(reconciler: Reconciler<D, B>, deps: D, records: SQSRecord[]) =>
    runBatch(reconciler, records, deps, runner);

  /**
   * Play the event source mapping until the queue is empty: poll, invoke, delete successes; when
   * only delayed messages remain, move the clock to the next one. Bounded, so a bug cannot hang a test.
   */
  const drain = async <D, B>(queue: string, reconciler: Reconciler<D, B>, deps: D, maxPolls = 500) => {
    for (let polls = 0; polls < maxPolls; polls++) {
      const handled = await sqs.pump(queue, (records) => invoke(reconciler, deps, records));
      if (handled > 0) continue;
      const wait = sqs.nextVisibleInMs(queue);
      if (wait === undefined) return polls;
      clock.advance(Math.max(wait, 1));
    }
    throw new Error(`queue ${queue} did not drain in ${maxPolls} polls`);
  };

  const enqueue = (queue: string, messages: KeyMessage[]) => sqs.sendKeys(sqs.urlOf(queue), messages);

  return {
    clock,
    ec2,
    ec2Port,
    kube,
    metrics,
    sqs,
    facts,
    nodeDeps,
    lifecycleDeps,
    routeDeps,
    runner,
    invoke,
    drain,
    enqueue,
  };
}

export type World = ReturnType<typeof createWorld>;
