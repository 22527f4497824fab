import {
  BETA_OS_LABEL,
  IPV4_RESOURCE,
  isFinished,
  isWindowsNode,
  OS_LABEL,
  POD_IP_ANNOTATION,
  requestsPodAddress,
  VPC_CNI_CONFIGMAP,
} from '../../../shared/k8s/ipam-names.ts';
import type { Pod } from '../../../shared/k8s/types.ts';
import type { KeyHint, KeyMessage } from '../../../shared/queue/message.ts';
import { NOT_RELEVANT, sortedEntries } from '../fingerprint.ts';
import { compareResourceVersions, type KindInfo, type KubeObject } from '../kube-object.ts';
import {
  type ChangeOutcome,
  type ControllerContext,
  type ControllerModule,
  type ControllerRouting,
  HINT_SOURCE,
} from './module.ts';
import { asNode, NODE_KIND } from './node-kind.ts';

/**
 * functions/ipam: Windows Nodes and the VPC addresses of their Pods. Every key is a Node's: the Node's address pool
 * is what changes, one FIFO group per Node.
 */

/**
 * Only Pods the scheduler has bound: IP allocation starts once a Pod has a Node. With a field selector the watch
 * reports a Pod as ADDED when it starts to match (bound), so no bind is missed. The owner kept per Pod is its Node,
 * to send that Node a key when a relist finds the Pod gone.
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
 */
export const POD_KIND = {
  name: 'Pod',
  path: '/api/v1/pods',
  namespaced: true,
  fieldSelector: 'spec.nodeName!=',
  owner: (object: KubeObject) => (object.spec as { nodeName?: string } | undefined)?.nodeName,
} as const satisfies KindInfo;

/**
 * Only the VPC CNI's ConfigMap, which switches Windows IPAM on and sizes its pool: RBAC grants list and watch of
 * that one name (deploy/relay/rbac-ipam.yaml), which the API server authorizes only for requests selecting it by
 * `metadata.name`.
 * https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources
 */
export const CONFIG_MAP_KIND = {
  name: 'ConfigMap',
  path: `/api/v1/namespaces/${VPC_CNI_CONFIGMAP.namespace}/configmaps`,
  namespaced: true,
  fieldSelector: `metadata.name=${VPC_CNI_CONFIGMAP.name}`,
} as const satisfies KindInfo;

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp);

/**
 * Windows Nodes: whether the Node is Windows, its instance, and the address capacity it advertises (the reconciler
 * advertises it again when it went missing). The pool the reconciler records on the Node (annotation
 * `serverless-ccm/ipam-pool`) is left out: forwarding its own writes back would loop.
 */
export function windowsNodeAddressReads(object: KubeObject): unknown[] | undefined {
  const node = asNode(object);
  if (!isWindowsNode(node)) return undefined;
  const labels = node.metadata.labels ?? {};
  return [
    node.metadata.uid,
    labels[OS_LABEL],
    labels[BETA_OS_LABEL],
    node.spec?.providerID,
    node.status?.capacity?.[IPV4_RESOURCE],
    node.status?.allocatable?.[IPV4_RESOURCE],
    deleting(object),
  ];
}

/**
 * Pods: a Pod bound to a Node that asks for a VPC address (the resource the mutating webhook adds) or holds one
 * (the annotation) needs one; a finished or deleted one gives it back. Host-network Pods use the Node's address.
 * Container statuses, conditions and restarts (most Pod updates) are left out.
 */
export function podAddressReads(object: KubeObject): unknown[] | undefined {
  const pod = object as unknown as Pod;
  const nodeName = pod.spec?.nodeName;
  if (!nodeName || pod.spec?.hostNetwork) return undefined;
  const address = pod.metadata?.annotations?.[POD_IP_ANNOTATION];
  if (address === undefined && !requestsPodAddress(pod)) return undefined;
  // Not the address itself: the controller writes it, and hearing its own write back would double every pass. Only
  // the controller may write it (the validating webhook), and what it wrote is in its journal on the Node.
  return [pod.metadata?.uid, nodeName, isFinished(pod), deleting(object)];
}

/** The VPC CNI's ConfigMap: its keys switch Windows IPAM on and size the warm pool. */
export function vpcCniConfigReads(object: KubeObject): unknown[] | undefined {
  const configMap = object as ConfigMapObject;
  const { namespace, name } = configMap.metadata ?? {};
  if (namespace !== VPC_CNI_CONFIGMAP.namespace || name !== VPC_CNI_CONFIGMAP.name) return undefined;
  return [configMap.metadata?.uid, sortedEntries(configMap.data)];
}

/** The Node's key for a change of one of its Pods: MODIFIED (the Node did not change), at the Pod's revision. */
function podNodeKey(node: string, hint: KeyHint): KeyMessage {
  const nodeHint: KeyHint =
    hint.eventType === 'RESYNC'
      ? hint
      : { eventType: 'MODIFIED', resourceVersion: hint.resourceVersion, source: `${HINT_SOURCE}/Pod` };
  return { kind: 'Node', name: node, hint: nodeHint };
}

/** IPAM's part of one router: the revision of the node-wide settings, which every Windows Node's key carries. */
function ipamRouting(context: ControllerContext): ControllerRouting {
  /**
   * The newest revision of the VPC CNI ConfigMap's changes since this router started. A Node indexed later (listed
   * after it) gets a key with it too: the Node's own key may be a repeat SQS drops, sent before the ConfigMap changed.
   */
  let nodeWideRevision: string | undefined;

  const nodeWideHint = (): KeyHint => ({
    eventType: 'MODIFIED',
    resourceVersion: nodeWideRevision ?? '',
    source: `${HINT_SOURCE}/ConfigMap`,
  });

  /** A Node that now concerns IPAM also gets a key for the newest change of the settings every such Node reads. */
  const nodeIndexed = (outcome: ChangeOutcome, name: string): ChangeOutcome => {
    if (nodeWideRevision === undefined) return outcome;
    return context.send(outcome, [{ kind: 'Node', name, hint: nodeWideHint() }]);
  };

  /**
   * The key of every Windows Node (those IPAM's Node rule reads), for a change of the settings they all depend on;
   * the Nodes did not change (so MODIFIED), the ConfigMap's revision orders it.
   */
  const windowsNodeKeys = (hint: KeyHint): KeyMessage[] => {
    if (hint.eventType === 'RESYNC') return [];
    const order = compareResourceVersions(nodeWideRevision, hint.resourceVersion);
    if (order === undefined || order < 0) nodeWideRevision = hint.resourceVersion ?? '';
    const nodeHint = nodeWideHint();
    return context.readKeys(NODE_KIND.name).map((name): KeyMessage => ({ kind: 'Node', name, hint: nodeHint }));
  };

  return {
    routes: {
      Node: {
        changed: (change, outcome) => {
          const sent = context.send(outcome, [context.ownKey(change)]);
          return change.event === 'changed' && change.before === NOT_RELEVANT ? nodeIndexed(sent, change.key) : sent;
        },
      },
      Pod: {
        changed: (change, outcome) => {
          // A listed Node is one key per list, not one per Pod (its Pods are listed one after another).
          const keys = change.owner ? [podNodeKey(change.owner, change.hint)] : [];
          let sent = context.sendAfterList(change.kind, outcome, keys);
          // A Pod that moved (deleted and created again under its name on another Node while no watch was open):
          // the Node it left has an address to take back.
          const { before, owner, formerOwner } = change;
          if (change.event === 'changed' && before !== NOT_RELEVANT && formerOwner && formerOwner !== owner) {
            sent = context.send(sent, [podNodeKey(formerOwner, change.hint)]);
          }
          return sent;
        },
      },
      // A resend needs none: every Windows Node's own key is sent again.
      ConfigMap: { changed: (change, outcome) => context.send(outcome, windowsNodeKeys(change.hint)), resend: false },
    },
  };
}

export const ipamController = {
  queueUrlVariable: 'IPAM_QUEUE_URL',
  // No in-tree counterpart, so no migration lock to wait for.
  migrationNames: [],
  rules: [
    { kind: NODE_KIND, onDelete: true, reads: windowsNodeAddressReads },
    { kind: POD_KIND, onDelete: true, reads: podAddressReads },
    { kind: CONFIG_MAP_KIND, onDelete: true, reads: vpcCniConfigReads },
  ],
  routing: ipamRouting,
} as const satisfies ControllerModule;
