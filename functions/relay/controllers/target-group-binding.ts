import type { KeyHint, KeyMessage } from '../../../shared/queue/message.ts';
import { compareResourceVersions, splitObjectKey } from '../kube-object.ts';
import { POD_KIND } from './ipam.ts';
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
import { ENDPOINT_SLICE_KIND, SERVICE_KIND } from './service-reads.ts';
import {
  type BindingFacts,
  bindingFacts,
  bindingGates,
  bindingNodeReads,
  bindingPodReads,
  bindingReads,
  bindingServiceReads,
  bindingSliceReads,
  gateBinding,
  TARGET_GROUP_BINDING_KIND,
} from './target-group-binding-reads.ts';

/**
 * functions/target-group-binding: every key is a binding's (`TargetGroupBinding`, namespace and name), the unit the
 * controller reconciles. A binding sends its own key; a Service, or one of its EndpointSlices, the keys of the
 * bindings whose `serviceRef` names it (a slice only those with IP targets); a Node a round of the bindings with
 * instance targets, as the service controller's Node-set rounds; a Pod with readiness gates the bindings its gates
 * name. A binding whose target type is not filled in yet (the controller takes it from the target group) hears of
 * both kinds of change.
 */

type Kept = BindingFacts;

/**
 * The hint of a binding's key for a change of another object: MODIFIED at that object's revision, which orders and
 * deduplicates the message; a resend keeps its RESYNC hint. Never the object's uid: it is not the binding's.
 */
function bindingHint(change: Change): KeyHint {
  const { uid: _object, ...hint } = change.hint;
  if (hint.eventType === 'RESYNC') return hint;
  return { eventType: 'MODIFIED', resourceVersion: hint.resourceVersion, source: `${HINT_SOURCE}/${change.kind}` };
}

const ipTargets = (binding: Kept) => binding.targetType !== 'instance';
const instanceTargets = (binding: Kept) => binding.targetType !== 'ip';

class TargetGroupBindingRouting implements ControllerRouting {
  /** Per binding (`namespace/name`), what is kept of it. */
  private readonly bindings = new Map<string, Kept>();
  /**
   * Per Service (`namespace/name`), the names of the bindings of its namespace that name it. Arrays, not Sets: most
   * Services have one binding, and an array of one costs a fifth of a Set.
   */
  private readonly byService = new Map<string, string[]>();
  /** The newest revision of a Node change not yet taken in a round; undefined: no round waiting. */
  private nodeRevision: string | undefined;

  readonly routes: Record<string, KindRoute>;

  constructor(private readonly context: ControllerContext) {
    this.routes = {
      [TARGET_GROUP_BINDING_KIND.name]: {
        changed: (change, outcome) => this.bindingChanged(change, outcome),
        removed: (key) => {
          this.forget(key);
          return false;
        },
      },
      // A resend needs none of the others: every binding's own key is sent again.
      [SERVICE_KIND.name]: { changed: (change, outcome) => this.serviceChanged(change, outcome), resend: false },
      [ENDPOINT_SLICE_KIND.name]: { changed: (change, outcome) => this.sliceChanged(change, outcome), resend: false },
      [NODE_KIND.name]: { changed: (change, outcome) => this.nodeChanged(change, outcome), resend: false },
      [POD_KIND.name]: { changed: (change, outcome) => this.podChanged(change, outcome), resend: false },
    };
  }

  /** Every binding with instance targets: the Nodes that may take its traffic changed. */
  roundKeys(): KeyMessage[] {
    if (this.nodeRevision === undefined) return [];
    const hint: KeyHint = { eventType: 'MODIFIED', resourceVersion: this.nodeRevision, source: `${HINT_SOURCE}/Node` };
    const keys: KeyMessage[] = [];
    for (const [key, binding] of this.bindings) if (instanceTargets(binding)) keys.push(this.key(key, hint));
    return keys.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  }

  takeRound(): KeyMessage[] {
    const keys = this.roundKeys();
    this.nodeRevision = undefined;
    return keys;
  }

  private bindingChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    if (change.event === 'changed' && change.object) {
      this.forget(change.key);
      const facts = bindingFacts(change.object);
      this.bindings.set(change.key, facts);
      const service = this.serviceKey(change.key, facts.service);
      const names = this.byService.get(service) ?? [];
      const { name } = splitObjectKey(TARGET_GROUP_BINDING_KIND, change.key);
      if (!names.includes(name)) this.byService.set(service, [...names, name]);
    }
    return this.context.send(outcome, [this.context.ownKey(change)]);
  }

  /** Drop a binding from the index (deleted, or about to be indexed again). */
  private forget(key: string): void {
    const before = this.bindings.get(key);
    if (!before) return;
    this.bindings.delete(key);
    const service = this.serviceKey(key, before.service);
    const { name } = splitObjectKey(TARGET_GROUP_BINDING_KIND, key);
    const rest = (this.byService.get(service) ?? []).filter((n) => n !== name);
    if (rest.length === 0) this.byService.delete(service);
    else this.byService.set(service, rest);
  }

  /** A Service's bindings: those whose serviceRef names it. */
  private serviceChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    return this.sendFor(change, outcome, change.key, () => true);
  }

  /** A slice's bindings: those of its Service with IP targets. */
  private sliceChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    if (!change.owner) return outcome;
    const { namespace } = splitObjectKey(ENDPOINT_SLICE_KIND, change.key);
    return this.sendFor(change, outcome, `${namespace}/${change.owner}`, ipTargets);
  }

  private sendFor(change: Change, outcome: ChangeOutcome, service: string, concerns: (b: Kept) => boolean) {
    const names = this.byService.get(service);
    if (!names) return outcome;
    const namespace = service.slice(0, service.indexOf('/'));
    const hint = bindingHint(change);
    const keys: KeyMessage[] = [];
    for (const name of names) {
      const key = `${namespace}/${name}`;
      const binding = this.bindings.get(key);
      if (binding && concerns(binding)) keys.push(this.key(key, hint));
    }
    return this.context.sendAfterList(change.kind, outcome, keys);
  }

  /** A Node's part in the targets changed: a round of every binding with instance targets (`roundKeys`). */
  private nodeChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    if (change.event === 'resent') return outcome;
    const revision = change.hint.resourceVersion ?? '';
    const order = compareResourceVersions(this.nodeRevision, revision);
    if (this.nodeRevision === undefined || order === undefined || order < 0) this.nodeRevision = revision;
    if (!this.anyInstanceTargets()) return outcome;
    if (!this.context.allows()) return outcome === 'forwarded' ? outcome : 'held';
    this.context.roundDue();
    return 'forwarded';
  }

  /** Whether some binding has instance targets (a Node change concerns it), without listing them all. */
  private anyInstanceTargets(): boolean {
    for (const binding of this.bindings.values()) if (instanceTargets(binding)) return true;
    return false;
  }

  /**
   * A gated Pod's readiness changed: the bindings its gates name (in its namespace), whether or not the relay has
   * seen them yet (a gate names its binding). A Pod's gates never change, and a Pod that goes leaves its endpoints'
   * slices to tell.
   */
  private podChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    if (change.event !== 'changed' || !change.object) return outcome;
    const { namespace } = splitObjectKey(POD_KIND, change.key);
    const hint = bindingHint(change);
    const names = new Set<string>();
    for (const gate of bindingGates(change.object)) names.add(gateBinding(gate)!);
    const keys = [...names].sort().map((name) => this.key(`${namespace}/${name}`, hint));
    return this.context.sendAfterList(change.kind, outcome, keys);
  }

  private serviceKey(bindingKey: string, service: string): string {
    const { namespace } = splitObjectKey(TARGET_GROUP_BINDING_KIND, bindingKey);
    return `${namespace}/${service}`;
  }

  private key(bindingKey: string, hint: KeyHint): KeyMessage {
    const { namespace, name } = splitObjectKey(TARGET_GROUP_BINDING_KIND, bindingKey);
    return { kind: 'TargetGroupBinding', namespace, name, hint };
  }
}

/**
 * A binding is its own key; a Service or EndpointSlice the bindings that name it; a Node a round of the bindings with
 * instance targets; a gated Pod the bindings its gates name.
 */
export const targetGroupBindingController = {
  queueUrlVariable: 'TARGET_GROUP_BINDING_QUEUE_URL',
  // The AWS Load Balancer Controller is no in-tree controller: no migration lock to wait for.
  migrationNames: [],
  rules: [
    { kind: TARGET_GROUP_BINDING_KIND, onDelete: true, reads: bindingReads },
    { kind: SERVICE_KIND, onDelete: true, reads: bindingServiceReads },
    { kind: ENDPOINT_SLICE_KIND, onDelete: true, reads: bindingSliceReads },
    { kind: NODE_KIND, onDelete: true, reads: bindingNodeReads },
    // A Pod that goes leaves its endpoints' slices to tell: nothing to clean up on its deletion.
    { kind: POD_KIND, onDelete: false, reads: bindingPodReads },
  ],
  routing: (context) => new TargetGroupBindingRouting(context),
} as const satisfies ControllerModule;
