import { describe, expect, it } from 'vitest';
import { READINESS_GATE_PREFIX, TGB_API_VERSION } from '../../../shared/k8s/tgb-types.ts';
import type { KubeObject, WatchedKind } from '../kinds.ts';
import { makeNode, makePod, makeService, makeSlice, setReady } from '../testing/objects.ts';
import { asObject, at, router } from '../testing/router.ts';

/**
 * Generated histories of TargetGroupBindings, Services, EndpointSlices, gated Pods and Nodes: after every change,
 * each binding the change concerns got a key (never one too few), computed from scratch over the cluster as it is:
 * a binding itself; for a Service, the bindings of its namespace naming it; for a slice, those of them with IP
 * targets (or none filled in); for a gated Pod, the bindings its gates name; for a Node that is or was a target
 * candidate, every binding with instance targets (or none filled in), by the round the change makes due.
 */

/** A small deterministic generator (mulberry32), so a failure can be played again from its seed. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  return { next, pick };
}

type Kind = Extract<WatchedKind, 'TargetGroupBinding' | 'Service' | 'EndpointSlice' | 'Pod' | 'Node'>;
type World = Record<Kind, Map<string, KubeObject>>;

const NAMESPACES = ['x', 'y'];
const BINDINGS = ['a', 'b', 'c', 'd'];
const SERVICES = ['web', 'api'];
const TARGET_TYPES = [undefined, 'ip', 'instance'] as const;
/** A Pod's gates never change: each Pod name has its own. */
const GATES: Record<string, string[]> = { p1: ['a'], p2: ['a', 'b'], p3: ['c'], p4: [] };

const keyOf = (kind: Kind, object: KubeObject) =>
  kind === 'Node' ? object.metadata!.name! : `${object.metadata!.namespace}/${object.metadata!.name}`;

interface BindingShape {
  metadata: { namespace: string; name: string };
  spec: { serviceRef: { name: string }; targetType?: string };
}
const bindingsOf = (world: World) => [...world.TargetGroupBinding.values()] as unknown as BindingShape[];
const instanceCandidate = (node: KubeObject | undefined) =>
  Boolean(node && (node.spec as { providerID?: string }).providerID);

function step(world: World, r: ReturnType<typeof random>): { kind: Kind; object: KubeObject; deleted: boolean } {
  const roll = r.next();
  const existing = (kind: Kind, key: string, p: number) =>
    world[kind].has(key) && r.next() < p ? { kind, object: world[kind].get(key)!, deleted: true } : undefined;
  const namespace = r.pick(NAMESPACES);
  const service = r.pick(SERVICES);
  if (roll < 0.35) {
    const name = r.pick(BINDINGS);
    const gone = existing('TargetGroupBinding', `${namespace}/${name}`, 0.15);
    if (gone) return gone;
    const targetType = r.pick(TARGET_TYPES);
    const object = {
      apiVersion: TGB_API_VERSION,
      kind: 'TargetGroupBinding',
      metadata: { namespace, name },
      spec: { serviceRef: { name: service, port: 80 }, targetGroupName: name, ...(targetType ? { targetType } : {}) },
    } as unknown as KubeObject;
    return { kind: 'TargetGroupBinding', object: at(object), deleted: false };
  }
  if (roll < 0.5) {
    const gone = existing('Service', `${namespace}/${service}`, 0.2);
    if (gone) return gone;
    const object = makeService(namespace, service, 'NodePort') as KubeObject & { spec: Record<string, unknown> };
    object.spec.selector = { app: r.pick(['web', 'api', 'other']) };
    return { kind: 'Service', object: at(object), deleted: false };
  }
  if (roll < 0.65) {
    const gone = existing('EndpointSlice', `${namespace}/${service}-s`, 0.2);
    if (gone) return gone;
    const addresses = [`10.0.0.${Math.floor(r.next() * 3)}`];
    return { kind: 'EndpointSlice', object: at(makeSlice(namespace, service, 's', addresses)), deleted: false };
  }
  if (roll < 0.85) {
    const name = r.pick(Object.keys(GATES));
    const gone = existing('Pod', `${namespace}/${name}`, 0.15);
    if (gone) return gone;
    const pod = makePod(namespace, name, 'n1') as KubeObject & {
      spec: Record<string, unknown>;
      status: { podIP?: string; conditions: { type: string; status: string }[] };
    };
    const gates = GATES[name]!;
    pod.spec.readinessGates = gates.map((g) => ({ conditionType: `${READINESS_GATE_PREFIX}${g}` }));
    pod.status.podIP = `10.0.1.${Math.floor(r.next() * 2)}`;
    if (gates.length > 0) {
      pod.status.conditions.push({ type: `${READINESS_GATE_PREFIX}${gates[0]}`, status: r.pick(['True', 'False']) });
    }
    return { kind: 'Pod', object: at(pod), deleted: false };
  }
  const name = r.pick(['n1', 'n2', 'n3']);
  const gone = existing('Node', name, 0.15);
  if (gone) return gone;
  const node = makeNode(name, r.next() < 0.2 ? { providerID: '' } : {});
  setReady(node, r.next() < 0.7);
  node.metadata.labels = { ...node.metadata.labels, pool: r.pick(['a', 'b']) };
  return { kind: 'Node', object: at(asObject(node)), deleted: false };
}

/** The bindings a change concerns, from the cluster before and after it. */
function expectedBindings(world: World, kind: Kind, key: string, object: KubeObject, was: KubeObject | undefined) {
  const expected = new Set<string>();
  const [namespace] = key.split('/');
  if (kind === 'TargetGroupBinding') expected.add(key);
  else if (kind === 'Service' || kind === 'EndpointSlice') {
    const service = kind === 'Service' ? key.split('/')[1]! : key.split('/')[1]!.slice(0, -'-s'.length);
    for (const b of bindingsOf(world)) {
      if (b.metadata.namespace !== namespace || b.spec.serviceRef.name !== service) continue;
      if (kind === 'EndpointSlice' && b.spec.targetType === 'instance') continue;
      expected.add(`${b.metadata.namespace}/${b.metadata.name}`);
    }
  } else if (kind === 'Pod') {
    for (const gate of GATES[object.metadata!.name!]!) expected.add(`${namespace}/${gate}`);
  } else if (instanceCandidate(object) || instanceCandidate(was)) {
    for (const b of bindingsOf(world)) {
      if (b.spec.targetType !== 'ip') expected.add(`${b.metadata.namespace}/${b.metadata.name}`);
    }
  }
  return expected;
}

describe('the TargetGroupBinding module over generated histories', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])('seed %i: every binding a change concerns gets a key', (seed) => {
    const r = random(seed);
    const { r: routerOf, keys } = router({ reconcilers: ['target-group-binding'] });
    const world: World = {
      TargetGroupBinding: new Map(),
      Service: new Map(),
      EndpointSlice: new Map(),
      Pod: new Map(),
      Node: new Map(),
    };
    let checked = 0;
    for (let i = 0; i < 400; i++) {
      const { kind, object, deleted } = step(world, r);
      const key = keyOf(kind, object);
      const content = (o: KubeObject | undefined) =>
        o && JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
      // A write that changes nothing but the revision is no change (the fingerprint is the same).
      const was = world[kind].get(key);
      const changed = deleted || content(was) !== content(object);
      if (deleted) world[kind].delete(key);
      else world[kind].set(key, object);
      // A Pod that goes leaves its slices to tell: nothing is owed for its deletion.
      const owed = changed && !(deleted && kind === 'Pod');
      const expected = owed ? expectedBindings(world, kind, key, object, was) : new Set<string>();
      keys.length = 0;
      if (deleted) routerOf.remove(kind, at(structuredClone(object)));
      else routerOf.observe(kind, object);
      const sent = new Set(
        [...keys, ...routerOf.takeNodeSetRound()].map((k) => `${k.message.namespace}/${k.message.name}`),
      );
      const missing = [...expected].filter((b) => !sent.has(b));
      expect(missing, `step ${i}: ${deleted ? 'deleting' : 'writing'} ${kind} ${key}`).toEqual([]);
      checked += expected.size;
    }
    // The history made changes that concern bindings.
    expect(checked).toBeGreaterThan(100);
  });
});
