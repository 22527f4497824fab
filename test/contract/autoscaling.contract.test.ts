import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type AutoScalingBackend, autoScalingBackends } from './autoscaling-backends.ts';
import { describeContract } from './contract.ts';
import { differenceRow, hasTest } from './difference-rows.ts';

/**
 * The Auto Scaling behaviours the interruption controller (functions/interruption) relies on, run on `AutoScalingAdapter` over
 * the AWS API emulator and over `FakeAutoScaling`. What the emulator does not do (moto 5.2.1: no Terminating:Wait,
 * no lifecycle action calls, a fixed global timeout) is a row of docs/emulator-differences.md, and its test is
 * expected to fail there (`it.fails`; CONTRACT_SHOW_DIFFERENCES=1 runs it as a plain test). What depends on time
 * (heartbeats, expiry) is the fake's own test, shared/aws/fakes/autoscaling/fake-autoscaling.test.ts: the emulator has no clock to move.
 */
const EMULATOR_DIFFERS = {
  globalTimeout: 'autoscaling.hook-global-timeout',
  terminatingWait: 'autoscaling.terminating-wait',
  lifecycleActions: 'autoscaling.lifecycle-actions',
} as const;

const HOOK = { name: 'drain', heartbeatTimeoutSeconds: 300, defaultResult: 'CONTINUE' as const };

describeContract<AutoScalingBackend>('Auto Scaling lifecycle hooks', autoScalingBackends(), (backend, _test, kind) => {
  const differs = (key: string, name: string, fn: () => Promise<void>) => {
    const expectFailure = kind === 'emulator' && !process.env.CONTRACT_SHOW_DIFFERENCES;
    (expectFailure ? it.fails : it)(kind === 'emulator' ? `${name} [emulator differs: ${key}]` : name, fn, 30_000);
  };
  const seeded = async (instances = 1) => {
    const ids = await backend().seed.group({ name: 'workers', instances, hook: HOOK });
    expect(ids).toHaveLength(instances);
    return ids;
  };

  it('describes a termination hook: its heartbeat timeout and default result', async () => {
    await seeded();
    expect(await backend().port.describeLifecycleHook('workers', 'drain')).toMatchObject({
      heartbeatTimeoutSeconds: 300,
      defaultResult: 'CONTINUE',
    });
  });

  it('a hook the group does not have is undefined', async () => {
    await seeded();
    expect(await backend().port.describeLifecycleHook('workers', 'other')).toBeUndefined();
  });

  differs(
    EMULATOR_DIFFERS.globalTimeout,
    'the global timeout is 100 heartbeat timeouts, at most 48 hours',
    async () => {
      await seeded();
      expect((await backend().port.describeLifecycleHook('workers', 'drain'))?.globalTimeoutSeconds).toBe(30_000);
    },
  );

  differs(
    EMULATOR_DIFFERS.terminatingWait,
    'an instance terminated out of a group with a termination hook waits in Terminating:Wait',
    async () => {
      const [instanceId] = await seeded();
      await backend().seed.terminate(instanceId!);
      expect(await backend().seed.lifecycleState(instanceId!)).toBe('Terminating:Wait');
    },
  );

  differs(
    EMULATOR_DIFFERS.lifecycleActions,
    'a waiting action takes heartbeats and completes once; then it is not-found',
    async () => {
      const [instanceId] = await seeded();
      const action = { asg: 'workers', hook: 'drain', instanceId: instanceId! };
      await backend().seed.terminate(instanceId!);
      expect(await backend().port.recordLifecycleActionHeartbeat(action)).toBe('done');
      expect(await backend().port.completeLifecycleAction({ ...action, result: 'CONTINUE' })).toBe('done');
      expect(await backend().seed.lifecycleState(instanceId!)).not.toBe('Terminating:Wait');
      expect(await backend().port.completeLifecycleAction({ ...action, result: 'CONTINUE' })).toBe('not-found');
      expect(await backend().port.recordLifecycleActionHeartbeat(action)).toBe('not-found');
    },
  );

  differs(
    EMULATOR_DIFFERS.lifecycleActions,
    'an instance no action waits for is not-found, for heartbeats and completion alike',
    async () => {
      const [instanceId] = await seeded();
      const action = { asg: 'workers', hook: 'drain', instanceId: instanceId! };
      expect(await backend().port.recordLifecycleActionHeartbeat(action)).toBe('not-found');
      expect(await backend().port.completeLifecycleAction({ ...action, result: 'ABANDON' })).toBe('not-found');
      expect(await backend().seed.lifecycleState(instanceId!)).toBe('InService');
    },
  );
});

describe('the rows of the differences table (docs) for this suite', () => {
  const source = readFileSync(import.meta.filename, 'utf8');
  it.each(Object.values(EMULATOR_DIFFERS))('%s has its row, naming tests of this file', (key) => {
    const row = differenceRow(key);
    expect(row?.file).toBe('autoscaling.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
