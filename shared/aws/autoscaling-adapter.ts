import {
  type AutoScalingClient,
  CompleteLifecycleActionCommand,
  DescribeLifecycleHooksCommand,
  RecordLifecycleActionHeartbeatCommand,
} from '@aws-sdk/client-auto-scaling';
import { RetryableError } from '../errors.ts';
import type {
  AutoScalingPort,
  LifecycleActionOutcome,
  LifecycleActionRef,
  LifecycleActionResult,
  LifecycleHookSettings,
} from './autoscaling-port.ts';
import { awsErrorCode, toControllerError } from './errors.ts';

/**
 * AutoScalingPort over the AWS SDK: one command per method, no caching. The API speaks the query protocol; its
 * unmodelled errors (ValidationError) arrive with the wire code as the name.
 */
export class AutoScalingAdapter implements AutoScalingPort {
  constructor(private readonly client: Pick<AutoScalingClient, 'send'>) {}

  /** https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeLifecycleHooks.html */
  async describeLifecycleHook(asg: string, hook: string): Promise<LifecycleHookSettings | undefined> {
    try {
      const output = await this.client.send(
        new DescribeLifecycleHooksCommand({ AutoScalingGroupName: asg, LifecycleHookNames: [hook] }),
      );
      const found = (output.LifecycleHooks ?? []).find((h) => h.LifecycleHookName === hook);
      if (!found) return undefined;
      return {
        heartbeatTimeoutSeconds: found.HeartbeatTimeout ?? Number.NaN,
        globalTimeoutSeconds: found.GlobalTimeout ?? Number.NaN,
        defaultResult: found.DefaultResult === 'CONTINUE' ? 'CONTINUE' : 'ABANDON',
      };
    } catch (err) {
      // A group that does not exist (or no longer does) has no hook either.
      if (awsErrorCode(err) === 'ValidationError' && /not found/i.test(messageOf(err))) return undefined;
      throw autoScalingError(`describing lifecycle hook ${hook} of ${asg}`, err);
    }
  }

  async recordLifecycleActionHeartbeat(action: LifecycleActionRef): Promise<LifecycleActionOutcome> {
    return this.onAction('recording a heartbeat for', action, () =>
      this.client.send(new RecordLifecycleActionHeartbeatCommand(actionInput(action))),
    );
  }

  async completeLifecycleAction(
    action: LifecycleActionRef & { result: LifecycleActionResult },
  ): Promise<LifecycleActionOutcome> {
    return this.onAction('completing', action, () =>
      this.client.send(
        new CompleteLifecycleActionCommand({ ...actionInput(action), LifecycleActionResult: action.result }),
      ),
    );
  }

  private async onAction(
    doing: string,
    action: LifecycleActionRef,
    call: () => Promise<unknown>,
  ): Promise<LifecycleActionOutcome> {
    try {
      await call();
      return 'done';
    } catch (err) {
      // "No active Lifecycle Action found with instance ID ..." (or token): completed already, or it expired and
      // the hook's default result was taken. Nothing is waiting; that is the state a caller wants, not an error.
      if (isNoActiveAction(err)) return 'not-found';
      throw autoScalingError(
        `${doing} the lifecycle action of ${action.instanceId} (${action.asg}/${action.hook})`,
        err,
      );
    }
  }
}

/** The token when the event had one, and the instance ID always (AWS takes either; both identify the action). */
function actionInput(action: LifecycleActionRef) {
  return {
    AutoScalingGroupName: action.asg,
    LifecycleHookName: action.hook,
    InstanceId: action.instanceId,
    ...(action.token ? { LifecycleActionToken: action.token } : {}),
  };
}

export function isNoActiveAction(err: unknown): boolean {
  return awsErrorCode(err) === 'ValidationError' && /No active Lifecycle Action found/i.test(messageOf(err));
}

/**
 * ResourceContention ("you already have a pending update to an Auto Scaling resource") passes if tried again:
 * https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_CompleteLifecycleAction.html (Errors)
 */
function autoScalingError(doing: string, err: unknown): Error {
  const code = awsErrorCode(err);
  if (code === 'ResourceContention' || code === 'ResourceContentionFault') {
    return new RetryableError(`${doing}: ${code}: ${messageOf(err)}`, { cause: err });
  }
  return toControllerError(doing, err);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
