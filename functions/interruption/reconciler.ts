import type { AutoScalingPort } from '../../shared/aws/autoscaling-port.ts';
import type { Ec2Port } from '../../shared/aws/ec2-port.ts';
import { isClusterResource } from '../../shared/aws/ownership.ts';
import type { Clock } from '../../shared/clock.ts';
import { TerminalError } from '../../shared/errors.ts';
import type { DrainPort } from '../../shared/k8s/drain-port.ts';
import { isConflict } from '../../shared/k8s/errors.ts';
import { readNode, recordNodeEvent } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import {
  type InterruptionKind,
  type InterruptionMessage,
  type InterruptionNotice,
  interruptionGroupId,
  parseInterruptionMessage,
} from '../../shared/queue/interruption.ts';
import type { ReconcileResult, Reconciler } from '../../shared/queue/runner.ts';
import { drainPass } from './drain-pass.ts';
import { completeHooks, hookSettings, sendDueHeartbeats } from './hooks.ts';
import { combineNotices, type Interruption, type InterruptionState, readState } from './notices.ts';
import { type InterruptionAction, markPatch, outOfServicePatch, statePatch } from './plan.ts';
import { recoverNode } from './recovery.ts';

/**
 * Interruption notices (spot, rebalance, scheduled maintenance, ASG termination hooks, capacity reservations,
 * stopping instances) -> the Node marked, cordoned and drained before its instance goes; and the marks lifted when
 * a Node outlives its interruption (recovery.ts). One key per Node on the interruption FIFO queue, so a Node's drain
 * is never run twice at once; the notices travel with the messages (they exist nowhere else) and are remembered on
 * the Node (notices.ts), and a drain is several passes by requeue, never a sleep.
 * https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/
 */
export interface InterruptionDeps {
  clusterName: string;
  kube: KubernetesPort;
  drain: DrainPort;
  /** For termination lifecycle hooks; without it hooks are left to time out. */
  autoscaling?: AutoScalingPort;
  /** The cluster tag check for a hook whose instance is no Node. */
  ec2: Pick<Ec2Port, 'describeInstances'>;
  actions: Readonly<Record<InterruptionKind, InterruptionAction>>;
  /** Add `node.kubernetes.io/out-of-service` once drained (INTERRUPTION_OUT_OF_SERVICE_TAINT). */
  outOfServiceTaint: boolean;
  /** Exclude a drained Node from load balancers (INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS); unset: true. */
  excludeFromLoadBalancers?: boolean;
  /** Look again while Pods are still going (INTERRUPTION_DRAIN_REQUEUE_SECONDS). */
  drainRequeueSeconds: number;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

const INSTANCE_KEY = 'instance:';
const RUNNING_KEY = 'running:';

export const interruptionReconciler: Reconciler<InterruptionDeps> = {
  name: 'interruption',

  parse(body) {
    const parsed = parseInterruptionMessage(body);
    if (!parsed.ok) return parsed;
    const { kind, name, notice } = parsed.message;
    // Node keys are the Node kind; a hook of an unknown instance is keyed by the instance, the end of an
    // interruption by its own name (its own message group), so that neither coalesces with a Node's notices.
    const prefix = kind === 'Instance' ? INSTANCE_KEY : notice.kind === 'instance-running' ? RUNNING_KEY : '';
    return {
      ok: true,
      key: { kind: 'Node' as const, name: `${prefix}${name}` },
      hint: { eventId: notice.eventId, source: interruptionGroupId(parsed.message) },
      payload: parsed.message,
    };
  },

  async reconcile(key, deps, _batch, context) {
    const notices = (context.payloads as InterruptionMessage[]).map((m) => m.notice);
    if (notices.length === 0) throw new TerminalError(`no interruption notice came with ${key.name}`);
    if (key.name.startsWith(INSTANCE_KEY)) return completeForUnknownInstance(notices, deps);
    if (key.name.startsWith(RUNNING_KEY)) {
      return recoverNode(key.name.slice(RUNNING_KEY.length), notices, deps, context.receiveCount);
    }
    const node = await readNode(deps.kube, key.name);
    // The Node is gone (deleted, or never registered): nothing to drain; a waiting hook may go on.
    if (!node) return completeHooks(notices, deps, 'the Node is gone');
    return interrupt(node, notices, deps);
  },
};

async function interrupt(
  node: Node,
  batch: readonly InterruptionNotice[],
  deps: InterruptionDeps,
): Promise<ReconcileResult | undefined> {
  const remembered = readState(node);
  if (remembered.problem)
    deps.log.warn('interruption state unreadable; starting afresh', { error: remembered.problem });
  const hooks = await hookSettings([...remembered.state.notices, ...batch], deps);
  const interruption = combineNotices(remembered.state.notices, batch, node, {
    actions: deps.actions,
    hookOf: (n) => hooks.get(n.eventId),
  });
  if (!interruption) return undefined;
  let state: InterruptionState = { notices: interruption.notices, heartbeats: remembered.state.heartbeats };
  node = await mark(node, interruption, state, deps);
  const { leader } = interruption;
  if (interruption.action === 'taint-only') return completeHooks(interruption.notices, deps, 'marked only');
  const firstPass = !node.spec?.unschedulable;
  if (firstPass) {
    node = await deps.drain.cordonNode(node.metadata.name, { resourceVersion: node.metadata.resourceVersion ?? '' });
    await recordNodeEvent(deps, node, 'Normal', 'Cordoned', `Cordoned for ${leader.kind} ${leader.eventId}`);
  }
  const now = deps.clock.now();
  const deadline = interruption.deadline?.at;
  const secondsLeft = deadline === undefined ? undefined : Math.max(0, Math.floor((deadline - now) / 1000));
  const left = await drainPass(node, secondsLeft, deps);
  if (firstPass && left.length > 0) {
    const by = secondsLeft === undefined ? '' : ` within ${secondsLeft} s`;
    await recordNodeEvent(deps, node, 'Normal', 'Draining', `Draining ${left.length} Pod(s)${by}`);
  }
  if (left.length === 0) {
    await recordNodeEvent(deps, node, 'Normal', 'Drained', `Drained for ${leader.kind} ${leader.eventId}`);
    deps.metrics.timing(MetricName.DrainSeconds, now - Date.parse(leader.eventTime), { kind: leader.kind });
    if (deps.outOfServiceTaint) await addOutOfService(node, deps);
    return completeHooks(interruption.notices, deps, 'drained');
  }
  if (deadline !== undefined && now >= deadline) {
    const by = interruption.deadline!.notice;
    deps.metrics.count(MetricName.DrainTimeouts, { kind: by.kind });
    await recordNodeEvent(
      deps,
      node,
      'Warning',
      'DrainTimedOut',
      `The ${by.kind} deadline passed with ${left.length} Pod(s) still on the Node: ${left.slice(0, 10).join(', ')}`,
    );
    return completeHooks(interruption.notices, deps, 'deadline passed');
  }
  const beat = await sendDueHeartbeats(interruption.notices, hooks, state, deps);
  state = beat.state;
  await remember(node, state, deps);
  // The next pass comes no later than the next heartbeat, nor than the deadline.
  const waits = [deps.drainRequeueSeconds];
  if (secondsLeft !== undefined) waits.push(Math.max(1, secondsLeft));
  if (beat.nextDueAt !== undefined) waits.push(Math.max(1, Math.ceil((beat.nextDueAt - now) / 1000)));
  return { requeueAfterSeconds: Math.min(...waits) };
}

/** The marks and the remembered notices, in one patch; each notice new to the Node said in an Event. */
async function mark(
  node: Node,
  interruption: Interruption,
  state: InterruptionState,
  deps: InterruptionDeps,
): Promise<Node> {
  const patch = markPatch(node, interruption, state, {
    excludeFromLoadBalancers: deps.excludeFromLoadBalancers ?? true,
  });
  if (!patch) return node;
  const marked = await deps.kube.patchNode(node.metadata.name, patch, {
    resourceVersion: node.metadata.resourceVersion ?? '',
  });
  const { leader, action } = interruption;
  for (const notice of interruption.fresh) {
    deps.metrics.count(MetricName.Interruptions, { kind: notice.kind });
    const deadline = notice.deadline ? `, deadline ${notice.deadline}` : '';
    const by = notice === leader ? '' : ` (for ${leader.kind} ${leader.eventId})`;
    const doing = action === 'drain' ? `cordoning and draining${by}` : 'tainted only';
    await recordNodeEvent(
      deps,
      marked,
      'Warning',
      'InterruptionReceived',
      `${notice.kind} ${notice.eventId} for instance ${notice.instanceId}${deadline}: ${doing}`,
    );
  }
  return marked;
}

/** The state after a pass (a heartbeat's time): written when it changed, read again on a conflict. */
async function remember(node: Node, state: InterruptionState, deps: InterruptionDeps): Promise<void> {
  let current: Node | undefined = node;
  for (let attempt = 1; current; attempt++) {
    const patch = statePatch(current, state);
    if (!patch) return;
    try {
      await deps.kube.patchNode(current.metadata.name, patch, {
        resourceVersion: current.metadata.resourceVersion ?? '',
      });
      return;
    } catch (err) {
      // The kubelet writes the Node too: read it again and write only our annotation, a few times.
      if (!isConflict(err) || attempt >= 3) throw err;
      current = await readNode(deps.kube, node.metadata.name);
    }
  }
}

async function addOutOfService(node: Node, deps: InterruptionDeps): Promise<void> {
  const current = (await readNode(deps.kube, node.metadata.name)) ?? node;
  const patch = outOfServicePatch(current);
  if (patch)
    await deps.kube.patchNode(current.metadata.name, patch, {
      resourceVersion: current.metadata.resourceVersion ?? '',
    });
}

/**
 * A termination hook for an instance that is no Node (yet, or any more): completed when the instance is this
 * cluster's, so its group goes on at once; another group's hooks are not ours to answer.
 */
async function completeForUnknownInstance(
  notices: readonly InterruptionNotice[],
  deps: InterruptionDeps,
): Promise<undefined> {
  const instanceId = notices[0]!.instanceId;
  const instance = (await deps.ec2.describeInstances([instanceId])).get(instanceId);
  if (!instance || !isClusterResource(instance.tags, deps.clusterName)) {
    deps.log.info('lifecycle hook of an instance of no cluster Node left alone', { instanceId });
    return undefined;
  }
  await completeHooks(notices, deps, 'no Node for the instance');
  return undefined;
}
