/**
 * EC2 Auto Scaling as the interruption controller (functions/interruption) uses it: read a termination lifecycle hook's
 * timeouts, keep an instance in Terminating:Wait while its Node drains (heartbeats), and let the group go on
 * (complete the action). https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html
 */
export interface AutoScalingPort {
  /** The hook's timeouts and default result; undefined when the group has no hook of that name. */
  describeLifecycleHook(asg: string, hook: string): Promise<LifecycleHookSettings | undefined>;
  /**
   * Restart the hook's heartbeat timeout for a waiting instance. `not-found` when no action is waiting (completed
   * already, or expired and the default result taken): nothing left to keep alive, no error.
   * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_RecordLifecycleActionHeartbeat.html
   */
  recordLifecycleActionHeartbeat(action: LifecycleActionRef): Promise<LifecycleActionOutcome>;
  /**
   * End the wait with a result (for a termination hook the instance is terminated either way; ABANDON also skips
   * the group's other hooks). `not-found` as for heartbeats: someone completed it, or it expired.
   * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_CompleteLifecycleAction.html
   */
  completeLifecycleAction(
    action: LifecycleActionRef & { result: LifecycleActionResult },
  ): Promise<LifecycleActionOutcome>;
}

export type LifecycleActionResult = 'CONTINUE' | 'ABANDON';
export type LifecycleActionOutcome = 'done' | 'not-found';

export interface LifecycleHookSettings {
  /** How long an instance waits without a heartbeat before the default result is taken (30-7200 s). */
  heartbeatTimeoutSeconds: number;
  /** The longest wait, heartbeats or not: 100 times the heartbeat timeout, at most 48 hours. */
  globalTimeoutSeconds: number;
  defaultResult: LifecycleActionResult;
}

/** A waiting lifecycle action: the token from the event when there was one, and the instance either way. */
export interface LifecycleActionRef {
  asg: string;
  hook: string;
  token?: string;
  instanceId: string;
}

/** AWS's defaults for a hook made without them (PutLifecycleHook). */
export const DEFAULT_HEARTBEAT_TIMEOUT_SECONDS = 3600;
export const MAX_GLOBAL_TIMEOUT_SECONDS = 172_800;
export const GLOBAL_TIMEOUT_HEARTBEATS = 100;
