import { describe, expect, it } from 'vitest';
import { type PlanInput, type PodView, planPool } from './plan.ts';
import { emptyRecord, type PoolRecord, prefixAddresses } from './record.ts';
import type { IpamSettings } from './settings.ts';

const SECONDARY: IpamSettings = {
  enabled: true,
  mode: 'secondary',
  warmIpTarget: 3,
  minimumIpTarget: 3,
  warmPrefixTarget: 0,
};
const PREFIX: IpamSettings = { ...SECONDARY, mode: 'prefix', warmIpTarget: 1, minimumIpTarget: 3 };
const NOW = 1_000_000;

let seq = 0;
function pod(overrides: Partial<PodView> = {}): PodView {
  const n = ++seq;
  return {
    uid: `uid-${n}`,
    namespace: 'default',
    name: `pod-${n}`,
    finished: false,
    createdAt: `2026-01-01T00:00:${String(n % 60).padStart(2, '0')}Z`,
    ...overrides,
  };
}
const addrs = (from: number, count: number) => Array.from({ length: count }, (_, i) => `10.0.1.${from + i}`);

function input(overrides: Omit<Partial<PlanInput>, 'record'> & { record?: Partial<PoolRecord> } = {}): PlanInput {
  const { record, ...rest } = overrides;
  return {
    settings: SECONDARY,
    slots: 9,
    pool: { addresses: [], prefixes: [] },
    record: { ...emptyRecord(), ...record },
    rebuilt: false,
    pods: [],
    now: NOW,
    cooldownSeconds: 30,
    mayAllocate: true,
    ...rest,
  };
}

describe('planPool: secondary addresses', () => {
  it('an empty pool asks for the minimum, in one allocation', () => {
    expect(planPool(input()).allocate).toEqual({ count: 3 });
  });

  it('many waiting Pods cost one allocation: all of them plus the warm addresses, within the slots', () => {
    const pods = Array.from({ length: 5 }, () => pod());
    const plan = planPool(input({ pods, pool: { addresses: addrs(10, 3), prefixes: [] } }));
    expect(plan.handouts.map((h) => h.address)).toEqual(addrs(10, 3));
    expect(plan.waiting).toHaveLength(2);
    // 5 in use + 3 warm = 8, the pool has 3: 5 more (within 9 slots).
    expect(plan.allocate).toEqual({ count: 5 });
    expect(plan.release).toEqual({ addresses: [], prefixes: [] });
  });

  it('never asks beyond the interface: slots cap the allocation', () => {
    const pods = Array.from({ length: 12 }, () => pod());
    const plan = planPool(input({ pods, pool: { addresses: addrs(10, 7), prefixes: [] } }));
    expect(plan.allocate).toEqual({ count: 2 });
  });

  it('a warm hit hands out from the pool and asks EC2 for nothing', () => {
    const holder = pod({ holds: '10.0.1.10' });
    const fresh = pod();
    const plan = planPool(
      input({
        pods: [holder, fresh],
        pool: { addresses: addrs(10, 5), prefixes: [] },
        record: { assigned: { '10.0.1.10': holder.uid } },
      }),
    );
    expect(plan.handouts).toEqual([{ pod: fresh, address: '10.0.1.11' }]);
    expect(plan.allocate).toBeUndefined();
    expect(plan.record.assigned).toEqual({ '10.0.1.10': holder.uid, '10.0.1.11': fresh.uid });
  });

  it("a gone Pod's address cools down 30 s and is not handed out meanwhile", () => {
    const gone = 'uid-gone';
    const waiting = pod();
    const pool = { addresses: ['10.0.1.10'], prefixes: [] };
    const released = planPool(
      input({ pods: [waiting], pool, record: { assigned: { '10.0.1.10': gone } }, mayAllocate: false }),
    );
    expect(released.record.cooling).toEqual({ '10.0.1.10': NOW });
    expect(released.handouts).toEqual([]);
    expect(released.waiting).toEqual([waiting]);
    expect(released.requeueAfterSeconds).toBe(31);

    const early = planPool(
      input({ pods: [waiting], pool, record: released.record, now: NOW + 29, mayAllocate: false }),
    );
    expect(early.handouts).toEqual([]);
    const later = planPool(
      input({ pods: [waiting], pool, record: released.record, now: NOW + 30, mayAllocate: false }),
    );
    expect(later.handouts).toEqual([{ pod: waiting, address: '10.0.1.10' }]);
    expect(later.record.cooling).toEqual({});
  });

  it('a finished Pod gives its address back even though it keeps the annotation', () => {
    const done = pod({ holds: '10.0.1.10', finished: true });
    const plan = planPool(
      input({
        pods: [done],
        pool: { addresses: addrs(10, 3), prefixes: [] },
        record: { assigned: { '10.0.1.10': done.uid } },
      }),
    );
    expect(plan.record.assigned).toEqual({});
    expect(plan.record.cooling).toEqual({ '10.0.1.10': NOW });
  });

  it('a promise in the journal is kept: the same Pod gets the same address after a crash', () => {
    const p = pod();
    const plan = planPool(
      input({
        pods: [p],
        pool: { addresses: addrs(10, 4), prefixes: [] },
        record: { assigned: { '10.0.1.12': p.uid } },
      }),
    );
    expect(plan.handouts).toEqual([{ pod: p, address: '10.0.1.12' }]);
  });

  it('releases free addresses beyond warm + in use, never below the minimum, never a cooling one', () => {
    const holder = pod({ holds: '10.0.1.10' });
    const plan = planPool(
      input({
        pods: [holder],
        pool: { addresses: addrs(10, 9), prefixes: [] },
        record: { assigned: { '10.0.1.10': holder.uid }, cooling: { '10.0.1.18': NOW - 5 } },
      }),
    );
    // target = max(3, 1 + 3) = 4; 10.0.1.18 is cooling, so not warm: 8 count, 4 to give back, the highest free ones.
    // The cooling one goes once its cooldown is over, if still beyond the target.
    expect(plan.release.addresses).toEqual(['10.0.1.17', '10.0.1.16', '10.0.1.15', '10.0.1.14']);
    expect(plan.record.addresses).not.toContain('10.0.1.17');
    expect(Object.keys(plan.record.releasing)).toEqual(plan.release.addresses);
    // Nothing waits for the cooling address: no requeue (it would hold the Node's queue group).
    expect(plan.requeueAfterSeconds).toBeUndefined();
  });

  it('a rebuilt journal treats every address no Pod holds as cooling', () => {
    const holder = pod({ holds: '10.0.1.10' });
    const plan = planPool(
      input({ pods: [holder, pod()], pool: { addresses: addrs(10, 3), prefixes: [] }, rebuilt: true }),
    );
    expect(plan.handouts).toEqual([]);
    expect(plan.record.cooling).toEqual({ '10.0.1.11': NOW, '10.0.1.12': NOW });
  });

  it('reports two Pods claiming one address, and the journal keeps the rightful one', () => {
    const first = pod({ holds: '10.0.1.10' });
    const second = pod({ holds: '10.0.1.10' });
    const plan = planPool(
      input({
        pods: [first, second],
        pool: { addresses: addrs(10, 3), prefixes: [] },
        record: { assigned: { '10.0.1.10': second.uid } },
      }),
    );
    expect(plan.conflicts).toEqual([{ address: '10.0.1.10', pods: [first, second] }]);
    expect(plan.record.assigned['10.0.1.10']).toBe(second.uid);
  });
});

describe('planPool: prefixes', () => {
  it('asks for whole /28 prefixes: ceil(needed / 16)', () => {
    const pods = Array.from({ length: 20 }, () => pod());
    const plan = planPool(input({ settings: PREFIX, pods }));
    expect(plan.allocate).toEqual({ prefixes: 2 });
  });

  it('hands out from the busiest prefix and gives back a whole free one', () => {
    const a = '10.0.2.16/28';
    const b = '10.0.2.32/28';
    const holder = pod({ holds: '10.0.2.40' });
    const next = pod();
    const plan = planPool(
      input({
        settings: PREFIX,
        pods: [holder, next],
        pool: { addresses: [], prefixes: [a, b] },
        record: { assigned: { '10.0.2.40': holder.uid } },
      }),
    );
    expect(prefixAddresses(b)).toContain(plan.handouts[0]!.address);
    // 2 in use + warm 1 = 3 (minimum 3): one prefix is enough, the other is free and goes back.
    expect(plan.release.prefixes).toEqual([a]);
  });

  it('cooling addresses still count in prefix mode, as in the reference (a prefix goes back whole)', () => {
    const prefix = '10.0.2.16/28';
    const members = prefixAddresses(prefix);
    const holders = members.slice(0, 10).map((address) => pod({ holds: address }));
    const cooling = Object.fromEntries(members.slice(10).map((address) => [address, NOW - 5]));
    const plan = planPool(
      input({
        settings: PREFIX,
        pods: holders,
        pool: { addresses: [], prefixes: [prefix] },
        record: { assigned: Object.fromEntries(holders.map((p) => [p.holds!, p.uid])), cooling },
      }),
    );
    // 10 in use + warm 1 = 11 of the prefix's 16 (6 cooling): no second prefix (pool.go getPDDeviation counts
    // the cooling addresses among the prefix's).
    expect(plan.allocate).toBeUndefined();
  });

  it('warm-prefix-target keeps that many whole free prefixes', () => {
    const settings: IpamSettings = { ...PREFIX, warmIpTarget: 0, minimumIpTarget: 0, warmPrefixTarget: 1 };
    const holder = pod({ holds: '10.0.2.17' });
    const plan = planPool(
      input({
        settings,
        pods: [holder],
        pool: { addresses: [], prefixes: ['10.0.2.16/28'] },
        record: { assigned: { '10.0.2.17': holder.uid } },
      }),
    );
    expect(plan.allocate).toEqual({ prefixes: 1 });
  });
});
