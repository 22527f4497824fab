import type { SQSRecord } from 'aws-lambda';
import { toFifoMessage } from '../../functions/ec2-events/interruptions.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from '../../functions/interruption/plan.ts';
import { type InterruptionDeps, interruptionReconciler } from '../../functions/interruption/reconciler.ts';
import { FakeSqs } from '../../shared/aws/fakes/sqs/fake-sqs.ts';
import { FakeClock } from '../../shared/clock.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { silentLog } from '../../shared/observability/log.ts';
import { MetricName, RecordingMetrics } from '../../shared/observability/metrics.ts';
import { runBatch } from '../../shared/queue/runner.ts';
import { makeNode } from '../helpers/nodes.ts';
import { budget, podOnNode } from '../helpers/pods.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- interruption';
const INTERRUPTED = 100;
const SPARE = 100;
const WORKLOADS = 300;
const REPLICAS = 10;
/** INTERRUPTION_DRAIN_REQUEUE_SECONDS's default. */
const REQUEUE_SECONDS = 5;
/** A replacement replica becomes Ready this long after the ReplicaSet creates it. */
const READY_MS = 3_000;
const QUEUE = 'interruption.fifo';

const node = (i: number) => `node-${i}`;
const instance = (i: number) => `i-${(0x1000000 + i).toString(16).padStart(17, '0')}`;
const healthy = (p: Pod) =>
  !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/**
 * 100 Nodes get a spot warning at the same moment; 300 workloads of 10 replicas, one replica on each of 10 of
 * those Nodes, each under a PodDisruptionBudget allowing 1 (minAvailable 9) or 2 (maxUnavailable 2) disruptions.
 * The notices go through the real reconciler and runner on the in-process FIFO queue; simulated time moves to the
 * next visible message or replica readiness. After every poll the budgets are checked and a ReplicaSet puts a
 * replacement (not Ready for READY_MS) on a spare Node for each replica evicted.
 */
async function measure() {
  const clock = new FakeClock();
  const kube = new FakeKubernetes(clock);
  const sqs = new FakeSqs(clock, 'eu-west-1');
  sqs.createQueue(QUEUE, { maxReceiveCount: 100, deadLetterQueue: 'interruption-dlq.fifo' });
  for (let i = 0; i < INTERRUPTED + SPARE; i++) {
    kube.putNode(makeNode(node(i), { providerID: `aws:///eu-west-1a/${instance(i)}`, initialized: true }));
  }
  const desired: number[] = [];
  for (let w = 0; w < WORKLOADS; w++) {
    const owner = { kind: 'ReplicaSet', name: `app-${w}` };
    for (let r = 0; r < REPLICAS; r++) {
      const on = node((w * 7 + r * 10) % INTERRUPTED);
      kube.putPod(podOnNode(on, `app-${w}-${r}`, { labels: { app: `app-${w}` }, owner, gracePeriodSeconds: 30 }));
    }
    const limits = w % 2 === 0 ? { minAvailable: REPLICAS - 1 } : { maxUnavailable: 2 };
    kube.workloads.setScale('default', 'ReplicaSet', owner.name, REPLICAS);
    kube.workloads.putBudget(budget(`app-${w}`, { app: `app-${w}` }, limits));
    desired.push(w % 2 === 0 ? REPLICAS - 1 : REPLICAS - 2);
  }
  const warnedAt = clock.now();
  const notices = Array.from({ length: INTERRUPTED }, (_, i) =>
    toFifoMessage({
      kind: 'Node',
      name: node(i),
      notice: {
        kind: 'spot-interruption',
        eventId: `spot-${i}`,
        eventTime: new Date(warnedAt).toISOString(),
        deadline: new Date(warnedAt + 120_000).toISOString(),
        instanceId: instance(i),
      },
    }),
  );
  await sqs.sendFifo(sqs.urlOf(QUEUE), notices);

  const metrics = new RecordingMetrics();
  const deps: InterruptionDeps = {
    clusterName: 'bench',
    kube,
    drain: kube,
    ec2: { describeInstances: async () => new Map() },
    actions: DEFAULT_INTERRUPTION_ACTIONS,
    outOfServiceTaint: false,
    drainRequeueSeconds: REQUEUE_SECONDS,
    clock,
    log: silentLog,
    metrics,
  };
  const runner = { log: silentLog, metrics, queue: sqs, clock };
  const handler = (records: SQSRecord[]) => runBatch(interruptionReconciler, records, deps, runner);
  const replicaSet = createReplicaSet(kube, clock, desired);
  let violations = 0;
  let polls = 0;
  let drainedAt: number | undefined;
  for (let step = 0; step < 10_000 && drainedAt === undefined; step++) {
    replicaSet.step();
    while ((await sqs.pump(QUEUE, handler)) > 0) {
      polls++;
      violations += replicaSet.violations();
      replicaSet.step();
    }
    const drained = kube.events.filter((e) => e.reason === 'Drained').length;
    if (drained === INTERRUPTED) drainedAt = clock.now();
    const waits = [sqs.nextVisibleInMs(QUEUE), replicaSet.nextReadyInMs()].filter((x): x is number => x !== undefined);
    if (waits.length === 0) break;
    clock.advance(Math.max(1, Math.min(...waits)));
  }
  const evicted = metrics.total(MetricName.PodsEvicted);
  const calls = [...kube.calls.values()].reduce((a, b) => a + b, 0);
  return {
    drainedSeconds: drainedAt === undefined ? Number.NaN : (drainedAt - warnedAt) / 1000,
    drainedNodes: kube.events.filter((e) => e.reason === 'Drained').length,
    timeouts: metrics.total(MetricName.DrainTimeouts),
    violations,
    polls,
    evicted,
    pdbWaits: metrics.total(MetricName.PdbWaits),
    callsPerEvicted: calls / Math.max(1, evicted),
    breakdown: [...kube.calls].map(([op, n]) => `${op} ${n}`).join(', '),
  };
}

/** What a ReplicaSet and the kubelet do: a replacement on a spare Node per evicted replica, Ready after READY_MS. */
function createReplicaSet(kube: FakeKubernetes, clock: FakeClock, desired: number[]) {
  const replaced = new Set<string>();
  const pending = new Map<string, number>();
  let made = 0;
  return {
    step(): void {
      const now = clock.now();
      for (const [name, at] of pending) {
        const pod = kube.workloads.get('default', name);
        if (at > now || !pod) continue;
        pending.delete(name);
        kube.putPod({ ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
      }
      for (const pod of kube.workloads.pods.values()) {
        if (!pod.metadata.deletionTimestamp || replaced.has(pod.metadata.uid!)) continue;
        replaced.add(pod.metadata.uid!);
        const app = pod.metadata.labels!.app!;
        const name = `${app}-new-${made}`;
        const owner = { kind: 'ReplicaSet', name: app };
        kube.putPod(podOnNode(node(INTERRUPTED + (made++ % SPARE)), name, { labels: { app }, owner, ready: false }));
        pending.set(name, now + READY_MS);
      }
    },
    /** Budgets below their desired healthy count now (0 when all hold). */
    violations(): number {
      const healthyBy = new Map<string, number>();
      kube.workloads.expire();
      for (const pod of kube.workloads.pods.values()) {
        if (!healthy(pod)) continue;
        const app = pod.metadata.labels!.app!;
        healthyBy.set(app, (healthyBy.get(app) ?? 0) + 1);
      }
      return desired.filter((want, w) => (healthyBy.get(`app-${w}`) ?? 0) < want).length;
    },
    nextReadyInMs(): number | undefined {
      if (pending.size === 0) return undefined;
      return Math.max(0, Math.min(...pending.values()) - clock.now());
    },
  };
}

export async function run(): Promise<BenchResult[]> {
  const m = await measure();
  const scenario = `${INTERRUPTED} Nodes spot-interrupted at once, ${WORKLOADS * REPLICAS} Pods under ${WORKLOADS} PDBs`;
  return [
    {
      name: `${scenario}: simulated seconds until all drained`,
      value: m.drainedSeconds,
      unit: 's',
      target: '<= 120',
      rerun: RERUN,
      note: `${m.drainedNodes} drained, ${m.timeouts} timed out; requeue ${REQUEUE_SECONDS} s, replacement Ready after ${READY_MS / 1000} s, grace 30 s; ${m.polls} polls`,
    },
    {
      name: `${scenario}: PDB violations (checked after every poll)`,
      value: m.violations,
      unit: 'count',
      target: '0',
      rerun: RERUN,
    },
    {
      name: `${scenario}: Kubernetes calls per evicted Pod`,
      value: Math.round(m.callsPerEvicted * 100) / 100,
      unit: 'calls',
      rerun: RERUN,
      note: `${m.evicted} evicted, ${m.pdbWaits} PDB 429s; ${m.breakdown}`,
    },
  ];
}
