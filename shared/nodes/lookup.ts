import { instanceIdFromNodeName, instanceIdFromProviderId } from '../aws/provider-id.ts';
import type { Node } from '../k8s/types.ts';

/**
 * How the instance behind a Node is looked up (docs/reference.md "Nodes"): the node reconciler (functions/node)
 * reads EC2 by it, and the resync's node sweep (functions/resync/node-sweep.ts) finds the Node's instance in its
 * list the same way. Here, not in functions/node, because a producer never imports a reconciler.
 */
export type Lookup = { by: 'id'; instanceId: string } | { by: 'dns'; name: string } | { by: 'none'; why: string };

export function lookupFor(node: Node): Lookup {
  if (node.spec?.providerID) {
    const instanceId = instanceIdFromProviderId(node.spec.providerID);
    return instanceId
      ? { by: 'id', instanceId }
      : { by: 'none', why: `providerID ${node.spec.providerID} is not an AWS instance` };
  }
  const fromName = instanceIdFromNodeName(node.metadata.name);
  if (fromName) return { by: 'id', instanceId: fromName };
  return { by: 'dns', name: node.metadata.name };
}
