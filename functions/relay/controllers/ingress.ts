import {
  type ClassLookup,
  classOf,
  type GroupId,
  groupKey,
  groupOf,
  groupsOfFinalizers,
  stackName,
} from '../../../shared/ingress/membership.ts';
import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  type IngressClass,
  type IngressClassParams,
  INGRESS_CLASS_PARAMS_KIND as PARAMS_KIND_NAME,
} from '../../../shared/k8s/ingress-types.ts';
import type { KeyHint, KeyMessage } from '../../../shared/queue/message.ts';
import { fingerprint, NOT_RELEVANT } from '../fingerprint.ts';
import { compareResourceVersions, splitObjectKey } from '../kube-object.ts';
import {
  INGRESS_CLASS_KIND,
  INGRESS_CLASS_PARAMS_KIND,
  INGRESS_KIND,
  type IngressFacts,
  ingressClassParamsReads,
  ingressClassReads,
  ingressFacts,
  ingressOf,
  ingressReads,
  ingressServiceReads,
  slimClass,
  slimParams,
  TARGET_NODE_LABELS_ANNOTATION,
  TARGET_TYPE_ANNOTATION,
} from './ingress-reads.ts';
import {
  type Change,
  type ChangeOutcome,
  type ControllerContext,
  type ControllerModule,
  type ControllerRouting,
  HINT_SOURCE,
  type KindRoute,
} from './module.ts';
import { NODE_KIND } from './node-kind.ts';
import {
  ENDPOINT_SLICE_KIND,
  endpointSliceReads,
  nodeTargetInstance,
  nodeTargetReads,
  SERVICE_KIND,
} from './service-reads.ts';

/**
 * functions/ingress: every key is an IngressGroup's (shared/ingress/membership.ts `groupKey`), the unit the
 * controller reconciles. An Ingress sends its group's key and the keys of the groups its finalizers name (so leaving
 * a group reconciles the one left); an IngressClass or IngressClassParams, the groups of the Ingresses of that
 * class; a Service or EndpointSlice, the groups whose Ingresses forward to that Service (a slice only for IP
 * targets); a Node, a round of the groups with instance targets, as the service controller's Node-set rounds.
 *
 * Whose an Ingress is and which group it joins is decided as the controller decides it (membership.ts), with the
 * IngressClasses and IngressClassParams this router has seen. Without Namespaces, an IngressClassParams'
 * namespaceSelector is not applied: an Ingress it would refuse still sends its group's key, which the controller
 * then finds has no such member (a key too many, never one too few).
 */

/**
 * The target type of an Ingress's backends that says neither (no IngressClassParams, Service or Ingress
 * annotation): the controller's INGRESS_DEFAULT_TARGET_TYPE, which the relay reads from its own environment when the
 * stage sets it, `instance` (the AWS Load Balancer Controller's default) otherwise. It only decides which changes
 * concern a group (EndpointSlices for IP targets, Nodes for instance targets).
 */
export function defaultTargetType(env: Record<string, string | undefined> = process.env): 'instance' | 'ip' {
  return env.INGRESS_DEFAULT_TARGET_TYPE === 'ip' ? 'ip' : 'instance';
}

/** What is kept per Ingress: its facts, its group as last resolved, and its class params' target type. */
interface Entry extends IngressFacts {
  /** `stackName` of its group, when it is ours and its group valid. */
  group?: string;
  paramsTargetType?: string;
}

/** A group from its `stackName`: an explicit group's name has no `/`, an implicit one is `namespace/name`. */
function groupFromStack(stack: string): GroupId {
  const slash = stack.indexOf('/');
  return slash < 0
    ? { explicit: true, name: stack }
    : { explicit: false, namespace: stack.slice(0, slash), name: stack.slice(slash + 1) };
}

/**
 * The hint of a group's key for a change of another object: MODIFIED (the group itself has no revision) at the
 * changed object's revision, which orders and deduplicates the message; a resend keeps its RESYNC hint. Never the
 * object's uid: it is not the group's.
 */
function groupHint(change: Change): KeyHint {
  const { uid: _object, ...hint } = change.hint;
  if (hint.eventType === 'RESYNC') return hint;
  return { eventType: 'MODIFIED', resourceVersion: hint.resourceVersion, source: `${HINT_SOURCE}/${change.kind}` };
}

class IngressRouting implements ControllerRouting {
  private readonly ingresses = new Map<string, Entry>();
  /** Per Service (`namespace/name`), the Ingresses that forward to it. */
  private readonly backends = new Map<string, string[]>();
  /** Services' own `target-type` annotations (only those that have one). */
  private readonly serviceTargetTypes = new Map<string, string>();
  /** Services with `target-node-labels`: while none (and no Ingress) has it, Node labels concern no group. */
  private readonly labelSelectingServices = new Set<string>();
  /**
   * Per Node that may take traffic, the fingerprint of its instance alone (`nodeTargetInstance`), to tell a change of
   * its labels alone (the Node fingerprint includes every label), as the service controller's module does.
   */
  private readonly nodeInstances = new Map<string, number>();
  /** The IngressClasses and IngressClassParams, each cut down to what membership.ts reads. */
  private readonly classes = new Map<string, IngressClass>();
  private readonly params = new Map<string, IngressClassParams>();
  private readonly lookup: ClassLookup = {
    classes: [],
    params: (name) => this.params.get(name),
  };
  /** The entry of an Ingress just deleted, between `removed` and its deletion's route. */
  private removedEntry: { key: string; entry: Entry } | undefined;
  /** The newest revision of a Node change not yet taken in a round; undefined: no round waiting. */
  private nodeRevision: string | undefined;
  private readonly defaultTargetType = defaultTargetType();

  readonly routes: Record<string, KindRoute>;

  constructor(private readonly context: ControllerContext) {
    this.routes = {
      [INGRESS_KIND.name]: {
        changed: (change, outcome) => this.ingressChanged(change, outcome),
        removed: (key) => this.ingressRemoved(key),
      },
      // A resend needs none of the others: every Ingress's groups are sent again.
      [INGRESS_CLASS_KIND.name]: {
        changed: (change, outcome) => this.classChanged(change, outcome),
        resend: false,
      },
      [INGRESS_CLASS_PARAMS_KIND.name]: {
        changed: (change, outcome) => this.paramsChanged(change, outcome),
        resend: false,
      },
      [SERVICE_KIND.name]: {
        changed: (change, outcome) => this.serviceChanged(change, outcome),
        resend: false,
      },
      [ENDPOINT_SLICE_KIND.name]: {
        changed: (change, outcome) => this.sliceChanged(change, outcome),
        resend: false,
      },
      [NODE_KIND.name]: {
        changed: (change, outcome) => this.nodeChanged(change, outcome),
        removed: (key) => {
          this.nodeInstances.delete(key);
          return false;
        },
        resend: false,
      },
    };
  }

  /** Every group with instance targets: the Nodes that may take its traffic changed. */
  roundKeys(): KeyMessage[] {
    if (this.nodeRevision === undefined) return [];
    const hint: KeyHint = { eventType: 'MODIFIED', resourceVersion: this.nodeRevision, source: `${HINT_SOURCE}/Node` };
    const stacks = new Set<string>();
    for (const entry of this.ingresses.values()) {
      if (entry.group === undefined || stacks.has(entry.group)) continue;
      if (this.hasInstanceTargets(entry)) stacks.add(entry.group);
    }
    return [...stacks].sort().map((stack) => ({ ...groupKey(groupFromStack(stack)), hint }));
  }

  takeRound(): KeyMessage[] {
    const keys = this.roundKeys();
    this.nodeRevision = undefined;
    return keys;
  }

  private ingressChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    const stacks = new Set<string>();
    const { key } = change;
    if (change.event === 'changed' && change.object) {
      // Before and after, as the reference does: a finalizer taken off by hand leaves its group too.
      const before = this.ingresses.get(key);
      if (before) this.resolve(key, before, stacks, false);
      const entry: Entry = ingressFacts(change.object);
      this.index(key, before, entry);
      this.ingresses.set(key, entry);
      this.resolve(key, entry, stacks);
    } else {
      const entry = change.event === 'deleted' ? this.takeRemoved(key) : this.ingresses.get(key);
      if (entry) this.resolve(key, entry, stacks, false);
    }
    return this.context.sendAfterList(INGRESS_KIND.name, outcome, this.keys(stacks, change));
  }

  private ingressRemoved(key: string): boolean {
    const entry = this.ingresses.get(key);
    this.removedEntry = entry && { key, entry };
    if (entry) this.index(key, entry, undefined);
    this.ingresses.delete(key);
    return false;
  }

  private takeRemoved(key: string): Entry | undefined {
    const removed = this.removedEntry?.key === key ? this.removedEntry.entry : undefined;
    this.removedEntry = undefined;
    return removed;
  }

  /**
   * Resolve an Ingress's group with the classes known now (`update`: keep it), and add to `stacks` that group and the
   * groups its finalizers name.
   */
  private resolve(key: string, entry: Entry, stacks: Set<string>, update = true): void {
    const ingress = ingressOf(key, entry);
    for (const group of groupsOfFinalizers(ingress)) stacks.add(stackName(group));
    if (!update) {
      if (entry.group !== undefined) stacks.add(entry.group);
      return;
    }
    const found = classOf(ingress, { ...this.lookup, classes: [...this.classes.values()] });
    const grouped = found.managed === true ? groupOf(ingress, found.params) : undefined;
    // An invalid group name: the Ingress's own (implicit) group hears of it, and says so on the Ingress.
    const implicit = {
      explicit: false as const,
      namespace: ingress.metadata.namespace ?? 'default',
      name: ingress.metadata.name,
    };
    entry.group = grouped?.ok ? stackName(grouped.group) : grouped ? stackName(implicit) : undefined;
    const paramsTargetType = found.managed === true ? found.params?.spec?.targetType : undefined;
    if (paramsTargetType === undefined) delete entry.paramsTargetType;
    else entry.paramsTargetType = paramsTargetType;
    if (entry.group !== undefined) stacks.add(entry.group);
  }

  /**
   * Keep the Services -> Ingresses index in line with an Ingress's backends, before and after. Arrays, not Sets: most
   * Services have one Ingress or a few, and an array of one costs a fifth of a Set.
   */
  private index(key: string, before: Entry | undefined, after: Entry | undefined): void {
    for (const service of before?.services ?? []) {
      const users = this.backends.get(service)?.filter((user) => user !== key) ?? [];
      if (users.length === 0) this.backends.delete(service);
      else this.backends.set(service, users);
    }
    for (const service of after?.services ?? []) {
      const users = this.backends.get(service) ?? [];
      if (!users.includes(key)) this.backends.set(service, [...users, key]);
    }
  }

  /** An IngressClass changed or is gone: the groups of its Ingresses (and, for a default class, of classless ones). */
  private classChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    const name = change.key;
    const before = this.classes.get(name);
    if (change.event === 'changed' && change.object) this.classes.set(name, slimClass(change.object));
    else if (change.event === 'deleted') this.classes.delete(name);
    const isDefault = (c: IngressClass | undefined) =>
      c?.metadata.annotations?.[DEFAULT_INGRESS_CLASS_ANNOTATION] === 'true';
    const defaults = isDefault(before) || isDefault(this.classes.get(name));
    return this.reresolve(change, outcome, new Set([name]), defaults);
  }

  /** IngressClassParams changed or are gone: the groups of the Ingresses of every class that names them. */
  private paramsChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    const name = change.key;
    if (change.event === 'changed' && change.object) this.params.set(name, slimParams(change.object));
    else if (change.event === 'deleted') this.params.delete(name);
    const classes = new Set<string>();
    let defaults = false;
    for (const [className, ingressClass] of this.classes) {
      const ref = ingressClass.spec?.parameters;
      if (ref?.kind !== PARAMS_KIND_NAME || ref.name !== name) continue;
      classes.add(className);
      if (ingressClass.metadata.annotations?.[DEFAULT_INGRESS_CLASS_ANNOTATION] === 'true') defaults = true;
    }
    return this.reresolve(change, outcome, classes, defaults);
  }

  /**
   * Resolve again the Ingresses of `classes` (and those without a class, when a default class is concerned), and
   * send the groups they were in, are in now, and their finalizers name.
   */
  private reresolve(change: Change, outcome: ChangeOutcome, classes: Set<string>, defaults: boolean): ChangeOutcome {
    if (change.event === 'resent' || classes.size === 0) return outcome;
    const stacks = new Set<string>();
    for (const [key, entry] of this.ingresses) {
      if (entry.legacyClass !== undefined) continue;
      const concerned = entry.className === undefined ? defaults : classes.has(entry.className);
      if (!concerned) continue;
      if (entry.group !== undefined) stacks.add(entry.group);
      this.resolve(key, entry, stacks);
    }
    return this.context.sendAfterList(change.kind, outcome, this.keys(stacks, change));
  }

  /** A Service's groups: those of the Ingresses that forward to it. */
  private serviceChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    const targetType = change.object?.metadata?.annotations?.[TARGET_TYPE_ANNOTATION];
    if (change.event === 'changed' && targetType !== undefined) this.serviceTargetTypes.set(change.key, targetType);
    else if (change.event !== 'resent') this.serviceTargetTypes.delete(change.key);
    const selects = change.object?.metadata?.annotations?.[TARGET_NODE_LABELS_ANNOTATION]?.trim();
    if (change.event === 'changed' && selects) this.labelSelectingServices.add(change.key);
    else if (change.event !== 'resent') this.labelSelectingServices.delete(change.key);
    const stacks = new Set<string>();
    for (const key of this.backends.get(change.key) ?? []) {
      const group = this.ingresses.get(key)?.group;
      if (group !== undefined) stacks.add(group);
    }
    return this.context.sendAfterList(change.kind, outcome, this.keys(stacks, change));
  }

  /** A slice's groups: those of the Ingresses that forward to its Service with IP targets. */
  private sliceChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    if (!change.owner) return outcome;
    const { namespace } = splitObjectKey(ENDPOINT_SLICE_KIND, change.key);
    const service = `${namespace}/${change.owner}`;
    const stacks = new Set<string>();
    for (const key of this.backends.get(service) ?? []) {
      const entry = this.ingresses.get(key);
      if (entry?.group !== undefined && this.targetType(entry, service) === 'ip') stacks.add(entry.group);
    }
    return this.context.sendAfterList(change.kind, outcome, this.keys(stacks, change));
  }

  /** A Node's part in the targets changed: a round of every group with instance targets (`roundKeys`). */
  private nodeChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    if (change.event === 'resent' || this.onlyUnselectedLabels(change)) return outcome;
    const revision = change.hint.resourceVersion ?? '';
    const order = compareResourceVersions(this.nodeRevision, revision);
    if (this.nodeRevision === undefined || order === undefined || order < 0) this.nodeRevision = revision;
    if (!this.anyInstanceTargets()) return outcome;
    if (!this.context.allows()) return outcome === 'forwarded' ? outcome : 'held';
    this.context.roundDue();
    return 'forwarded';
  }

  /** The target type of an Ingress's target groups for one Service: params, then Service, then Ingress, then default. */
  private targetType(entry: Entry, service: string): string {
    return entry.paramsTargetType ?? this.serviceTargetTypes.get(service) ?? entry.targetType ?? this.defaultTargetType;
  }

  /**
   * Whether only a Node's labels changed while no Ingress or Service picks Nodes by label (`target-node-labels`):
   * no group's targets change. One that starts picking by label gets its own group key, whose pass reads every Node.
   */
  private onlyUnselectedLabels(change: Change): boolean {
    if (change.event !== 'changed' || !change.object) return false;
    const previous = this.nodeInstances.get(change.key);
    const instance = change.value === NOT_RELEVANT ? undefined : fingerprint(nodeTargetInstance(change.object));
    if (instance === undefined) this.nodeInstances.delete(change.key);
    else this.nodeInstances.set(change.key, instance);
    if (change.before === NOT_RELEVANT || instance === undefined || instance !== previous) return false;
    if (this.labelSelectingServices.size > 0) return false;
    for (const entry of this.ingresses.values()) if (entry.selectsNodes) return false;
    return true;
  }

  /** Whether some group has instance targets (a Node change concerns it), without listing them all. */
  private anyInstanceTargets(): boolean {
    for (const entry of this.ingresses.values())
      if (entry.group !== undefined && this.hasInstanceTargets(entry)) return true;
    return false;
  }

  private hasInstanceTargets(entry: Entry): boolean {
    return entry.services.some((service) => this.targetType(entry, service) !== 'ip');
  }

  private keys(stacks: ReadonlySet<string>, change: Change): KeyMessage[] {
    if (stacks.size === 0) return [];
    const hint = groupHint(change);
    return [...stacks].sort().map((stack) => ({ ...groupKey(groupFromStack(stack)), hint }));
  }
}

/**
 * An Ingress is its groups' keys; an IngressClass or IngressClassParams the groups of its Ingresses; a Service or
 * EndpointSlice the groups that forward to it; a Node a round of the groups with instance targets.
 */
export const ingressController = {
  queueUrlVariable: 'INGRESS_QUEUE_URL',
  // The AWS Load Balancer Controller is no in-tree controller: no migration lock to wait for.
  migrationNames: [],
  rules: [
    { kind: INGRESS_KIND, onDelete: true, reads: ingressReads },
    { kind: INGRESS_CLASS_KIND, onDelete: true, reads: ingressClassReads },
    { kind: INGRESS_CLASS_PARAMS_KIND, onDelete: true, reads: ingressClassParamsReads },
    { kind: SERVICE_KIND, onDelete: true, reads: ingressServiceReads },
    { kind: ENDPOINT_SLICE_KIND, onDelete: true, reads: endpointSliceReads },
    { kind: NODE_KIND, onDelete: true, reads: nodeTargetReads },
  ],
  routing: (context) => new IngressRouting(context),
} as const satisfies ControllerModule;
