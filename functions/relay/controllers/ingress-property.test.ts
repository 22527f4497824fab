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
import { makeService, makeSlice } from '../testing/objects.ts';
import { at, router } from '../testing/router.ts';
import { servicesOf, TARGET_TYPE_ANNOTATION } from './ingress-reads.ts';

/**
 * Generated histories of Ingresses, IngressClasses, IngressClassParams, Services and EndpointSlices: after every
 * change, each group the change concerns got a key (never one too few), computed from scratch with membership.ts
 * over the whole cluster as it is before and after the change: an Ingress's groups (member and finalizers) before
 * and after; for a class or params, the groups of every Ingress that uses it, before or after; for a Service, the
 * groups of the Ingresses that forward to it; for a slice, those of them with IP targets for its Service.
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

type Kind = 'Ingress' | 'IngressClass' | 'IngressClassParams' | 'Service' | 'EndpointSlice';

type World = Record<Kind, Map<string, KubeObject>>;

/** Per Ingress: the groups it concerns (member, finalizers), the class and params it uses, its target type. */
interface Use {
  groups: Set<string>;
  member?: string;
  className?: string;
  params?: string;
  paramsTargetType?: string;
  services: string[];
  targetType?: string;
}

function uses(world: World): Map<string, Use> {
  const classes = [...world.IngressClass.values()] as unknown as IngressClass[];
  const lookup: ClassLookup = {
    classes,
    params: (name) => world.IngressClassParams.get(name) as unknown as IngressClassParams | undefined,
  };
  const defaults = classes.filter((c) => c.metadata.annotations?.['ingressclass.kubernetes.io/is-default-class']);
  const out = new Map<string, Use>();
  for (const [key, object] of world.Ingress) {
    const ingress = object as unknown as Ingress;
    const found = classOf(ingress, lookup);
    const grouped = found.managed === true ? groupOf(ingress, found.params) : undefined;
    const groups = new Set(groupsOfFinalizers(ingress).map(stackName));
    const member = grouped?.ok ? stackName(grouped.group) : undefined;
    if (member) groups.add(member);
    const legacy = ingress.metadata.annotations?.['kubernetes.io/ingress.class'] !== undefined;
    const className = legacy
      ? undefined
      : (ingress.spec?.ingressClassName ?? (defaults.length === 1 ? defaults[0]!.metadata.name : undefined));
    const params = classes.find((c) => c.metadata.name === className)?.spec?.parameters?.name;
    const paramsTargetType = found.managed === true ? found.params?.spec?.targetType : undefined;
    const targetType = ingress.metadata.annotations?.[TARGET_TYPE_ANNOTATION];
    out.set(key, { groups, member, className, params, paramsTargetType, services: servicesOf(ingress), targetType });
  }
  return out;
}

const CLASSES = [ALB, 'internal', 'shared', 'nginx'];
const GROUPS = [undefined, 'a', 'b', 'Bad_Name'];
const FINALIZERS = [[], ['group.ingress.k8s.aws/a'], ['group.ingress.k8s.aws/b'], ['ingress.k8s.aws/resources']];
const SERVICES = ['web', 'api', 'db'];
const TARGET_TYPES = [undefined, 'ip', 'instance'];

const keyOf = (kind: Kind, object: KubeObject) =>
  kind === 'IngressClass' || kind === 'IngressClassParams'
    ? object.metadata!.name!
    : `${object.metadata!.namespace}/${object.metadata!.name}`;

function step(world: World, r: ReturnType<typeof random>): { kind: Kind; object: KubeObject; deleted: boolean } {
  const roll = r.next();
  const existing = (kind: Kind, key: string, p: number) =>
    world[kind].has(key) && r.next() < p ? { kind, object: world[kind].get(key)!, deleted: true } : undefined;
  const targetType = r.pick(TARGET_TYPES);
  if (roll < 0.45) {
    const name = r.pick(['one', 'two', 'three', 'four']);
    const namespace = r.pick(['x', 'y']);
    const gone = existing('Ingress', `${namespace}/${name}`, 0.15);
    if (gone) return gone;
    const group = r.pick(GROUPS);
    const annotations: Record<string, string> = {};
    if (group) annotations[GROUP_NAME_ANNOTATION] = group;
    if (targetType) annotations[TARGET_TYPE_ANNOTATION] = targetType;
    const object = makeIngress(namespace, name, {
      ...(r.next() < 0.85 ? { className: r.pick(CLASSES) } : {}),
      annotations,
      finalizers: r.pick(FINALIZERS),
      services: SERVICES.filter(() => r.next() < 0.5),
    });
    return { kind: 'Ingress', object: at(object), deleted: false };
  }
  if (roll < 0.6) {
    const name = r.pick(CLASSES);
    const gone = existing('IngressClass', name, 0.2);
    if (gone) return gone;
    const object = makeIngressClass(name, {
      controller: name === 'nginx' || r.next() < 0.2 ? 'k8s.io/ingress-nginx' : undefined,
      ...(r.next() < 0.4 ? { params: r.pick(['p', 'q']) } : {}),
      isDefault: r.next() < 0.25,
    });
    return { kind: 'IngressClass', object: at(object), deleted: false };
  }
  if (roll < 0.7) {
    const name = r.pick(['p', 'q']);
    const gone = existing('IngressClassParams', name, 0.3);
    if (gone) return gone;
    const group = r.pick(GROUPS);
    const spec = { ...(group ? { group: { name: group } } : {}), ...(targetType ? { targetType } : {}) };
    return { kind: 'IngressClassParams', object: at(makeIngressClassParams(name, spec as never)), deleted: false };
  }
  const namespace = r.pick(['x', 'y']);
  const service = r.pick(SERVICES);
  if (roll < 0.85) {
    const gone = existing('Service', `${namespace}/${service}`, 0.2);
    if (gone) return gone;
    const annotations: Record<string, string> = targetType ? { [TARGET_TYPE_ANNOTATION]: targetType } : {};
    const object = makeService(namespace, service, 'NodePort', annotations);
    (object.spec as { ports: { nodePort: number }[] }).ports[0]!.nodePort = 30000 + Math.floor(r.next() * 3);
    return { kind: 'Service', object: at(object), deleted: false };
  }
  const gone = existing('EndpointSlice', `${namespace}/${service}-s`, 0.2);
  if (gone) return gone;
  return {
    kind: 'EndpointSlice',
    object: at(makeSlice(namespace, service, 's', [`10.0.0.${Math.floor(r.next() * 3)}`])),
    deleted: false,
  };
}

/** The groups a change concerns, from the cluster before and after it. */
function expectedGroups(world: World, kind: Kind, key: string, before: Map<string, Use>, after: Map<string, Use>) {
  const expected = new Set<string>();
  for (const ingress of new Set([...before.keys(), ...after.keys()])) {
    const was = before.get(ingress);
    const is = after.get(ingress);
    const either = (test: (use: Use) => boolean) => (was !== undefined && test(was)) || (is !== undefined && test(is));
    let touched: boolean;
    if (kind === 'Ingress') touched = ingress === key;
    else if (kind === 'IngressClass') touched = either((u) => u.className === key);
    else if (kind === 'IngressClassParams') touched = either((u) => u.params === key);
    else {
      const service = kind === 'Service' ? key : key.slice(0, -'-s'.length);
      const targetType = (u: Use) =>
        u.paramsTargetType ??
        world.Service.get(service)?.metadata?.annotations?.[TARGET_TYPE_ANNOTATION] ??
        u.targetType ??
        'instance';
      // A Service's or slice's change concerns only the group an Ingress is a member of now.
      if (is?.member && is.services.includes(service) && (kind === 'Service' || targetType(is) === 'ip')) {
        expected.add(is.member);
      }
      continue;
    }
    if (touched) for (const group of [...(was?.groups ?? []), ...(is?.groups ?? [])]) expected.add(group);
  }
  return expected;
}

describe('the Ingress module over generated histories', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])('seed %i: every group a change concerns gets a key', (seed) => {
    const r = random(seed);
    const { r: routerOf, keys } = router({ reconcilers: ['ingress'] });
    const world: World = {
      Ingress: new Map(),
      IngressClass: new Map(),
      IngressClassParams: new Map(),
      Service: new Map(),
      EndpointSlice: new Map(),
    };
    let checked = 0;
    for (let i = 0; i < 400; i++) {
      const before = uses(world);
      const { kind, object, deleted } = step(world, r);
      const key = keyOf(kind, object);
      const content = (o: KubeObject | undefined) =>
        o && JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
      // A write that changes nothing but the revision is no change (the fingerprint is the same).
      const changed = deleted || content(world[kind].get(key)) !== content(object);
      if (deleted) world[kind].delete(key);
      else world[kind].set(key, object);
      const expected = changed ? expectedGroups(world, kind, key, before, uses(world)) : new Set<string>();
      keys.length = 0;
      if (deleted) routerOf.remove(kind, at(structuredClone(object)));
      else routerOf.observe(kind, object);
      const sent = new Set(
        keys.map((k) => (k.message.namespace ? `${k.message.namespace}/${k.message.name}` : k.message.name)),
      );
      const missing = [...expected].filter((g) => !sent.has(g));
      expect(missing, `step ${i}: ${deleted ? 'deleting' : 'writing'} ${kind} ${key}`).toEqual([]);
      checked += expected.size;
    }
    // The history made changes that concern groups, of every kind.
    expect(checked).toBeGreaterThan(100);
  });
});
