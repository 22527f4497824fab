import { compareAddresses, type PoolRecord, prefixAddresses } from './record.ts';
import type { IpamSettings } from './settings.ts';

/**
 * One pass over a Node's address pool, as a pure function of what is known: the pool's units (secondary addresses
 * and /28 prefixes on the Node's primary interface), the journal, the Pods on the Node and the time. It decides who
 * gets which address, what to ask EC2 for (at most one AssignPrivateIpAddresses, however many Pods wait) and what
 * to give back, and returns the journal to write. The reconciler carries it out (`reconciler.ts`).
 */

export const PREFIX_SIZE = 16;

/** A Pod on the Node that wants an address or holds one (host-network Pods never do). */
export interface PodView {
  uid: string;
  namespace: string;
  name: string;
  /** The address of its annotation, without the prefix length. */
  holds?: string;
  /** It requests an address (the webhook added the resource); false for a Pod that only holds one. */
  wants?: boolean;
  /** Succeeded or Failed: its address goes back to the pool. */
  finished: boolean;
  createdAt: string;
}

export interface PlanInput {
  settings: IpamSettings;
  /** Addresses or prefixes the interface may hold besides its primary address. */
  slots: number;
  /** The pool's units now (what is being released is not part of it). */
  pool: { addresses: readonly string[]; prefixes: readonly string[] };
  record: PoolRecord;
  /** The journal was missing or unreadable: every address no Pod holds starts cooling. */
  rebuilt: boolean;
  pods: readonly PodView[];
  /** Epoch seconds. */
  now: number;
  cooldownSeconds: number;
  /** False on the plan that follows an allocation, so one pass asks EC2 once. */
  mayAllocate: boolean;
}

export type Allocation = { count: number } | { prefixes: number };

export interface PoolPlan {
  allocate?: Allocation;
  /** Pods to annotate: new ones, and those a previous pass recorded but did not get to. */
  handouts: { pod: PodView; address: string }[];
  release: { addresses: string[]; prefixes: string[] };
  /** The journal after this plan (an allocation's result is added by the caller). */
  record: PoolRecord;
  /** Pods left without an address. */
  waiting: PodView[];
  /** Addresses two live Pods claim (never caused by this controller; reported, never "fixed"). */
  conflicts: { address: string; pods: PodView[] }[];
  /** When a cooling address becomes usable again and something waits for it. */
  requeueAfterSeconds?: number;
  figures: PoolFigures;
}

export interface PoolFigures {
  total: number;
  assigned: number;
  free: number;
  cooling: number;
  /** The size the warm-pool settings ask for now (capped by capacity). */
  target: number;
}

export function planPool(input: PlanInput): PoolPlan {
  const { settings, now, cooldownSeconds } = input;
  // The interface's primary address is the Node's: never in the pool, whatever put it there.
  const poolAddresses = [...input.pool.addresses, ...input.pool.prefixes.flatMap(prefixAddresses)].filter(
    (a) => a !== input.record.primary,
  );
  const inPool = new Set(poolAddresses);
  const live = byAge(input.pods.filter((p) => !p.finished));
  const { assigned, handouts, conflicts } = holdings(live, input.record);
  const cooling = coolingAfter(input, assigned, inPool);
  const isCooling = (a: string) => cooling[a] !== undefined && cooling[a]! + cooldownSeconds > now;

  const holding = new Set(Object.values(assigned));
  const free = freeInOrder(poolAddresses, input.pool.prefixes, assigned, isCooling, settings.mode);
  const waiting: PodView[] = [];
  for (const pod of live.filter((p) => !p.holds && p.wants !== false && !holding.has(p.uid))) {
    const address = free.shift();
    if (address === undefined) {
      waiting.push(pod);
      continue;
    }
    assigned[address] = pod.uid;
    delete cooling[address];
    handouts.push({ pod, address });
  }

  const used = Object.keys(assigned).filter((a) => inPool.has(a)).length;
  const capacity = input.slots * (settings.mode === 'prefix' ? PREFIX_SIZE : 1);
  const target = Math.min(
    capacity,
    targetSize(settings, used + waiting.length, input.pool.prefixes, assigned, cooling),
  );
  const total = inPool.size;
  const counted = settings.mode === 'secondary' ? total - coolingIn(inPool, assigned, isCooling) : total;
  const occupied =
    input.pool.addresses.length + input.pool.prefixes.length + Object.keys(input.record.releasing).length;
  const allocate = input.mayAllocate
    ? allocation(settings, Math.max(waiting.length, target - counted), input.slots - occupied)
    : undefined;
  const release =
    allocate || waiting.length > 0 ? { addresses: [], prefixes: [] } : surplus(input, counted - target, free);

  const record = nextRecord(input, { assigned, cooling, release });
  const coolingNow = Object.values(cooling).filter((since) => since + cooldownSeconds > now);
  // Only Pods that cannot get an address otherwise wait for one to cool: a requeue holds the Node's whole FIFO
  // group, so a pool that merely shrinks later is left to the next pass (any change of the Node's Pods, or resync).
  const wantsCooled = coolingNow.length > 0 && waiting.length > 0;
  return {
    ...(allocate ? { allocate } : {}),
    handouts,
    release,
    record,
    waiting,
    conflicts,
    ...(wantsCooled ? { requeueAfterSeconds: Math.min(...coolingNow) + cooldownSeconds - now + 1 } : {}),
    figures: { total, assigned: used, free: free.length, cooling: coolingNow.length, target },
  };
}

/**
 * Addresses of the pool still cooling down. In secondary-address mode they are not warm: the reference's pool
 * (pkg/pool/pool.go ReconcilePool) compares its target with the warm (free, not cooling) and pending addresses
 * only, so a few Pods going never costs the warm addresses the next Pods need. In prefix mode it counts them
 * (getPDDeviation: the addresses of the interface's prefixes, cooling ones included): a prefix is given back
 * whole, and one with cooling addresses is not free anyway.
 */
function coolingIn(inPool: ReadonlySet<string>, assigned: Record<string, string>, isCooling: (a: string) => boolean) {
  let count = 0;
  for (const address of inPool) if (assigned[address] === undefined && isCooling(address)) count++;
  return count;
}

/**
 * Who holds what: every live Pod's annotation, then the journal's promises a Pod has not received yet (a pass that
 * stopped between the journal and the Pod). A promise to a Pod that is gone, finished or holds another address is
 * dropped (its address is released by `coolingAfter`).
 */
function holdings(live: readonly PodView[], record: PoolRecord) {
  const assigned: Record<string, string> = {};
  const owners = new Map<string, PodView[]>();
  for (const pod of live) if (pod.holds) owners.set(pod.holds, [...(owners.get(pod.holds) ?? []), pod]);
  const conflicts: PoolPlan['conflicts'] = [];
  for (const [address, pods] of owners) {
    // The journal names the rightful holder; else the oldest Pod keeps it.
    const rightful = pods.find((p) => record.assigned[address] === p.uid) ?? pods[0]!;
    assigned[address] = rightful.uid;
    if (pods.length > 1) conflicts.push({ address, pods });
  }
  const byUid = new Map(live.map((p) => [p.uid, p]));
  const handouts: PoolPlan['handouts'] = [];
  const promised = new Set<string>();
  for (const [address, uid] of Object.entries(record.assigned)) {
    const pod = byUid.get(uid);
    if (!pod || pod.holds || assigned[address] !== undefined || promised.has(uid)) continue;
    assigned[address] = uid;
    promised.add(uid);
    handouts.push({ pod, address });
  }
  return { assigned, handouts, conflicts };
}

/** The journal's cooling addresses, plus those released since (their Pod gone or finished), minus the reused. */
function coolingAfter(input: PlanInput, assigned: Record<string, string>, inPool: ReadonlySet<string>) {
  const cooling: Record<string, number> = {};
  for (const [address, since] of Object.entries(input.record.cooling)) {
    if (inPool.has(address) && assigned[address] === undefined) cooling[address] = since;
  }
  const released = Object.keys(input.record.assigned).filter((a) => assigned[a] === undefined);
  const unknown = input.rebuilt ? [...inPool].filter((a) => assigned[a] === undefined) : [];
  for (const address of [...released, ...unknown]) if (inPool.has(address)) cooling[address] ??= input.now;
  return cooling;
}

/**
 * Free addresses in the order they are handed out. In prefix mode, addresses of the busiest prefixes first, so the
 * others empty out and can be given back whole.
 */
function freeInOrder(
  poolAddresses: readonly string[],
  prefixes: readonly string[],
  assigned: Record<string, string>,
  isCooling: (a: string) => boolean,
  mode: IpamSettings['mode'],
): string[] {
  const free = poolAddresses.filter((a) => assigned[a] === undefined && !isCooling(a)).sort(compareAddresses);
  if (mode !== 'prefix') return free;
  const busy = new Map<string, number>();
  const prefixOf = new Map<string, string>();
  for (const prefix of prefixes) {
    const members = prefixAddresses(prefix);
    for (const a of members) prefixOf.set(a, prefix);
    busy.set(prefix, members.filter((a) => assigned[a] !== undefined || isCooling(a)).length);
  }
  const load = (a: string) => busy.get(prefixOf.get(a) ?? '') ?? PREFIX_SIZE + 1;
  return free.sort((a, b) => load(b) - load(a) || compareAddresses(a, b));
}

/**
 * The pool size the settings ask for: in use (and waiting) plus the warm addresses, at least the minimum; or, with a
 * warm prefix target, the prefixes in use plus that many whole free ones.
 */
function targetSize(
  settings: IpamSettings,
  wanted: number,
  prefixes: readonly string[],
  assigned: Record<string, string>,
  cooling: Record<string, number>,
): number {
  if (settings.mode === 'prefix' && settings.warmPrefixTarget > 0) {
    const inUse = prefixes.filter((p) =>
      prefixAddresses(p).some((a) => assigned[a] !== undefined || cooling[a] !== undefined),
    ).length;
    const needed = Math.max(inUse, Math.ceil(wanted / PREFIX_SIZE));
    return (needed + settings.warmPrefixTarget) * PREFIX_SIZE;
  }
  return Math.max(settings.minimumIpTarget, wanted + settings.warmIpTarget);
}

function allocation(settings: IpamSettings, short: number, freeSlots: number): Allocation | undefined {
  if (short <= 0 || freeSlots <= 0) return undefined;
  if (settings.mode === 'prefix') return { prefixes: Math.min(freeSlots, Math.ceil(short / PREFIX_SIZE)) };
  return { count: Math.min(freeSlots, short) };
}

/**
 * What to give back: free units while the pool stays at or above its target. Units of the other mode go first (after
 * a switch between secondary addresses and prefixes), then the highest addresses.
 */
function surplus(input: PlanInput, excess: number, free: readonly string[]): PoolPlan['release'] {
  const release = { addresses: [] as string[], prefixes: [] as string[] };
  if (excess <= 0) return release;
  const isFree = new Set(free);
  const wholePrefixes = input.pool.prefixes.filter((p) => prefixAddresses(p).every((a) => isFree.has(a)));
  const addresses = input.pool.addresses.filter((a) => isFree.has(a));
  const descending = (list: string[]) => [...list].sort((a, b) => compareAddresses(b, a));
  const singles = descending(addresses).map((a): [string, number] => [a, 1]);
  const wholes = descending(wholePrefixes).map((p): [string, number] => [p, PREFIX_SIZE]);
  const units = input.settings.mode === 'secondary' ? [...wholes, ...singles] : [...singles, ...wholes];
  let left = excess;
  for (const [unit, size] of units) {
    if (size > left) continue;
    left -= size;
    (size === 1 ? release.addresses : release.prefixes).push(unit);
  }
  return release;
}

function nextRecord(
  input: PlanInput,
  next: { assigned: Record<string, string>; cooling: Record<string, number>; release: PoolPlan['release'] },
): PoolRecord {
  const releasing = { ...input.record.releasing };
  for (const unit of [...next.release.addresses, ...next.release.prefixes]) releasing[unit] = input.now;
  const gone = new Set([...next.release.addresses, ...next.release.prefixes]);
  return {
    ...input.record,
    addresses: input.pool.addresses.filter((a) => !gone.has(a)),
    prefixes: input.pool.prefixes.filter((p) => !gone.has(p)),
    assigned: next.assigned,
    cooling: next.cooling,
    releasing,
  };
}

function byAge(pods: readonly PodView[]): PodView[] {
  return [...pods].sort(
    (a, b) =>
      a.createdAt.localeCompare(b.createdAt) || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`),
  );
}
