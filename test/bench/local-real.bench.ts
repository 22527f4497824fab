/**
 * `npm start -- --real`: how long a change in the cluster takes to be reconciled, now that the relay's
 * list/watch runs in the process. The process is the real-mode assembly (bin/real.ts) with the relay's
 * own timings and client-go's Lease timings, as `npm start -- --real` runs it; the cluster is the relay's
 * HTTPS API stand-in (functions/relay/testing/fake-kube-api.ts, watched through client-node over TLS on
 * 127.0.0.1), the reconcilers' Kubernetes a FakeKubernetes mirrored into it, AWS the fakes behind the real
 * adapters (no latency added: a real EC2 call adds its own 50-200 ms). The resync is an hour away, so
 * every reconcile measured was started by the relay.
 *
 * Three paths, changes one after another (latency, not throughput):
 * - a new uninitialized Node -> the node controller initializes it (relay rule `node`, key `Node/<name>`);
 * - a new Node -> its instance registered in a LoadBalancer Service's target group (Node initialized, then
 *   the relay's node-set rule: one key per LoadBalancer Service after its debounce);
 * - a spot interruption warning put on the EC2 events queue -> its Node cordoned (`--interruption`: the poller's
 *   20 s long poll, bin/ec2-events-poller.ts, then the functions/ec2-events router's interruption notice, then the
 *   interruption controller's pass).
 */
import { startEc2EventsPoller } from '../../bin/ec2-events-poller.ts';
import { FakeSqs } from '../../shared/aws/fakes/sqs/fake-sqs.ts';
import { systemClock } from '../../shared/clock.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { silentLog } from '../../shared/observability/log.ts';
import {
  createLocalRealWorld,
  eventually,
  type LocalRealWorld,
  quiet,
  startLocalProcess,
} from '../helpers/local-real.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- local-real';
const NODE_CHANGES = 50;
const TARGET_CHANGES = 10;
const INTERRUPTIONS = 20;
/** client-go's defaults, what `npm start -- --real` uses (functions/relay/lease.ts DEFAULT_ELECTION). */
const ELECTION = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const initialized = (node: Node | undefined) =>
  Boolean(node?.spec?.providerID) && !node?.spec?.taints?.some((t) => t.key.endsWith('/uninitialized'));

/** When each Node became initialized, seen on the reconcilers' API server as its write lands. */
function initializationTimes(w: LocalRealWorld): Map<string, number> {
  const at = new Map<string, number>();
  w.kube.watch((change) => {
    const node = change.object as Node;
    if (change.kind === 'Node' && !at.has(node.metadata.name) && initialized(node)) {
      at.set(node.metadata.name, performance.now());
    }
  });
  return at;
}

interface Legs {
  total: number[];
  /** Change written -> the key on the engine's queue: the watch and the relay's forwarder. */
  relay: number[];
}

async function nodeInitialization(w: LocalRealWorld): Promise<Legs> {
  const p = startLocalProcess(w, { election: ELECTION, deployedTimings: true });
  const initializedAt = initializationTimes(w);
  const enqueuedAt = new Map<string, number>();
  // The relay's sends reach the engine's FakeSqs: note when each Node key landed on the node queue.
  const sendKeys = p.mode.engine.sqs.sendKeys.bind(p.mode.engine.sqs);
  p.mode.engine.sqs.sendKeys = async (url, messages) => {
    for (const m of messages)
      if (m.kind === 'Node' && !enqueuedAt.has(m.name)) enqueuedAt.set(m.name, performance.now());
    return sendKeys(url, messages);
  };
  try {
    await eventually(() => p.mode.state.leading && quiet(w, p), 'the process to lead and settle', 30_000);
    const legs: Legs = { total: [], relay: [] };
    for (let i = 0; i < NODE_CHANGES; i++) {
      const { node } = w.launch(100 + i);
      const name = node.metadata.name;
      const changedAt = performance.now();
      w.kube.putNode(node);
      await eventually(() => initializedAt.has(name), `Node ${name} to be initialized`);
      legs.total.push(initializedAt.get(name)! - changedAt);
      legs.relay.push(enqueuedAt.get(name)! - changedAt);
      await eventually(() => quiet(w, p), 'the process to settle');
    }
    if (p.mode.state.rounds !== 1)
      throw new Error(`a resync ran during the measurement (${p.mode.state.rounds} rounds)`);
    return legs;
  } finally {
    await p.stop();
  }
}

async function targetRegistration(w: LocalRealWorld): Promise<number[]> {
  const p = startLocalProcess(w, { election: ELECTION, deployedTimings: true, services: true });
  const targets = () =>
    new Set([...w.elbv2.targetGroups.values()].flatMap((tg) => [...tg.targets.values()].map((t) => t.target.id)));
  try {
    await eventually(() => p.mode.state.leading && quiet(w, p), 'the process to lead and settle', 30_000);
    w.kube.putService({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { type: 'LoadBalancer', ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] },
    });
    await eventually(() => w.elbv2.targetGroups.size > 0 && quiet(w, p), 'the load balancer', 30_000);
    const latencies: number[] = [];
    for (let i = 0; i < TARGET_CHANGES; i++) {
      const { instance, node } = w.launch(200 + i);
      const changedAt = performance.now();
      w.kube.putNode(node);
      await eventually(() => targets().has(instance.instanceId), `${instance.instanceId} to be a target`);
      latencies.push(performance.now() - changedAt);
      await eventually(() => quiet(w, p), 'the process to settle');
    }
    return latencies;
  } finally {
    await p.stop();
  }
}

interface CordonLegs {
  total: number[];
  /** Event sent -> the poller hands it to the router (the long poll's wake-up). */
  poller: number[];
}

/** A spot warning for each of INTERRUPTIONS Nodes in turn, from the EC2 events queue to `spec.unschedulable`. */
async function interruptionCordon(w: LocalRealWorld): Promise<CordonLegs> {
  const aws = new FakeSqs(systemClock);
  const { url: queueUrl } = aws.createQueue('dev-ec2-events', { fifo: false });
  const deliveredAt: number[] = [];
  const p = startLocalProcess(w, {
    election: ELECTION,
    deployedTimings: true,
    interruption: true,
    // As `--ec2-events-queue-url` polls it: 20 s long polls, each returning as soon as a message lands.
    ec2Events: ({ deliver, signal }) =>
      startEc2EventsPoller({
        queueUrl,
        sqs: aws,
        deliver: (body) => {
          deliveredAt.push(performance.now());
          return deliver(body);
        },
        log: silentLog,
        signal,
      }),
  });
  const cordonedAt = new Map<string, number>();
  w.kube.watch((change) => {
    const node = change.object as Node;
    if (change.kind === 'Node' && node.spec?.unschedulable && !cordonedAt.has(node.metadata.name)) {
      cordonedAt.set(node.metadata.name, performance.now());
    }
  });
  try {
    // Spot Nodes run a while before a warning: all of them are registered first, so the router's instance -> Node
    // map (functions/ec2-events/node-index.ts, listed at the first event) knows them, as it would in a cluster.
    const launched = Array.from({ length: INTERRUPTIONS }, (_, i) => w.launch(300 + i));
    for (const { node } of launched) w.kube.putNode(node);
    await eventually(
      () => p.mode.state.leading && launched.every(({ node }) => initialized(w.kube.nodes.get(node.metadata.name))),
      'the Nodes to be initialized',
      30_000,
    );
    await eventually(() => quiet(w, p), 'the process to settle');
    const legs: CordonLegs = { total: [], poller: [] };
    for (const [i, { instance, node }] of launched.entries()) {
      const name = node.metadata.name;
      const sentAt = performance.now();
      aws.send(
        'dev-ec2-events',
        JSON.stringify({
          version: '0',
          id: `spot-${i}`,
          'detail-type': 'EC2 Spot Instance Interruption Warning',
          source: 'aws.ec2',
          account: '111122223333',
          time: new Date().toISOString(),
          region: 'eu-west-1',
          resources: [`arn:aws:ec2:eu-west-1a:instance/${instance.instanceId}`],
          detail: { 'instance-id': instance.instanceId, 'instance-action': 'terminate' },
        }),
      );
      await eventually(() => cordonedAt.has(name), `Node ${name} to be cordoned`);
      legs.total.push(cordonedAt.get(name)! - sentAt);
      legs.poller.push(deliveredAt.at(-1)! - sentAt);
      await eventually(() => quiet(w, p), 'the process to settle');
    }
    return legs;
  } finally {
    await p.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  const round = (v: number) => Math.round(v * 10) / 10;
  const nodes = await createLocalRealWorld();
  let legs: Legs;
  try {
    legs = await nodeInitialization(nodes);
  } finally {
    await nodes.close();
  }
  const lbs = await createLocalRealWorld();
  let registration: number[];
  try {
    registration = await targetRegistration(lbs);
  } finally {
    await lbs.close();
  }
  const spots = await createLocalRealWorld();
  let cordon: CordonLegs;
  try {
    cordon = await interruptionCordon(spots);
  } finally {
    await spots.close();
  }
  const cordonTotal = [...cordon.total].sort((a, b) => a - b);
  const cordonPoller = [...cordon.poller].sort((a, b) => a - b);
  const total = [...legs.total].sort((a, b) => a - b);
  const relay = [...legs.relay].sort((a, b) => a - b);
  const reg = [...registration].sort((a, b) => a - b);
  const reconcile = legs.total.map((t, i) => t - legs.relay[i]!).sort((a, b) => a - b);
  return [
    {
      name: `local real mode: new Node -> initialized, p50 of ${NODE_CHANGES}`,
      value: round(percentile(total, 50)),
      unit: 'ms',
      target: '< 1000 (within seconds)',
      rerun: RERUN,
      note: `relay leg (watch + forwarder linger 50 ms) p50 ${round(percentile(relay, 50))} ms, queue + reconcile p50 ${round(percentile(reconcile, 50))} ms; resync 1 h away`,
    },
    {
      name: `local real mode: new Node -> initialized, p95 of ${NODE_CHANGES}`,
      value: round(percentile(total, 95)),
      unit: 'ms',
      target: '< 1000',
      rerun: RERUN,
      note: `max ${round(total.at(-1)!)} ms; relay leg p95 ${round(percentile(relay, 95))} ms`,
    },
    {
      name: `local real mode: new Node -> load balancer target, p50 of ${TARGET_CHANGES}`,
      value: round(percentile(reg, 50)),
      unit: 'ms',
      rerun: RERUN,
      note: `p95 ${round(percentile(reg, 95))} ms; bound by the relay's node-set debounce (1 s: a burst of Node changes is one key per Service)`,
    },
    {
      name: `local real mode: spot warning on the EC2 events queue -> Node cordoned, p50 of ${INTERRUPTIONS}`,
      value: round(percentile(cordonTotal, 50)),
      unit: 'ms',
      target: '< 1000 (a spot notice leaves 120 s)',
      rerun: RERUN,
      note: `p95 ${round(percentile(cordonTotal, 95))} ms, max ${round(cordonTotal.at(-1)!)} ms; poller leg (long poll wake-up) p50 ${round(percentile(cordonPoller, 50))} ms; then router, notice queue, interruption pass`,
    },
  ];
}
