import { TerminateInstanceInAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import { describe, expect, it } from 'vitest';
import { podOnNode } from '../../test/helpers/pods.ts';
import { createInterruptionWorld } from './testing/world.ts';

/**
 * A termination hook keeps its instance in Terminating:Wait only while heartbeats come before each heartbeat timeout
 * (https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html). However late the passes come (a
 * busy queue, a cold Lambda), and however far apart INTERRUPTION_DRAIN_REQUEUE_SECONDS sets them, the pass schedule
 * must put a heartbeat before every timeout, so a long drain is never cut short by the hook's default result.
 */

const NODE = 'ip-10-0-0-7.eu-west-1.compute.internal';

async function hookedDrain(options: {
  heartbeatSeconds: number;
  graceSeconds: number;
  requeueSeconds: number;
  latencyMs: number;
}) {
  const w = createInterruptionWorld();
  w.deps.drainRequeueSeconds = options.requeueSeconds;
  const instanceId = await w.workersWithHook(options.heartbeatSeconds);
  w.addNode(NODE, instanceId);
  // A Pod that takes its time to stop: the drain lasts its whole grace period.
  w.kube.putPod(podOnNode(NODE, 'db-0', { gracePeriodSeconds: options.graceSeconds }));
  await w.asgFake.send(
    new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: true }),
  );
  const notice = w.notice(NODE, instanceId, 'asg-lifecycle-termination', {
    lifecycleHook: {
      autoScalingGroupName: 'workers',
      lifecycleHookName: 'drain',
      lifecycleActionToken: w.asgFake.tokenOf(instanceId)!,
    },
  });
  // The instance's lifecycle state before and after each pass, and the passes that found it gone (timed out).
  const passes: string[] = [];
  const foundGone: string[] = [];
  let before: string | undefined;
  const t0 = w.clock.now();
  await w.run({
    arrivals: [{ at: t0, messages: [notice] }],
    latencyMs: options.latencyMs,
    beforePass: () => {
      before = w.asgFake.lifecycleStateOf(instanceId);
    },
    onPass: () => {
      passes.push(`${before ?? 'gone'}->${w.asgFake.lifecycleStateOf(instanceId) ?? 'gone'}`);
      if (!before) foundGone.push(`pass ${passes.length} at t+${(w.clock.now() - t0) / 1000} s`);
    },
  });
  return { w, passes, foundGone, drainedAfterMs: w.clock.now() - t0 };
}

describe('a termination hook under a long drain', () => {
  it('300 s heartbeat timeout, passes 6.5 s apart (5 s requeue + 1.5 s late): waits through a 15-minute drain', async () => {
    const { w, passes, foundGone, drainedAfterMs } = await hookedDrain({
      heartbeatSeconds: 300,
      graceSeconds: 900,
      requeueSeconds: 5,
      latencyMs: 1_500,
    });
    // Terminating:Wait before every pass; the last one completed the action: it never timed out.
    expect(foundGone).toEqual([]);
    expect(drainedAfterMs).toBeGreaterThanOrEqual(900_000);
    expect(passes.slice(0, -1).every((p) => p === 'Terminating:Wait->Terminating:Wait')).toBe(true);
    expect(passes.at(-1)).toBe('Terminating:Wait->gone');
    expect(w.kube.eventsFor('Node', NODE, 'Drained')).toHaveLength(1);
    expect(w.asgFake.callCount('CompleteLifecycleAction')).toBe(1);
    // A heartbeat about every half timeout, not one per pass.
    const heartbeats = w.asgFake.callCount('RecordLifecycleActionHeartbeat');
    expect(heartbeats).toBeGreaterThanOrEqual(5);
    expect(heartbeats).toBeLessThan(passes.length / 10);
  });

  it('a heartbeat timeout shorter than the pass interval: the pass comes back for the heartbeat', async () => {
    const { w, passes, foundGone } = await hookedDrain({
      heartbeatSeconds: 30,
      graceSeconds: 200,
      requeueSeconds: 60,
      latencyMs: 0,
    });
    expect(foundGone).toEqual([]);
    expect(passes.slice(0, -1).every((p) => p === 'Terminating:Wait->Terminating:Wait')).toBe(true);
    expect(passes.at(-1)).toBe('Terminating:Wait->gone');
    expect(w.kube.eventsFor('Node', NODE, 'Drained')).toHaveLength(1);
  });

  it('late passes (20 s late each) still keep a 60 s heartbeat timeout', async () => {
    const { passes, foundGone } = await hookedDrain({
      heartbeatSeconds: 60,
      graceSeconds: 400,
      requeueSeconds: 5,
      latencyMs: 20_000,
    });
    expect(foundGone).toEqual([]);
    expect(passes.slice(0, -1).every((p) => p === 'Terminating:Wait->Terminating:Wait')).toBe(true);
    expect(passes.at(-1)).toBe('Terminating:Wait->gone');
  });
});
