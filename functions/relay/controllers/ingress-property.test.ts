import { describe, expect, it } from 'vitest';
import {
  type ClassLookup,
  classOf,
  GROUP_NAME_ANNOTATION,
  groupOf,
  groupsOfFinalizers,
  stackName,
} from '../../../shared/ingress/membership.ts';
import type { Ingress, IngressClass, IngressClassParams } from '../../../shared/k8s/ingress-types.ts';
import type { KubeObject } from '../kinds.ts';
import { ALB, makeIngress, makeIngressClass, makeIngressClassParams } from '../testing/ingress-objects.ts';
import { at, router } from '../testing/router.ts';

/**
 * Generated histories of Ingresses, IngressClasses and IngressClassParams: after every change, each group whose
 * membership the change can have touched got a key (never one too few), computed from scratch with membership.ts
 * over the whole cluster as it is before and after the change.
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

interface World {
  ingresses: Map<string, KubeObject>;
  classes: Map<string, KubeObject>;
  params: Map<string, KubeObject>;
}

/** Per Ingress, the groups it concerns: the one it is a member of, and those its finalizers name. */
function concerns(world: World): Map<string, Set<string>> {
  const lookup: ClassLookup = {
    classes: [...world.classes.values()] as unknown as IngressClass[],
    params: (name) => world.params.get(name) as unknown as IngressClassParams | undefined,
  };
  const out = new Map<string, Set<string>>();
  for (const [key, object] of world.ingresses) {
    const ingress = object as unknown as Ingress;
    const found = classOf(ingress, lookup);
    const grouped = found.managed === true ? groupOf(ingress, found.params) : undefined;
    const groups = new Set(groupsOfFinalizers(ingress).map(stackName));
    if (grouped?.ok) groups.add(stackName(grouped.group));
    out.set(key, groups);
  }
  return out;
}

const CLASSES = [ALB, 'internal', 'shared', 'nginx'];
const GROUPS = [undefined, 'a', 'b', 'Bad_Name'];
const FINALIZERS = [[], ['group.ingress.k8s.aws/a'], ['group.ingress.k8s.aws/b'], ['ingress.k8s.aws/resources']];

function step(
  world: World,
  r: ReturnType<typeof random>,
): { kind: 'Ingress' | 'IngressClass' | 'IngressClassParams'; object: KubeObject; deleted: boolean } {
  const roll = r.next();
  if (roll < 0.6) {
    const name = r.pick(['one', 'two', 'three', 'four']);
    const namespace = r.pick(['x', 'y']);
    const key = `${namespace}/${name}`;
    if (world.ingresses.has(key) && r.next() < 0.15)
      return { kind: 'Ingress', object: world.ingresses.get(key)!, deleted: true };
    const group = r.pick(GROUPS);
    const object = at(
      makeIngress(namespace, name, {
        ...(r.next() < 0.85 ? { className: r.pick(CLASSES) } : {}),
        ...(group ? { annotations: { [GROUP_NAME_ANNOTATION]: group } } : {}),
        finalizers: r.pick(FINALIZERS),
      }),
    );
    return { kind: 'Ingress', object, deleted: false };
  }
  if (roll < 0.85) {
    const name = r.pick(CLASSES);
    if (world.classes.has(name) && r.next() < 0.2)
      return { kind: 'IngressClass', object: world.classes.get(name)!, deleted: true };
    const object = at(
      makeIngressClass(name, {
        controller: name === 'nginx' || r.next() < 0.2 ? 'k8s.io/ingress-nginx' : undefined,
        ...(r.next() < 0.4 ? { params: r.pick(['p', 'q']) } : {}),
        isDefault: r.next() < 0.25,
      }),
    );
    return { kind: 'IngressClass', object, deleted: false };
  }
  const name = r.pick(['p', 'q']);
  if (world.params.has(name) && r.next() < 0.3)
    return { kind: 'IngressClassParams', object: world.params.get(name)!, deleted: true };
  const group = r.pick(GROUPS);
  return {
    kind: 'IngressClassParams',
    object: at(makeIngressClassParams(name, group ? { group: { name: group } } : {})),
    deleted: false,
  };
}

describe('the Ingress module over generated histories', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('seed %i: every group a change touches gets a key', (seed) => {
    const r = random(seed);
    const { r: routerOf, keys } = router({ reconcilers: ['ingress'] });
    const world: World = { ingresses: new Map(), classes: new Map(), params: new Map() };
    const tables = { Ingress: world.ingresses, IngressClass: world.classes, IngressClassParams: world.params };
    for (let i = 0; i < 300; i++) {
      const before = concerns(world);
      const { kind, object, deleted } = step(world, r);
      const table = tables[kind];
      const key =
        kind === 'Ingress' ? `${object.metadata!.namespace}/${object.metadata!.name}` : object.metadata!.name!;
      const previous = table.get(key);
      const content = (o: KubeObject | undefined) =>
        o && JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
      // A write that changes nothing but the revision is no change (the fingerprint is the same).
      const changed = deleted || content(previous) !== content(object);
      if (deleted) table.delete(key);
      else table.set(key, object);
      const after = concerns(world);

      const expected = new Set<string>();
      for (const ingress of new Set([...before.keys(), ...after.keys()])) {
        const was = before.get(ingress) ?? new Set<string>();
        const is = after.get(ingress) ?? new Set<string>();
        const touched =
          kind === 'Ingress'
            ? ingress === key && changed
            : [...was].some((g) => !is.has(g)) || [...is].some((g) => !was.has(g));
        if (touched) for (const group of [...was, ...is]) expected.add(group);
      }
      keys.length = 0;
      if (deleted) routerOf.remove(kind, at(structuredClone(object)));
      else routerOf.observe(kind, object);
      const sent = new Set(
        keys.map((k) => (k.message.namespace ? `${k.message.namespace}/${k.message.name}` : k.message.name)),
      );
      const missing = [...expected].filter((g) => !sent.has(g));
      expect(missing, `step ${i}: ${deleted ? 'deleting' : 'writing'} ${kind} ${key}`).toEqual([]);
    }
  });
});
