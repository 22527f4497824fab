import type { AutoScalingPort } from '../../shared/aws/autoscaling-port.ts';
import type { Ec2Port } from '../../shared/aws/ec2-port.ts';
import { isClusterResource } from '../../shared/aws/ownership.ts';
import type { Clock } from '../../shared/clock.ts';
import { TerminalError } from '../../shared/errors.ts';
import { planDrain } from '../../shared/k8s/drain.ts';
import type { DrainPort } from '../../shared/k8s/drain-port.ts';
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
import { drainDeadline, type InterruptionAction, markPatch, newestNotice, outOfServicePatch } from './plan.ts';

/**
 * Interruption notices (spot, rebalance, scheduled maintenance, ASG termination hooks, capacity reservations,
 * stopping instances) -> the Node marked, cordoned and drained before its instance goes. One key per Node on
 * the interruption FIFO queue, so a Node's drain is never run twice at once; the notice travels with the
 * message (it exists nowhere else), and a drain is several passes by requeue, never a sleep.
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
  /** Look again while Pods are still going (INTERRUPTION_DRAIN_REQUEUE_SECONDS). */
  drainRequeueSeconds: number;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

export const interruptionReconciler: Reconciler<InterruptionDeps> = {
  name: 'interruption',

  parse(body) {
    const parsed = parseInterruptionMessage(body);
    if (!parsed.ok) return parsed;
    const { kind, name } = parsed.message;
    // Node keys are the Node kind; a hook of an unknown instance is keyed by the instance (kind Pod never occurs).
    const key = kind === 'Node' ? { kind: 'Node' as const, name } : { kind: 'Node' as const, name: `instance:${name}` };
    return {
      ok: true,
      key,
      hint: { eventId: parsed.message.notice.eventId, source: interruptionGroupId(parsed.message) },
      payload: parsed.message,
    };
  },

  async reconcile(key, deps, _batch, context) {
    const messages = context.payloads as InterruptionMessage[];
    const notice = newestNotice(messages);
    if (!notice) throw new TerminalError(`no interruption notice came with ${key.name}`);
    if (key.name.startsWith('instance:')) return completeForUnknownInstance(notice, deps);
    const node = await readNode(deps.kube, key.name);
    // The Node is gone (deleted, or never registered): nothing to drain; a waiting hook may go on.
    if (!node) return finish(notice, deps, 'the Node is gone');
    return interrupt(node, notice, deps);
  },
};

async function interrupt(
  node: Node,
  notice: InterruptionNotice,
  deps: InterruptionDeps,
): Promise<ReconcileResult | undefined> {
  const action = deps.actions[notice.kind];
  node = await mark(node, notice, action, deps);
  if (action === 'taint-only') return finish(notice, deps, 'marked only');
  const firstPass = !node.spec?.unschedulable;
  if (firstPass) {
    node = await deps.drain.cordonNode(node.metadata.name, { resourceVersion: node.metadata.resourceVersion ?? '' });
    await recordNodeEvent(deps, node, 'Normal', 'Cordoned', `Cordoned for ${notice.kind} ${notice.eventId}`);
  }
  const hook = await hookSettings(notice, deps);
  const deadline = drainDeadline(notice, hook?.globalTimeoutSeconds);
  const now = deps.clock.now();
  const secondsLeft = deadline === undefined ? undefined : Math.max(0, Math.floor((deadline - now) / 1000));
  const left = await drainPass(node, secondsLeft, deps);
  if (firstPass && left.length > 0) {
    const by = secondsLeft === undefined ? '' : ` within ${secondsLeft} s`;
    await recordNodeEvent(deps, node, 'Normal', 'Draining', `Draining ${left.length} Pod(s)${by}`);
  }
  if (left.length === 0) {
    await recordNodeEvent(deps, node, 'Normal', 'Drained', `Drained for ${notice.kind} ${notice.eventId}`);
    deps.metrics.timing(MetricName.DrainSeconds, now - Date.parse(notice.eventTime), { kind: notice.kind });
    if (deps.outOfServiceTaint) await addOutOfService(node, deps);
    return finish(notice, deps, 'drained');
  }
  if (deadline !== undefined && now >= deadline) {
    deps.metrics.count(MetricName.DrainTimeouts, { kind: notice.kind });
    await recordNodeEvent(
      deps,
      node,
      'Warning',
      'DrainTimedOut',
      `The ${notice.kind} deadline passed with ${left.length} Pod(s) still on the Node: ${left.slice(0, 10).join(', ')}`,
    );
    return finish(notice, deps, 'deadline passed');
  }
  await heartbeat(notice, hook?.heartbeatTimeoutSeconds, deps);
  const wait =
    secondsLeft === undefined ? deps.drainRequeueSeconds : Math.min(deps.drainRequeueSeconds, Math.max(1, secondsLeft));
  return { requeueAfterSeconds: wait };
}

/** The taint, the reference's labels and the load balancer exclusion, once per notice; said in an Event. */
async function mark(
  node: Node,
  notice: InterruptionNotice,
  action: InterruptionAction,
  deps: InterruptionDeps,
): Promise<Node> {
  const patch = markPatch(node, notice, action);
  if (!patch) return node;
  const marked = await deps.kube.patchNode(node.metadata.name, patch, {
    resourceVersion: node.metadata.resourceVersion ?? '',
  });
  deps.metrics.count(MetricName.Interruptions, { kind: notice.kind });
  const deadline = notice.deadline ? `, deadline ${notice.deadline}` : '';
  await recordNodeEvent(
    deps,
    marked,
    'Warning',
    'InterruptionReceived',
    `${notice.kind} ${notice.eventId} for instance ${notice.instanceId}${deadline}: ${action === 'drain' ? 'cordoning and draining' : 'tainted only'}`,
  );
  return marked;
}

/** One pass: evict what may go (a PodDisruptionBudget's 429 waits for the next pass), delete finished Pods. Answers what is left. */
async function drainPass(node: Node, secondsLeft: number | undefined, deps: InterruptionDeps): Promise<string[]> {
  const pods = await deps.drain.listPodsOnNode(node.metadata.name);
  const plan = planDrain(pods, secondsLeft === undefined ? {} : { maxGracePeriodSeconds: secondsLeft });
  const left = plan.wait.map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  for (const pod of plan.delete) {
    await deps.drain.deletePod(pod.metadata.namespace ?? 'default', pod.metadata.name, { uid: pod.metadata.uid });
    left.push(`${pod.metadata.namespace}/${pod.metadata.name}`);
  }
  for (const { pod, gracePeriodSeconds } of plan.evict) {
    const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const result = await deps.drain.evictPod(pod.metadata.namespace ?? 'default', pod.metadata.name, {
      gracePeriodSeconds,
      ...(pod.metadata.uid ? { uid: pod.metadata.uid } : {}),
    });
    if (result === 'gone') continue;
    if (result === 'evicted') deps.metrics.count(MetricName.PodsEvicted);
    else deps.metrics.count(MetricName.PdbWaits);
    left.push(name);
  }
  return left;
}

async function addOutOfService(node: Node, deps: InterruptionDeps): Promise<void> {
  const current = (await readNode(deps.kube, node.metadata.name)) ?? node;
  const patch = outOfServicePatch(current);
  if (patch)
    await deps.kube.patchNode(current.metadata.name, patch, {
      resourceVersion: current.metadata.resourceVersion ?? '',
    });
}

async function hookSettings(notice: InterruptionNotice, deps: InterruptionDeps) {
  if (!notice.lifecycleHook || !deps.autoscaling) return undefined;
  return deps.autoscaling.describeLifecycleHook(
    notice.lifecycleHook.autoScalingGroupName,
    notice.lifecycleHook.lifecycleHookName,
  );
}

/**
 * A waiting termination hook is kept alive while the drain runs: a heartbeat once half its timeout has passed
 * since the event (and every half timeout after), so the instance is not terminated under a running drain.
 */
async function heartbeat(
  notice: InterruptionNotice,
  timeoutSeconds: number | undefined,
  deps: InterruptionDeps,
): Promise<void> {
  const hook = notice.lifecycleHook;
  if (!hook || !deps.autoscaling || !timeoutSeconds) return;
  const half = (timeoutSeconds * 1000) / 2;
  const elapsed = deps.clock.now() - Date.parse(notice.eventTime);
  // Within drainRequeueSeconds of a half-timeout boundary: the pass that crosses it sends the heartbeat.
  const sinceBoundary = elapsed % half;
  if (elapsed < half || sinceBoundary > deps.drainRequeueSeconds * 1000) return;
  await deps.autoscaling.recordLifecycleActionHeartbeat({
    asg: hook.autoScalingGroupName,
    hook: hook.lifecycleHookName,
    instanceId: notice.instanceId,
    ...(hook.lifecycleActionToken ? { token: hook.lifecycleActionToken } : {}),
  });
}

/** The drain is over (done, cut short, or nothing to do): a waiting termination hook may go on. */
async function finish(notice: InterruptionNotice, deps: InterruptionDeps, why: string): Promise<undefined> {
  const hook = notice.lifecycleHook;
  if (hook && deps.autoscaling) {
    const outcome = await deps.autoscaling.completeLifecycleAction({
      asg: hook.autoScalingGroupName,
      hook: hook.lifecycleHookName,
      instanceId: notice.instanceId,
      result: 'CONTINUE',
      ...(hook.lifecycleActionToken ? { token: hook.lifecycleActionToken } : {}),
    });
    deps.log.info('lifecycle action completed', { instanceId: notice.instanceId, outcome, why });
  }
  return undefined;
}

/**
 * A termination hook for an instance that is no Node (yet, or any more): completed when the instance is this
 * cluster's, so its group goes on at once; another group's hooks are not ours to answer.
 */
async function completeForUnknownInstance(notice: InterruptionNotice, deps: InterruptionDeps): Promise<undefined> {
  const instance = (await deps.ec2.describeInstances([notice.instanceId])).get(notice.instanceId);
  if (!instance || !isClusterResource(instance.tags, deps.clusterName)) {
    deps.log.info('lifecycle hook of an instance of no cluster Node left alone', { instanceId: notice.instanceId });
    return undefined;
  }
  return finish(notice, deps, 'no Node for the instance');
}
