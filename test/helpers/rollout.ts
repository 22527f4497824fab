import { gatedBindings } from '../../functions/relay/webhook/mutate-pod-readiness.ts';
import type { TgbDeps } from '../../functions/target-group-binding/deps.ts';
import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import type { FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import type { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';

/**
 * A gated rolling update of a Deployment (maxSurge 1, maxUnavailable 0) played on the fakes, for the tests and the
 * bench that roll Pods behind a target group (functions/target-group-binding/rollout.test.ts,
 * functions/ingress/readiness-rollout.test.ts, functions/service/lbc-readiness-rollout.test.ts,
 * test/bench/stack-bindings.bench.ts). The caller's controllers are the real ones (`Rollout.passes`); this module
 * plays the Deployment controller, the EndpointSlice controller, the kubelet, the relay's Pod webhook (`Rollout.admit`)
 * and ELB's health checks, and watches the fewest healthy targets in every AWS state a pass goes through.
 */

export const INJECT_LABEL = 'elbv2.k8s.aws/pod-readiness-gate-inject';

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

export interface Rollout extends Place {
  elbv2: FakeElbv2;
  /** The rolled Service's target group's ARN. */
  group: () => string;
  /** The readiness gate (condition type) a new Pod must get from the webhook, its only one. */
  gate: () => string;
  /** The webhook: the readiness gates (condition types) a new Pod with these labels gets. */
  admit: (labels: Record<string, string>) => Promise<string[]>;
  /** The controllers' passes after each step of the Deployment and EndpointSlice controllers. */
  passes: () => Promise<void>;
  /** The i-th new replica (from 0). */
  fresh: (i: number) => Replica;
  /** Whether the kubelet waits for the readiness gates (a Pod Ready once its containers are, when not). */
  honourGates?: boolean;
}

function pod(p: Place, name: string): Pod | undefined {
  return p.kube.workloads.get(p.namespace, name);
}

const isReady = (p: Place, name: string) =>
  (pod(p, name)?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** A running Pod on node-1 with these readiness gates, its containers ready; the kubelet then says if it is Ready. */
export function putPod(p: Place, r: Replica, gates: readonly string[], honourGates = true): boolean {
  p.kube.putPod({
    metadata: { name: r.name, namespace: p.namespace, labels: { app: p.service } },
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
  return kubelet(p, r.name, honourGates);
}

/** The kubelet: Ready when the containers are and (when honoured) every readiness gate's condition is True. */
export function kubelet(p: Place, name: string, honourGates = true): boolean {
  const current = pod(p, name)!;
  const conditions = current.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
  const gates = ((current.spec?.readinessGates ?? []) as { conditionType: string }[]).map((g) => g.conditionType);
  const ready = isTrue('ContainersReady') && (!honourGates || gates.every(isTrue));
  const next = conditions.map((c) => (c.type === 'Ready' ? { ...c, status: ready ? 'True' : 'False' } : c));
  p.kube.putPod({ ...current, status: { ...current.status, conditions: next } } as Pod);
  return ready;
}

/** The EndpointSlice controller: an endpoint per Pod on 8080 (`http`), ready as the Pod is. */
export function syncSlice(p: Place, replicas: readonly Replica[]): void {
  p.kube.putEndpointSlice({
    metadata: {
      name: `${p.service}-abc12`,
      namespace: p.namespace,
      labels: { 'kubernetes.io/service-name': p.service },
    },
    addressType: 'IPv4',
    endpoints: replicas.map((r) => {
      const ready = isReady(p, r.name);
      return {
        addresses: [r.ip],
        conditions: { ready, serving: ready, terminating: false },
        nodeName: 'node-1',
        targetRef: { kind: 'Pod', name: r.name, namespace: p.namespace },
      };
    }),
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  });
}

/**
 * The relay's Pod webhook: the gates of the namespace's ip bindings whose Service selects the Pod; with
 * `namespaceLabel`, only in a namespace labelled for injection.
 */
export async function webhookGates(
  p: Place,
  bindings: FakeTargetGroupBindings,
  labels: Record<string, string>,
  options: { namespaceLabel?: boolean } = {},
): Promise<string[]> {
  if (
    options.namespaceLabel &&
    p.kube.workloads.namespaces.get(p.namespace)?.metadata.labels?.[INJECT_LABEL] !== 'enabled'
  )
    return [];
  const services = [...p.kube.services.values()].filter((v) => v.metadata.namespace === p.namespace);
  const listed = await bindings.listTargetGroupBindings(p.namespace);
  return gatedBindings(labels, services, listed).map((b) => READINESS_GATE_PREFIX + b);
}

/**
 * The binding controller's pass over the bindings of the rolled Service (the keys the relay sends for its slice),
 * each through `around` (the bench's counting).
 */
export async function bindingPasses(
  p: Place,
  bindings: FakeTargetGroupBindings,
  deps: TgbDeps,
  around: (pass: () => Promise<unknown>) => Promise<unknown> = (pass) => pass(),
): Promise<void> {
  const names = [...bindings.bindings.values()]
    .filter((b) => b.metadata.namespace === p.namespace && b.spec.serviceRef?.name === p.service)
    .map((b) => b.metadata.name);
  for (const name of names) {
    await around(() =>
      targetGroupBindingReconciler.reconcile(
        { kind: 'TargetGroupBinding', namespace: p.namespace, name },
        deps,
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

type Group = Pick<Rollout, 'elbv2' | 'group'>;

export const healthy = (s: Group) => s.elbv2.targetsOf(s.group()).filter((t) => t.state === 'healthy').length;

/** Registered targets of the group, draining ones left out, as `id:port`. */
export const registered = (s: Group) =>
  s.elbv2
    .targetsOf(s.group())
    .filter((t) => t.state !== 'draining')
    .map((t) => `${t.target.id}:${t.target.port}`)
    .sort();

/** ELB's health checks: every target registered and not yet checked passes them now. */
export function healthChecks(s: Group): void {
  const arn = s.group();
  for (const t of s.elbv2.targetsOf(arn)) {
    if (t.state === 'initial' || t.state === 'unused') s.elbv2.setTargetHealth(arn, t.target.id, 'healthy');
  }
}

/**
 * Pod by Pod: a new Pod (through the webhook), the controllers' passes until the kubelet says it is Ready (the health
 * checks running between), then the oldest Pod deleted. Answers the fewest healthy targets seen in any AWS state
 * passed, how many states were looked at, and where it ended. `replicas` are the old ReplicaSet's, serving.
 */
export async function rollOut(s: Rollout, replicas: readonly Replica[]) {
  const honour = s.honourGates ?? true;
  s.elbv2.initialDescribes = 1000; // health moves only when the health checks here say so
  healthChecks(s);
  const old = new Set(replicas.map((r) => r.name));
  let current = [...replicas];
  let lowest = Number.POSITIVE_INFINITY;
  let observations = 0;
  const observe = () => {
    lowest = Math.min(lowest, healthy(s));
    observations++;
  };
  // Every AWS state the controllers' passes go through is looked at, not only where each pass ends.
  s.elbv2.beforeCall = observe;
  const step = async () => {
    await s.passes();
    observe();
  };
  try {
    for (let i = 0; i < replicas.length; i++) {
      const fresh = s.fresh(i);
      const gates = await s.admit({ app: s.service });
      if (gates.length !== 1 || gates[0] !== s.gate())
        throw new Error(`${fresh.name} got the readiness gates [${gates.join(', ')}], not ${s.gate()}`);
      let ready = putPod(s, fresh, gates, honour);
      current = [...current, fresh];
      syncSlice(s, current);
      for (let tries = 0; tries < 10 && !ready; tries++) {
        await step();
        ready = kubelet(s, fresh.name, honour);
        if (ready) break;
        healthChecks(s); // time passes: what is registered gets checked
        observe();
      }
      if (!ready) throw new Error(`${fresh.name} never got Ready: the rollout stalled`);
      syncSlice(s, current);
      await step();
      // maxUnavailable 0: an old Pod goes only once the new one is Ready.
      const oldest = current.find((r) => old.has(r.name))!;
      s.kube.workloads.delete(s.namespace, oldest.name, { gracePeriodSeconds: 0 });
      current = current.filter((r) => r !== oldest);
      syncSlice(s, current);
      await step();
    }
    healthChecks(s);
    await step();
  } finally {
    s.elbv2.beforeCall = undefined;
  }
  return { lowest, observations, registered: registered(s), healthy: healthy(s) };
}
