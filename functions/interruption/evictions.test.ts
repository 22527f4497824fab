import { TerminateInstanceInAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import { beforeEach, describe, expect, it } from 'vitest';
import { budget, podOnNode } from '../../test/helpers/pods.ts';
import { createInterruptionWorld, type InterruptionWorld } from './testing/world.ts';

/**
 * Each Pod's eviction stands alone: an answer other than 429 (a budget says wait) or 404 (gone) for one Pod, such as
 * the 500 the API server gives a Pod under two PodDisruptionBudgets or the 403 of a namespace being deleted, names
 * that Pod in a Warning and leaves it for the next pass; the other Pods go on, and a termination hook is still
 * completed at the deadline. kubectl drain evicts each Pod on its own too (and retries the 403 of a terminating
 * namespace until the namespace controller has deleted the Pod).
 */

let w: InterruptionWorld;
let instanceId: string;
const NODE = 'ip-10-0-0-9.eu-west-1.compute.internal';
/** The hook's heartbeat timeout: its global timeout, the drain's deadline, is 100 times that. */
const HEARTBEAT_SECONDS = 30;

beforeEach(async () => {
  w = createInterruptionWorld();
  instanceId = await w.workersWithHook(HEARTBEAT_SECONDS);
  w.addNode(NODE, instanceId);
  // Listed first: the Pods the API server refuses to evict, whatever the budgets allow.
  w.kube.putPod(podOnNode(NODE, 'orders', { namespace: 'shop', gracePeriodSeconds: 5 }));
  w.kube.putPod(podOnNode(NODE, 'api', { labels: { app: 'api', tier: 'front' }, gracePeriodSeconds: 5 }));
  // Each budget alone would allow the eviction; two on one Pod are what the eviction API refuses.
  w.kube.workloads.putBudget(budget('api', { app: 'api' }, { minAvailable: 0 }));
  w.kube.workloads.putBudget(budget('front', { tier: 'front' }, { minAvailable: 0 }));
  w.kube.workloads.terminateNamespace('shop');
  for (const name of ['app-0', 'app-1']) w.kube.putPod(podOnNode(NODE, name, { gracePeriodSeconds: 5 }));
  await w.asgFake.send(
    new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: true }),
  );
});

const hookNotice = () =>
  w.notice(NODE, instanceId, 'asg-lifecycle-termination', {
    lifecycleHook: {
      autoScalingGroupName: 'workers',
      lifecycleHookName: 'drain',
      lifecycleActionToken: w.asgFake.tokenOf(instanceId)!,
    },
  });
const podsOn = () =>
  w.kube.workloads
    .list()
    .filter((p) => p.spec?.nodeName === NODE && !p.metadata.deletionTimestamp)
    .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
    .sort();
const warnings = (reason: string) => w.kube.eventsFor('Node', NODE, reason).map((e) => e.message);

describe('an eviction the API server refuses', () => {
  it('names the Pod in a Warning and retries it; the other Pods are evicted; the hook is completed at the deadline', async () => {
    const t0 = w.clock.now();
    // The instance's lifecycle state around each pass: `Terminating:Wait->gone` is the pass that completed it.
    const passes: string[] = [];
    let before: string | undefined;
    let afterFirstPass: string[] | undefined;
    await w.run({
      arrivals: [{ at: t0, messages: [hookNotice()] }],
      beforePass: () => {
        before = w.asgFake.lifecycleStateOf(instanceId);
      },
      onPass: () => {
        afterFirstPass ??= podsOn();
        passes.push(`${before ?? 'gone'}->${w.asgFake.lifecycleStateOf(instanceId) ?? 'gone'}`);
      },
    });
    // The first pass already evicted the Pods that may go.
    expect(afterFirstPass).toEqual(['default/api', 'shop/orders']);
    expect(podsOn()).toEqual(['default/api', 'shop/orders']);
    const failed = warnings('EvictionFailed');
    const about = (pod: string) => failed.filter((m) => m.startsWith(`Cannot evict ${pod}: `));
    expect(about('shop/orders')[0]).toMatch(/403 Forbidden: .*being terminated/);
    expect(about('default/api')[0]).toMatch(/500 InternalError: .*more than one PodDisruptionBudget/);
    // Retried on every pass, not once.
    expect(about('shop/orders').length).toBeGreaterThan(1);
    expect(about('default/api').length).toBeGreaterThan(1);
    const timedOut = warnings('DrainTimedOut');
    expect(timedOut).toHaveLength(1);
    expect(timedOut[0]).toMatch(
      /2 Pod\(s\) still on the Node: (default\/api, shop\/orders|shop\/orders, default\/api)$/,
    );
    // Held in Terminating:Wait until the deadline (the global timeout), then completed by a pass, not timed out.
    expect(passes).toContain('Terminating:Wait->gone');
    expect(passes.indexOf('Terminating:Wait->gone')).toBe(passes.length - 1);
    // The deadline: the hook's global timeout (100 heartbeat timeouts) less half a heartbeat timeout.
    expect(w.clock.now() - t0).toBeGreaterThanOrEqual(99.5 * HEARTBEAT_SECONDS * 1000);
    expect(w.sqs.depth('interruption-dlq.fifo')).toBe(0);
  });

  it('a Pod refused once goes on a later pass when the API server lets it: the drain then ends early', async () => {
    const t0 = w.clock.now();
    let pass = 0;
    await w.run({
      arrivals: [{ at: t0, messages: [hookNotice()] }],
      onPass: () => {
        if (++pass !== 3) return;
        // The namespace controller deletes what is left in `shop`; someone removes the second budget.
        void w.kube.deletePod('shop', 'orders');
        w.kube.workloads.deleteBudget('default', 'front');
      },
    });
    expect(podsOn()).toEqual([]);
    expect(warnings('Drained')).toHaveLength(1);
    expect(warnings('DrainTimedOut')).toEqual([]);
    expect(w.asgFake.lifecycleStateOf(instanceId)).toBeUndefined();
    expect(w.clock.now() - t0).toBeLessThan(100 * HEARTBEAT_SECONDS * 1000);
  });
});
