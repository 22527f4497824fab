import { INSTANCE_ID_PATTERN } from './ec2-port.ts';

/**
 * AWS provider IDs: `aws:///<availability-zone>/<instance-id>` as we write them; `aws:////<id>`
 * (empty zone) and a bare `i-...` are accepted too (docs/reference.md "Nodes").
 * Returns undefined for anything that is not an AWS instance provider ID.
 */
export function instanceIdFromProviderId(providerId: string | undefined): string | undefined {
  if (!providerId) return undefined;
  if (INSTANCE_ID_PATTERN.test(providerId)) return providerId;
  // A zone name is short (`eu-west-1a`, `us-east-1-bos-1a`): a long one is no zone, and its ID no instance of ours.
  const match = /^aws:\/\/\/(?:[a-z0-9-]{0,64}\/)?(i-[0-9a-f]+)$/.exec(providerId);
  return match && INSTANCE_ID_PATTERN.test(match[1]!) ? match[1] : undefined;
}

export function providerIdFor(availabilityZone: string, instanceId: string): string {
  return `aws:///${availabilityZone}/${instanceId}`;
}

/** Resource-based host names (`i-0123456789abcdef0.eu-west-1.compute.internal`): the ID up to the first dot. */
export function instanceIdFromNodeName(nodeName: string): string | undefined {
  if (!nodeName.startsWith('i-')) return undefined;
  const id = nodeName.split('.')[0]!;
  return INSTANCE_ID_PATTERN.test(id) ? id : undefined;
}
