import type * as Sdk from '@aws-sdk/client-auto-scaling';
import type { Clock } from '../../../clock.ts';
import {
  DEFAULT_HEARTBEAT_TIMEOUT_SECONDS,
  GLOBAL_TIMEOUT_HEARTBEATS,
  type LifecycleActionResult,
  MAX_GLOBAL_TIMEOUT_SECONDS,
} from '../../autoscaling-port.ts';
import { AwsServiceError } from '../../errors.ts';

type Handler = (input: never) => unknown;

interface FakeHook {
  name: string;
  transition: string;
  heartbeatTimeoutSeconds: number;
  globalTimeoutSeconds: number;
  defaultResult: LifecycleActionResult;
}

interface FakeInstance {
  instanceId: string;
  lifecycleState: string;
  /** While in Terminating:Wait: the hook holding it, its token and when the wait ends. */
  waiting?: { hook: string; token: string; heartbeatDeadline: number; globalDeadline: number };
}

interface FakeGroup {
  name: string;
  hooks: Map<string, FakeHook>;
  instances: Map<string, FakeInstance>;
}

/** AWS's error for these calls: the unmodelled ValidationError, the wire code as the name and in `Code`. */
function validationError(message: string): AwsServiceError {
  return Object.assign(new AwsServiceError('ValidationError', message), { Code: 'ValidationError' });
}

/**
 * An in-memory EC2 Auto Scaling account that answers the SDK's `send(command)` (the pattern of FakeElb: the
 * command's class name picks the operation, SDK output shapes, AWS-shaped errors), so the real
 * `AutoScalingAdapter` runs over it. It models what termination lifecycle hooks do
 * (https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html):
 * - PutLifecycleHook: heartbeat timeout 3600 s unless given, default result ABANDON, global timeout 100 times
 *   the heartbeat timeout, at most 48 hours;
 * - TerminateInstanceInAutoScalingGroup: with a termination hook the instance waits in Terminating:Wait with a
 *   token; without, it is terminated at once;
 * - RecordLifecycleActionHeartbeat restarts the heartbeat timeout (never beyond the global timeout);
 * - CompleteLifecycleAction ends the wait (for termination, CONTINUE and ABANDON both terminate);
 * - when the fake's clock passes the heartbeat or global deadline, the default result is taken;
 * - an action that is not waiting answers ValidationError "No active Lifecycle Action found ...".
 * Instances are only IDs (no EC2 behind them); launch templates and subnets are taken as given.
 */
export class FakeAutoScaling {
  readonly groups = new Map<string, FakeGroup>();
  readonly calls = new Map<string, number>();
  private readonly queuedErrors = new Map<string, Error[]>();
  private counter = 0;

  constructor(private readonly clock: Clock) {}

  /** The next calls of `operation` (e.g. `CompleteLifecycleAction`) fail with these errors, in order. */
  queueError(operation: string, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  callCount(operation: string): number {
    return this.calls.get(operation) ?? 0;
  }

  /** The instance's lifecycle state (`InService`, `Terminating:Wait`, ...), undefined once terminated. */
  lifecycleStateOf(instanceId: string): string | undefined {
    this.expire();
    return this.findInstance(instanceId)?.instance.lifecycleState;
  }

  // biome-ignore lint/suspicious/noExplicitAny: answers whichever output shape the command has.
  async send(command: object): Promise<any> {
    const operation = command.constructor.name.replace(/Command$/, '');
    const handler = (this.handlers as Record<string, Handler | undefined>)[operation];
    if (!handler) throw new Error(`FakeAutoScaling: ${operation} is not implemented`);
    this.calls.set(operation, this.callCount(operation) + 1);
    const queued = this.queuedErrors.get(operation)?.shift();
    if (queued) throw queued;
    this.expire();
    const input = structuredClone((command as { input?: unknown }).input ?? {}) as never;
    return { $metadata: { httpStatusCode: 200 }, ...(handler(input) as object) };
  }

  private readonly handlers = {
    CreateAutoScalingGroup: (input: Sdk.CreateAutoScalingGroupType) => this.createGroup(input),
    PutLifecycleHook: (input: Sdk.PutLifecycleHookType) => this.putHook(input),
    DescribeLifecycleHooks: (input: Sdk.DescribeLifecycleHooksType) => {
      // What AWS answers for a group that does not exist is not documented; the fake answers as the emulator.
      const group = this.groups.get(input.AutoScalingGroupName ?? '');
      const names = input.LifecycleHookNames ?? [];
      const hooks = [...(group?.hooks.values() ?? [])].filter((h) => names.length === 0 || names.includes(h.name));
      return {
        LifecycleHooks: hooks.map((h) => ({
          LifecycleHookName: h.name,
          AutoScalingGroupName: group?.name,
          LifecycleTransition: h.transition,
          HeartbeatTimeout: h.heartbeatTimeoutSeconds,
          GlobalTimeout: h.globalTimeoutSeconds,
          DefaultResult: h.defaultResult,
        })),
      };
    },
    DescribeAutoScalingGroups: (input: Sdk.AutoScalingGroupNamesType) => ({
      AutoScalingGroups: [...this.groups.values()]
        .filter((g) => !input.AutoScalingGroupNames?.length || input.AutoScalingGroupNames.includes(g.name))
        .map((g) => ({
          AutoScalingGroupName: g.name,
          Instances: [...g.instances.values()].map((i) => ({
            InstanceId: i.instanceId,
            LifecycleState: i.lifecycleState,
          })),
        })),
    }),
    DescribeAutoScalingInstances: (input: Sdk.DescribeAutoScalingInstancesType) => ({
      AutoScalingInstances: (input.InstanceIds ?? []).flatMap((id) => {
        const found = this.findInstance(id);
        if (!found) return [];
        const { group, instance } = found;
        return [{ InstanceId: id, AutoScalingGroupName: group.name, LifecycleState: instance.lifecycleState }];
      }),
    }),
    TerminateInstanceInAutoScalingGroup: (input: Sdk.TerminateInstanceInAutoScalingGroupType) =>
      this.terminate(input.InstanceId ?? ''),
    RecordLifecycleActionHeartbeat: (input: Sdk.RecordLifecycleActionHeartbeatType) => {
      const { group, instance, waiting } = this.waitingAction(input);
      const hook = group.hooks.get(waiting.hook);
      const next = this.clock.now() + (hook?.heartbeatTimeoutSeconds ?? 0) * 1000;
      waiting.heartbeatDeadline = Math.min(next, waiting.globalDeadline);
      instance.waiting = waiting;
      return {};
    },
    CompleteLifecycleAction: (input: Sdk.CompleteLifecycleActionType) => {
      if (input.LifecycleActionResult !== 'CONTINUE' && input.LifecycleActionResult !== 'ABANDON') {
        throw validationError(`LifecycleActionResult must be CONTINUE or ABANDON, got ${input.LifecycleActionResult}`);
      }
      const { group, instance } = this.waitingAction(input);
      this.finishTermination(group, instance);
      return {};
    },
  };

  private createGroup(input: Sdk.CreateAutoScalingGroupType): object {
    const name = input.AutoScalingGroupName ?? '';
    if (this.groups.has(name)) {
      throw Object.assign(
        new AwsServiceError('AlreadyExistsFault', `AutoScalingGroup by this name already exists - ${name}`),
        {
          Code: 'AlreadyExists',
        },
      );
    }
    const group: FakeGroup = { name, hooks: new Map(), instances: new Map() };
    for (let i = 0; i < (input.DesiredCapacity ?? input.MinSize ?? 0); i++) {
      const instanceId = `i-${(++this.counter).toString(16).padStart(17, '0')}`;
      group.instances.set(instanceId, { instanceId, lifecycleState: 'InService' });
    }
    this.groups.set(name, group);
    return {};
  }

  private putHook(input: Sdk.PutLifecycleHookType): object {
    const group = this.group(input.AutoScalingGroupName);
    const existing = group.hooks.get(input.LifecycleHookName ?? '');
    const heartbeat = input.HeartbeatTimeout ?? existing?.heartbeatTimeoutSeconds ?? DEFAULT_HEARTBEAT_TIMEOUT_SECONDS;
    if (heartbeat < 30 || heartbeat > 7200)
      throw validationError('HeartbeatTimeout must be between 30 and 7200 seconds');
    const transition = input.LifecycleTransition ?? existing?.transition;
    if (!transition) throw validationError('LifecycleTransition is required for a new lifecycle hook');
    group.hooks.set(input.LifecycleHookName ?? '', {
      name: input.LifecycleHookName ?? '',
      transition,
      heartbeatTimeoutSeconds: heartbeat,
      globalTimeoutSeconds: Math.min(GLOBAL_TIMEOUT_HEARTBEATS * heartbeat, MAX_GLOBAL_TIMEOUT_SECONDS),
      defaultResult: (input.DefaultResult ?? existing?.defaultResult ?? 'ABANDON') as LifecycleActionResult,
    });
    return {};
  }

  private terminate(instanceId: string): object {
    const found = this.findInstance(instanceId);
    const notInService = () =>
      validationError(`Instance Id not found - No managed instance found for instance ID: ${instanceId}`);
    if (!found) throw notInService();
    if (found.instance.lifecycleState !== 'InService') throw notInService();
    const { group, instance } = found;
    const hook = [...group.hooks.values()].find((h) => h.transition === 'autoscaling:EC2_INSTANCE_TERMINATING');
    if (hook) {
      const now = this.clock.now();
      instance.lifecycleState = 'Terminating:Wait';
      instance.waiting = {
        hook: hook.name,
        token: `${(++this.counter).toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`,
        heartbeatDeadline: now + hook.heartbeatTimeoutSeconds * 1000,
        globalDeadline: now + hook.globalTimeoutSeconds * 1000,
      };
    } else {
      this.finishTermination(group, instance);
    }
    return {
      Activity: {
        ActivityId: `activity-${this.counter}`,
        AutoScalingGroupName: group.name,
        Description: `Terminating EC2 instance: ${instanceId}`,
        StatusCode: 'InProgress',
      },
    };
  }

  /** The instance's lifecycle token, as the EventBridge event would carry it (test helper). */
  tokenOf(instanceId: string): string | undefined {
    return this.findInstance(instanceId)?.instance.waiting?.token;
  }

  /**
   * The action a heartbeat or completion names: by token when given (the instance, when also given, must be
   * the token's), else by instance; on this group and hook, and still waiting.
   */
  private waitingAction(input: {
    AutoScalingGroupName?: string;
    LifecycleHookName?: string;
    LifecycleActionToken?: string;
    InstanceId?: string;
  }) {
    const group = this.groups.get(input.AutoScalingGroupName ?? '');
    const candidates = [...(group?.instances.values() ?? [])];
    const instance = input.LifecycleActionToken
      ? candidates.find((i) => i.waiting?.token === input.LifecycleActionToken)
      : candidates.find((i) => i.instanceId === input.InstanceId);
    const waiting = instance?.waiting;
    const matches =
      group &&
      instance &&
      waiting &&
      waiting.hook === input.LifecycleHookName &&
      (!input.InstanceId || input.InstanceId === instance.instanceId);
    if (!matches) {
      const by = input.LifecycleActionToken ? `token ${input.LifecycleActionToken}` : `instance ID ${input.InstanceId}`;
      throw validationError(`No active Lifecycle Action found with ${by}`);
    }
    return { group, instance, waiting };
  }

  private finishTermination(group: FakeGroup, instance: FakeInstance): void {
    instance.waiting = undefined;
    group.instances.delete(instance.instanceId);
  }

  /** Waits whose heartbeat or global deadline passed take the hook's default result: terminated either way. */
  private expire(): void {
    const now = this.clock.now();
    for (const group of this.groups.values()) {
      for (const instance of [...group.instances.values()]) {
        const w = instance.waiting;
        if (w && (now >= w.heartbeatDeadline || now >= w.globalDeadline)) this.finishTermination(group, instance);
      }
    }
  }

  private group(name: string | undefined): FakeGroup {
    const group = this.groups.get(name ?? '');
    if (!group) throw validationError(`AutoScalingGroup name not found - ${name}`);
    return group;
  }

  private findInstance(instanceId: string): { group: FakeGroup; instance: FakeInstance } | undefined {
    for (const group of this.groups.values()) {
      const instance = group.instances.get(instanceId);
      if (instance) return { group, instance };
    }
    return undefined;
  }
}
