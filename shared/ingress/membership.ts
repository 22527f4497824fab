import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  EXPLICIT_GROUP_FINALIZER_PREFIX,
  IMPLICIT_GROUP_FINALIZER,
  INGRESS_ANNOTATION_PREFIX,
  INGRESS_CLASS_ANNOTATION,
  INGRESS_CLASS_PARAMS_GROUP,
  INGRESS_CLASS_PARAMS_KIND,
  INGRESS_CONTROLLER_NAME,
  type Ingress,
  type IngressClass,
  type IngressClassParams,
} from '../k8s/ingress-types.ts';
import { selectorMatches } from '../k8s/label-selector.ts';
import type { ObjectKey } from '../queue/message.ts';

/**
 * Which Ingresses are ours and which IngressGroup each belongs to, as the AWS Load Balancer Controller decides it:
 * pure functions of the Ingress, the IngressClasses and the IngressClassParams, shared by the Ingress controller
 * (functions/ingress) and the relay's module (functions/relay/controllers/ingress.ts), so both name the same group.
 */

/** The legacy class annotation's value that is ours (the reference's `--ingress-class` default). */
export const LEGACY_CLASS = 'alb';

/** An IngressGroup: explicit (`group.name`, shared by many Ingresses) or implicit (one Ingress, `namespace/name`). */
export type GroupId = { explicit: true; name: string } | { explicit: false; namespace: string; name: string };

/** The queue key of a group: the unit of work, so two members never race. */
export function groupKey(group: GroupId): ObjectKey {
  return group.explicit
    ? { kind: 'IngressGroup', name: group.name }
    : { kind: 'IngressGroup', namespace: group.namespace, name: group.name };
}

export function groupFromKey(key: ObjectKey): GroupId {
  return key.namespace === undefined
    ? { explicit: true, name: key.name }
    : { explicit: false, namespace: key.namespace, name: key.name };
}

/** The value of the `ingress.k8s.aws/stack` tag: the group's name, or `namespace/name` for an implicit group. */
export function stackName(group: GroupId): string {
  return group.explicit ? group.name : `${group.namespace}/${group.name}`;
}

export function groupFinalizer(group: GroupId): string {
  return group.explicit ? `${EXPLICIT_GROUP_FINALIZER_PREFIX}${group.name}` : IMPLICIT_GROUP_FINALIZER;
}

export function sameGroup(a: GroupId, b: GroupId): boolean {
  return stackName(a) === stackName(b) && a.explicit === b.explicit;
}

/** The groups an Ingress's finalizers name: where it was a member, so leaving reconciles the old group too. */
export function groupsOfFinalizers(ingress: Ingress): GroupId[] {
  const namespace = ingress.metadata.namespace ?? 'default';
  return (ingress.metadata.finalizers ?? []).flatMap((f): GroupId[] => {
    if (f === IMPLICIT_GROUP_FINALIZER) return [{ explicit: false, namespace, name: ingress.metadata.name }];
    if (f.startsWith(EXPLICIT_GROUP_FINALIZER_PREFIX)) {
      return [{ explicit: true, name: f.slice(EXPLICIT_GROUP_FINALIZER_PREFIX.length) }];
    }
    return [];
  });
}

/** The reference's rule for an explicit group's name. */
export const GROUP_NAME_PATTERN = /^([a-z0-9][-a-z0-9.]*)?[a-z0-9]$/;
export const GROUP_NAME_MAX = 63;

export type ClassResult =
  /** Not ours: another controller's class, or no class and no default. */
  | { managed: false }
  /** Ours; `params` when the class names IngressClassParams (not with the legacy annotation). */
  | { managed: true; className?: string; params?: IngressClassParams }
  /** Names our class but cannot be used (the class or its parameters are missing or wrong). */
  | { managed: 'invalid'; problem: string };

export interface ClassLookup {
  classes: readonly IngressClass[];
  /** IngressClassParams by name. */
  params(name: string): IngressClassParams | undefined;
  /** The labels of a namespace (for a params' namespaceSelector); undefined when not known. */
  namespaceLabels?(namespace: string): Record<string, string> | undefined;
}

/**
 * Whether the Ingress is ours: the legacy `kubernetes.io/ingress.class` annotation decides alone when present
 * (`alb`; no IngressClassParams then); else `spec.ingressClassName`, or the default IngressClass when it has
 * none; an IngressClass is ours when its controller is `ingress.k8s.aws/alb`, and its parameters must be our
 * IngressClassParams, which exist and whose namespaceSelector takes the Ingress's namespace.
 */
export function classOf(ingress: Ingress, lookup: ClassLookup): ClassResult {
  const legacy = ingress.metadata.annotations?.[INGRESS_CLASS_ANNOTATION];
  if (legacy !== undefined) return legacy === LEGACY_CLASS ? { managed: true } : { managed: false };
  let name = ingress.spec?.ingressClassName;
  if (name === undefined) {
    const defaults = lookup.classes.filter(
      (c) => c.metadata.annotations?.[DEFAULT_INGRESS_CLASS_ANNOTATION] === 'true',
    );
    if (defaults.length === 0) return { managed: false };
    if (defaults.length > 1) {
      const ours = defaults.some((c) => c.spec?.controller === INGRESS_CONTROLLER_NAME);
      return ours
        ? {
            managed: 'invalid',
            problem: `more than one default IngressClass (${defaults.map((c) => c.metadata.name).join(', ')})`,
          }
        : { managed: false };
    }
    name = defaults[0]!.metadata.name;
  }
  const ingressClass = lookup.classes.find((c) => c.metadata.name === name);
  if (!ingressClass) {
    // A class that does not exist may be anyone's: ours only if the Ingress was ours (carries our finalizer).
    return groupsOfFinalizers(ingress).length > 0
      ? { managed: 'invalid', problem: `IngressClass ${name} not found` }
      : { managed: false };
  }
  if (ingressClass.spec?.controller !== INGRESS_CONTROLLER_NAME) return { managed: false };
  const ref = ingressClass.spec.parameters;
  if (!ref) return { managed: true, className: name };
  if ((ref.apiGroup ?? '') !== INGRESS_CLASS_PARAMS_GROUP || ref.kind !== INGRESS_CLASS_PARAMS_KIND) {
    return {
      managed: 'invalid',
      problem: `IngressClass ${name}: parameters must be ${INGRESS_CLASS_PARAMS_GROUP}/${INGRESS_CLASS_PARAMS_KIND} (got ${ref.apiGroup ?? 'core'}/${ref.kind})`,
    };
  }
  const params = lookup.params(ref.name);
  if (!params) {
    return { managed: 'invalid', problem: `IngressClass ${name}: IngressClassParams ${ref.name} not found` };
  }
  const selector = params.spec?.namespaceSelector;
  if (selector && lookup.namespaceLabels) {
    const namespace = ingress.metadata.namespace ?? 'default';
    const labels = lookup.namespaceLabels(namespace);
    if (labels !== undefined && !selectorMatches(selector, labels)) {
      return {
        managed: 'invalid',
        problem: `IngressClassParams ${ref.name}: namespaceSelector does not select namespace ${namespace}`,
      };
    }
  }
  return { managed: true, className: name, params };
}

export { selectorMatches };

export const GROUP_NAME_ANNOTATION = `${INGRESS_ANNOTATION_PREFIX}group.name`;
export const GROUP_ORDER_ANNOTATION = `${INGRESS_ANNOTATION_PREFIX}group.order`;

export type GroupResult = { ok: true; group: GroupId } | { ok: false; problem: string };

/** The group of an Ingress of ours: its class params' `group.name`, else its `group.name` annotation, else implicit. */
export function groupOf(ingress: Ingress, params?: IngressClassParams): GroupResult {
  const name = params?.spec?.group?.name ?? ingress.metadata.annotations?.[GROUP_NAME_ANNOTATION];
  if (name === undefined) {
    return {
      ok: true,
      group: { explicit: false, namespace: ingress.metadata.namespace ?? 'default', name: ingress.metadata.name },
    };
  }
  if (name.length > GROUP_NAME_MAX || !GROUP_NAME_PATTERN.test(name)) {
    return {
      ok: false,
      problem: `${params?.spec?.group?.name !== undefined ? `IngressClassParams ${params.metadata.name}: spec.group.name` : GROUP_NAME_ANNOTATION}: ${JSON.stringify(name)} is invalid: at most ${GROUP_NAME_MAX} lowercase letters, digits, '-' and '.', starting and ending with a letter or digit`,
    };
  }
  return { ok: true, group: { explicit: true, name } };
}

export const GROUP_ORDER_MIN = -1000;
export const GROUP_ORDER_MAX = 1000;

export type OrderResult = { ok: true; order: number } | { ok: false; problem: string };

/** `group.order`: an integer in [-1000, 1000], default 0. */
export function groupOrderOf(ingress: Ingress): OrderResult {
  const raw = ingress.metadata.annotations?.[GROUP_ORDER_ANNOTATION];
  if (raw === undefined) return { ok: true, order: 0 };
  const order = Number(raw.trim());
  if (!/^-?\d+$/.test(raw.trim()) || order < GROUP_ORDER_MIN || order > GROUP_ORDER_MAX) {
    return {
      ok: false,
      problem: `${GROUP_ORDER_ANNOTATION}: ${JSON.stringify(raw)} is not an integer from ${GROUP_ORDER_MIN} to ${GROUP_ORDER_MAX}`,
    };
  }
  return { ok: true, order };
}

/** Group order: `group.order` ascending, then `namespace/name`. */
export function compareMembers(a: { order: number; ingress: Ingress }, b: { order: number; ingress: Ingress }): number {
  if (a.order !== b.order) return a.order - b.order;
  const ka = `${a.ingress.metadata.namespace ?? 'default'}/${a.ingress.metadata.name}`;
  const kb = `${b.ingress.metadata.namespace ?? 'default'}/${b.ingress.metadata.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

export interface GroupMembers<M> {
  /** Ours, in the group, not being deleted, in group order. */
  active: M[];
  /** Carry the group's finalizer but are no longer members (deleted, moved, class changed, invalid group name). */
  leaving: Ingress[];
  /**
   * Members whose class cannot be used although they carry the group's finalizer: the group must not drop their
   * rules (the reference fails the whole group; this controller keeps what they had and says why).
   */
  invalid: { ingress: Ingress; problem: string }[];
}

/** The active and leaving members of one group among every Ingress of the cluster. */
export function membersOf(
  group: GroupId,
  ingresses: readonly Ingress[],
  lookup: ClassLookup,
): GroupMembers<{ ingress: Ingress; order: number; orderProblem?: string; params?: IngressClassParams }> {
  const finalizer = groupFinalizer(group);
  const out: ReturnType<typeof membersOf> = { active: [], leaving: [], invalid: [] };
  for (const ingress of ingresses) {
    if (!group.explicit && (ingress.metadata.namespace ?? 'default') !== group.namespace) continue;
    if (!group.explicit && ingress.metadata.name !== group.name) continue;
    const hasFinalizer = ingress.metadata.finalizers?.includes(finalizer) ?? false;
    const cls = classOf(ingress, lookup);
    if (cls.managed === 'invalid') {
      if (hasFinalizer && !ingress.metadata.deletionTimestamp) out.invalid.push({ ingress, problem: cls.problem });
      else if (hasFinalizer) out.leaving.push(ingress);
      continue;
    }
    const grouped = cls.managed ? groupOf(ingress, cls.params) : undefined;
    const member = cls.managed && grouped?.ok && sameGroup(grouped.group, group) && !ingress.metadata.deletionTimestamp;
    if (member) {
      const order = groupOrderOf(ingress);
      out.active.push({
        ingress,
        order: order.ok ? order.order : 0,
        ...(order.ok ? {} : { orderProblem: order.problem }),
        ...(cls.managed && cls.params ? { params: cls.params } : {}),
      });
    } else if (hasFinalizer) out.leaving.push(ingress);
  }
  out.active.sort(compareMembers);
  return out;
}
