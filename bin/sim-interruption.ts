import type { Instance } from '../shared/aws/ec2-port.ts';
import type { FakeEc2 } from '../shared/aws/fakes/ec2/fake-ec2.ts';
import type { FakeElb } from '../shared/aws/fakes/elb/fake-elb.ts';
import type { FakeElbv2 } from '../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { Clock } from '../shared/clock.ts';
import type { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import { isNodeReady, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../shared/k8s/service-port.ts';
import type { Node, Pod } from '../shared/k8s/types.ts';
import { INTERRUPTION_TAINT_KEYS, SPOT_NOTICE_MS } from '../shared/queue/interruption.ts';

/**
 * The simulation's spot interruption: a Node running a Deployment-like set of 3 replicas under a
 * PodDisruptionBudget (`minAvailable: 2`) and a DaemonSet Pod gets an `EC2 Spot Instance Interruption Warning`,
 * which goes through the EC2 events queue and router to the interruption controller, as in AWS. The Node must be
 * marked and excluded from load balancers, its replicas evicted without the budget ever broken (a ReplicaSet
 * puts a replacement on another Node for each one evicted, Ready a few seconds later) and the Node drained
 * inside the two minutes; the instance is terminated at the deadline. The budget is checked on every tick.
 */

export const SIM_WORKLOAD = { namespace: 'shop', name: 'checkout', replicas: 3, minAvailable: 2 };
/** How long a replacement replica takes to become Ready (image pull, readiness probe): the budget must wait. */
const REPLACEMENT_READY_MS = 3_000;
/** The replicas' terminationGracePeriodSeconds: evicted Pods stay terminating this long. */
const GRACE_SECONDS = 10;

export interface InterruptionHost {
  clock: Clock;
  /** The scenario's t=0, for the log and the problems. */
  start: number;
  kube: FakeKubernetes;
  ec2: FakeEc2;
  elbv2: FakeElbv2;
  elb: FakeElb;
  /** The Classic ELB of the moved-over Service, which must let the Node go too. */
  classicName: string;
  enqueueEc2Event(body: string): Promise<void>;
  /** The instance goes (a state-change event, as the simulation's other terminations). */
  terminate(instance: Instance): void;
  /** A scenario step `seconds` after the start. */
  at(seconds: number, what: string, run: () => void | Promise<void>): void;
}

/** What the Node looked like just before its instance went: checked by `problems`. */
interface AtDeadline {
  marked: boolean;
  cordoned: boolean;
  excluded: boolean;
  nlbTargets: string[];
  classicInstances: string[];
  podsLeft: string[];
}

const labels = { app: SIM_WORKLOAD.name };

/** A Pod as the scheduler and kubelet leave it on the Node; a replacement starts not Ready. */
function pod(nodeName: string, name: string, owner: { kind: string; name: string }, ready: boolean): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: SIM_WORKLOAD.namespace,
      labels: owner.kind === 'ReplicaSet' ? labels : { app: owner.name },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: `uid-${owner.name}`, controller: true },
      ],
    },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: GRACE_SECONDS,
      containers: [{ name: 'app', image: 'public.ecr.aws/docker/library/busybox:1.36' }],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

const replicaSet = { kind: 'ReplicaSet', name: `${SIM_WORKLOAD.name}-7c9d` };
const isReplica = (p: Pod) => p.metadata.namespace === SIM_WORKLOAD.namespace && p.metadata.labels?.app === labels.app;
const isHealthy = (p: Pod) =>
  !p.metadata.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** Sets up the scenario on `instance` (its Node, Pods and warning at `atSeconds`); `tick` runs on every loop. */
export function interruptionScenario(host: InterruptionHost, instance: Instance, atSeconds: number) {
  const { kube, clock } = host;
  const nodeName = instance.privateDnsName!;
  const warningAt = host.start + (atSeconds + 5) * 1000;
  const replaced = new Set<string>();
  const pendingReady = new Map<string, number>();
  const violations: number[] = [];
  let drainedAt: number | undefined;
  let atDeadline: AtDeadline | undefined;
  let replacements = 0;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

  host.at(
    atSeconds,
    `Deployment ${SIM_WORKLOAD.namespace}/${SIM_WORKLOAD.name}: ${SIM_WORKLOAD.replicas} replicas on ${nodeName}, PDB minAvailable ${SIM_WORKLOAD.minAvailable}; a DaemonSet Pod`,
    () => {
      for (let i = 0; i < SIM_WORKLOAD.replicas; i++)
        kube.putPod(pod(nodeName, `${replicaSet.name}-${i}`, replicaSet, true));
      kube.putPod(
        pod(nodeName, `node-agent-${instance.instanceId.slice(-5)}`, { kind: 'DaemonSet', name: 'node-agent' }, true),
      );
      kube.workloads.putBudget({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: SIM_WORKLOAD.name, namespace: SIM_WORKLOAD.namespace },
        spec: { minAvailable: SIM_WORKLOAD.minAvailable, selector: { matchLabels: labels } },
      });
    },
  );
  host.at(atSeconds + 5, `EC2 Spot Instance Interruption Warning for ${instance.instanceId}`, () =>
    host.enqueueEc2Event(spotWarning(instance.instanceId, new Date(clock.now()).toISOString())),
  );
  host.at(atSeconds + 5 + SPOT_NOTICE_MS / 1000, `spot deadline: ${instance.instanceId} is terminated`, () => {
    atDeadline = observeAtDeadline();
    host.terminate(instance);
  });
  // The Node controller lets a Node go only once its kubelet stopped reporting (NotReady), as upstream does.
  host.at(atSeconds + 15 + SPOT_NOTICE_MS / 1000, `kubelet of ${nodeName} goes silent`, () => {
    kube.mutateNode(nodeName, (n) => {
      n.status!.conditions = [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown' }];
    });
  });

  /** The Node as it is just before the instance goes, and what the load balancers still send it. */
  function observeAtDeadline(): AtDeadline {
    const node = kube.nodes.get(nodeName);
    const spotTaint = INTERRUPTION_TAINT_KEYS['spot-interruption'];
    const nlbTargets = [...host.elbv2.targetGroups.values()]
      .flatMap((tg) => [...tg.targets.values()])
      .filter((t) => t.state !== 'draining')
      .map((t) => t.target.id);
    return {
      marked: Boolean(node?.spec?.taints?.some((t) => t.key === spotTaint)),
      cordoned: node?.spec?.unschedulable === true,
      // The label's presence excludes (whatever its value); the controller's value says it set it.
      excluded: node?.metadata.labels?.[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] !== undefined,
      nlbTargets,
      classicInstances: (host.elb.describeNamed(host.classicName)?.Instances ?? []).map((i) => i.InstanceId!),
      podsLeft: kube.workloads
        .list()
        .filter((p) => p.spec?.nodeName === nodeName && !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.name),
    };
  }

  /** Where the ReplicaSet's scheduler puts a replacement: a Ready, schedulable, initialized Node still running. */
  function schedulable(): Node[] {
    return [...kube.nodes.values()].filter(
      (n) =>
        n.metadata.name !== nodeName &&
        !n.spec?.unschedulable &&
        isNodeReady(n) &&
        !n.spec?.taints?.some((t) => t.key === TAINT_UNINITIALIZED) &&
        host.ec2.instances.get(n.spec?.providerID?.split('/').pop() ?? '')?.state === 'running',
    );
  }

  /** The budget checked, then the ReplicaSet's work: a replacement per evicted replica, Ready after a while. */
  function tick(): void {
    const replicas = kube.workloads.list().filter(isReplica);
    if (replicas.length === 0) return;
    if (replicas.filter(isHealthy).length < SIM_WORKLOAD.minAvailable) violations.push(clock.now());
    for (const p of replicas) {
      if (!p.metadata.deletionTimestamp || replaced.has(p.metadata.uid!)) continue;
      replaced.add(p.metadata.uid!);
      const targets = schedulable();
      const target = targets[replacements % Math.max(1, targets.length)];
      if (!target) continue;
      const name = `${replicaSet.name}-r${replacements++}`;
      kube.putPod(pod(target.metadata.name, name, replicaSet, false));
      pendingReady.set(name, clock.now() + REPLACEMENT_READY_MS);
    }
    for (const [name, readyAt] of pendingReady) {
      const current = kube.workloads.get(SIM_WORKLOAD.namespace, name);
      if (readyAt > clock.now() || !current) continue;
      pendingReady.delete(name);
      kube.putPod({ ...current, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
    }
    if (drainedAt === undefined && kube.eventsFor('Node', nodeName, 'Drained').length > 0) drainedAt = clock.now();
  }

  /** Each unmet expectation, one line. */
  function problems(): string[] {
    const out: string[] = [];
    if (violations.length > 0) {
      out.push(
        `PDB ${SIM_WORKLOAD.namespace}/${SIM_WORKLOAD.name} broken on ${violations.length} tick(s), first at t+${seconds(violations[0]! - host.start)}`,
      );
    }
    if (drainedAt === undefined) out.push(`spot-interrupted Node ${nodeName} was never drained`);
    else if (drainedAt - warningAt > SPOT_NOTICE_MS) {
      out.push(`spot-interrupted Node ${nodeName} drained ${seconds(drainedAt - warningAt)} after the warning`);
    }
    if (!atDeadline) return [...out, `the spot deadline of ${instance.instanceId} never came`];
    if (!atDeadline.marked) out.push(`spot-interrupted Node ${nodeName} lacks the spot interruption taint`);
    if (!atDeadline.cordoned) out.push(`spot-interrupted Node ${nodeName} was not cordoned`);
    if (!atDeadline.excluded) out.push(`spot-interrupted Node ${nodeName} was not excluded from load balancers`);
    if (atDeadline.nlbTargets.includes(instance.instanceId))
      out.push(`${instance.instanceId} still an NLB target at its spot deadline`);
    if (atDeadline.classicInstances.includes(instance.instanceId))
      out.push(`${instance.instanceId} still on the Classic ELB at its spot deadline`);
    const daemon = atDeadline.podsLeft.filter((n) => n.startsWith('node-agent-'));
    if (daemon.length !== 1 || atDeadline.podsLeft.length !== 1) {
      out.push(
        `Pods left on ${nodeName} at the deadline: ${atDeadline.podsLeft.join(', ') || 'none'} (want the DaemonSet Pod only)`,
      );
    }
    const healthy = kube.workloads.list().filter((p) => isReplica(p) && isHealthy(p));
    if (healthy.length !== SIM_WORKLOAD.replicas || healthy.some((p) => p.spec?.nodeName === nodeName)) {
      out.push(`${healthy.length} healthy ${SIM_WORKLOAD.name} replicas elsewhere, want ${SIM_WORKLOAD.replicas}`);
    }
    return out;
  }

  return {
    nodeName,
    instance,
    tick,
    problems,
    /** When the drain ended, in ms after the warning (undefined: not yet). */
    drainedAfterMs: () => (drainedAt === undefined ? undefined : drainedAt - warningAt),
    budgetViolations: () => violations.length,
    /** One line for the summary. */
    summary(): string {
      const drained =
        drainedAt === undefined ? 'not drained' : `drained ${seconds(drainedAt - warningAt)} after the warning`;
      const pdb = violations.length === 0 ? 'PDB held' : `PDB broken ${violations.length}x`;
      const gone =
        host.ec2.instances.get(instance.instanceId)?.state === 'terminated' ? ', terminated at the deadline' : '';
      return `${nodeName}: ${replacements} replicas evicted and replaced, ${drained}, ${pdb}${gone}`;
    },
  };
}

export type InterruptionScenario = ReturnType<typeof interruptionScenario>;

/** The EventBridge event EC2 sends two minutes before it interrupts a spot instance. */
function spotWarning(instanceId: string, time: string): string {
  return JSON.stringify({
    version: '0',
    id: `sim-spot-${instanceId}`,
    'detail-type': 'EC2 Spot Instance Interruption Warning',
    source: 'aws.ec2',
    account: '000000000000',
    time,
    region: 'eu-west-1',
    resources: [`arn:aws:ec2:eu-west-1b:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, 'instance-action': 'terminate' },
  });
}
