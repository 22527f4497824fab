import { clusterTagKey } from '../../shared/aws/ownership.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../shared/queue/runner.ts';
import type { IpamDeps } from './deps.ts';

/**
 * Network interfaces this controller creates carry the cluster tag (`owned`) and `OWNER_TAG=ipam`. One left
 * `available` (attached to nothing) is deleted only when the previous sweep saw it `available` too, as the VPC
 * resource controller does: an interface just created and about to be attached is never taken. The first sighting
 * is written on the interface itself (`SEEN_AVAILABLE_TAG`, the sweep's time), so the rule survives restarts; an
 * interface attached again loses the mark. Only interfaces in `vpcId` are looked at.
 */
export const OWNER_TAG = 'serverless-ccm/owner';
export const OWNER_VALUE = 'ipam';
export const SEEN_AVAILABLE_TAG = 'serverless-ccm/seen-available';

/** The tags every network interface this controller creates must carry. */
export function interfaceOwnershipTags(clusterName: string): Record<string, string> {
  return { [clusterTagKey(clusterName)]: 'owned', [OWNER_TAG]: OWNER_VALUE };
}

export async function sweepInterfaces(deps: IpamDeps): Promise<ReconcileResult | undefined> {
  if (!deps.vpcId) {
    deps.log.warn('network interface garbage collection skipped: VPC_ID is not set');
    return undefined;
  }
  const ours = await deps.ec2.describeNetworkInterfaces({
    vpcId: deps.vpcId,
    tags: interfaceOwnershipTags(deps.clusterName),
  });
  const now = new Date(deps.clock.now()).toISOString();
  const firstSeen: string[] = [];
  const attachedAgain: string[] = [];
  for (const eni of ours) {
    const seen = eni.tags[SEEN_AVAILABLE_TAG];
    if (eni.status !== 'available') {
      if (seen !== undefined) attachedAgain.push(eni.networkInterfaceId);
      continue;
    }
    if (seen === undefined) {
      firstSeen.push(eni.networkInterfaceId);
      continue;
    }
    const result = await deps.ec2.deleteNetworkInterface(eni.networkInterfaceId);
    if (result === 'deleted') deps.metrics.count(MetricName.IpamInterfacesDeleted);
    deps.log.info('deleted a leaked network interface', {
      eni: eni.networkInterfaceId,
      availableSince: seen,
      result,
    });
  }
  if (firstSeen.length > 0) await deps.ec2.createTags(firstSeen, { [SEEN_AVAILABLE_TAG]: now });
  if (attachedAgain.length > 0) await deps.ec2.deleteTags(attachedAgain, [SEEN_AVAILABLE_TAG]);
  return undefined;
}
