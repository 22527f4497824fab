import { fingerprint } from '../fingerprint.ts';
import type { KubeObject, WatchedKind } from '../kinds.ts';

/**
 * What a reconciler reads of the Kubernetes objects it is given, recorded through Proxies, and whether
 * the relay's fingerprint for that reconciler notices a change of each field read
 * (reads-coverage.test.ts). Test support only.
 *
 * A read is a path of property names, `[]` for any element of an array and `*` for the set of keys
 * of a map (`Object.keys`, spreads): `spec.taints[].key`, `metadata.labels.team`, `metadata.labels.*`.
 * Only leaves count: a primitive (or missing) value read, a key tested with `in`, a key set listed.
 * An object or array read but never looked into was only carried along (copied into a patch), and
 * array `length` is only read to iterate: what matters is what is read of the elements.
 */

export interface Read {
  path: readonly string[];
  how: 'value' | 'presence' | 'keys';
}

/** One object as a reconciler received it, and what it read of it. */
export interface RecordedObject {
  kind: WatchedKind;
  reconciler: string;
  /** The object as it was handed over (reads are checked against this copy). */
  snapshot: KubeObject;
  reads: Map<string, Read>;
}

export const pathText = (read: Read) =>
  read.path.map((s, i) => (s === '[]' ? s : i === 0 ? s : `.${s}`)).join('') + (read.how === 'presence' ? ' (in)' : '');

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && [Object.prototype, null].includes(Object.getPrototypeOf(value));

export class ReadRecorder {
  readonly objects: RecordedObject[] = [];
  /** Whose reads are being recorded. */
  reconciler = '';
  private readonly targets = new WeakMap<object, object>();
  private readonly proxies = new WeakMap<object, object>();

  /** The object as the reconciler will see it: every read of it is recorded. */
  wrap<T>(kind: WatchedKind, object: T): T {
    if (typeof object !== 'object' || object === null) return object;
    const recorded: RecordedObject = {
      kind,
      reconciler: this.reconciler,
      snapshot: structuredClone(object) as KubeObject,
      reads: new Map(),
    };
    this.objects.push(recorded);
    return this.proxy(object, [], recorded) as T;
  }

  /** A copy without Proxies, for what the reconciler hands back to the API (patches, Events). */
  unwrap<T>(value: T): T {
    if (typeof value !== 'object' || value === null) return value;
    const target = this.targets.get(value);
    if (target) return target as T;
    if (Array.isArray(value)) return value.map((v) => this.unwrap(v)) as T;
    if (!isPlain(value)) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.unwrap(v)])) as T;
  }

  private proxy(target: object, path: readonly string[], recorded: RecordedObject): object {
    const cached = this.proxies.get(target);
    if (cached) return cached;
    const note = (segments: readonly string[], how: Read['how']) => {
      const read = { path: segments, how };
      recorded.reads.set(pathText(read), read);
    };
    const child = (segments: readonly string[], value: unknown) => {
      if (typeof value === 'object' && value !== null) return this.proxy(value, segments, recorded);
      note(segments, 'value');
      return value;
    };
    const proxy = new Proxy(target, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        // `then` on the object itself: an async port answering with it (a thenable check), not a reconciler read.
        if (typeof key === 'symbol' || (key === 'then' && path.length === 0)) return value;
        if (Array.isArray(object)) return /^\d+$/.test(key) ? child([...path, '[]'], value) : value;
        if (typeof value === 'function' && !Object.hasOwn(object, key)) return value;
        return child([...path, key], value);
      },
      has(object, key) {
        if (typeof key === 'string' && !Array.isArray(object)) note([...path, key], 'presence');
        return Reflect.has(object, key);
      },
      ownKeys(object) {
        if (!Array.isArray(object)) note([...path, '*'], 'keys');
        return Reflect.ownKeys(object);
      },
    });
    this.proxies.set(target, proxy);
    this.targets.set(proxy, target);
    return proxy;
  }
}

/**
 * A port whose methods hand out recorded objects and take plain ones back: `kinds` names the kind
 * each reading method answers with.
 */
export function recordingPort<T extends object>(
  port: T,
  recorder: ReadRecorder,
  kinds: Readonly<Record<string, WatchedKind>>,
): T {
  return new Proxy(port, {
    get(target, key, receiver) {
      const member = Reflect.get(target, key, receiver);
      if (typeof member !== 'function' || typeof key !== 'string') return member;
      return async (...args: unknown[]) => {
        const result = await member.apply(
          target,
          args.map((a) => recorder.unwrap(a)),
        );
        const kind = kinds[key];
        if (!kind) return result;
        return Array.isArray(result) ? result.map((o) => recorder.wrap(kind, o)) : recorder.wrap(kind, result);
      };
    },
  });
}

const MUTATED_KEY = 'mutated.example.com/key';

type Change = (parent: Record<string, unknown>, key: string) => void;

/** Ways to change one field: remove it, give a missing one a value of some type, change the value it has. */
const FIELD_CHANGES: Change[] = [
  (parent, key) => {
    delete parent[key];
  },
  ...['mutated', true, 1].map(
    (value): Change =>
      (parent, key) => {
        if (parent[key] === undefined) parent[key] = value;
      },
  ),
  (parent, key) => {
    const value = parent[key];
    if (typeof value === 'string') parent[key] = `${value}-mutated`;
    if (typeof value === 'number') parent[key] = value + 1;
    if (typeof value === 'boolean') parent[key] = !value;
  },
];

/** Ways to change a map's key set: one key more, one key less. */
const KEY_SET_CHANGES: Change[] = [
  (map) => {
    map[MUTATED_KEY] = 'mutated';
  },
  (map) => {
    const first = Object.keys(map)[0];
    if (first !== undefined) delete map[first];
  },
];

/**
 * Copies of `snapshot`, each with the field of `read` changed in one way (in every element, under `[]`).
 * `donors` are values the same field has in other objects: a map or list missing here is given one,
 * since a made-up value would rarely hold the key or element the reconciler looks for.
 */
export function mutations(snapshot: KubeObject, read: Read, donors: readonly unknown[] = []): KubeObject[] {
  const last = read.path.at(-1)!;
  const given = donors.map(
    (donor): Change =>
      (parent, key) => {
        parent[key] = structuredClone(donor);
      },
  );
  const changes = read.how === 'keys' ? KEY_SET_CHANGES : [...FIELD_CHANGES, ...given];
  return changes.map((change) => {
    const copy = structuredClone(snapshot);
    for (const parent of resolve(copy, read.path.slice(0, -1))) {
      if (read.how === 'keys') change(parent, '');
      else if (last !== '[]') change(parent, last);
      else if (Array.isArray(parent)) {
        // Elements of an array of primitives: changed in place, or all removed.
        if (change === FIELD_CHANGES[0]) parent.length = 0;
        else for (let i = 0; i < parent.length; i++) change(parent as unknown as Record<string, unknown>, String(i));
      }
    }
    return copy;
  });
}

/** The values at `path` (fanning out at `[]`); missing steps yield nothing. */
export function valuesAt(root: unknown, path: readonly string[]): unknown[] {
  let level: unknown[] = [root];
  for (const segment of path) {
    level = level.flatMap((value) => {
      if (typeof value !== 'object' || value === null) return [];
      if (segment === '[]') return Array.isArray(value) ? value : [];
      return [(value as Record<string, unknown>)[segment]];
    });
  }
  return level;
}

/** Every object at `path` (fanning out at `[]`). */
function resolve(root: unknown, path: readonly string[]): Record<string, unknown>[] {
  return valuesAt(root, path).filter((v): v is Record<string, unknown> => typeof v === 'object' && v !== null);
}

/** Whether some change of the field read moves the fingerprint `reads` gives the object. */
export function fingerprintNotices(
  reads: (object: KubeObject) => unknown[] | undefined,
  snapshot: KubeObject,
  read: Read,
  donors: readonly unknown[] = [],
): boolean {
  const before = fingerprint(reads(snapshot));
  return mutations(snapshot, read, donors).some((copy) => {
    try {
      return fingerprint(reads(copy)) !== before;
    } catch {
      return false; // a change of a type the fingerprint cannot digest proves nothing
    }
  });
}
