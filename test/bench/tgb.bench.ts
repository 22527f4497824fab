import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from '../../functions/target-group-binding/testing/world.ts';
import { EC2_WRITE_OPERATIONS } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { ELBV2_WRITE_OPERATIONS } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- tgb';
const QUEUE = 'target-group-binding.fifo';
const REPLICAS = 30;
const BINDINGS = ['web-a', 'web-b', 'web-c'];

/**
 * AWS API volume of the TargetGroupBinding controller: the commands the real adapters send to the fake EC2 and ELBv2
 * APIs (and the Kubernetes writes beside them), each change followed by the binding keys the relay would send for it
 * (one per binding of the Service) and the queue played until empty. One binding of a Service of 10 Pods: one Pod
 * added, one removed, a pass with nothing to do. Then a rolling update of a Deployment of 30 Pods behind 3 bindings
 * (three target groups someone made, one Service): Pod by Pod, the new one appears not ready, turns ready, the old
 * one terminates and goes; every step is one EndpointSlice change, so 4 changes x 3 binding keys per Pod.
 */

interface Endpoint {
  pod: string;
  ip: string;
  ready?: boolean;
  terminating?: boolean;
}

function counts(w: TgbWorld) {
  const byOperation = [...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0);
  const writes = new Set<string>([...ELBV2_WRITE_OPERATIONS, ...EC2_WRITE_OPERATIONS]);
  return {
    total: w.awsCalls(),
    writes: w.awsWrites(),
    kubeWrites: w.kube.writeCount() + w.bindings.writeCount(),
    detail: byOperation
      .filter(([op]) => writes.has(op))
      .map(([op, n]) => `${op} ${n}`)
      .join(', '),
  };
}

type Counts = ReturnType<typeof counts>;

function bench(w: TgbWorld) {
  let sent = 0;
  /** The keys of these bindings, as the relay sends them for a slice change, and the queue played until empty. */
  const converge = async (bindings: readonly string[]) => {
    const keys: KeyMessage[] = bindings.map((name) => ({
      kind: 'TargetGroupBinding',
      namespace: NAMESPACE,
      name,
      hint: { eventType: 'MODIFIED', resourceVersion: String(++sent) },
    }));
    await w.enqueue(QUEUE, keys);
    await w.drain(QUEUE, targetGroupBindingReconciler, w.deps, 500);
  };
  /** The counts of one or more changes, each converged. */
  const measure = async (bindings: readonly string[], changes: (() => void)[]): Promise<Counts> => {
    w.reset();
    for (const change of changes) {
      change();
      await converge(bindings);
    }
    return counts(w);
  };
  return { converge, measure };
}

const ip = (generation: number, i: number) => `10.0.${30 + generation}.${10 + i}`;
const endpoints = (generation: number, n: number): Endpoint[] =>
  Array.from({ length: n }, (_, i) => ({ pod: `web-${generation}-${i}`, ip: ip(generation, i) }));

async function endpointChanges() {
  const w = createTgbWorld();
  w.sqs.createQueue(QUEUE, { maxReceiveCount: 50, deadLetterQueue: 'target-group-binding-dlq.fifo' });
  w.addPodNode(1);
  w.putWebService();
  const group = await w.targetGroup('web-ip');
  const { converge, measure } = bench(w);
  const ten = endpoints(0, 10);
  w.putSlice(ten);
  w.putBinding('web', { targetGroupARN: group.arn });
  await converge(['web']);
  const added = await measure(['web'], [() => w.putSlice([...ten, ...endpoints(1, 1)])]);
  const removed = await measure(['web'], [() => w.putSlice(ten)]);
  const noop = await measure(['web'], [() => {}]);
  return { added, removed, noop };
}

/** A Service of REPLICAS Pods behind the three bindings' target groups, and the Pods that replace them. */
async function rolloutWorld() {
  const w = createTgbWorld();
  w.sqs.createQueue(QUEUE, { maxReceiveCount: 50, deadLetterQueue: 'target-group-binding-dlq.fifo' });
  w.addPodNode(1);
  w.putWebService();
  const { converge, measure } = bench(w);
  for (const name of BINDINGS) {
    const group = await w.targetGroup(`tg-${name}`);
    w.putBinding(name, { targetGroupARN: group.arn });
  }
  const old = endpoints(0, REPLICAS);
  const fresh = endpoints(1, REPLICAS);
  return { w, converge, measure, old, fresh };
}

async function rollingUpdate() {
  const { w, converge, measure, old, fresh } = await rolloutWorld();
  w.putSlice(old);
  await converge(BINDINGS);
  // Pod by Pod (maxSurge 1, maxUnavailable 0): the new one not ready, then ready; the old one terminating, then gone.
  const changes: (() => void)[] = [];
  for (let i = 0; i < REPLICAS; i++) {
    const before = [...fresh.slice(0, i), ...old.slice(i + 1)];
    changes.push(
      () => w.putSlice([...before, old[i]!, { ...fresh[i]!, ready: false }]),
      () => w.putSlice([...before, old[i]!, fresh[i]!]),
      () => w.putSlice([...before, { ...old[i]!, ready: false, terminating: true }, fresh[i]!]),
      () => w.putSlice([...before, fresh[i]!]),
    );
  }
  const rollout = await measure(BINDINGS, changes);
  const registered = BINDINGS.map((name) => w.registered(w.binding(name)!.spec.targetGroupARN!).length);
  return { rollout, registered };
}

/**
 * The same rollout with readiness gates (the namespace labelled, the webhook injecting one gate per binding): a new
 * Pod's containers are ready, its gates not yet; each binding registers it, checks its health again after
 * TGB_READINESS_REQUEUE_SECONDS and sets its gate; once the three are True the kubelet marks it Ready, and only then
 * does the old one go. Each pass that waits reads the target health once more.
 */
async function gatedRollingUpdate() {
  const { w, converge, measure, old, fresh } = await rolloutWorld();
  for (const e of old) w.putPod(e.pod, e.ip, { gates: BINDINGS });
  w.putSlice(old);
  await converge(BINDINGS);
  const gatesMet = (pod: string) => {
    const conditions = w.kube.workloads.get(NAMESPACE, pod)?.status?.conditions ?? [];
    return BINDINGS.every((b) => conditions.some((c) => c.type === READINESS_GATE_PREFIX + b && c.status === 'True'));
  };
  const changes: (() => void)[] = [];
  for (let i = 0; i < REPLICAS; i++) {
    const before = [...fresh.slice(0, i), ...old.slice(i + 1)];
    const next = fresh[i]!;
    changes.push(
      () => {
        w.putPod(next.pod, next.ip, { gates: BINDINGS, ready: false, containersReady: true });
        w.putSlice([...before, old[i]!, { ...next, ready: false }]);
      },
      () => {
        // The kubelet: Ready once every gate is True (a stalled rollout is no figure).
        if (!gatesMet(next.pod)) throw new Error(`the gates of ${next.pod} were not met`);
        const pod = w.kube.workloads.get(NAMESPACE, next.pod)!;
        const conditions = (pod.status?.conditions ?? []).map((c) =>
          c.type === 'Ready' ? { ...c, status: 'True' as const } : c,
        );
        w.kube.putPod({ ...pod, status: { ...pod.status, conditions } });
        w.putSlice([...before, old[i]!, next]);
      },
      () => {
        // The old Pod deleted: it terminates (not Ready) and its endpoint with it.
        const pod = w.kube.workloads.get(NAMESPACE, old[i]!.pod)!;
        const conditions = (pod.status?.conditions ?? []).map((c) =>
          c.type === 'Ready' ? { ...c, status: 'False' as const } : c,
        );
        const deletionTimestamp = new Date(w.clock.now()).toISOString();
        w.kube.putPod({
          ...pod,
          metadata: { ...pod.metadata, deletionTimestamp },
          status: { ...pod.status, conditions },
        });
        w.putSlice([...before, { ...old[i]!, ready: false, terminating: true }, next]);
      },
      () => {
        void w.kube.deletePod(NAMESPACE, old[i]!.pod);
        w.putSlice([...before, next]);
      },
    );
  }
  return measure(BINDINGS, changes);
}

export async function run(): Promise<BenchResult[]> {
  const { added, removed, noop } = await endpointChanges();
  const { rollout, registered } = await rollingUpdate();
  const gated = await gatedRollingUpdate();
  if (registered.some((n) => n !== REPLICAS)) throw new Error(`rollout ended with ${registered.join(', ')} targets`);
  const row = (name: string, m: Counts, target?: string): BenchResult[] => [
    { name: `tgb ${name}: AWS calls`, value: m.total, unit: 'calls', rerun: RERUN },
    {
      name: `tgb ${name}: AWS writes`,
      value: m.writes,
      unit: 'calls',
      rerun: RERUN,
      note: m.detail,
      ...(target ? { target } : {}),
    },
    { name: `tgb ${name}: Kubernetes writes`, value: m.kubeWrites, unit: 'writes', rerun: RERUN },
  ];
  const pods = REPLICAS;
  return [
    ...row('one Pod added (1 binding, 10 Pods)', added, '1 write'),
    ...row('one Pod removed (1 binding, 10 Pods)', removed, '1 write'),
    ...row('no-op pass', noop, '0 writes'),
    ...row(`rolling update of ${pods} Pods behind ${BINDINGS.length} bindings`, rollout),
    {
      name: 'tgb rolling update: AWS calls per Pod',
      value: Math.round((rollout.total / pods) * 10) / 10,
      unit: 'calls/Pod',
      rerun: RERUN,
    },
    {
      name: 'tgb rolling update: AWS writes per Pod',
      value: Math.round((rollout.writes / pods) * 10) / 10,
      unit: 'calls/Pod',
      rerun: RERUN,
      target: `${2 * BINDINGS.length} (a register and a deregister per binding)`,
    },
    ...row(`gated rolling update of ${pods} Pods behind ${BINDINGS.length} bindings`, gated),
    {
      name: 'tgb gated rolling update: AWS calls per Pod',
      value: Math.round((gated.total / pods) * 10) / 10,
      unit: 'calls/Pod',
      rerun: RERUN,
    },
  ];
}
