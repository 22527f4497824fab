import type { LoadBalancerContext, ResourceChange, SettingNames } from '../../shared/load-balancers/context.ts';
import { ANNOTATION, serviceOwner } from './annotations.ts';
import { AnnotationError } from './deps.ts';
import { EVENT } from './kube.ts';
import type { Pass } from './writes.ts';

/**
 * A Service pass as the resource modules of shared/load-balancers see it (docs/adr/0013-load-balancer-resource-modules.md):
 * the pass's recorded ports (so their writes still say "Ensuring" and count in the metrics), the cluster, the
 * Service as the owner of every resource, the batch's shared reads, and the Service's way of speaking: problems are
 * AnnotationErrors naming its annotations, changes are Events on it.
 */
export function resourceContext(pass: Pass): LoadBalancerContext {
  const { deps } = pass;
  return {
    ec2: pass.ec2,
    elbv2: pass.elbv2,
    clusterName: deps.clusterName,
    vpcId: deps.vpcId,
    nodePortRange: deps.nodePortRange,
    owner: serviceOwner(pass.serviceKey),
    reads: pass.batch,
    endpointSlices: (namespace, name) => deps.kube.listEndpointSlices(namespace, name),
    metrics: deps.metrics,
    settings: SERVICE_SETTING_NAMES,
    userError: (message) => new AnnotationError(message),
    announce: (change) => announce(change, pass),
  };
}

/** The annotations a Service sets the resource modules' settings with. */
const SERVICE_SETTING_NAMES: SettingNames = {
  subnets: ANNOTATION.subnets,
  ipAddressType: ANNOTATION.ipAddressType,
  eipAllocations: ANNOTATION.eipAllocations,
  privateIpv4Addresses: ANNOTATION.privateIpv4Addresses,
  securityGroups: ANNOTATION.securityGroups,
  extraSecurityGroups: ANNOTATION.extraSecurityGroups,
};

/** A change the resource modules made, as an Event on the Service. */
function announce(change: ResourceChange, pass: Pass): Promise<void> {
  const differences = change.differences.map((d) => `${d.what} ${d.from} -> ${d.to}`);
  return pass.event(
    'Normal',
    EVENT.replacing,
    `Replacing target group ${change.from} with ${change.to} on port ${change.listenerPort}${differences.length ? ` (${differences.join(', ')})` : ''}`,
  );
}
