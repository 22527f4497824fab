import {
  CreateAutoScalingGroupCommand,
  PutLifecycleHookCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import { AutoScalingAdapter } from '../../autoscaling-adapter.ts';
import { FakeAutoScaling } from './fake-autoscaling.ts';

/** What only the fake can show: time. Heartbeats, expiry and the global timeout on the fake's clock. */
describe('FakeAutoScaling lifecycle actions over time', () => {
  let clock: FakeClock;
  let fake: FakeAutoScaling;
  let port: AutoScalingAdapter;
  let instanceId: string;
  const ref = () => ({ asg: 'workers', hook: 'drain', instanceId });

  beforeEach(async () => {
    clock = new FakeClock();
    fake = new FakeAutoScaling(clock);
    port = new AutoScalingAdapter(fake);
    await fake.send(
      new CreateAutoScalingGroupCommand({
        AutoScalingGroupName: 'workers',
        LaunchTemplate: { LaunchTemplateName: 'workers-lt', Version: '$Latest' },
        MinSize: 0,
        MaxSize: 2,
        DesiredCapacity: 1,
      }),
    );
    await fake.send(
      new PutLifecycleHookCommand({
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'drain',
        LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
        HeartbeatTimeout: 60,
        DefaultResult: 'CONTINUE',
      }),
    );
    instanceId = [...fake.groups.get('workers')!.instances.keys()][0]!;
    await fake.send(
      new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: true }),
    );
  });

  it('waits in Terminating:Wait until the heartbeat timeout, then takes the default result', async () => {
    expect(fake.lifecycleStateOf(instanceId)).toBe('Terminating:Wait');
    clock.advance(59_000);
    expect(fake.lifecycleStateOf(instanceId)).toBe('Terminating:Wait');
    clock.advance(1_000);
    expect(fake.lifecycleStateOf(instanceId)).toBeUndefined();
    expect(await port.completeLifecycleAction({ ...ref(), result: 'CONTINUE' })).toBe('not-found');
  });

  it('a heartbeat restarts the heartbeat timeout', async () => {
    clock.advance(50_000);
    expect(await port.recordLifecycleActionHeartbeat(ref())).toBe('done');
    clock.advance(50_000);
    expect(fake.lifecycleStateOf(instanceId)).toBe('Terminating:Wait');
    clock.advance(10_000);
    expect(fake.lifecycleStateOf(instanceId)).toBeUndefined();
  });

  it('heartbeats never keep it beyond the global timeout (100 heartbeat timeouts)', async () => {
    expect(await port.describeLifecycleHook('workers', 'drain')).toEqual({
      heartbeatTimeoutSeconds: 60,
      globalTimeoutSeconds: 6000,
      defaultResult: 'CONTINUE',
    });
    // The last heartbeat, at 5970 s, would keep it until 6030 s; the global timeout ends the wait at 6000 s.
    for (let t = 0; t < 5_970; t += 30) {
      clock.advance(30_000);
      expect(await port.recordLifecycleActionHeartbeat(ref())).toBe('done');
    }
    clock.advance(30_000);
    expect(fake.lifecycleStateOf(instanceId)).toBeUndefined();
    expect(await port.recordLifecycleActionHeartbeat(ref())).toBe('not-found');
  });

  it('completion by token ends the wait; the token of another instance or hook is not-found', async () => {
    const token = fake.tokenOf(instanceId)!;
    expect(await port.completeLifecycleAction({ ...ref(), hook: 'other', token, result: 'CONTINUE' })).toBe(
      'not-found',
    );
    expect(
      await port.completeLifecycleAction({ ...ref(), instanceId: 'i-0ffffffffffffffff', token, result: 'CONTINUE' }),
    ).toBe('not-found');
    expect(await port.completeLifecycleAction({ ...ref(), token, result: 'ABANDON' })).toBe('done');
    expect(fake.lifecycleStateOf(instanceId)).toBeUndefined();
    expect(await port.completeLifecycleAction({ ...ref(), token, result: 'ABANDON' })).toBe('not-found');
  });

  it('a hook made without timeouts gets AWS defaults: 3600 s heartbeat, 48-hour cap, ABANDON', async () => {
    await fake.send(
      new PutLifecycleHookCommand({
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'plain',
        LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
      }),
    );
    expect(await port.describeLifecycleHook('workers', 'plain')).toEqual({
      heartbeatTimeoutSeconds: 3600,
      globalTimeoutSeconds: 172_800,
      defaultResult: 'ABANDON',
    });
  });

  it('queued errors come back through the adapter as classified errors', async () => {
    fake.queueError('CompleteLifecycleAction', Object.assign(new Error('Rate exceeded'), { name: 'Throttling' }));
    await expect(port.completeLifecycleAction({ ...ref(), result: 'CONTINUE' })).rejects.toThrow(/Throttling/);
    expect(fake.callCount('CompleteLifecycleAction')).toBe(1);
  });
});
