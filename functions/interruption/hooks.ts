import type { AutoScalingPort, LifecycleHookSettings } from '../../shared/aws/autoscaling-port.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { InterruptionNotice } from '../../shared/queue/interruption.ts';
import type { InterruptionState } from './notices.ts';

/**
 * Termination lifecycle hooks of an interruption's notices: their timeouts, the heartbeats that keep the instance in
 * Terminating:Wait while the Node drains, and their completion when the drain is over.
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html
 */
export interface HookDeps {
  /** Without it hooks are left to time out. */
  autoscaling?: AutoScalingPort;
  clock: Clock;
  log: Log;
}

/** The notices' hooks with their settings, by the notice's event ID (DescribeLifecycleHooks, once per hook). */
export async function hookSettings(
  notices: readonly InterruptionNotice[],
  deps: HookDeps,
): Promise<Map<string, LifecycleHookSettings>> {
  const settings = new Map<string, LifecycleHookSettings>();
  const described = new Map<string, Promise<LifecycleHookSettings | undefined>>();
  for (const notice of notices) {
    const hook = notice.lifecycleHook;
    if (!hook || !deps.autoscaling) continue;
    const key = `${hook.autoScalingGroupName}\n${hook.lifecycleHookName}`;
    if (!described.has(key)) {
      described.set(key, deps.autoscaling.describeLifecycleHook(hook.autoScalingGroupName, hook.lifecycleHookName));
    }
    const found = await described.get(key)!;
    if (found) settings.set(notice.eventId, found);
  }
  return settings;
}

/**
 * When the hook's next heartbeat is due, in ms since the epoch: half its heartbeat timeout after the last one (or
 * after the event, when the wait began). Half leaves a pass that comes late, or a heartbeat that fails once, the
 * other half to make it.
 */
export function heartbeatDueAt(notice: InterruptionNotice, settings: LifecycleHookSettings, state: InterruptionState) {
  const last = Date.parse(state.heartbeats[notice.eventId] ?? notice.eventTime);
  return last + (settings.heartbeatTimeoutSeconds * 1000) / 2;
}

/**
 * Sends every heartbeat due now; answers the state with their times and when the next one is due. The pass is
 * requeued no later than that (reconciler.ts), so a heartbeat comes before every heartbeat timeout whatever the
 * pass interval: a heartbeat only when a pass happened to land near a half-timeout boundary let an instance leave
 * Terminating:Wait mid-drain.
 */
export async function sendDueHeartbeats(
  notices: readonly InterruptionNotice[],
  hooks: ReadonlyMap<string, LifecycleHookSettings>,
  state: InterruptionState,
  deps: HookDeps,
): Promise<{ state: InterruptionState; nextDueAt?: number }> {
  const now = deps.clock.now();
  const heartbeats = { ...state.heartbeats };
  let nextDueAt: number | undefined;
  for (const notice of notices) {
    const hook = notice.lifecycleHook;
    const settings = hooks.get(notice.eventId);
    if (!hook || !settings || !deps.autoscaling) continue;
    let due = heartbeatDueAt(notice, settings, { ...state, heartbeats });
    if (now >= due) {
      const outcome = await deps.autoscaling.recordLifecycleActionHeartbeat({
        asg: hook.autoScalingGroupName,
        hook: hook.lifecycleHookName,
        instanceId: notice.instanceId,
        ...(hook.lifecycleActionToken ? { token: hook.lifecycleActionToken } : {}),
      });
      // Not found: completed or expired already, nothing to keep alive; asked again only half a timeout later.
      if (outcome === 'not-found') deps.log.info('lifecycle action not waiting', { instanceId: notice.instanceId });
      heartbeats[notice.eventId] = new Date(now).toISOString();
      due = heartbeatDueAt(notice, settings, { ...state, heartbeats });
    }
    nextDueAt = Math.min(nextDueAt ?? due, due);
  }
  return { state: { ...state, heartbeats }, ...(nextDueAt === undefined ? {} : { nextDueAt }) };
}

/** The drain is over (done, cut short, or nothing to do): each waiting hook may go on (CONTINUE). */
export async function completeHooks(
  notices: readonly InterruptionNotice[],
  deps: HookDeps,
  why: string,
): Promise<undefined> {
  if (!deps.autoscaling) return undefined;
  const done = new Set<string>();
  for (const notice of notices) {
    const hook = notice.lifecycleHook;
    const key = hook && `${hook.autoScalingGroupName}\n${hook.lifecycleHookName}\n${notice.instanceId}`;
    if (!hook || !key || done.has(key)) continue;
    done.add(key);
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
