import type { TgbDeps } from '../../functions/target-group-binding/deps.ts';
import { EC2_WRITE_OPERATIONS, type FakeEc2 } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { ELBV2_WRITE_OPERATIONS, type FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import type { FakeIngresses } from '../../shared/k8s/fakes/ingresses.ts';
import type { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import { bindingPasses, type Place, type Replica, rollOut, webhookGates } from '../helpers/rollout.ts';

/**
 * The counting and the gated rollout of test/bench/stack-bindings.bench.ts. Calls are counted per controller, between
 * the start and the end of its pass (`Meter.around`), on the fakes' counters, so what the bench itself does (the
 * webhook's reads, the kubelet's and the EndpointSlice controller's writes) is not. The rollout is the one
 * test/helpers/rollout.ts plays (as functions/ingress/readiness-rollout.test.ts and
 * functions/service/lbc-readiness-rollout.test.ts do), with the Ingress or the service controller in front
 * (`Stage.frontPass`) and the binding controller behind.
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

// ---- the rollout, with the controller in front ----

export interface Stage extends Place {
  elbv2: FakeElbv2;
  bindings: FakeTargetGroupBindings;
  meter: Meter;
  /** The Ingress or service controller's pass(es) for one change. */
  frontPass: () => Promise<void>;
  tgbDeps: TgbDeps;
}

/** `n` replicas of the old ReplicaSet, at 10.0.<octet>.10 and on. */
export const oldReplicas = (n: number, prefix: string, octet: number): Replica[] =>
  Array.from({ length: n }, (_, i) => ({ name: `${prefix}-old-${i}`, ip: `10.0.${octet}.${10 + i}` }));

/**
 * maxSurge 1, maxUnavailable 0, Pod by Pod, behind the rolled Service's binding: after each step the controller in
 * front, then the binding controller over that binding; answers the fewest healthy targets seen in any AWS state passed.
 */
export async function rollOutCounted(s: Stage, replicas: Replica[]): Promise<{ lowest: number; registered: number }> {
  const binding = () =>
    [...s.bindings.bindings.values()].find(
      (b) => b.metadata.namespace === s.namespace && b.spec.serviceRef?.name === s.service,
    )!;
  const result = await rollOut(
    {
      ...s,
      group: () => binding().spec.targetGroupARN!,
      gate: () => READINESS_GATE_PREFIX + binding().metadata.name,
      admit: (labels) => webhookGates(s, s.bindings, labels),
      passes: async () => {
        await s.frontPass();
        await bindingPasses(s, s.bindings, s.tgbDeps, (pass) => s.meter.around('binding', pass));
      },
      fresh: (i) => ({ name: `${s.service}-new-${i}`, ip: `10.0.50.${10 + i}` }),
    },
    replicas,
  );
  const registered = result.registered.length;
  if (registered !== replicas.length) throw new Error(`the rollout ended with ${registered} targets`);
  return { lowest: result.lowest, registered };
}
