import { gatedBindings } from '../../functions/relay/webhook/mutate-pod-readiness.ts';
import type { TgbDeps } from '../../functions/target-group-binding/deps.ts';
import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import { EC2_WRITE_OPERATIONS, type FakeEc2 } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { ELBV2_WRITE_OPERATIONS, type FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import type { FakeIngresses } from '../../shared/k8s/fakes/ingresses.ts';
import type { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { READINESS_GATE_PREFIX, type TargetGroupBinding } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';

/**
 * The counting and the gated rollout of test/bench/stack-bindings.bench.ts. Calls are counted per controller, between
 * the start and the end of its pass (`Meter.around`), on the fakes' counters, so what the bench itself does (the
 * webhook's reads, the kubelet's and the EndpointSlice controller's writes) is not. The rollout is the one
 * functions/ingress/readiness-rollout.test.ts and functions/service/lbc-readiness-rollout.test.ts play, with the
 * Ingress or the service controller in front (`Stage.frontPass`) and the binding controller behind.
 */

// ---- counting ----

export interface Sources {
  elbv2: FakeElbv2;
  ec2: FakeEc2;
  kube: FakeKubernetes;
  bindings: FakeTargetGroupBindings;
  ingresses?: FakeIngresses;
}

/** Counters by `aws:`, `kube:`, `tgb:` (TargetGroupBindings) and `ing:` (Ingresses) operation, and `#` totals. */
type Tally = Record<string, number>;

const AWS_WRITES = new Set<string>([...ELBV2_WRITE_OPERATIONS, ...EC2_WRITE_OPERATIONS]);

function snapshot(s: Sources): Tally {
  const t: Tally = {};
  const put = (prefix: string, calls: ReadonlyMap<string, number>) => {
    for (const [op, n] of calls) t[`${prefix}:${op}`] = (t[`${prefix}:${op}`] ?? 0) + n;
  };
  put('aws', s.elbv2.calls);
  put('aws', s.ec2.calls);
  put('kube', s.kube.calls);
  put('tgb', s.bindings.calls);
  if (s.ingresses) put('ing', s.ingresses.calls);
  t['#kubeWrites'] = s.kube.writeCount() + s.bindings.writeCount() + (s.ingresses?.writeCount() ?? 0);
  t['#tgbWrites'] = s.bindings.writeCount();
  return t;
}

function addTo(into: Tally, after: Tally, before: Tally): void {
  for (const [k, n] of Object.entries(after)) {
    const d = n - (before[k] ?? 0);
    if (d !== 0) into[k] = (into[k] ?? 0) + d;
  }
}

const sumOf = (t: Tally, prefixes: string[], keep: (op: string) => boolean = () => true) =>
  Object.entries(t)
    .filter(([k]) => prefixes.some((p) => k.startsWith(`${p}:`)) && keep(k.slice(k.indexOf(':') + 1)))
    .reduce((n, [, v]) => n + v, 0);

const listOf = (t: Tally, prefixes: string[], keep: (op: string) => boolean = () => true) =>
  Object.entries(t)
    .filter(([k]) => prefixes.some((p) => k.startsWith(`${p}:`)) && keep(k.slice(k.indexOf(':') + 1)))
    .map(([k, v]) => `${k.slice(k.indexOf(':') + 1)} ${v}`)
    .join(', ') || 'none';

const figures = (t: Tally) => ({
  awsCalls: sumOf(t, ['aws']),
  awsWrites: sumOf(t, ['aws'], (op) => AWS_WRITES.has(op)),
  awsWriteDetail: listOf(t, ['aws'], (op) => AWS_WRITES.has(op)),
  kubeCalls: sumOf(t, ['kube', 'tgb', 'ing']),
  kubeDetail: listOf(t, ['kube', 'tgb', 'ing']),
  kubeWrites: t['#kubeWrites'] ?? 0,
  bindingCalls: sumOf(t, ['tgb']),
  bindingDetail: listOf(t, ['tgb']),
  bindingWrites: t['#tgbWrites'] ?? 0,
  podLists: t['kube:listPods'] ?? 0,
  /** The port's setPodCondition calls, a condition already as asked included (counted, nothing written). */
  podConditionCalls: t['kube:setPodCondition'] ?? 0,
  /** Pods the API server stored anew (a watch's MODIFIED): what the condition calls wrote. */
  podWrites: t['#podWrites'] ?? 0,
});

/** Counts calls into buckets (one per controller), each call between the start and the end of `around`. */
export class Meter {
  readonly buckets = new Map<string, Tally>();
  readonly passes = new Map<string, number>();
  constructor(private readonly sources: Sources) {}

  async around<T>(bucket: string, pass: () => Promise<T>, passes = 1): Promise<T> {
    const before = snapshot(this.sources);
    let podWrites = 0;
    const stop = this.sources.kube.watch((change) => {
      if (change.kind === 'Pod' && change.type === 'MODIFIED') podWrites++;
    });
    try {
      return await pass();
    } finally {
      stop();
      const into = this.buckets.get(bucket) ?? {};
      addTo(into, { ...snapshot(this.sources), '#podWrites': podWrites }, before);
      this.buckets.set(bucket, into);
      this.passes.set(bucket, (this.passes.get(bucket) ?? 0) + passes);
    }
  }

  of(bucket: string) {
    return figures(this.buckets.get(bucket) ?? {});
  }
}

// ---- the rollout, generic over the controller in front ----

export interface Replica {
  name: string;
  ip: string;
}

/** Where a Deployment's Pods are: the cluster, the namespace and the Service selecting them (`app: <service>`). */
export interface Place {
  kube: FakeKubernetes;
  namespace: string;
  service: string;
}

export interface Stage extends Place {
  elbv2: FakeElbv2;
  bindings: FakeTargetGroupBindings;
  meter: Meter;
  /** The Ingress or service controller's pass(es) for one change. */
  frontPass: () => Promise<void>;
  /** The rolled Service's ip target group. */
  group: () => string;
  tgbDeps: TgbDeps;
}

/** `n` replicas of the old ReplicaSet, at 10.0.<octet>.10 and on. */
export const oldReplicas = (n: number, prefix: string, octet: number): Replica[] =>
  Array.from({ length: n }, (_, i) => ({ name: `${prefix}-old-${i}`, ip: `10.0.${octet}.${10 + i}` }));

function pod(s: Place, name: string): Pod | undefined {
  return s.kube.workloads.get(s.namespace, name);
}

/** A running Pod on node-1 with these readiness gates, its containers ready; the kubelet then says if it is Ready. */
export function putPod(s: Place, r: Replica, gates: readonly string[]): void {
  s.kube.putPod({
    metadata: { name: r.name, namespace: s.namespace, labels: { app: s.service } },
    spec: { nodeName: 'node-1', readinessGates: gates.map((conditionType) => ({ conditionType })) },
    status: {
      phase: 'Running',
      podIP: r.ip,
      podIPs: [{ ip: r.ip }],
      conditions: [
        { type: 'ContainersReady', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
    },
  });
  kubelet(s, r.name);
}

/** The Deployment controller through the relay's Pod webhook: the gates of the ip bindings whose Service selects it. */
async function createPod(s: Stage, r: Replica): Promise<void> {
  const services = [...s.kube.services.values()].filter((v) => v.metadata.namespace === s.namespace);
  const bindings = await s.bindings.listTargetGroupBindings(s.namespace);
  putPod(
    s,
    r,
    gatedBindings({ app: s.service }, services, bindings).map((b) => READINESS_GATE_PREFIX + b),
  );
}

/** The kubelet: Ready when the containers are and every readiness gate's condition is True. */
function kubelet(s: Place, name: string): boolean {
  const current = pod(s, name)!;
  const conditions = current.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
  const gates = ((current.spec?.readinessGates ?? []) as { conditionType: string }[]).map((g) => g.conditionType);
  const ready = isTrue('ContainersReady') && gates.every(isTrue);
  const next = conditions.map((c) => (c.type === 'Ready' ? { ...c, status: ready ? 'True' : 'False' } : c));
  s.kube.putPod({ ...current, status: { ...current.status, conditions: next } } as Pod);
  return ready;
}

/** The EndpointSlice controller: an endpoint per Pod on 8080 (`http`), ready as the Pod is. */
export function syncSlice(s: Place, replicas: readonly Replica[]): void {
  s.kube.putEndpointSlice({
    metadata: {
      name: `${s.service}-abc12`,
      namespace: s.namespace,
      labels: { 'kubernetes.io/service-name': s.service },
    },
    addressType: 'IPv4',
    endpoints: replicas.map((r) => {
      const ready = (pod(s, r.name)?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
      return {
        addresses: [r.ip],
        conditions: { ready, serving: ready, terminating: false },
        nodeName: 'node-1',
        targetRef: { kind: 'Pod', name: r.name, namespace: s.namespace },
      };
    }),
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  });
}

const healthy = (s: Stage) => s.elbv2.targetsOf(s.group()).filter((t) => t.state === 'healthy').length;

/** ELB's health checks: every target registered and not yet checked passes them now. */
function healthChecks(s: Stage): void {
  for (const t of s.elbv2.targetsOf(s.group())) {
    if (t.state === 'initial' || t.state === 'unused') s.elbv2.setTargetHealth(s.group(), t.target.id, 'healthy');
  }
}

/** The binding controller's pass over the bindings of the rolled Service (the keys the relay sends for its slice). */
async function bindingPasses(s: Stage): Promise<void> {
  const mine = (b: TargetGroupBinding) => b.spec.serviceRef?.name === s.service;
  const names = [...s.bindings.bindings.values()]
    .filter((b) => b.metadata.namespace === s.namespace && mine(b))
    .map((b) => b.metadata.name);
  for (const name of names) {
    await s.meter.around('binding', () =>
      targetGroupBindingReconciler.reconcile(
        { kind: 'TargetGroupBinding', namespace: s.namespace, name },
        s.tgbDeps,
        undefined,
        {
          hints: [],
          payloads: [],
          receiveCount: 1,
        },
      ),
    );
  }
}

/** maxSurge 1, maxUnavailable 0, Pod by Pod; answers the fewest healthy targets seen in any AWS state passed. */
export async function rollOut(s: Stage, replicas: Replica[]): Promise<{ lowest: number; registered: number }> {
  s.elbv2.initialDescribes = 1000; // health moves only when the bench's health checks say so
  healthChecks(s);
  let lowest = Number.POSITIVE_INFINITY;
  const observe = () => {
    lowest = Math.min(lowest, healthy(s));
  };
  s.elbv2.beforeCall = observe;
  const step = async () => {
    await s.frontPass();
    await bindingPasses(s);
    observe();
  };
  const count = replicas.length;
  for (let i = 0; i < count; i++) {
    const fresh = { name: `${s.service}-new-${i}`, ip: `10.0.50.${10 + i}` };
    await createPod(s, fresh);
    const gates = (pod(s, fresh.name)?.spec?.readinessGates ?? []) as unknown[];
    if (gates.length !== 1) throw new Error(`${fresh.name} got ${gates.length} readiness gates, not 1`);
    replicas = [...replicas, fresh];
    let ready = kubelet(s, fresh.name);
    syncSlice(s, replicas);
    for (let tries = 0; tries < 10 && !ready; tries++) {
      await step();
      ready = kubelet(s, fresh.name);
      if (ready) break;
      healthChecks(s); // time passes: what is registered gets checked
      observe();
    }
    if (!ready) throw new Error(`${fresh.name} never got Ready: a stalled rollout is no figure`);
    syncSlice(s, replicas);
    await step();
    const old = replicas.find((r) => r.name.startsWith(`${s.service}-old-`))!;
    s.kube.workloads.delete(s.namespace, old.name, { gracePeriodSeconds: 0 });
    replicas = replicas.filter((r) => r !== old);
    syncSlice(s, replicas);
    await step();
  }
  healthChecks(s);
  await step();
  s.elbv2.beforeCall = undefined;
  const registered = s.elbv2.targetsOf(s.group()).filter((t) => t.state !== 'draining').length;
  if (registered !== count) throw new Error(`the rollout ended with ${registered} targets`);
  return { lowest, registered };
}
