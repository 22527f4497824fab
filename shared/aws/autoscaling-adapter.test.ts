import {
  AutoScalingClient,
  AutoScalingServiceException,
  CompleteLifecycleActionCommand,
  DescribeLifecycleHooksCommand,
  RecordLifecycleActionHeartbeatCommand,
  ResourceContentionFault,
} from '@aws-sdk/client-auto-scaling';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { AutoScalingAdapter } from './autoscaling-adapter.ts';

const client = new AutoScalingClient({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
});
const asg = mockClient(client);
const adapter = new AutoScalingAdapter(client);

/** An unmodelled query-protocol error as the SDK throws it: the base exception named after the wire code. */
function sdkError(code: string, message: string, status = 400): Error {
  return Object.assign(
    new AutoScalingServiceException({
      name: code,
      $fault: status >= 500 ? 'server' : 'client',
      $metadata: { httpStatusCode: status },
      message,
    }),
    { Code: code },
  );
}
const noActiveAction = (id = 'i-0123456789abcdef0') =>
  sdkError('ValidationError', `No active Lifecycle Action found with instance ID ${id}`);
const inputs = <T>(command: T) =>
  asg.commandCalls(command as Parameters<typeof asg.commandCalls>[0]).map((c) => c.args[0].input);
const action = { asg: 'workers', hook: 'drain', instanceId: 'i-0123456789abcdef0' };

beforeEach(() => {
  asg.reset();
});

describe('AutoScalingAdapter.describeLifecycleHook', () => {
  it('asks for the one hook and answers its timeouts and default result', async () => {
    asg.on(DescribeLifecycleHooksCommand).resolves({
      LifecycleHooks: [
        {
          LifecycleHookName: 'drain',
          AutoScalingGroupName: 'workers',
          LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
          HeartbeatTimeout: 300,
          GlobalTimeout: 30000,
          DefaultResult: 'CONTINUE',
        },
      ],
    });
    expect(await adapter.describeLifecycleHook('workers', 'drain')).toEqual({
      heartbeatTimeoutSeconds: 300,
      globalTimeoutSeconds: 30000,
      defaultResult: 'CONTINUE',
    });
    expect(inputs(DescribeLifecycleHooksCommand)).toEqual([
      { AutoScalingGroupName: 'workers', LifecycleHookNames: ['drain'] },
    ]);
  });

  it('answers undefined for a hook the group does not have, and for a group that is not found', async () => {
    asg
      .on(DescribeLifecycleHooksCommand)
      .resolvesOnce({ LifecycleHooks: [] })
      .rejectsOnce(sdkError('ValidationError', 'AutoScalingGroup name not found - workers'));
    expect(await adapter.describeLifecycleHook('workers', 'drain')).toBeUndefined();
    expect(await adapter.describeLifecycleHook('workers', 'drain')).toBeUndefined();
  });

  it('classifies other failures: throttling, contention (retryable), anything else terminal', async () => {
    asg
      .on(DescribeLifecycleHooksCommand)
      .rejectsOnce(sdkError('Throttling', 'Rate exceeded'))
      .rejectsOnce(new ResourceContentionFault({ $metadata: {}, message: 'pending update' }))
      .rejectsOnce(sdkError('ValidationError', 'LifecycleHookNames must be 1 to 50'));
    await expect(adapter.describeLifecycleHook('workers', 'drain')).rejects.toBeInstanceOf(ThrottledError);
    await expect(adapter.describeLifecycleHook('workers', 'drain')).rejects.toBeInstanceOf(RetryableError);
    await expect(adapter.describeLifecycleHook('workers', 'drain')).rejects.toBeInstanceOf(TerminalError);
  });
});

describe('AutoScalingAdapter lifecycle actions', () => {
  it('completes by instance ID, with the token when there is one', async () => {
    asg.on(CompleteLifecycleActionCommand).resolves({});
    expect(await adapter.completeLifecycleAction({ ...action, result: 'CONTINUE' })).toBe('done');
    expect(await adapter.completeLifecycleAction({ ...action, token: 'tok-1', result: 'ABANDON' })).toBe('done');
    expect(inputs(CompleteLifecycleActionCommand)).toEqual([
      {
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'drain',
        InstanceId: action.instanceId,
        LifecycleActionResult: 'CONTINUE',
      },
      {
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'drain',
        InstanceId: action.instanceId,
        LifecycleActionToken: 'tok-1',
        LifecycleActionResult: 'ABANDON',
      },
    ]);
  });

  it('records a heartbeat with the same identification', async () => {
    asg.on(RecordLifecycleActionHeartbeatCommand).resolves({});
    expect(await adapter.recordLifecycleActionHeartbeat({ ...action, token: 'tok-1' })).toBe('done');
    expect(inputs(RecordLifecycleActionHeartbeatCommand)).toEqual([
      {
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'drain',
        InstanceId: action.instanceId,
        LifecycleActionToken: 'tok-1',
      },
    ]);
  });

  it('"No active Lifecycle Action found" is not-found (completed already or expired), not an error', async () => {
    asg.on(CompleteLifecycleActionCommand).rejects(noActiveAction());
    asg.on(RecordLifecycleActionHeartbeatCommand).rejects(noActiveAction());
    expect(await adapter.completeLifecycleAction({ ...action, result: 'CONTINUE' })).toBe('not-found');
    expect(await adapter.recordLifecycleActionHeartbeat(action)).toBe('not-found');
  });

  it('any other ValidationError is terminal and names the action; server errors are retryable', async () => {
    asg
      .on(CompleteLifecycleActionCommand)
      .rejectsOnce(sdkError('ValidationError', 'LifecycleActionResult is invalid'))
      .rejectsOnce(sdkError('InternalFailure', 'oops', 500));
    const terminal = adapter.completeLifecycleAction({ ...action, result: 'CONTINUE' });
    await expect(terminal).rejects.toBeInstanceOf(TerminalError);
    await expect(terminal).rejects.toThrow(/i-0123456789abcdef0 \(workers\/drain\).*ValidationError/);
    await expect(adapter.completeLifecycleAction({ ...action, result: 'CONTINUE' })).rejects.toBeInstanceOf(
      RetryableError,
    );
  });
});
