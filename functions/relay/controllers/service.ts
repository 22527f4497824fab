import {
  type KeyHint,
  type KeyMessage,
  NODE_JOIN_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
  NODE_SET_HINT_SOURCE,
} from '../../../shared/queue/message.ts';
import { fingerprint, NOT_RELEVANT } from '../fingerprint.ts';
import { compareResourceVersions, type KubeObject, splitObjectKey } from '../kube-object.ts';
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
  loadBalancerTargets,
  nodeTargetInstance,
  nodeTargetReads,
  SERVICE_KIND,
  selectsNodesByLabel,
  serviceReads,
} from './service-reads.ts';

/**
 * functions/service: LoadBalancer Services, the EndpointSlices behind those with IP targets, and the Nodes that may
 * take their traffic (what it reads of each: service-reads.ts). A Service is its own key, a slice its Service's key;
 * a Node is a round of every LoadBalancer Service's key.
 */

/**
 * How long after its round of leaves went out a Node's deletion still sends an ordinary round: the service
 * controller's pass of that round deregisters the instances of the Nodes it lists, and a Node deleted before the
 * pass listed them is not among them. The pass follows the round within seconds; a cluster autoscaler deletes a
 * Node it marked after draining it, minutes later, which then costs nothing.
 */
export const LEFT_RECENTLY_MS = 60_000;

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
 * A Node's load balancer fingerprint went from `before` to `value`: `joined` when it became a candidate, `left`
 * when it ceased to be one and stays a listed Node (not one being deleted: it may be gone by the time the service
 * controller lists the Nodes). Undefined otherwise.
 */
function nodeTransition(object: KubeObject, before: number, value: number): NodeTransition | undefined {
  if (before === NOT_RELEVANT) return 'joined';
  if (value === NOT_RELEVANT && !object.metadata?.deletionTimestamp) return 'left';
  return undefined;
}

/**
 * The service controller's part of one router. A Node change is no key of its own: it makes a round of every
 * LoadBalancer Service's key (the set of Nodes that may take their traffic changed), which the relay takes after a
 * short wait (ChangeRouterOptions.nodeSetChanged), so a burst of Node changes is one round. Keeping the round
 * honest takes state across objects: the LoadBalancer Services, the newest revisions that concern them, and what
 * the changes of the round were.
 */
class ServiceRouting implements ControllerRouting {
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
   * What the Node-set changes since the last round (`takeRound`) were, seen after a full list of the Nodes:
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

  readonly routes: Record<string, KindRoute>;

  constructor(private readonly context: ControllerContext) {
    this.routes = {
      [NODE_KIND.name]: {
        changed: (change, outcome) => this.nodeChanged(change, outcome),
        removed: (key) => this.nodeRemoved(key),
        // A resend needs no round: every LoadBalancer Service's own key is sent again.
        resend: false,
      },
      [SERVICE_KIND.name]: {
        observed: (key, object, outcome) => this.serviceIndexed(outcome, key, object),
        changed: (change, outcome) => context.send(outcome, [context.ownKey(change)]),
        removed: (key) => {
          this.loadBalancers.delete(key);
          this.labelSelecting.delete(key);
          return false;
        },
      },
      [ENDPOINT_SLICE_KIND.name]: { changed: (change, outcome) => context.send(outcome, this.sliceKeys(change)) },
    };
  }

  listFinished(kind: string): void {
    if (kind === NODE_KIND.name) this.nodesListed = true;
  }

  /**
   * The keys of every LoadBalancer Service: the set of Nodes that may take their traffic changed. Hinted as a
   * round of joins only, of leaves only, or of both, when every change since the last round was one (see
   * `nodeSetRound`).
   */
  roundKeys(): KeyMessage[] {
    const keys: KeyMessage[] = [];
    if (this.nodeSetRevision === undefined) return keys;
    const hint = this.nodeSetHint(ROUND_SOURCES[this.nodeSetRound ?? 'joined']);
    for (const [key, { uid }] of this.loadBalancers) {
      const { namespace, name } = splitObjectKey(SERVICE_KIND, key);
      keys.push({ kind: 'Service', namespace, name, hint: uid ? { ...hint, uid } : hint });
    }
    return keys;
  }

  takeRound(): KeyMessage[] {
    const keys = this.roundKeys();
    this.nodeSetRound = undefined;
    const now = this.context.now();
    for (const [key, at] of this.leftRecently) if (now - at >= LEFT_RECENTLY_MS) this.leftRecently.delete(key);
    for (const key of this.leftThisRound) this.leftRecently.set(key, now);
    this.leftThisRound.clear();
    return keys;
  }

  /** A Node's load balancer fingerprint changed, or a Node it read (or that left recently) was deleted. */
  private nodeChanged(change: Change, outcome: ChangeOutcome): ChangeOutcome {
    const { key, object, before, value } = change;
    if (change.event !== 'changed' || !object) return this.nodeSetChanged(outcome, key, change.hint, undefined);
    if (this.onlyUnselectedLabels(key, object, before, value)) return outcome;
    return this.nodeSetChanged(outcome, key, change.hint, nodeTransition(object, before, value));
  }

  /** Note a Node-set change in the round; signal the round unless no LoadBalancer Service would hear of it. */
  private nodeSetChanged(
    outcome: ChangeOutcome,
    key: string,
    hint: KeyHint,
    /** A Node that just became a load balancer candidate or ceased to be one (for the round's hint). */
    transition: NodeTransition | undefined,
  ): ChangeOutcome {
    // Remembered even while no LoadBalancer Service is known: one indexed later still needs it.
    const order = compareResourceVersions(this.nodeSetRevision, hint.resourceVersion);
    if (order === undefined || order < 0) this.nodeSetRevision = hint.resourceVersion;
    const change = transition && this.nodesListed ? transition : 'mixed';
    this.nodeSetRound = roundWith(this.nodeSetRound, change);
    if (change === 'left') this.leftThisRound.add(key);
    if (this.loadBalancers.size === 0) return outcome;
    if (!this.context.allows()) return outcome === 'forwarded' ? outcome : 'held';
    this.context.roundDue();
    return 'forwarded';
  }

  /**
   * A Node is gone. It sends a round even when it was no candidate when it went, if it left the targets in the
   * round not yet taken, or in one taken less than LEFT_RECENTLY_MS ago: the pass of its round of leaves may list
   * the Nodes without it.
   */
  private nodeRemoved(key: string): boolean {
    this.nodeInstances.delete(key);
    if (this.leftThisRound.delete(key)) return true;
    const at = this.leftRecently.get(key);
    this.leftRecently.delete(key);
    return at !== undefined && this.context.now() - at < LEFT_RECENTLY_MS;
  }

  /** Service keys for a node-set change: MODIFIED (the Service did not change), at the newest Node revision. */
  private nodeSetHint(source: string = NODE_SET_HINT_SOURCE): KeyHint {
    return { eventType: 'MODIFIED', resourceVersion: this.nodeSetRevision ?? '', source };
  }

  /** A slice's Service's key, for a LoadBalancer with IP targets; the slice's revision is kept for any Service. */
  private sliceKeys(change: Change): KeyMessage[] {
    const { owner: service, hint } = change;
    if (!service) return [];
    const { namespace } = splitObjectKey(ENDPOINT_SLICE_KIND, change.key);
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
        : { eventType: 'MODIFIED', resourceVersion: hint.resourceVersion, source: `${HINT_SOURCE}/EndpointSlice` };
    if (loadBalancer.uid) serviceHint.uid = loadBalancer.uid;
    return [{ kind: 'Service', namespace, name: service, hint: serviceHint }];
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
    const { namespace, name } = splitObjectKey(SERVICE_KIND, key);
    const hint: KeyHint =
      targets === 'instance'
        ? this.nodeSetHint()
        : { eventType: 'MODIFIED', resourceVersion: revision, source: `${HINT_SOURCE}/EndpointSlice` };
    if (uid) hint.uid = uid;
    return this.context.send(outcome, [{ kind: 'Service', namespace, name, hint }]);
  }

  /**
   * A Node's load balancer fingerprint changed (`before` to `value`): whether only its labels did, while no
   * LoadBalancer Service picks Nodes by label, so no load balancer's targets or rules change. A Service that starts
   * picking by label gets its own key, whose pass reads every Node; from then on label changes are sent.
   */
  private onlyUnselectedLabels(key: string, object: KubeObject, before: number, value: number): boolean {
    const previous = this.nodeInstances.get(key);
    const instance = value === NOT_RELEVANT ? undefined : fingerprint(nodeTargetInstance(object));
    if (instance === undefined) this.nodeInstances.delete(key);
    else this.nodeInstances.set(key, instance);
    return before !== NOT_RELEVANT && instance !== undefined && instance === previous && this.labelSelecting.size === 0;
  }
}

/** A Node is a round of every LoadBalancer Service's keys; a Service its own key; a slice its Service's key. */
export const serviceController = {
  queueUrlVariable: 'SERVICE_QUEUE_URL',
  migrationNames: ['service', 'service-controller', 'service-lb-controller'],
  rules: [
    { kind: NODE_KIND, onDelete: true, reads: nodeTargetReads },
    { kind: SERVICE_KIND, onDelete: true, reads: serviceReads },
    { kind: ENDPOINT_SLICE_KIND, onDelete: true, reads: endpointSliceReads },
  ],
  routing: (context) => new ServiceRouting(context),
} as const satisfies ControllerModule;
