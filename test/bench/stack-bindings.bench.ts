import { FULL_PASS_INTERVAL_MS } from '../../functions/ingress/apply/quick.ts';
import { backend, makeIngress, makeService, path, rule } from '../../functions/ingress/model/testing/builders.ts';
import { putIpService, stackWorld } from '../../functions/service/testing/stack.ts';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { createIngressWorld, type IngressWorld } from '../helpers/ingress-world.ts';
import { type Place, putPod, syncSlice } from '../helpers/rollout.ts';
import { createServiceWorld } from '../helpers/service-world.ts';
import { Meter, oldReplicas, rollOutCounted, type Sources, type Stage } from './stack-bindings-rollout.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- stack-bindings';
const NAMESPACE = 'shop';
const GROUP: GroupId = { explicit: true, name: 'shop' };
const BACKENDS = ['cart', 'catalog', 'checkout'];
const REPLICAS = 30;
const INJECT_LABEL = 'elbv2.k8s.aws/pod-readiness-gate-inject';

/**
 * What stack bindings cost (the TargetGroupBindings our Ingress and service controllers keep beside the target groups
 * they make, shared/k8s/stack-bindings.ts), counted on the fakes through the real adapters and reconcilers:
 * 1. an IngressGroup of 3 Ingresses, each one ip backend (3 target groups): the first convergence, then a full pass
 *    in line (the quick look's hour over), with stack bindings on and, in a twin world, off;
 * 2. a gated rolling update of 30 replicas (maxSurge 1, maxUnavailable 0) behind one of those target groups, played as
 *    functions/ingress/readiness-rollout.test.ts plays it (the bench is the Deployment and EndpointSlice controllers,
 *    the kubelet, the relay's Pod webhook and ELB's health checks; after each step the real Ingress reconciler
 *    converges the group and the real binding reconciler passes over the rolled Service's binding, the one key the
 *    relay sends for its slice);
 * 3. the same rollout behind the NLB of a Service the reference serves (functions/service/lbc-readiness-rollout.test.ts),
 *    one service controller invocation per step.
 * Every call is counted between a controller's pass's start and end, so what the bench does itself (the webhook's
 * reads, the kubelet's writes) is not (test/bench/stack-bindings-rollout.ts).
 */

// ---- part 1: the IngressGroup ----

const sourcesOf = (w: IngressWorld): Sources => ({
  elbv2: w.elbv2,
  ec2: w.ec2,
  kube: w.kube,
  bindings: w.bindings,
  ingresses: w.ingresses,
});

/**
 * The group `shop`: per backend a Service (selector `app: <backend>`), its Pods (made before the group, so without
 * gates: Ready as their containers are; REPLICAS of the first backend, 3 of the others), its slice, one ip Ingress.
 */
function groupWorld(): IngressWorld {
  const w = createIngressWorld();
  w.addNode(1);
  w.kube.workloads.putNamespace({ metadata: { name: NAMESPACE, labels: { [INJECT_LABEL]: 'enabled' } } });
  BACKENDS.forEach((name, b) => {
    const service = makeService({ name, namespace: NAMESPACE });
    w.kube.putService({ ...service, spec: { ...service.spec, selector: { app: name } } });
    w.ingresses.putIngress(
      makeIngress({
        name,
        namespace: NAMESPACE,
        annotations: { 'group.name': GROUP.name, 'target-type': 'ip' },
        rules: [rule('shop.example.com', path(`/${name}`, 'Prefix', backend(name, 80)))],
      }),
    );
    const place: Place = { kube: w.kube, namespace: NAMESPACE, service: name };
    const replicas = oldReplicas(b === 0 ? REPLICAS : 3, name, 30 + b);
    for (const r of replicas) putPod(place, r, []);
    syncSlice(place, replicas);
  });
  return w;
}

/** The group's key played until the queue is empty (every Ingress pass it takes), counted. */
async function groupPass(w: IngressWorld, stackBindings: boolean) {
  const meter = new Meter(sourcesOf(w));
  const polls = await meter.around('ingress', () =>
    w.converge([GROUP], stackBindings ? w.stackBindingDeps : w.ingressDeps),
  );
  return { ...meter.of('ingress'), polls };
}

/** A full pass in line: the quick look's hour over, nothing changed. */
function fullPass(w: IngressWorld, stackBindings: boolean) {
  w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
  return groupPass(w, stackBindings);
}

// ---- the scenarios ----

async function ingressScenario() {
  const w = groupWorld();
  const twin = groupWorld();
  const first = await groupPass(w, true);
  await groupPass(twin, false);
  const inLineOn = await fullPass(w, true);
  const inLineOff = await fullPass(twin, false);

  // The rollout behind the first backend's target group, in the world with stack bindings.
  const rolled = BACKENDS[0]!;
  const meter = new Meter(sourcesOf(w));
  const stage: Stage = {
    kube: w.kube,
    elbv2: w.elbv2,
    bindings: w.bindings,
    meter,
    namespace: NAMESPACE,
    service: rolled,
    tgbDeps: w.tgbDeps,
    frontPass: async () => {
      const polls = await meter.around('front', () => w.converge([GROUP], w.stackBindingDeps), 0);
      meter.passes.set('front', (meter.passes.get('front') ?? 0) + polls);
    },
  };
  const rollout = await rollOutCounted(stage, oldReplicas(REPLICAS, rolled, 30));
  return { first, inLineOn, inLineOff, rollout, meter };
}

async function serviceScenario() {
  const w = createServiceWorld();
  const stackW = stackWorld(w);
  w.addNode(1);
  const meter = new Meter({ elbv2: w.elbv2, ec2: w.ec2, kube: w.kube, bindings: stackW.bindings });
  const stage: Stage = {
    kube: w.kube,
    elbv2: w.elbv2,
    bindings: stackW.bindings,
    meter,
    namespace: 'default',
    service: 'web',
    tgbDeps: stackW.tgbDeps,
    frontPass: async () => {
      await meter.around('front', () => stackW.pass());
    },
  };
  // The old ReplicaSet, serving before the Service's load balancer was made (so its Pods have no gate).
  const old = oldReplicas(REPLICAS, 'web', 20);
  for (const r of old) putPod(stage, r, []);
  syncSlice(stage, old);
  putIpService(w);
  await stackW.converge();
  if (stackW.list().length !== 1) throw new Error(`the Service has ${stackW.list().length} stack bindings`);
  const rollout = await rollOutCounted(stage, old);
  return { rollout, meter };
}

// ---- the report ----

export async function run(): Promise<BenchResult[]> {
  const ingress = await ingressScenario();
  const service = await serviceScenario();
  const r = (name: string, value: number, unit: string, note: string, target?: string): BenchResult => ({
    name: `stack bindings: ${name}`,
    value,
    unit,
    rerun: RERUN,
    note: `${note}; re-run: ${RERUN}`,
    ...(target ? { target } : {}),
  });
  const { first, inLineOn, inLineOff } = ingress;
  const group = `group of ${BACKENDS.length} ip backends`;
  const rows: BenchResult[] = [
    r(
      `${group}, first convergence: binding writes`,
      first.bindingWrites,
      'writes',
      `TargetGroupBinding writes by the Ingress controller over the ${first.polls} queue polls of the first convergence (its binding calls: ${first.bindingDetail})`,
      '3 creates',
    ),
    r(
      `${group}, first convergence: binding calls`,
      first.bindingCalls,
      'calls',
      'TargetGroupBinding reads and writes of the Ingress controller until the queue is empty',
    ),
    r(
      `${group}, first convergence: AWS calls`,
      first.awsCalls,
      'calls',
      `every EC2 and ELBv2 call of the first convergence; writes: ${first.awsWriteDetail}`,
    ),
    r(
      `${group}, full pass in line: binding calls`,
      inLineOn.bindingCalls,
      'calls',
      `${inLineOn.bindingDetail} (the quick look's hour over, nothing changed)`,
      '1 list',
    ),
    r(
      `${group}, full pass in line: binding writes`,
      inLineOn.bindingWrites,
      'writes',
      'TargetGroupBinding writes of that pass',
      '0',
    ),
    r(
      `${group}, full pass in line: AWS calls (bindings on)`,
      inLineOn.awsCalls,
      'calls',
      `every EC2 and ELBv2 call of the pass; writes: ${inLineOn.awsWriteDetail}`,
    ),
    r(
      `${group}, full pass in line: AWS calls (bindings off)`,
      inLineOff.awsCalls,
      'calls',
      `the same pass in a twin world with STACK_TARGET_GROUP_BINDINGS off; writes: ${inLineOff.awsWriteDetail}`,
    ),
    r(
      `${group}, full pass in line: AWS calls, on - off`,
      inLineOn.awsCalls - inLineOff.awsCalls,
      'calls',
      'what stack bindings add to a full pass in AWS calls',
      '0',
    ),
    r(`${group}, full pass in line: Kubernetes calls (bindings on)`, inLineOn.kubeCalls, 'calls', inLineOn.kubeDetail),
    r(
      `${group}, full pass in line: Kubernetes calls (bindings off)`,
      inLineOff.kubeCalls,
      'calls',
      inLineOff.kubeDetail,
    ),
    r(
      `${group}, full pass in line: Kubernetes calls, on - off`,
      inLineOn.kubeCalls - inLineOff.kubeCalls,
      'calls',
      'what stack bindings add to a full pass in Kubernetes calls (Pods are listed only when an endpoint is not ready)',
    ),
  ];
  const rollout = (label: string, front: string, scenario: typeof ingress | typeof service): BenchResult[] => {
    const f = scenario.meter.of('front');
    const b = scenario.meter.of('binding');
    const what = `gated rollout of ${REPLICAS} replicas behind ${label}`;
    return [
      r(
        `${what}: ${front} AWS calls`,
        f.awsCalls,
        'calls',
        `every EC2 and ELBv2 call of the ${front} controller over the rollout`,
      ),
      r(
        `${what}: ${front} AWS writes`,
        f.awsWrites,
        'calls',
        front === 'Ingress'
          ? `${f.awsWriteDetail} (AddTags: the quick look's digest tag, functions/ingress/apply/quick.ts, after each full pass the targets' change makes)`
          : f.awsWriteDetail,
      ),
      r(
        `${what}: ${front} passes`,
        scenario.meter.passes.get('front') ?? 0,
        'passes',
        front === 'Ingress'
          ? 'queue polls that handled the group key (one per step, more when it requeued)'
          : 'service controller invocations, one per step',
      ),
      r(
        `${what}: ${front} Pod lists`,
        f.podLists,
        'calls',
        `Pod lists by the ${front} controller (an endpoint not ready: which Pods wait only for the gate); its Kubernetes calls: ${f.kubeDetail}`,
      ),
      r(
        `${what}: binding controller AWS calls`,
        b.awsCalls,
        'calls',
        'every EC2 and ELBv2 call of the binding controller over the rollout',
      ),
      r(`${what}: binding controller AWS writes`, b.awsWrites, 'calls', b.awsWriteDetail),
      r(
        `${what}: binding controller passes`,
        scenario.meter.passes.get('binding') ?? 0,
        'passes',
        "one per step, over the rolled Service's binding only",
      ),
      r(
        `${what}: Pod condition writes`,
        b.podWrites + f.podWrites,
        'writes',
        `readiness gate conditions written (binding controller ${b.podWrites}, ${front} ${f.podWrites}) of ${b.podConditionCalls + f.podConditionCalls} setPodCondition calls; binding controller's Kubernetes calls: ${b.kubeDetail}`,
        `${2 * REPLICAS} (per new Pod: False while its target is initial, then True)`,
      ),
      r(
        `${what}: lowest healthy targets`,
        scenario.rollout.lowest,
        'targets',
        'the fewest healthy targets in the rolled target group, in every AWS state any pass went through',
        `${REPLICAS} (maxUnavailable 0)`,
      ),
    ];
  };
  rows.push(...rollout('an Ingress ip target group', 'Ingress', ingress));
  rows.push(...rollout("a reference Service's NLB", 'service', service));
  return rows;
}
