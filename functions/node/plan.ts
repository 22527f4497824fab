import type { Instance } from '../../shared/aws/ec2-port.ts';
import { providerIdFor } from '../../shared/aws/provider-id.ts';
import { TAINT_UNINITIALIZED, withoutTaint } from '../../shared/k8s/node-helpers.ts';
import type { MergePatch, Node } from '../../shared/k8s/types.ts';

/**
 * The node reconciler's pure step: what initializing a Node writes. The addresses it keeps current follow
 * shared/nodes/addresses.ts (shared with the resync's node sweep). Pure: table-tested.
 */

export const LABEL_INSTANCE_TYPE = 'node.kubernetes.io/instance-type';
export const LABEL_ZONE = 'topology.kubernetes.io/zone';
export const LABEL_REGION = 'topology.kubernetes.io/region';
export const LABEL_ZONE_ID = 'topology.k8s.aws/zone-id';
export const LABEL_BETA_INSTANCE_TYPE = 'beta.kubernetes.io/instance-type';
export const LABEL_BETA_ZONE = 'failure-domain.beta.kubernetes.io/zone';
export const LABEL_BETA_REGION = 'failure-domain.beta.kubernetes.io/region';

export interface InitFacts {
  instance: Instance;
  zoneId: string | undefined;
  region: string;
}

/**
 * The metadata/spec patch that initializes a Node: providerID, topology and instance-type labels
 * (GA and beta names; a label already present is never overwritten), and the uninitialized taint removed.
 */
export function initializationPatch(node: Node, facts: InitFacts): MergePatch<Node> {
  const { instance, zoneId, region } = facts;
  const wanted: Record<string, string | undefined> = {
    [LABEL_INSTANCE_TYPE]: instance.instanceType,
    [LABEL_BETA_INSTANCE_TYPE]: instance.instanceType,
    [LABEL_ZONE]: instance.availabilityZone,
    [LABEL_BETA_ZONE]: instance.availabilityZone,
    [LABEL_REGION]: region,
    [LABEL_BETA_REGION]: region,
    [LABEL_ZONE_ID]: zoneId,
  };
  const existing = node.metadata.labels ?? {};
  const labels = Object.fromEntries(
    Object.entries(wanted).filter((e): e is [string, string] => e[1] !== undefined && !(e[0] in existing)),
  );
  const patch: MergePatch<Node> = {
    spec: { taints: withoutTaint(node, TAINT_UNINITIALIZED) },
  };
  if (!node.spec?.providerID) patch.spec!.providerID = providerIdFor(instance.availabilityZone, instance.instanceId);
  if (Object.keys(labels).length > 0) patch.metadata = { labels };
  return patch;
}
