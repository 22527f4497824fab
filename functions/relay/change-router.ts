import { createHash } from 'node:crypto';
import { errorMessage } from '../../shared/errors.ts';
import { LABEL_SERVICE_NAME } from '../../shared/k8s/service-port.ts';
import {
  HINT_FIELD_MAX,
  type KeyHint,
  KeyMessage,
  NODE_JOIN_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
  NODE_SET_HINT_SOURCE,
} from '../../shared/queue/message.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { FingerprintTable, fingerprint, NOT_RELEVANT } from './fingerprint.ts';
import { newest } from './forwarder.ts';
import {
  FORWARDING_RULES,
  type ForwardingRule,
  loadBalancerTargets,
  nodeTargetInstance,
  type Reconciler,
  selectsNodesByLabel,
} from './forwarding.ts';
import { compareResourceVersions, type KubeObject, splitTableKey, tableKey, type WatchedKind } from './kinds.ts';

/**
 * Turns listed and watched objects into keys, keeping per object only one fingerprint per
 * reconciler (see forwarding.ts) and, for EndpointSlices and Pods, the name of their Service or Node. No
 * object is kept.
 *
 * The hint of a key is deterministic: `MODIFIED` (or `DELETED`) and the object's resourceVersion,
 * never ADDED. The deduplication ID is built from the hint, and a list cannot tell an addition from
 * an update; with a fixed event type a relay that restarts and lists again sends byte-identical
 * messages for objects that did not change, which SQS drops (docs/adr/0004-relay-fingerprints-
 * at-least-once-leader-election.md).
 */

export interface RoutedKey {
  reconciler: Reconciler;
  message: KeyMessage;
}

/**
 * What became of one observed change: keys were sent, nothing a reconciler reads changed, the
 * object concerns no reconciler, or keys were held back because another component holds the
 * controller's migration lock.
 */
export type ChangeOutcome = 'forwarded' | 'unchanged' | 'not-relevant' | 'held';

export interface ChangeRouterOptions {
  /** Reconcilers with a queue; rules for any other are ignored. */
  reconcilers: ReadonlySet<Reconciler>;
  /** False while another component holds the reconciler's migration lock. */
  allows(reconciler: Reconciler): boolean;
  emit(key: RoutedKey): void;
  /** A Node's part in the load balancers' target set changed: send `loadBalancerKeys()` soon. */
  nodeSetChanged(): void;
  /**
   * An object the forwarding rules cannot read (a field of an unexpected type), or a key no queue would take (a name
   * no Kubernetes object can have): nothing is sent for it, and the relay says so (a log line and a metric).
   */
  invalid?(problem: { kind: WatchedKind; name: string; reason: string }): void;
  /** The clock, in milliseconds (`Date.now` unless a test gives another). */
  now?(): number;
}

/**
 * How long after its round of leaves went out a Node's deletion still sends an ordinary round: the service
 * controller's pass of that round deregisters the instances of the Nodes it lists, and a Node deleted before the
 * pass listed them is not among them. The pass follows the round within seconds; a cluster autoscaler deletes a
 * Node it marked after draining it, minutes later, which then costs nothing.
 */
export const LEFT_RECENTLY_MS = 60_000;

/**
 * Per object, in its kind's FingerprintTable: the list (see `listStarted`) that last saw it, one fingerprint per
 * active rule of the kind (NOT_RELEVANT where the reconciler does not care) and its owner: for an EndpointSlice the
 * Service it belongs to, for a Pod the Node it is bound to, to forward a deletion a relist finds.
 */

const SOURCE = 'relay';

/** How a Node's part in the load balancers' targets changed, when it joined or left them outright. */
type NodeTransition = 'joined' | 'left';

/** A Node-set round's changes: only joins, only leaves, both, or any other (`mixed`). */
type RoundKind = NodeTransition | 'both' | 'mixed';

const ROUND_SOURCES: Record<RoundKind, string> = {
  joined: NODE_JOIN_HINT_SOURCE,
  left: NODE_LEAVE_HINT_SOURCE,
  both: NODE_JOIN_LEAVE_HINT_SOURCE,
  mixed: NODE_SET_HINT_SOURCE,
};

/** The kind of a round that had changes of kind `round` (none: undefined) and then one of kind `change`. */
function roundWith(round: RoundKind | undefined, change: NodeTransition | 'mixed'): RoundKind {
  if (round === undefined || round === change) return change;
  return round === 'mixed' || change === 'mixed' ? 'mixed' : 'both';
}

/**
 * A Node's load balancer fingerprint went from `before` to `value` (only Nodes have a `load-balancers` rule):
 * `joined` when it became a candidate, `left` when it ceased to be one and stays a listed Node (not one being
 * deleted: it may be gone by the time the service controller lists the Nodes). Undefined otherwise.
 */
function nodeTransition(object: KubeObject, before: number, value: number): NodeTransition | undefined {
  if (before === NOT_RELEVANT) return 'joined';
  if (value === NOT_RELEVANT && !object.metadata?.deletionTimestamp) return 'left';
  return undefined;
}

export class ChangeRouter {
  private readonly rules: Record<WatchedKind, readonly ForwardingRule[]>;
  private readonly tables = new Map<WatchedKind, FingerprintTable>();
  private readonly epochs = new Map<WatchedKind, number>();
  /**
   * LoadBalancer Services, how they pick targets (which ones a Node or an EndpointSlice concerns) and their uid
   * (a Node-set round's key names it: the service controller reads ahead the load balancers of a batch's
   * Services, a migrated one's named after its uid).
   */
  private readonly loadBalancers = new Map<string, { targets: 'instance' | 'ip'; uid?: string }>();
  /** Of those, the ones with `target-node-labels`: while there are none, Node labels concern no load balancer. */
  private readonly labelSelecting = new Set<string>();
  /**
   * Per Node that may take load balancer traffic, the fingerprint of its instance alone (`nodeTargetInstance`):
   * the load balancers' fingerprint of a Node includes its labels, and this tells a change of labels alone.
   */
  private readonly nodeInstances = new Map<string, number>();
  /**
   * The newest revision of a Node whose part in the target set changed, since this router started.
   * A Service indexed later (listed after the Nodes, or just created) gets a key with it too: its
   * own key may be a repeat SQS drops, sent before that Node changed.
   */
  private nodeSetRevision: string | undefined;
  /**
   * What the Node-set changes since the last round (`takeNodeSetRound`) were, seen after a full list of the Nodes:
   * all Nodes becoming candidates (no target can have left: NODE_JOIN_HINT_SOURCE), all candidates ceasing to be
   * ones while still in the cluster (every target that left is a listed Node's: NODE_LEAVE_HINT_SOURCE), both
   * (NODE_JOIN_LEAVE_HINT_SOURCE), or anything else (`mixed`: a deletion, an instance changing, labels). Undefined:
   * none yet.
   */
  private nodeSetRound: RoundKind | undefined;
  /** A full list of the Nodes has finished since this router started: changes are measured against all of them. */
  private nodesListed = false;
  /** Nodes that left the targets while staying listed, in the round not yet taken. */
  private readonly leftThisRound = new Set<string>();
  /** Such Nodes of rounds already taken, with when their round was taken (see LEFT_RECENTLY_MS). */
  private readonly leftRecently = new Map<string, number>();
  /**
   * The same for EndpointSlices, per Service (`namespace/name`): the newest revision of a slice that
   * changed, kept even while its Service is unknown or not a LoadBalancer with IP targets (slices can
   * be listed before their Service).
   */
  private readonly sliceRevisions = new Map<string, string>();
  /**
   * Per reconciler with a `reconciled-nodes` rule (ipam: the VPC CNI's ConfigMap), the newest revision of
   * that object's changes since this router started. A Node indexed later (listed after it) gets a key with
   * it too: the Node's own key may be a repeat SQS drops, sent before the ConfigMap changed.
   */
  private readonly nodeWideRevisions = new Map<Reconciler, string>();

  /**
   * Per kind being listed, the keys its `pod-node` rule made so far, newest per reconciler and Node: sent when the
   * list finishes. A Node's Pods are listed one after another (by name, across Nodes), so each would otherwise be a
   * key of its own whenever the previous one had already left; this way a listed Node is one key per list.
   */
  private readonly listing = new Map<WatchedKind, Map<string, RoutedKey>>();
  /** Fingerprints of the object being observed (no router call observes another meanwhile). */
  private readonly values: number[] = [];

  constructor(private readonly options: ChangeRouterOptions) {
    const active = (kind: WatchedKind) => FORWARDING_RULES[kind].filter((r) => options.reconcilers.has(r.reconciler));
    this.rules = {
      Node: active('Node'),
      Service: active('Service'),
      EndpointSlice: active('EndpointSlice'),
      Pod: active('Pod'),
      ConfigMap: active('ConfigMap'),
    };
  }

  /** The kinds some configured reconciler reads. */
  kinds(): WatchedKind[] {
    return (Object.keys(this.rules) as WatchedKind[]).filter((kind) => this.rules[kind].length > 0);
  }

  size(kind: WatchedKind): number {
    return this.tables.get(kind)?.size ?? 0;
  }

  /**
   * LoadBalancer Services: the keys a node-set change becomes. Instance targets are the Nodes themselves; IP
   * targets read the Node set too, for the Nodes' security groups their load balancer must be let into.
   */
  loadBalancerServices(): number {
    return this.loadBalancers.size;
  }

  /** A full list of `kind` begins: objects it does not include are deleted at `listFinished`. */
  listStarted(kind: WatchedKind): void {
    this.epochs.set(kind, (this.epochs.get(kind) ?? 0) + 1);
    // A list started again (its continue token expired) keeps what the first attempt collected.
    if (!this.listing.has(kind)) this.listing.set(kind, new Map());
  }

  /** The list is complete: what it did not include is gone, and was deleted while no watch was open. */
  listFinished(kind: WatchedKind, resourceVersion: string): ChangeOutcome[] {
    if (kind === 'Node') this.nodesListed = true;
    const table = this.table(kind);
    const epoch = this.epochs.get(kind) ?? 0;
    const outcomes: ChangeOutcome[] = [];
    for (const [key, slot] of table.entries()) {
      if (table.epoch(slot) === epoch) continue;
      const fingerprints = table.fingerprints(slot);
      const owner = table.owner(slot);
      table.delete(key);
      outcomes.push(this.deleted(kind, key, fingerprints, owner, resourceVersion, undefined));
    }
    const collected = this.listing.get(kind);
    this.listing.delete(kind);
    for (const { reconciler, message } of collected?.values() ?? []) this.send('unchanged', reconciler, [message]);
    return outcomes;
  }

  /** A whole list at once: `listStarted`, each object, `listFinished` (for a list held in memory). */
  listed(kind: WatchedKind, objects: Iterable<KubeObject>, resourceVersion: string): ChangeOutcome[] {
    this.listStarted(kind);
    const outcomes = [...objects].map((object) => this.observe(kind, object));
    return [...outcomes, ...this.listFinished(kind, resourceVersion)];
  }

  /** An object as listed, or from an ADDED or MODIFIED watch event. */
  observe(kind: WatchedKind, object: KubeObject): ChangeOutcome {
    const key = tableKey(kind, object);
    if (key === undefined) return 'not-relevant';
    const rules = this.rules[kind];
    const table = this.table(kind);
    const epoch = this.epochs.get(kind) ?? 0;
    // Updated in place: most events (heartbeats) change nothing, and need not leave garbage behind.
    let slot = table.slot(key);
    if (slot === undefined) slot = table.add(key);
    table.setEpoch(slot, epoch);
    const values = this.values;
    let relevant = false;
    let changed = false;
    for (let i = 0; i < rules.length; i++) {
      const value = this.fingerprintOf(kind, rules[i]!, object);
      values[i] = value;
      if (value !== NOT_RELEVANT) relevant = true;
      if (value !== table.fingerprint(slot, i)) changed = true;
    }
    const formerOwner = table.owner(slot);
    let owner = formerOwner;
    if (kind === 'EndpointSlice') owner = object.metadata?.labels?.[LABEL_SERVICE_NAME];
    if (kind === 'Pod') owner = (object.spec as { nodeName?: string } | undefined)?.nodeName;
    if (owner !== formerOwner) table.setOwner(slot, owner);
    let outcome: ChangeOutcome = relevant ? 'unchanged' : 'not-relevant';
    if (kind === 'Service') outcome = this.serviceIndexed(outcome, key, object);
    if (!changed) return outcome;

    const hint = this.hint(object, 'MODIFIED');
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      const before = table.fingerprint(slot, i);
      const value = values[i]!;
      if (value === before) continue;
      table.setFingerprint(slot, i, value);
      if (this.onlyUnselectedLabels(rule, key, object, before, value)) continue;
      const transition = rule.target === 'load-balancers' ? nodeTransition(object, before, value) : undefined;
      outcome = this.forward(outcome, rule, kind, key, owner, hint, transition);
      // A Pod that moved (deleted and created again under its name on another Node while no watch was open):
      // the Node it left has an address to take back.
      if (rule.target === 'pod-node' && before !== NOT_RELEVANT && formerOwner && formerOwner !== owner) {
        outcome = this.send(outcome, rule.reconciler, [this.podNodeKey(formerOwner, hint)]);
      }
      if (kind === 'Node' && before === NOT_RELEVANT && rule.target === 'self') {
        outcome = this.nodeIndexed(outcome, rule.reconciler, key);
      }
    }
    return outcome;
  }

  /** A DELETED watch event (its object is the last state the API server had). */
  remove(kind: WatchedKind, object: KubeObject): ChangeOutcome {
    const key = tableKey(kind, object);
    if (key === undefined) return 'not-relevant';
    const table = this.table(kind);
    const slot = table.slot(key);
    if (slot === undefined) return 'not-relevant';
    const fingerprints = table.fingerprints(slot);
    const owner = table.owner(slot);
    table.delete(key);
    return this.deleted(kind, key, fingerprints, owner, object.metadata?.resourceVersion ?? '', object);
  }

  /**
   * Every key `reconciler` has, again: its migration lock was just released, and nothing of what
   * changed while it was held was sent.
   */
  resendAll(reconciler: Reconciler, hint: KeyHint): number {
    let sent = 0;
    for (const kind of this.kinds()) {
      const rules = this.rules[kind];
      for (let i = 0; i < rules.length; i++) {
        const rule = rules[i]!;
        // Node -> load balancers and ConfigMap -> Nodes are covered: every Service's and Node's own key is sent again.
        if (rule.reconciler !== reconciler || rule.target === 'load-balancers' || rule.target === 'reconciled-nodes') {
          continue;
        }
        const table = this.table(kind);
        for (const [key, slot] of table.entries()) {
          if (table.fingerprint(slot, i) === NOT_RELEVANT) continue;
          if (this.forward('unchanged', rule, kind, key, table.owner(slot), hint) === 'forwarded') sent++;
        }
      }
    }
    return sent;
  }

  /**
   * The keys of every LoadBalancer Service: the set of Nodes that may take their traffic changed. Hinted as a
   * round of joins only, of leaves only, or of both, when every change since the last round was one (see
   * `nodeSetRound`).
   */
  loadBalancerKeys(): RoutedKey[] {
    const keys: RoutedKey[] = [];
    if (this.nodeSetRevision === undefined) return keys;
    const hint = this.nodeSetHint(ROUND_SOURCES[this.nodeSetRound ?? 'joined']);
    for (const [key, { uid }] of this.loadBalancers) {
      const { namespace, name } = splitTableKey('Service', key);
      const message: KeyMessage = { kind: 'Service', namespace, name, hint: uid ? { ...hint, uid } : hint };
      keys.push({ reconciler: 'service', message });
    }
    return keys;
  }

  /** `loadBalancerKeys()`, to send now: the next changes make a new round. */
  takeNodeSetRound(): RoutedKey[] {
    const keys = this.loadBalancerKeys();
    this.nodeSetRound = undefined;
    const now = this.now();
    for (const [key, at] of this.leftRecently) if (now - at >= LEFT_RECENTLY_MS) this.leftRecently.delete(key);
    for (const key of this.leftThisRound) this.leftRecently.set(key, now);
    this.leftThisRound.clear();
    return keys;
  }

  /** Forget everything (leadership lost: the next leader lists from scratch). */
  clear(): void {
    this.tables.clear();
    this.listing.clear();
    this.loadBalancers.clear();
    this.labelSelecting.clear();
    this.nodeInstances.clear();
    this.nodeSetRevision = undefined;
    this.nodeSetRound = undefined;
    this.nodesListed = false;
    this.leftThisRound.clear();
    this.leftRecently.clear();
    this.sliceRevisions.clear();
    this.nodeWideRevisions.clear();
  }

  private deleted(
    kind: WatchedKind,
    key: string,
    fingerprints: readonly number[],
    owner: string | undefined,
    resourceVersion: string,
    object: KubeObject | undefined,
  ): ChangeOutcome {
    if (kind === 'Service') {
      this.loadBalancers.delete(key);
      this.labelSelecting.delete(key);
    }
    if (kind === 'Node') this.nodeInstances.delete(key);
    const hint: KeyHint = { eventType: 'DELETED', resourceVersion, source: SOURCE };
    if (object?.metadata?.uid) hint.uid = object.metadata.uid;
    const rules = this.rules[kind];
    const leftRecently = kind === 'Node' && this.leftBeforeDeleted(key);
    let outcome: ChangeOutcome = 'not-relevant';
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      const sendsRound = leftRecently && rule.target === 'load-balancers';
      if (!rule.onDelete || (fingerprints[i] === NOT_RELEVANT && !sendsRound)) continue;
      outcome = this.forward(outcome, rule, kind, key, owner, hint);
    }
    return outcome;
  }

  /**
   * Whether a deleted Node left the targets in the round not yet taken, or in one taken less than LEFT_RECENTLY_MS
   * ago: its deletion then makes an ordinary round (the pass of its round of leaves may list the Nodes without it).
   */
  private leftBeforeDeleted(key: string): boolean {
    if (this.leftThisRound.delete(key)) return true;
    const at = this.leftRecently.get(key);
    this.leftRecently.delete(key);
    return at !== undefined && this.now() - at < LEFT_RECENTLY_MS;
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** Send the key(s) of one rule, unless held by the migration lock; returns the combined outcome. */
  private forward(
    outcome: ChangeOutcome,
    rule: ForwardingRule,
    kind: WatchedKind,
    key: string,
    owner: string | undefined,
    hint: KeyHint,
    /** A Node that just became a load balancer candidate or ceased to be one (for the Node-set round's hint). */
    transition?: NodeTransition,
  ): ChangeOutcome {
    const keys = this.keysFor(rule, kind, key, owner, hint);
    const collecting = rule.target === 'pod-node' ? this.listing.get(kind) : undefined;
    if (keys !== 'node-set' && collecting) return this.collect(collecting, outcome, rule.reconciler, keys);
    if (keys !== 'node-set') return this.send(outcome, rule.reconciler, keys);
    // Remembered even while no LoadBalancer Service is known: one indexed later still needs it.
    const order = compareResourceVersions(this.nodeSetRevision, hint.resourceVersion);
    if (order === undefined || order < 0) this.nodeSetRevision = hint.resourceVersion;
    const change = transition && this.nodesListed ? transition : 'mixed';
    this.nodeSetRound = roundWith(this.nodeSetRound, change);
    if (change === 'left') this.leftThisRound.add(key);
    if (this.loadBalancerServices() === 0) return outcome;
    if (!this.options.allows(rule.reconciler)) return outcome === 'forwarded' ? outcome : 'held';
    this.options.nodeSetChanged();
    return 'forwarded';
  }

  /** Keep keys until the list finishes (see `listing`); the newest revision of a key wins, as in the forwarder. */
  private collect(
    collecting: Map<string, RoutedKey>,
    outcome: ChangeOutcome,
    reconciler: Reconciler,
    keys: KeyMessage[],
  ): ChangeOutcome {
    if (keys.length === 0) return outcome;
    if (!this.options.allows(reconciler)) return outcome === 'forwarded' ? outcome : 'held';
    for (const message of keys) {
      const id = `${reconciler}\u0000${message.kind}\u0000${message.name}`;
      const before = collecting.get(id);
      collecting.set(id, { reconciler, message: before ? newest(before.message, message) : message });
    }
    return 'forwarded';
  }

  private send(outcome: ChangeOutcome, reconciler: Reconciler, keys: KeyMessage[]): ChangeOutcome {
    if (keys.length === 0) return outcome;
    if (!this.options.allows(reconciler)) return outcome === 'forwarded' ? outcome : 'held';
    let sent = false;
    for (const message of keys) {
      const valid = sendable(message);
      if (valid.ok) {
        this.options.emit({ reconciler, message: valid.message });
        sent = true;
      } else {
        this.options.invalid?.({
          kind: message.kind as WatchedKind,
          name: message.name.slice(0, 300),
          reason: valid.error,
        });
      }
    }
    return sent ? 'forwarded' : outcome;
  }

  /**
   * A rule's fingerprint of the object; an object whose fields have types the rule cannot read (the API server
   * never serves one, but a broken aggregated API or a hand-made fake might) counts as nothing to forward.
   */
  private fingerprintOf(kind: WatchedKind, rule: ForwardingRule, object: KubeObject): number {
    try {
      return fingerprint(rule.reads(object));
    } catch (err) {
      const name = String(object.metadata?.name ?? '').slice(0, 300);
      this.options.invalid?.({ kind, name, reason: `unreadable for ${rule.reconciler}: ${errorMessage(err)}` });
      return NOT_RELEVANT;
    }
  }

  /** Service keys for a node-set change: MODIFIED (the Service did not change), at the newest Node revision. */
  private nodeSetHint(source: string = NODE_SET_HINT_SOURCE): KeyHint {
    return { eventType: 'MODIFIED', resourceVersion: this.nodeSetRevision ?? '', source };
  }

  private keysFor(
    rule: ForwardingRule,
    kind: WatchedKind,
    key: string,
    /** The Pod's Node, or the EndpointSlice's Service. */
    owner: string | undefined,
    hint: KeyHint,
  ): KeyMessage[] | 'node-set' {
    switch (rule.target) {
      case 'self':
        // A ConfigMap is no key of its own: its changes become the keys of the Nodes that read it.
        if (kind === 'ConfigMap') return [];
        return [{ kind, ...splitTableKey(kind, key), hint }];
      case 'route-table':
        return [routeTableMessage(hint)];
      case 'load-balancers':
        return 'node-set';
      case 'pod-node':
        return owner ? [this.podNodeKey(owner, hint)] : [];
      case 'reconciled-nodes':
        return this.reconciledNodeKeys(rule.reconciler, hint);
      case 'owning-service': {
        const service = owner;
        if (!service) return [];
        const { namespace } = splitTableKey(kind, key);
        const serviceKey = `${namespace}/${service}`;
        if (hint.eventType !== 'RESYNC') {
          const order = compareResourceVersions(this.sliceRevisions.get(serviceKey), hint.resourceVersion);
          if (order === undefined || order < 0) this.sliceRevisions.set(serviceKey, hint.resourceVersion ?? '');
        }
        const loadBalancer = this.loadBalancers.get(serviceKey);
        if (loadBalancer?.targets !== 'ip') return [];
        // The Service did not change (so MODIFIED); the slice's revision orders the message. The uid is the
        // Service's, never the slice's.
        const { uid: _slice, ...sliceHint } = hint;
        const serviceHint: KeyHint =
          hint.eventType === 'RESYNC'
            ? sliceHint
            : { eventType: 'MODIFIED', resourceVersion: hint.resourceVersion, source: `${SOURCE}/EndpointSlice` };
        if (loadBalancer.uid) serviceHint.uid = loadBalancer.uid;
        return [{ kind: 'Service', namespace, name: service, hint: serviceHint }];
      }
    }
  }

  /** The Node's key for a change of one of its Pods: MODIFIED (the Node did not change), at the Pod's revision. */
  private podNodeKey(node: string, hint: KeyHint): KeyMessage {
    const nodeHint: KeyHint =
      hint.eventType === 'RESYNC'
        ? hint
        : { eventType: 'MODIFIED', resourceVersion: hint.resourceVersion, source: `${SOURCE}/Pod` };
    return { kind: 'Node', name: node, hint: nodeHint };
  }

  /**
   * The key of every Node `reconciler`'s own Node rule reads (ipam: the Windows Nodes), for a change of an
   * object they all depend on; the Nodes did not change (so MODIFIED), the object's revision orders it.
   */
  private reconciledNodeKeys(reconciler: Reconciler, hint: KeyHint): KeyMessage[] {
    if (hint.eventType === 'RESYNC') return [];
    const order = compareResourceVersions(this.nodeWideRevisions.get(reconciler), hint.resourceVersion);
    if (order === undefined || order < 0) this.nodeWideRevisions.set(reconciler, hint.resourceVersion ?? '');
    const index = this.rules.Node.findIndex((r) => r.reconciler === reconciler && r.target === 'self');
    if (index < 0) return [];
    const nodeHint = this.nodeWideHint(reconciler);
    const keys: KeyMessage[] = [];
    const nodes = this.table('Node');
    for (const [name, slot] of nodes.entries()) {
      if (nodes.fingerprint(slot, index) !== NOT_RELEVANT) keys.push({ kind: 'Node', name, hint: nodeHint });
    }
    return keys;
  }

  private nodeWideHint(reconciler: Reconciler): KeyHint {
    return {
      eventType: 'MODIFIED',
      resourceVersion: this.nodeWideRevisions.get(reconciler) ?? '',
      source: `${SOURCE}/ConfigMap`,
    };
  }

  /** A Node `reconciler` now reads also gets a key for the newest change of the objects every such Node depends on. */
  private nodeIndexed(outcome: ChangeOutcome, reconciler: Reconciler, name: string): ChangeOutcome {
    if (!this.nodeWideRevisions.has(reconciler)) return outcome;
    return this.send(outcome, reconciler, [{ kind: 'Node', name, hint: this.nodeWideHint(reconciler) }]);
  }

  private hint(object: KubeObject, eventType: 'MODIFIED'): KeyHint {
    const hint: KeyHint = { eventType, resourceVersion: object.metadata?.resourceVersion ?? '', source: SOURCE };
    if (object.metadata?.uid) hint.uid = object.metadata.uid;
    return hint;
  }

  /**
   * Keep the LoadBalancer index current. A Service that just became a LoadBalancer with instance
   * targets (or IP targets) also gets a key for the newest Node (or EndpointSlice) change seen so
   * far: its own key may be one SQS already has, sent before that change.
   */
  private serviceIndexed(outcome: ChangeOutcome, key: string, object: KubeObject): ChangeOutcome {
    const targets = object.metadata?.deletionTimestamp ? undefined : loadBalancerTargets(object);
    const before = this.loadBalancers.get(key)?.targets;
    const uid = object.metadata?.uid;
    if (targets) this.loadBalancers.set(key, uid ? { targets, uid } : { targets });
    else this.loadBalancers.delete(key);
    if (targets && selectsNodesByLabel(object)) this.labelSelecting.add(key);
    else this.labelSelecting.delete(key);
    if (!targets || targets === before) return outcome;
    const revision = targets === 'instance' ? this.nodeSetRevision : this.sliceRevisions.get(key);
    if (revision === undefined) return outcome;
    const { namespace, name } = splitTableKey('Service', key);
    const hint: KeyHint =
      targets === 'instance'
        ? this.nodeSetHint()
        : { eventType: 'MODIFIED', resourceVersion: revision, source: `${SOURCE}/EndpointSlice` };
    if (uid) hint.uid = uid;
    return this.send(outcome, 'service', [{ kind: 'Service', namespace, name, hint }]);
  }

  /**
   * A Node's load balancer fingerprint changed (`before` to `value`; only Nodes have a `load-balancers` rule):
   * whether only its labels did, while no LoadBalancer Service picks Nodes by label, so no load balancer's targets
   * or rules change. A Service that starts picking by label gets its own key, whose pass reads every Node; from
   * then on label changes are sent.
   */
  private onlyUnselectedLabels(
    rule: ForwardingRule,
    key: string,
    object: KubeObject,
    before: number,
    value: number,
  ): boolean {
    if (rule.target !== 'load-balancers') return false;
    const previous = this.nodeInstances.get(key);
    const instance = value === NOT_RELEVANT ? undefined : fingerprint(nodeTargetInstance(object));
    if (instance === undefined) this.nodeInstances.delete(key);
    else this.nodeInstances.set(key, instance);
    return before !== NOT_RELEVANT && instance !== undefined && instance === previous && this.labelSelecting.size === 0;
  }

  private table(kind: WatchedKind): FingerprintTable {
    let table = this.tables.get(kind);
    if (!table) {
      table = new FingerprintTable(this.rules[kind].length);
      this.tables.set(kind, table);
    }
    return table;
  }
}

/**
 * The key message as a queue will take it: a resourceVersion longer than the schema allows is replaced by its SHA-256
 * (still one value per revision, so deduplication is unchanged) and an over-long uid is left out (it only labels
 * the hint). A name no Kubernetes object can have is refused with the schema's words.
 */
function sendable(message: KeyMessage): { ok: true; message: KeyMessage } | { ok: false; error: string } {
  const hint = message.hint && { ...message.hint };
  if (hint?.resourceVersion !== undefined && hint.resourceVersion.length > HINT_FIELD_MAX) {
    hint.resourceVersion = createHash('sha256').update(hint.resourceVersion).digest('hex');
  }
  if (hint?.uid !== undefined && hint.uid.length > HINT_FIELD_MAX) delete hint.uid;
  const candidate = hint ? { ...message, hint } : message;
  const parsed = KeyMessage.safeParse(candidate);
  if (parsed.success) return { ok: true, message: candidate };
  return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
}
