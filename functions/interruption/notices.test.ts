import { TerminateInstanceInAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InterruptionKind, InterruptionMessage, InterruptionNotice } from '../../shared/queue/interruption.ts';
import { INTERRUPTION_TAINT_KEYS, SPOT_NOTICE_MS, taintValue } from '../../shared/queue/interruption.ts';
import { INTERRUPTION_KINDS } from '../../shared/queue/interruption-kinds.ts';
import { budget, podOnNode } from '../../test/helpers/pods.ts';
import { DEFAULT_INTERRUPTION_ACTIONS, LABEL_ACTION, LABEL_EVENT_ID } from './plan.ts';
import { type Arrival, createInterruptionWorld, type InterruptionWorld } from './testing/world.ts';

/**
 * Several notices about one Node (AWS documents that a rebalance recommendation can come with, or after, the spot
 * interruption it announces; a termination hook follows a spot interruption of a group's instance): whatever their
 * order and however the queue groups them into batches, the strongest action and the earliest deadline win, and
 * a notice never undoes what another one started.
 */

const NODE = 'ip-10-0-0-5.eu-west-1.compute.internal';
const INSTANCE = 'i-0123456789abcdef0';
const HOUR_MS = 3_600_000;

/** Three replicas of `web` on the Node under a budget allowing one down, and a plain Pod. */
function workloads(w: InterruptionWorld, node = NODE) {
  for (let i = 0; i < 3; i++) {
    const labels = { app: 'web' };
    w.kube.putPod(
      podOnNode(node, `web-${i}`, { labels, owner: { kind: 'ReplicaSet', name: 'web' }, gracePeriodSeconds: 10 }),
    );
  }
  w.kube.putPod(podOnNode(node, 'batch', { gracePeriodSeconds: 5 }));
  w.kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 2 }));
}

/** The ReplicaSet: a Ready replacement on another Node for every replica evicted. */
function replicaSet(w: InterruptionWorld) {
  const replaced = new Set<string>();
  return () => {
    for (const p of w.kube.workloads.list()) {
      if (p.metadata.labels?.app !== 'web' || !p.metadata.deletionTimestamp || replaced.has(p.metadata.uid!)) continue;
      replaced.add(p.metadata.uid!);
      w.kube.putPod(
        podOnNode('other-node', `${p.metadata.name}-r`, {
          labels: { app: 'web' },
          owner: { kind: 'ReplicaSet', name: 'web' },
        }),
      );
    }
  };
}

const podsOn = (w: InterruptionWorld, node = NODE) =>
  w.kube.workloads.list().filter((p) => p.spec?.nodeName === node && !p.metadata.deletionTimestamp);
const reasons = (w: InterruptionWorld) => w.kube.eventsFor('Node', NODE).map((e) => e.reason);

describe('notices for one Node never downgrade', () => {
  it('a rebalance recommendation arriving while the spot interruption drains does not stop the drain', async () => {
    const w = createInterruptionWorld();
    w.addNode(NODE, INSTANCE);
    workloads(w);
    const t0 = w.clock.now();
    const spot = w.notice(NODE, INSTANCE, 'spot-interruption', {
      deadline: new Date(t0 + SPOT_NOTICE_MS).toISOString(),
    });
    const rebalance = w.notice(NODE, INSTANCE, 'rebalance-recommendation', {
      eventTime: new Date(t0 + 1_000).toISOString(),
    });
    await w.run({
      arrivals: [
        { at: t0, messages: [spot] },
        { at: t0 + 1_000, messages: [rebalance] },
      ],
      onPass: replicaSet(w),
    });
    const node = w.kube.nodes.get(NODE)!;
    expect(node.spec?.unschedulable).toBe(true);
    expect(podsOn(w)).toEqual([]);
    expect(node.metadata.labels).toMatchObject({
      [LABEL_ACTION]: 'cordon-and-drain',
      [LABEL_EVENT_ID]: spot.notice.eventId,
    });
    expect(node.spec?.taints?.map((t) => `${t.key}=${t.value}`).sort()).toEqual([
      `aws-node-termination-handler/rebalance-recommendation=${rebalance.notice.eventId}`,
      `aws-node-termination-handler/spot-itn=${spot.notice.eventId}`,
    ]);
    expect(reasons(w)).toContain('Drained');
    expect(reasons(w)).not.toContain('DrainTimedOut');
  });

  it('in one batch, a later rebalance recommendation leaves the spot interruption in charge', async () => {
    const w = createInterruptionWorld();
    w.addNode(NODE, INSTANCE);
    workloads(w);
    const t0 = w.clock.now();
    const spot = w.notice(NODE, INSTANCE, 'spot-interruption', {
      deadline: new Date(t0 + SPOT_NOTICE_MS).toISOString(),
    });
    const rebalance = w.notice(NODE, INSTANCE, 'rebalance-recommendation', {
      eventTime: new Date(t0 + 1_000).toISOString(),
    });
    await w.run({ arrivals: [{ at: t0 + 1_000, messages: [spot, rebalance] }], onPass: replicaSet(w) });
    expect(w.kube.nodes.get(NODE)!.spec?.unschedulable).toBe(true);
    expect(podsOn(w)).toEqual([]);
    expect(w.kube.nodes.get(NODE)!.metadata.labels?.[LABEL_ACTION]).toBe('cordon-and-drain');
  });

  it('a later notice with a later deadline does not push back the earlier one: the drain ends at the spot deadline', async () => {
    const w = createInterruptionWorld();
    w.addNode(NODE, INSTANCE);
    workloads(w);
    // The budget allows nothing: the drain can only end at a deadline.
    w.kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 3 }));
    const t0 = w.clock.now();
    const spot = w.notice(NODE, INSTANCE, 'spot-interruption', {
      deadline: new Date(t0 + SPOT_NOTICE_MS).toISOString(),
    });
    const maintenance = w.notice(NODE, INSTANCE, 'scheduled-maintenance', {
      eventTime: new Date(t0 + 10_000).toISOString(),
      deadline: new Date(t0 + 24 * HOUR_MS).toISOString(),
    });
    await w.run({
      arrivals: [
        { at: t0, messages: [spot] },
        { at: t0 + 10_000, messages: [maintenance] },
      ],
    });
    const warnings = w.kube.eventsFor('Node', NODE, 'DrainTimedOut');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/^The spot-interruption deadline passed with 3 Pod\(s\)/);
    // The queue was empty well before the maintenance window: nothing kept draining past the spot deadline.
    expect(w.clock.now()).toBeLessThan(t0 + HOUR_MS);
    expect(w.kube.nodes.get(NODE)!.metadata.labels?.[LABEL_EVENT_ID]).toBe(spot.notice.eventId);
  });
});

describe('what the Node remembers of notices that are over', () => {
  it('a drain someone uncordoned since does not come back with a later rebalance recommendation', async () => {
    const w = createInterruptionWorld();
    w.addNode(NODE, INSTANCE);
    w.kube.putPod(podOnNode(NODE, 'batch', { gracePeriodSeconds: 5 }));
    const spot = w.notice(NODE, INSTANCE, 'spot-interruption');
    w.send(spot);
    await w.run({});
    // The spot instance was stopped, not terminated, and came back; an admin put the Node back in service.
    w.clock.advance(HOUR_MS);
    w.kube.mutateNode(NODE, (n) => (n.spec!.unschedulable = false));
    const rebalance = w.notice(NODE, INSTANCE, 'rebalance-recommendation');
    w.send(rebalance);
    await w.run({});
    const node = w.kube.nodes.get(NODE)!;
    expect(node.spec?.unschedulable).toBe(false);
    expect(node.metadata.labels).toMatchObject({ [LABEL_ACTION]: 'taint', [LABEL_EVENT_ID]: rebalance.notice.eventId });
    expect(node.metadata.labels).not.toHaveProperty('node.kubernetes.io/exclude-from-external-load-balancers');
    expect(node.spec?.taints?.map((t) => t.key)).toEqual(['aws-node-termination-handler/rebalance-recommendation']);
  });

  it('a deadline that passed before a later notice does not cut the later drain short', async () => {
    const w = createInterruptionWorld();
    w.addNode(NODE, INSTANCE);
    const t0 = w.clock.now();
    w.send(w.notice(NODE, INSTANCE, 'spot-interruption', { deadline: new Date(t0 + SPOT_NOTICE_MS).toISOString() }));
    await w.run({});
    // The Node outlived that deadline and is still cordoned; a scheduled stop comes a day later, when Pods bound to
    // the Node by name (which a cordon does not keep off) run there.
    w.clock.advance(24 * HOUR_MS);
    workloads(w);
    const maintenance = w.notice(NODE, INSTANCE, 'scheduled-maintenance', {
      deadline: new Date(w.clock.now() + HOUR_MS).toISOString(),
    });
    w.send(maintenance);
    await w.run({ onPass: replicaSet(w) });
    expect(podsOn(w)).toEqual([]);
    expect(w.kube.eventsFor('Node', NODE, 'DrainTimedOut')).toEqual([]);
    const node = w.kube.nodes.get(NODE)!;
    expect(node.metadata.labels?.[LABEL_EVENT_ID]).toBe(maintenance.notice.eventId);
    expect(node.spec?.taints?.map((t) => t.key)).toEqual(['aws-node-termination-handler/scheduled-maintenance']);
  });
});

// ---- the property: any set of notices, in any order and any batches ------------------------------------------------

/** One notice of a kind: when its event happened and how long EventBridge and the router took to queue it. */
interface Planned {
  kind: InterruptionKind;
  eventOffsetMs: number;
  delayMs: number;
}

const planned = fc.uniqueArray(
  fc.record({
    kind: fc.constantFrom(...INTERRUPTION_KINDS),
    eventOffsetMs: fc.constantFrom(0, 0, 1_000, 4_000, 9_000, 30_000),
    delayMs: fc.constantFrom(0, 0, 500, 3_000, 12_000),
  }),
  { minLength: 1, maxLength: 5, selector: (p) => p.kind },
);

/** The hook's heartbeat timeout in the property's group (its global timeout is 100 times that). */
const HOOK_HEARTBEAT_SECONDS = 60;

/** Strongest action first, then the earliest deadline (none: last), then the earliest event, then the ID. */
function expectedLeader(notices: readonly InterruptionNotice[]): InterruptionNotice {
  const deadline = (n: InterruptionNotice) => {
    if (n.deadline) return Date.parse(n.deadline);
    // The global timeout (100 heartbeat timeouts), less half a heartbeat timeout to complete the action in time.
    if (n.kind === 'asg-lifecycle-termination') return Date.parse(n.eventTime) + 99.5 * HOOK_HEARTBEAT_SECONDS * 1000;
    return Number.POSITIVE_INFINITY;
  };
  const rank = (n: InterruptionNotice) =>
    DEFAULT_INTERRUPTION_ACTIONS[n.kind as InterruptionKind] === 'drain' ? 0 : 1;
  return [...notices].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      deadline(a) - deadline(b) ||
      Date.parse(a.eventTime) - Date.parse(b.eventTime) ||
      (a.eventId < b.eventId ? -1 : 1),
  )[0]!;
}

async function scenario(plan: readonly Planned[]) {
  const w = createInterruptionWorld();
  const instanceId = await w.workersWithHook(HOOK_HEARTBEAT_SECONDS);
  w.addNode(NODE, instanceId!);
  workloads(w);
  const t0 = w.clock.now();
  const hooked = plan.some((p) => p.kind === 'asg-lifecycle-termination');
  if (hooked) {
    await w.asgFake.send(
      new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: true }),
    );
  }
  const messages: { at: number; message: InterruptionMessage }[] = plan.map((p) => {
    // The hook's event is when its instance began to wait; the others' whenever the plan says.
    const offset = p.kind === 'asg-lifecycle-termination' ? 0 : p.eventOffsetMs;
    const at = t0 + offset;
    const deadline =
      p.kind === 'spot-interruption' || p.kind === 'capacity-reservation-interruption'
        ? { deadline: new Date(at + SPOT_NOTICE_MS).toISOString() }
        : p.kind === 'scheduled-maintenance'
          ? { deadline: new Date(at + 24 * HOUR_MS).toISOString() }
          : {};
    const hook = p.kind === 'asg-lifecycle-termination' && {
      lifecycleHook: {
        autoScalingGroupName: 'workers',
        lifecycleHookName: 'drain',
        lifecycleActionToken: w.asgFake.tokenOf(instanceId!)!,
      },
    };
    const message = w.notice(NODE, instanceId!, p.kind, {
      eventTime: new Date(at).toISOString(),
      ...deadline,
      ...(hook || {}),
    });
    return { at: at + p.delayMs, message };
  });
  const arrivals: Arrival[] = messages.map(({ at, message }) => ({ at, messages: [message] }));
  // The instance's lifecycle state around each pass: `Terminating:Wait->gone` is a pass that completed the action.
  const passes: string[] = [];
  let before: string | undefined;
  const replace = replicaSet(w);
  await w.run({
    arrivals,
    beforePass: () => {
      before = w.asgFake.lifecycleStateOf(instanceId!);
    },
    onPass: () => {
      replace();
      passes.push(`${before ?? 'gone'}->${w.asgFake.lifecycleStateOf(instanceId!) ?? 'gone'}`);
    },
  });
  return { w, instanceId: instanceId!, notices: messages.map((m) => m.message.notice), hooked, passes };
}

describe('notices for one Node, in any order and any batches', () => {
  it('end with the strongest action and the earliest deadline: cordoned and drained if any notice drains, the leader`s labels, every taint, every hook completed', async () => {
    await fc.assert(
      fc.asyncProperty(planned, async (plan) => {
        const { w, instanceId, notices, hooked, passes } = await scenario(plan);
        const node = w.kube.nodes.get(NODE)!;
        const drains = notices.some((n) => DEFAULT_INTERRUPTION_ACTIONS[n.kind as InterruptionKind] === 'drain');
        const leader = expectedLeader(notices);
        expect(node.metadata.labels?.[LABEL_ACTION]).toBe(drains ? 'cordon-and-drain' : 'taint');
        expect(node.metadata.labels?.[LABEL_EVENT_ID]).toBe(taintValue(leader.eventId));
        expect(Boolean(node.spec?.unschedulable)).toBe(drains);
        expect(podsOn(w).length).toBe(drains ? 0 : 4);
        expect(reasons(w).includes('Drained')).toBe(drains);
        expect(reasons(w)).not.toContain('DrainTimedOut');
        for (const n of notices) {
          const key = INTERRUPTION_TAINT_KEYS[n.kind];
          if (key)
            expect(node.spec?.taints).toContainEqual({ key, value: taintValue(n.eventId), effect: 'NoSchedule' });
        }
        if (hooked) {
          // Waiting until a pass let it go: completed, never left to time out between passes.
          expect(w.asgFake.lifecycleStateOf(instanceId)).toBeUndefined();
          expect(passes).toContain('Terminating:Wait->gone');
        }
        expect(w.sqs.depth('interruption-dlq.fifo')).toBe(0);
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});
