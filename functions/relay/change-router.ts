import { errorMessage } from '../../shared/errors.ts';
import type { KeyHint, KeyMessage, ObjectKind } from '../../shared/queue/message.ts';
import { controller, RECONCILERS, type Reconciler } from './controllers/index.ts';
import {
  type Change,
  type ChangeOutcome,
  type ControllerContext,
  type ControllerRouting,
  type ForwardingRule,
  HINT_SOURCE,
  type KindRoute,
} from './controllers/module.ts';
import { FingerprintTable, fingerprint, NOT_RELEVANT } from './fingerprint.ts';
import { FORWARDING_RULES } from './forwarding.ts';
import { KeySender, type RoutedKey } from './key-sender.ts';
import { KIND_INFO, type KubeObject, splitTableKey, tableKey, WATCHED_KINDS, type WatchedKind } from './kinds.ts';

export type { ChangeOutcome } from './controllers/module.ts';

/**
 * Turns listed and watched objects into keys, keeping per object only one fingerprint per
 * reconciler that reads its kind and, for kinds with an owner (KindInfo.owner), the owner's name. No
 * object is kept. What a change sends is each controller's business (controllers/): the router
 * hands it the changes of its rules, and keeps only what is common to them: fingerprints, lists
 * (deletions a relist finds, keys held until a list finishes), the migration lock, and what a
 * queue will take. docs/relay.md tells the whole way.
 *
 * The hint of a key is deterministic: `MODIFIED` (or `DELETED`) and the object's resourceVersion,
 * never ADDED. The deduplication ID is built from the hint, and a list cannot tell an addition from
 * an update; with a fixed event type a relay that restarts and lists again sends byte-identical
 * messages for objects that did not change, which SQS drops (docs/adr/0004-relay-fingerprints-
 * at-least-once-leader-election.md).
 */

export type { RoutedKey } from './key-sender.ts';

export interface ChangeRouterOptions {
  /** Reconcilers with a queue; rules for any other are ignored. */
  reconcilers: ReadonlySet<Reconciler>;
  /** False while another component holds the reconciler's migration lock. */
  allows(reconciler: Reconciler): boolean;
  emit(key: RoutedKey): void;
  /**
   * A controller's round has keys (today the service controller's: a Node's part in the load balancers' target
   * set changed): send `takeNodeSetRound()` soon.
   */
  nodeSetChanged(): void;
  /**
   * An object the forwarding rules cannot read (a field of an unexpected type), or a key no queue would take (a name
   * no Kubernetes object can have): nothing is sent for it, and the relay says so (a log line and a metric).
   */
  invalid?(problem: { kind: WatchedKind; name: string; reason: string }): void;
  /** The clock, in milliseconds (`Date.now` unless a test gives another). */
  now?(): number;
}

/** A rule of a configured reconciler, with its controller's route for the rule's kind. */
interface ActiveRule {
  reconciler: Reconciler;
  rule: ForwardingRule;
  route: KindRoute;
}

/**
 * Per object, in its kind's FingerprintTable: the list (see `listStarted`) that last saw it, one fingerprint per
 * active rule of the kind (NOT_RELEVANT where the reconciler does not care) and its owner (KindInfo.owner), to
 * route a deletion a relist finds.
 */
export class ChangeRouter {
  /** Per kind, the rules of configured reconcilers, in table order (a slot's fingerprints are in that order). */
  private rules!: Record<WatchedKind, readonly ActiveRule[]>;
  /** Per kind, the routes that see every observation (`KindRoute.observed`). */
  private observers!: Record<WatchedKind, readonly KindRoute[]>;
  /** The configured controllers' routings, in table order; made again by `clear`. */
  private routings!: [Reconciler, ControllerRouting][];
  private readonly tables = new Map<WatchedKind, FingerprintTable>();
  private readonly epochs = new Map<WatchedKind, number>();
  /** Fingerprints of the object being observed (no router call observes another meanwhile). */
  private readonly values: number[] = [];

  private readonly sender: KeySender;

  constructor(private readonly options: ChangeRouterOptions) {
    this.sender = new KeySender(options);
    this.route();
  }

  /** The kinds some configured reconciler reads. */
  kinds(): WatchedKind[] {
    return WATCHED_KINDS.filter((kind) => this.rules[kind].length > 0);
  }

  size(kind: WatchedKind): number {
    return this.tables.get(kind)?.size ?? 0;
  }

  /** A full list of `kind` begins: objects it does not include are deleted at `listFinished`. */
  listStarted(kind: WatchedKind): void {
    this.epochs.set(kind, (this.epochs.get(kind) ?? 0) + 1);
    this.sender.listStarted(kind);
  }

  /** The list is complete: what it did not include is gone, and was deleted while no watch was open. */
  listFinished(kind: WatchedKind, resourceVersion: string): ChangeOutcome[] {
    for (const [, routing] of this.routings) routing.listFinished?.(kind);
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
    this.sender.listFinished(kind);
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
    const ownerOf = KIND_INFO[kind].owner;
    const owner = ownerOf ? ownerOf(object) : formerOwner;
    if (owner !== formerOwner) table.setOwner(slot, owner);
    let outcome: ChangeOutcome = relevant ? 'unchanged' : 'not-relevant';
    const observers = this.observers[kind];
    for (let i = 0; i < observers.length; i++) outcome = observers[i]!.observed!(key, object, outcome);
    if (!changed) return outcome;

    const hint = this.hint(object);
    for (let i = 0; i < rules.length; i++) {
      const before = table.fingerprint(slot, i);
      const value = values[i]!;
      if (value === before) continue;
      table.setFingerprint(slot, i, value);
      const change: Change = { event: 'changed', kind, key, object, owner, formerOwner, before, value, hint };
      outcome = rules[i]!.route.changed(change, outcome);
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
   * changed while it was held was sent. Routes with `resend: false` are covered by the other keys.
   */
  resendAll(reconciler: Reconciler, hint: KeyHint): number {
    let sent = 0;
    for (const kind of this.kinds()) {
      const rules = this.rules[kind];
      for (let i = 0; i < rules.length; i++) {
        const { reconciler: owner, route } = rules[i]!;
        if (owner !== reconciler || route.resend === false) continue;
        const table = this.table(kind);
        for (const [key, slot] of table.entries()) {
          const value = table.fingerprint(slot, i);
          if (value === NOT_RELEVANT) continue;
          const objectOwner = table.owner(slot);
          const change: Change = {
            event: 'resent',
            kind,
            key,
            object: undefined,
            owner: objectOwner,
            formerOwner: objectOwner,
            before: value,
            value,
            hint,
          };
          if (route.changed(change, 'unchanged') === 'forwarded') sent++;
        }
      }
    }
    return sent;
  }

  /**
   * The keys waiting in the configured controllers' rounds (the service controller's Node-set round: every
   * LoadBalancer Service's key, the set of Nodes that may take their traffic having changed).
   */
  loadBalancerKeys(): RoutedKey[] {
    return this.rounds((routing) => routing.roundKeys?.());
  }

  /**
   * `loadBalancerKeys()`, to send now: the next changes make a new round. A controller whose migration lock another
   * component holds keeps its round for later.
   */
  takeNodeSetRound(): RoutedKey[] {
    return this.rounds((routing, reconciler) => (this.options.allows(reconciler) ? routing.takeRound?.() : undefined));
  }

  /** Forget everything (leadership lost: the next leader lists from scratch). */
  clear(): void {
    this.tables.clear();
    this.sender.clear();
    this.route();
  }

  /** The configured controllers' routings, made afresh (with no state), and the rules and routes per kind. */
  private route(): void {
    const routes = new Map<Reconciler, ControllerRouting>();
    for (const reconciler of RECONCILERS) {
      if (!this.options.reconcilers.has(reconciler)) continue;
      routes.set(reconciler, controller(reconciler).routing(this.context(reconciler)));
    }
    const rules = {} as Record<WatchedKind, ActiveRule[]>;
    const observers = {} as Record<WatchedKind, KindRoute[]>;
    for (const kind of WATCHED_KINDS) {
      rules[kind] = [];
      observers[kind] = [];
      for (const rule of FORWARDING_RULES[kind]) {
        const routing = routes.get(rule.reconciler);
        if (!routing) continue;
        const route = routing.routes[kind];
        if (!route) throw new Error(`relay: the ${rule.reconciler} module reads ${kind} but has no route for it`);
        rules[kind].push({ reconciler: rule.reconciler, rule, route });
        if (route.observed) observers[kind].push(route);
      }
    }
    this.routings = [...routes];
    this.rules = rules;
    this.observers = observers;
  }

  /** What one controller's routing may ask of the router. */
  private context(reconciler: Reconciler): ControllerContext {
    return {
      send: (outcome, keys) => this.sender.send(outcome, reconciler, keys),
      sendAfterList: (kind, outcome, keys) => this.sender.sendAfterList(kind as WatchedKind, outcome, reconciler, keys),
      allows: () => this.options.allows(reconciler),
      roundDue: () => this.options.nodeSetChanged(),
      readKeys: (kind) => this.readKeys(reconciler, kind as WatchedKind),
      ownKey: ({ kind, key, hint }) => ({
        kind: kind as ObjectKind,
        ...splitTableKey(kind as WatchedKind, key),
        hint,
      }),
      now: () => this.now(),
    };
  }

  /** Each routing's round keys (`pick`), labelled with its reconciler, in table order. */
  private rounds(pick: (routing: ControllerRouting, reconciler: Reconciler) => KeyMessage[] | undefined): RoutedKey[] {
    const keys: RoutedKey[] = [];
    for (const [reconciler, routing] of this.routings) {
      for (const message of pick(routing, reconciler) ?? []) keys.push({ reconciler, message });
    }
    return keys;
  }

  /** The table keys of the objects of `kind` whose fingerprint for `reconciler`'s rule is relevant. */
  private readKeys(reconciler: Reconciler, kind: WatchedKind): string[] {
    const index = (this.rules[kind] ?? []).findIndex((r) => r.reconciler === reconciler);
    if (index < 0) return [];
    const keys: string[] = [];
    const table = this.table(kind);
    for (const [key, slot] of table.entries()) {
      if (table.fingerprint(slot, index) !== NOT_RELEVANT) keys.push(key);
    }
    return keys;
  }

  private deleted(
    kind: WatchedKind,
    key: string,
    fingerprints: readonly number[],
    owner: string | undefined,
    resourceVersion: string,
    object: KubeObject | undefined,
  ): ChangeOutcome {
    const hint: KeyHint = { eventType: 'DELETED', resourceVersion, source: HINT_SOURCE };
    if (object?.metadata?.uid) hint.uid = object.metadata.uid;
    const rules = this.rules[kind];
    let outcome: ChangeOutcome = 'not-relevant';
    for (let i = 0; i < rules.length; i++) {
      const { rule, route } = rules[i]!;
      const before = fingerprints[i]!;
      // Every route hears of the deletion, to forget the object; one may still route it when it was irrelevant.
      const routesAnyway = route.removed?.(key) ?? false;
      if (!rule.onDelete || (before === NOT_RELEVANT && !routesAnyway)) continue;
      const change: Change = {
        event: 'deleted',
        kind,
        key,
        object,
        owner,
        formerOwner: owner,
        before,
        value: NOT_RELEVANT,
        hint,
      };
      outcome = route.changed(change, outcome);
    }
    return outcome;
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /**
   * A rule's fingerprint of the object; an object whose fields have types the rule cannot read (the API server
   * never serves one, but a broken aggregated API or a hand-made fake might) counts as nothing to forward.
   */
  private fingerprintOf(kind: WatchedKind, { reconciler, rule }: ActiveRule, object: KubeObject): number {
    try {
      return fingerprint(rule.reads(object));
    } catch (err) {
      const name = String(object.metadata?.name ?? '').slice(0, 300);
      this.options.invalid?.({ kind, name, reason: `unreadable for ${reconciler}: ${errorMessage(err)}` });
      return NOT_RELEVANT;
    }
  }

  private hint(object: KubeObject): KeyHint {
    const hint: KeyHint = {
      eventType: 'MODIFIED',
      resourceVersion: object.metadata?.resourceVersion ?? '',
      source: HINT_SOURCE,
    };
    if (object.metadata?.uid) hint.uid = object.metadata.uid;
    return hint;
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
