import type {
  CreateLoadBalancerInput,
  CreateLoadBalancerOutput,
  DeleteLoadBalancerInput,
  DescribeLoadBalancerAttributesInput,
  DescribeLoadBalancerAttributesOutput,
  DescribeLoadBalancersInput,
  DescribeLoadBalancersOutput,
  ModifyLoadBalancerAttributesInput,
  ModifyLoadBalancerAttributesOutput,
  SubnetMapping as SdkSubnetMapping,
  SetIpAddressTypeInput,
  SetIpAddressTypeOutput,
  SetSecurityGroupsInput,
  SetSecurityGroupsOutput,
  SetSubnetsInput,
  SetSubnetsOutput,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import {
  isValidElbName,
  type LoadBalancer,
  type LoadBalancerIpAddressType,
  type SubnetMapping,
} from '../../elbv2-port.ts';
import { checkApplicationSubnets, defaultSecurityGroups } from './application.ts';
import { sdkLoadBalancer } from './shapes.ts';
import type { Elbv2State, FakeLoadBalancer } from './state.ts';
import {
  acceptOnly,
  attributesOfRequest,
  checkListSize,
  checkTagCount,
  elbv2Failure,
  page,
  required,
  sdkAttributes,
  tagsOfRequest,
} from './wire.ts';

/** The load balancer calls of the fake ELBv2 API: Network and Application Load Balancers (application.ts). */

/** DescribeLoadBalancers takes at most 20 names or ARNs. */
const MAX_DESCRIBED = 20;

/**
 * By names (any case) or ARNs, or every load balancer, in pages. One name or ARN it does not know fails the whole
 * call with LoadBalancerNotFound. Each load balancer answered is one look at it: provisioning ends after
 * `provisioningDescribes` looks or `provisioningMs`.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeLoadBalancers.html
 */
export function describeLoadBalancers(elb: Elbv2State, input: DescribeLoadBalancersInput): DescribeLoadBalancersOutput {
  acceptOnly('DescribeLoadBalancers', input, ['LoadBalancerArns', 'Names', 'Marker', 'PageSize']);
  const { Names, LoadBalancerArns } = input;
  if (Names && LoadBalancerArns) {
    throw elbv2Failure(
      'ValidationError',
      'Load balancer names and load balancer ARNs cannot be specified at the same time',
    );
  }
  checkListSize(Names, 'names', MAX_DESCRIBED);
  checkListSize(LoadBalancerArns, 'loadBalancerArns', MAX_DESCRIBED);
  let found = [...elb.loadBalancers.values()];
  if (Names) {
    const missing = Names.filter((name) => !elb.byName(name));
    if (missing.length > 0)
      throw elbv2Failure('LoadBalancerNotFound', `Load balancers '[${missing.join(', ')}]' not found`);
    found = found.filter((lb) => Names.some((name) => name.toLowerCase() === lb.lb.name.toLowerCase()));
  } else if (LoadBalancerArns) {
    if (LoadBalancerArns.some((arn) => !elb.loadBalancers.has(arn))) loadBalancersNotFound();
    found = found.filter((lb) => LoadBalancerArns.includes(lb.lb.arn));
  }
  const { items, NextMarker } = page('DescribeLoadBalancers', input, found);
  for (const lb of items) elb.lookAt(lb);
  return { LoadBalancers: items.map(sdkLoadBalancer), ...(NextMarker ? { NextMarker } : {}) };
}

function loadBalancersNotFound(): never {
  throw elbv2Failure('LoadBalancerNotFound', 'One or more load balancers not found');
}

function subnetMappingsOf(input: { SubnetMappings?: SdkSubnetMapping[]; Subnets?: string[] }): SubnetMapping[] {
  if (input.SubnetMappings && input.Subnets) {
    throw elbv2Failure('ValidationError', 'You can specify subnets or subnet mappings, not both');
  }
  const mappings: SdkSubnetMapping[] = input.SubnetMappings ?? (input.Subnets ?? []).map((SubnetId) => ({ SubnetId }));
  return mappings.map((m) => {
    acceptOnly('SubnetMapping', m, ['SubnetId', 'AllocationId', 'PrivateIPv4Address']);
    return {
      subnetId: required(m.SubnetId, 'subnetMappings.member.subnetId'),
      ...(m.AllocationId ? { allocationId: m.AllocationId } : {}),
      ...(m.PrivateIPv4Address ? { privateIPv4Address: m.PrivateIPv4Address } : {}),
    };
  });
}

function ipAddressTypeOf(value: string | undefined, type: 'network' | 'application'): LoadBalancerIpAddressType {
  if (value === undefined || value === 'ipv4' || value === 'dualstack') return value ?? 'ipv4';
  // `dualstack-without-public-ipv4` is for Application Load Balancers only.
  if (type === 'application' && value === 'dualstack-without-public-ipv4') {
    throw new Error(`FakeElbv2 does not model the IP address type ${value}`);
  }
  throw elbv2Failure('ValidationError', `IP address type '${value}' is not supported by Network Load Balancers`);
}

/**
 * A Network Load Balancer, `provisioning` at first. Idempotent: "If you attempt to create multiple load balancers
 * with the same settings, each call succeeds"; the same name with other settings is DuplicateLoadBalancerName.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 */
export function createLoadBalancer(elb: Elbv2State, input: CreateLoadBalancerInput): CreateLoadBalancerOutput {
  acceptOnly('CreateLoadBalancer', input, [
    'Name',
    'Type',
    'Scheme',
    'IpAddressType',
    'SubnetMappings',
    'Subnets',
    'SecurityGroups',
    'Tags',
  ]);
  // Without a Type, ELBv2 makes an Application Load Balancer; gateway load balancers are not modeled.
  const type = input.Type ?? 'application';
  if (type !== 'network' && type !== 'application') {
    throw new Error(`FakeElbv2 does not model load balancers of type ${type}`);
  }
  const name = required(input.Name, 'name');
  if (!isValidElbName(name)) throw elbv2Failure('ValidationError', `The load balancer name '${name}' is not valid`);
  const scheme: LoadBalancer['scheme'] = input.Scheme === 'internal' ? 'internal' : 'internet-facing';
  const ipAddressType = ipAddressTypeOf(input.IpAddressType, type);
  const subnetMappings = subnetMappingsOf(input);
  const given = [...(input.SecurityGroups ?? [])];
  const securityGroups =
    type === 'application' && given.length === 0 ? defaultSecurityGroups(elb, subnetMappings) : given;
  const tags = tagsOfRequest(input.Tags);
  checkTagCount(tags);
  const existing = elb.byName(name);
  if (existing) {
    const same =
      existing.lb.type === type &&
      existing.lb.scheme === scheme &&
      existing.lb.ipAddressType === ipAddressType &&
      sameSet(
        existing.lb.subnets.map((s) => s.subnetId),
        subnetMappings.map((s) => s.subnetId),
      ) &&
      sameSet(existing.lb.securityGroups, securityGroups);
    if (!same)
      throw elbv2Failure(
        'DuplicateLoadBalancerName',
        `A load balancer with the same name '${name}' exists, but with different settings`,
      );
    return { LoadBalancers: [sdkLoadBalancer(existing)] };
  }
  elb.checkSubnets(scheme, subnetMappings);
  if (type === 'application') checkApplicationSubnets(elb, subnetMappings);
  if (ipAddressType === 'dualstack') elb.checkDualStackSubnets(subnetMappings);
  elb.checkSecurityGroups(securityGroups);
  const created = elb.newLoadBalancer({ name, type, scheme, ipAddressType, subnetMappings, securityGroups, tags });
  return { LoadBalancers: [sdkLoadBalancer(created)] };
}

/**
 * Deletes its listeners too; its network interfaces hold its security groups in EC2 for `eniDrainMs`. "If the
 * load balancer does not exist or has already been deleted, the call succeeds."
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteLoadBalancer.html
 */
export function deleteLoadBalancer(elb: Elbv2State, input: DeleteLoadBalancerInput): object {
  acceptOnly('DeleteLoadBalancer', input, ['LoadBalancerArn']);
  const arn = required(input.LoadBalancerArn, 'loadBalancerArn');
  const found = elb.loadBalancers.get(arn);
  if (!found) return {};
  if (found.attributes['deletion_protection.enabled'] === 'true') {
    throw elbv2Failure(
      'OperationNotPermitted',
      `Load balancer '${arn}' cannot be deleted because deletion protection is enabled`,
    );
  }
  for (const listener of elb.listenersOf(arn)) elb.forgetListener(listener.arn);
  elb.loadBalancers.delete(arn);
  elb.ec2?.releaseSecurityGroups(arn, elb.eniDrainMs);
  return {};
}

/**
 * Only on a Network Load Balancer created with security groups.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
 */
export function setSecurityGroups(elb: Elbv2State, input: SetSecurityGroupsInput): SetSecurityGroupsOutput {
  acceptOnly('SetSecurityGroups', input, ['LoadBalancerArn', 'SecurityGroups']);
  const found = elb.lbOrThrow(required(input.LoadBalancerArn, 'loadBalancerArn'));
  const groups = [...required(input.SecurityGroups, 'securityGroups')];
  if (found.lb.type === 'network' && found.lb.securityGroups.length === 0) {
    throw elbv2Failure(
      'InvalidConfigurationRequest',
      'You cannot set security groups on a Network Load Balancer which was created without any security groups',
    );
  }
  elb.checkSecurityGroups(groups);
  found.lb.securityGroups = groups;
  elb.ec2?.holdSecurityGroups(found.lb.arn, groups);
  return { SecurityGroupIds: [...groups] };
}

/**
 * Network Load Balancer semantics: every zone that stays keeps its subnet and addresses (an address left out keeps
 * the one it has); a zone can be added, or removed, which takes `subnetRemovalMs` to complete. Changing a zone's
 * subnet or address is therefore two steps: remove the zone, wait, add it again.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetSubnets.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html
 */
export function setSubnets(elb: Elbv2State, input: SetSubnetsInput): SetSubnetsOutput {
  acceptOnly('SetSubnets', input, ['LoadBalancerArn', 'SubnetMappings', 'Subnets']);
  const found = elb.lbOrThrow(required(input.LoadBalancerArn, 'loadBalancerArn'));
  const mappings = subnetMappingsOf(input);
  elb.checkSubnets(found.lb.scheme, mappings);
  if (found.lb.type === 'application') return setApplicationSubnets(elb, found, mappings);
  const now = elb.clock.now();
  for (const [zone, until] of found.removingZones) if (now >= until) found.removingZones.delete(zone);
  const current = new Map(found.lb.subnets.map((s) => [s.zoneName ?? s.subnetId, s]));
  const next: LoadBalancer['subnets'] = [];
  const added: SubnetMapping[] = [];
  for (const mapping of mappings) {
    const zoneName = elb.zoneOf(mapping.subnetId);
    const zone = zoneName ?? mapping.subnetId;
    const existing = current.get(zone);
    if (existing) {
      checkZoneKept(zone, existing, mapping);
      next.push({ ...existing });
      continue;
    }
    if (found.removingZones.has(zone)) {
      throw elbv2Failure(
        'InvalidConfigurationRequest',
        `A subnet of zone '${zone}' is still being removed from the load balancer; try again later`,
      );
    }
    added.push(mapping);
    next.push({ ...mapping, zoneName });
  }
  if (found.lb.ipAddressType === 'dualstack') elb.checkDualStackSubnets(added);
  const kept = new Set(next.map((s) => s.zoneName ?? s.subnetId));
  for (const zone of current.keys()) if (!kept.has(zone)) found.removingZones.set(zone, now + elb.subnetRemovalMs);
  found.lb.subnets = next;
  return { AvailabilityZones: sdkLoadBalancer(found).AvailabilityZones, IpAddressType: found.lb.ipAddressType };
}

function checkZoneKept(zone: string, existing: SubnetMapping, mapping: SubnetMapping): void {
  const changed =
    existing.subnetId !== mapping.subnetId ||
    (mapping.allocationId !== undefined && mapping.allocationId !== existing.allocationId) ||
    (mapping.privateIPv4Address !== undefined && mapping.privateIPv4Address !== existing.privateIPv4Address);
  if (changed) {
    throw elbv2Failure(
      'InvalidConfigurationRequest',
      `The subnet or address of zone '${zone}' cannot be changed in place: remove the existing subnet first, then add the new one`,
    );
  }
}

/**
 * An Application Load Balancer's subnets are simply replaced: at least two zones, no removal to wait for.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-subnets.html
 */
function setApplicationSubnets(elb: Elbv2State, found: FakeLoadBalancer, mappings: SubnetMapping[]): SetSubnetsOutput {
  checkApplicationSubnets(elb, mappings);
  if (found.lb.ipAddressType === 'dualstack') elb.checkDualStackSubnets(mappings);
  found.lb.subnets = mappings.map((m) => ({ ...m, zoneName: elb.zoneOf(m.subnetId) }));
  return { AvailabilityZones: sdkLoadBalancer(found).AvailabilityZones, IpAddressType: found.lb.ipAddressType };
}

/**
 * `dualstack` needs IPv6 blocks in every subnet; back to `ipv4` is refused while a listener forwards to an IPv6
 * target group ("IPv6 target groups can only be associated with dualstack Network Load Balancers").
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-ip-address-type.html
 */
export function setIpAddressType(elb: Elbv2State, input: SetIpAddressTypeInput): SetIpAddressTypeOutput {
  acceptOnly('SetIpAddressType', input, ['LoadBalancerArn', 'IpAddressType']);
  const found = elb.lbOrThrow(required(input.LoadBalancerArn, 'loadBalancerArn'));
  const ipAddressType = ipAddressTypeOf(
    required(input.IpAddressType, 'ipAddressType'),
    found.lb.type === 'application' ? 'application' : 'network',
  );
  if (ipAddressType === 'dualstack') {
    elb.checkDualStackSubnets(found.lb.subnets);
  } else {
    const ipv6Group = elb
      .listenersOf(found.lb.arn)
      .find((l) => l.targetGroupArn && elb.targetGroups.get(l.targetGroupArn)?.tg.ipAddressType === 'ipv6');
    if (ipv6Group) {
      throw elbv2Failure(
        'InvalidConfigurationRequest',
        `Listener '${ipv6Group.arn}' forwards to an IPv6 target group, which needs a dualstack load balancer`,
      );
    }
  }
  found.lb.ipAddressType = ipAddressType;
  return { IpAddressType: ipAddressType };
}

/** Every attribute, defaults included. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerAttribute.html */
export function describeLoadBalancerAttributes(
  elb: Elbv2State,
  input: DescribeLoadBalancerAttributesInput,
): DescribeLoadBalancerAttributesOutput {
  acceptOnly('DescribeLoadBalancerAttributes', input, ['LoadBalancerArn']);
  return { Attributes: sdkAttributes(elb.lbOrThrow(required(input.LoadBalancerArn, 'loadBalancerArn')).attributes) };
}

/**
 * Only the attributes given change; a key Network Load Balancers do not have is ValidationError, and enabled access
 * logs need a bucket. Answers every attribute.
 */
export function modifyLoadBalancerAttributes(
  elb: Elbv2State,
  input: ModifyLoadBalancerAttributesInput,
): ModifyLoadBalancerAttributesOutput {
  acceptOnly('ModifyLoadBalancerAttributes', input, ['LoadBalancerArn', 'Attributes']);
  const found: FakeLoadBalancer = elb.lbOrThrow(required(input.LoadBalancerArn, 'loadBalancerArn'));
  const next = { ...found.attributes };
  for (const [key, value] of Object.entries(attributesOfRequest(input.Attributes))) {
    if (!(key in found.attributes)) {
      throw elbv2Failure('ValidationError', `Load balancer attribute key '${key}' is not recognized`);
    }
    next[key] = value;
  }
  if (next['access_logs.s3.enabled'] === 'true' && !next['access_logs.s3.bucket']) {
    throw elbv2Failure('InvalidConfigurationRequest', "The value of 'access_logs.s3.bucket' cannot be empty");
  }
  found.attributes = next;
  return { Attributes: sdkAttributes(next) };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}
