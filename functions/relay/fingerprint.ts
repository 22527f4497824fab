/**
 * A fingerprint is what the relay keeps per object and reconciler instead of the object: a 53-bit
 * number hashed from the fields that reconciler reads. Two fingerprints of one object are compared
 * to decide whether a change matters, so the hash only has to tell two revisions of the same object
 * apart; a collision (2^-53 per comparison) would hide one change until the next one or the resync.
 *
 * Not a cryptographic hash: it is computed for every watch event (tens of thousands a second at
 * scale), and nobody gains anything from forging one.
 */

/** `0` means "none of this reconciler's business"; real fingerprints are never 0. */
export const NOT_RELEVANT = 0;

const TWO_POW_21 = 2 ** 21;

/** Hash the JSON of `fields` (undefined: not relevant). Arrays keep their order; callers sort what has none. */
export function fingerprint(fields: unknown[] | undefined): number {
  if (fields === undefined) return NOT_RELEVANT;
  return hashString(JSON.stringify(fields));
}

/** Two independent 32-bit mixes of the UTF-16 code units (FNV-1a and a multiply-xorshift), joined into 53 bits. */
export function hashString(text: string): number {
  let fnv = 0x811c9dc5;
  let mix = 0x9e3779b9 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    fnv = Math.imul(fnv ^ unit, 0x01000193);
    mix = Math.imul(mix ^ unit, 0x5bd1e995);
    mix ^= mix >>> 15;
  }
  mix = Math.imul(mix ^ (mix >>> 13), 0xc2b2ae35);
  mix ^= mix >>> 16;
  const value = (fnv >>> 0) * TWO_POW_21 + ((mix >>> 0) >>> 11);
  return value === NOT_RELEVANT ? 1 : value;
}

/** Map entries in key order: label and annotation maps have no order of their own. */
export function sortedEntries(map: Record<string, string> | undefined, keep?: (key: string) => boolean): string[] {
  if (!map) return [];
  const out: string[] = [];
  for (const key of Object.keys(map).sort()) if (!keep || keep(key)) out.push(`${key}=${map[key]}`);
  return out;
}

/**
 * The fingerprints of every object of one kind, by table key (`namespace/name` or `name`), without an object per
 * entry: a Map from key to a slot, and per slot a list epoch, one fingerprint per rule and the owner's name (a Pod's
 * Node, an EndpointSlice's Service) as an index into a pool of shared names, all in typed arrays. A Map entry and
 * its key are what a 100,000-Pod cluster costs per Pod (about 120 bytes, against about 300 bytes with an entry
 * object, a fingerprint array and its own copy of the Node's name: relay README, "Memory").
 */
export class FingerprintTable {
  private readonly slots = new Map<string, number>();
  private readonly freeSlots: number[] = [];
  private used = 0;
  private epochs = new Uint32Array(INITIAL_SLOTS);
  private values: Float64Array;
  private owners = new Int32Array(INITIAL_SLOTS).fill(NO_OWNER);
  private readonly owned = new NamePool();

  /** `width`: fingerprints per object (the kind's active rules). */
  constructor(readonly width: number) {
    this.values = new Float64Array(INITIAL_SLOTS * Math.max(1, width));
  }

  get size(): number {
    return this.slots.size;
  }

  /** The object's slot, or undefined when it is not in the table. */
  slot(key: string): number | undefined {
    return this.slots.get(key);
  }

  /** A new slot for `key` (not in the table): every fingerprint NOT_RELEVANT, no owner. */
  add(key: string): number {
    let slot = this.freeSlots.pop();
    if (slot === undefined) {
      if (this.used === this.epochs.length) this.grow();
      slot = this.used++;
    }
    this.slots.set(flat(key), slot);
    return slot;
  }

  /** Forget `key`; its slot is cleared for the next object. */
  delete(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slots.delete(key);
    this.setOwner(slot, undefined);
    this.epochs[slot] = 0;
    this.values.fill(NOT_RELEVANT, slot * this.width, (slot + 1) * this.width);
    this.freeSlots.push(slot);
  }

  /** Keys and slots; deleting the current key while iterating is allowed (Map iteration). */
  entries(): IterableIterator<[string, number]> {
    return this.slots.entries();
  }

  epoch(slot: number): number {
    return this.epochs[slot]!;
  }

  setEpoch(slot: number, epoch: number): void {
    this.epochs[slot] = epoch;
  }

  fingerprint(slot: number, rule: number): number {
    return this.values[slot * this.width + rule]!;
  }

  setFingerprint(slot: number, rule: number, value: number): void {
    this.values[slot * this.width + rule] = value;
  }

  /** The fingerprints of one slot, copied. */
  fingerprints(slot: number): number[] {
    return Array.from(this.values.subarray(slot * this.width, (slot + 1) * this.width));
  }

  owner(slot: number): string | undefined {
    const id = this.owners[slot]!;
    return id === NO_OWNER ? undefined : this.owned.name(id);
  }

  setOwner(slot: number, name: string | undefined): void {
    const before = this.owners[slot]!;
    if (before !== NO_OWNER && name !== undefined && this.owned.name(before) === name) return;
    if (before !== NO_OWNER) this.owned.release(before);
    this.owners[slot] = name === undefined ? NO_OWNER : this.owned.acquire(name);
  }

  private grow(): void {
    const capacity = this.epochs.length * 2;
    const epochs = new Uint32Array(capacity);
    epochs.set(this.epochs);
    this.epochs = epochs;
    const values = new Float64Array(capacity * Math.max(1, this.width));
    values.set(this.values);
    this.values = values;
    const owners = new Int32Array(capacity).fill(NO_OWNER);
    owners.set(this.owners);
    this.owners = owners;
  }
}

const INITIAL_SLOTS = 64;

/**
 * The key as one flat string. `namespace/name` built by concatenation is a rope (V8's ConsString) that stays a
 * 32-byte wrapper around its flattened text for as long as the table keeps it; a property name is internalized,
 * and what `Object.keys` returns is that flat copy. About 3 MiB for 100,000 Pods.
 */
function flat(key: string): string {
  return Object.keys({ [key]: 0 })[0]!;
}
const NO_OWNER = -1;

/** Names shared by many objects (5,000 Nodes for 100,000 Pods), kept once each while some object refers to them. */
class NamePool {
  private readonly ids = new Map<string, number>();
  private readonly names: (string | undefined)[] = [];
  private readonly counts: number[] = [];
  private readonly freeIds: number[] = [];

  acquire(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.freeIds.pop() ?? this.names.length;
      this.ids.set(name, id);
      this.names[id] = name;
      this.counts[id] = 0;
    }
    this.counts[id]!++;
    return id;
  }

  release(id: number): void {
    if (--this.counts[id]! > 0) return;
    this.ids.delete(this.names[id]!);
    this.names[id] = undefined;
    this.freeIds.push(id);
  }

  name(id: number): string {
    return this.names[id]!;
  }
}
