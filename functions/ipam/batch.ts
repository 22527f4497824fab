import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { isWindowsNode, VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';
import type { ConfigMap } from '../../shared/k8s/ipam-port.ts';
import { readNode } from '../../shared/k8s/node-ops.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { isNodeKey, type ObjectKey } from '../../shared/queue/message.ts';
import type { ReconcileContext } from '../../shared/queue/runner.ts';
import type { IpamDeps } from './deps.ts';
import { type Observation, observeInterfaces, VERIFY_AFTER_SECONDS } from './observe.ts';
import type { PoolRecord } from './record.ts';
import { readRecord } from './record.ts';
import { parseSettings } from './settings.ts';

/**
 * What every Node of a batch shares, read once: the VPC CNI ConfigMap, the Nodes, and EC2's view of the primary
 * interface of each Node whose pass must look at EC2 (a resync round sends every Windows Node at once: one
 * DescribeInstances and one DescribeNetworkInterfaces for the batch, not one of each per Node).
 */
export interface IpamBatch {
  /** undefined: the ConfigMap does not exist. */
  configMap: ConfigMap | undefined;
  /** By name; undefined: the Node is gone. A key missing here is read by its pass. */
  nodes: Map<string, Node | undefined>;
  /** By instance ID, for the Nodes whose journal is not to be trusted alone (`journalTrusted`). */
  observations: Map<string, Observation>;
}

export async function prepareIpamBatch(
  keys: readonly ObjectKey[],
  deps: IpamDeps,
  contexts: readonly ReconcileContext[] = [],
): Promise<IpamBatch> {
  const passes = keys.flatMap((key, i) => (isNodeKey(key) ? [{ name: key.name, context: contexts[i] }] : []));
  const batch: IpamBatch = { configMap: undefined, nodes: new Map(), observations: new Map() };
  if (passes.length === 0) return batch;
  const [configMap, nodes] = await Promise.all([
    kubeCall('reading the VPC CNI ConfigMap', () =>
      deps.pods.getConfigMap(VPC_CNI_CONFIGMAP.namespace, VPC_CNI_CONFIGMAP.name),
    ),
    Promise.all(passes.map(({ name }) => readNode(deps.kube, name))),
  ]);
  batch.configMap = configMap;
  for (const [i, { name }] of passes.entries()) batch.nodes.set(name, nodes[i]);
  // Off: no pass looks at EC2 (ConfigMap problems are reported by each pass).
  if (!parseSettings(configMap).settings.enabled) return batch;
  const now = Math.floor(deps.clock.now() / 1000);
  const unverified = passes.flatMap(({ name, context }) => {
    const node = batch.nodes.get(name);
    if (!node || !isWindowsNode(node)) return [];
    const instanceId = instanceIdFromProviderId(node.spec?.providerID);
    const trusted = journalTrusted(readRecord(node.metadata.annotations), context, now);
    return instanceId && !trusted ? [instanceId] : [];
  });
  if (unverified.length > 0) batch.observations = await observeInterfaces(deps.ec2, deps.facts, unverified);
  return batch;
}

/**
 * Whether a pass may go by the journal alone: it exists with the interface's facts (a journal written before one
 * of them was kept is completed by one look at EC2), EC2 was looked at less than
 * VERIFY_AFTER_SECONDS ago, and the key is neither a resync nor a retry (the previous pass may have stopped between
 * EC2 and the journal).
 */
export function journalTrusted(
  journal: PoolRecord | undefined,
  context: ReconcileContext | undefined,
  now: number,
): journal is PoolRecord {
  return (
    journal?.eni !== undefined &&
    journal.slots !== undefined &&
    journal.nitro !== undefined &&
    journal.primary !== undefined &&
    journal.prefixLength !== undefined &&
    (journal.verifiedAt ?? 0) + VERIFY_AFTER_SECONDS > now &&
    (context?.receiveCount ?? 1) <= 1 &&
    !(context?.hints ?? []).some((h) => h.eventType === 'RESYNC')
  );
}

/** A Kubernetes call whose errors leave as controller errors (retryable, throttled or terminal). */
export async function kubeCall<T>(doing: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw classifyKubernetesError(doing, err);
  }
}
