import type { KeyHint, KeyMessage } from '../../../shared/queue/message.ts';
import type { KindInfo, KubeObject } from '../kube-object.ts';

/**
 * The contract between the change router (change-router.ts) and a controller module: what a module declares
 * (the kinds it reads, the fields it fingerprints, its queue) and what the router offers it (sending keys,
 * its own tables). A module knows its controller's keys and nothing of the router's bookkeeping; the router
 * knows fingerprints, lists and the migration lock and nothing of any controller. These types name no
 * reconciler and no kind, so the table (index.ts) can derive both from the modules without a loop.
 */

/**
 * What became of one observed change: keys were sent, nothing a reconciler reads changed, the
 * object concerns no reconciler, or keys were held back because another component holds the
 * controller's migration lock.
 */
export type ChangeOutcome = 'forwarded' | 'unchanged' | 'not-relevant' | 'held';

/** The `source` of every hint the relay writes; keys made from another object's change add its kind. */
export const HINT_SOURCE = 'relay';

/** What a controller reads of one kind. */
export interface ForwardingRule {
  kind: KindInfo;
  /** Whether deleting the object leaves something for the reconciler to clean up. */
  onDelete: boolean;
  /** The fields the reconciler reads (hashed into the fingerprint), or undefined when the object is none of its business. */
  reads(object: KubeObject): unknown[] | undefined;
}

/** One controller: one module under controllers/, one line in the table (index.ts). */
export interface ControllerModule {
  /** The relay's environment variable holding this controller's queue URL; without one it gets no keys. */
  queueUrlVariable: string;
  /**
   * Names a LeaderMigrationConfiguration may give this controller (the short names and the `-controller` names
   * the cloud-controller-manager has used); none when it has no in-tree counterpart.
   * https://kubernetes.io/docs/tasks/administer-cluster/controller-manager-leader-migration/
   */
  migrationNames: readonly string[];
  /** At most one rule per kind. A kind read by several controllers keeps their rules in table order. */
  rules: readonly ForwardingRule[];
  /** This controller's part of one router: what its changes send, and the state that takes. */
  routing(context: ControllerContext): ControllerRouting;
}

/** One change of one rule's fingerprint, as the router hands it to the rule's route. */
export interface Change {
  /**
   * `changed`: the object was observed (listed, or ADDED or MODIFIED) and the fingerprint differs; `deleted`: the
   * object is gone (a DELETED event, or missing from a relist) and the rule has `onDelete`; `resent`: the key is
   * sent again after the migration lock was freed (`before` and `value` are then the fingerprint kept).
   */
  event: 'changed' | 'deleted' | 'resent';
  kind: string;
  /** The object's table key: `namespace/name`, or `name`. */
  key: string;
  /** Undefined for a deletion a relist found, and for a resend. */
  object: KubeObject | undefined;
  /** See KindInfo.owner: now, and before this change. */
  owner: string | undefined;
  formerOwner: string | undefined;
  /** The rule's fingerprint before and after (NOT_RELEVANT: the object was none of the controller's business). */
  before: number;
  value: number;
  /** MODIFIED or DELETED with the object's resourceVersion (never ADDED: docs/relay.md), or the resend's RESYNC. */
  hint: KeyHint;
}

/** What a controller does with the changes of one kind it reads. */
export interface KindRoute {
  /** Every observation of an object of the kind, changed or not, before its changes are routed (indexes). */
  observed?(key: string, object: KubeObject, outcome: ChangeOutcome): ChangeOutcome;
  /** Send the keys a change makes (through the context); returns `outcome` with this send's combined in. */
  changed(change: Change, outcome: ChangeOutcome): ChangeOutcome;
  /**
   * The object is gone: forget what is kept of it. True when its deletion must be routed although the controller
   * found it irrelevant (its fingerprint is NOT_RELEVANT).
   */
  removed?(key: string): boolean;
  /**
   * False when a resend after the migration lock needs none of this kind's keys: other objects' keys, sent again
   * too, carry what its changes would.
   */
  resend?: boolean;
}

/** A controller's part of one router. */
export interface ControllerRouting {
  /** A route per kind of the module's rules, by kind name. */
  routes: Readonly<Record<string, KindRoute>>;
  /** A full list of `kind` finished: changes are measured against all its objects from now on. */
  listFinished?(kind: string): void;
  /**
   * Keys that wait to go out together (a round), and taking them: the context's `roundDue` asks the relay to
   * take them soon, and the next changes start a new round.
   */
  roundKeys?(): KeyMessage[];
  takeRound?(): KeyMessage[];
}

/** What the router offers one controller's routing. */
export interface ControllerContext {
  /** Send keys to this controller's queue, unless its migration lock is held; returns the combined outcome. */
  send(outcome: ChangeOutcome, keys: readonly KeyMessage[]): ChangeOutcome;
  /**
   * As `send`, except while `kind` is being listed: then the keys wait for the list to finish, the newest
   * revision of each key winning, so many listed objects that make one key make it once.
   */
  sendAfterList(kind: string, outcome: ChangeOutcome, keys: readonly KeyMessage[]): ChangeOutcome;
  /** Whether this controller's keys may go out now (no other component holds its migration lock). */
  allows(): boolean;
  /** The round has keys: the router's owner is asked to take it soon (ChangeRouterOptions.nodeSetChanged). */
  roundDue(): void;
  /** The table keys of the objects of `kind` this controller's own rule reads now. */
  readKeys(kind: string): string[];
  /** The changed object's own key on the queue. */
  ownKey(change: Change): KeyMessage;
  /** The router's clock, in milliseconds. */
  now(): number;
}
