import type { GroupId } from '../../../shared/ingress/membership.ts';
import type { MemberLoadBalancerSettings, Scheme, SubnetsSetting } from './annotations.ts';
import { type Claim, claim, type GroupSettings } from './conflicts.ts';
import { loadBalancerName, securityGroupName } from './names.ts';
import type { ModelLoadBalancer, ModelSettings } from './types.ts';

/**
 * The load balancer of an IngressGroup: one per group, so each of its settings is shared by the members and claimed
 * by the first member in group order that sets it (conflicts.ts). Unset settings take the reference's defaults:
 * internal, IPv4, subnets discovered, a managed security group, no attributes changed.
 */

const key = {
  scheme: 'scheme',
  ipAddressType: 'ipAddressType',
  loadBalancerName: 'loadBalancerName',
  subnets: 'subnets',
  securityGroups: 'securityGroups',
  manageBackendSecurityGroupRules: 'manageBackendSecurityGroupRules',
  wafv2AclArn: 'wafv2AclArn',
  wafv2AclName: 'wafv2AclName',
  attribute: 'attribute:',
  tag: 'tag:',
};

/** Subnets compare as sets of the same kind (the reference ignores their order). */
function subnetsClaim(at: string, subnets: SubnetsSetting): Claim {
  const normal =
    'tags' in subnets
      ? { tags: Object.fromEntries(Object.entries(subnets.tags).map(([k, v]) => [k, [...v].sort()])) }
      : 'ids' in subnets
        ? { ids: [...subnets.ids].sort() }
        : { names: [...subnets.names].sort() };
  const c = claim(key.subnets, at, normal);
  const shown =
    'tags' in subnets
      ? Object.entries(subnets.tags)
          .map(([k, v]) => `${k}=${v.join('|')}`)
          .join(',')
      : 'ids' in subnets
        ? subnets.ids.join(',')
        : subnets.names.join(',');
  return { ...c, value: subnets, shown };
}

/** The member's claims on the load balancer's settings. */
export function loadBalancerClaims(settings: MemberLoadBalancerSettings): Claim[] {
  const claims: Claim[] = [];
  const single = ['scheme', 'ipAddressType', 'loadBalancerName', 'manageBackendSecurityGroupRules'] as const;
  for (const field of single) {
    const value = settings[field];
    if (value) claims.push(claim(key[field], value.at, value.value));
  }
  for (const field of ['wafv2AclArn', 'wafv2AclName'] as const) {
    const value = settings[field];
    if (value) claims.push(claim(key[field], value.at, value.value));
  }
  if (settings.subnets) claims.push(subnetsClaim(settings.subnets.at, settings.subnets.value));
  if (settings.securityGroups) {
    claims.push(
      claim(key.securityGroups, settings.securityGroups.at, settings.securityGroups.value, { unordered: true }),
    );
  }
  // Shown as key=value, so a problem says which attribute or tag the members disagree on.
  const keyed = (c: Claim, name: string) => ({ ...c, shown: `${name}=${c.shown}` });
  for (const [name, attribute] of Object.entries(settings.attributes)) {
    claims.push(keyed(claim(`${key.attribute}${name}`, attribute.at, attribute.value), name));
  }
  for (const [name, tag] of Object.entries(settings.tags)) {
    claims.push(keyed(claim(`${key.tag}${name}`, tag.at, tag.value), name));
  }
  return claims;
}

/** Whether the group's load balancer is dual-stack, once the members so far are in. */
export function isDualstack(group: GroupSettings): boolean {
  return group.get<string>(key.ipAddressType) === 'dualstack';
}

/** The group's load balancer from the settings its built members hold. */
export function assembleLoadBalancer(input: {
  group: GroupId;
  held: GroupSettings;
  settings: Pick<ModelSettings, 'clusterName' | 'defaultTags'>;
}): ModelLoadBalancer {
  const { held, settings } = input;
  const scheme = held.get<Scheme>(key.scheme) ?? 'internal';
  const lb: ModelLoadBalancer = {
    name: held.get<string>(key.loadBalancerName) ?? loadBalancerName(settings.clusterName, input.group, scheme),
    scheme,
    ipAddressType: held.get<'ipv4' | 'dualstack'>(key.ipAddressType) ?? 'ipv4',
    attributes: held.byPrefix<string>(key.attribute),
    // The controller's default tags win over every member's (the reference's --default-tags).
    tags: { ...held.byPrefix<string>(key.tag), ...settings.defaultTags },
    manageBackendSecurityGroupRules: held.get<boolean>(key.manageBackendSecurityGroupRules) ?? false,
    securityGroupName: securityGroupName(settings.clusterName, input.group),
  };
  const subnets = held.get<SubnetsSetting>(key.subnets);
  if (subnets) lb.subnets = subnets;
  const securityGroups = held.get<string[]>(key.securityGroups);
  if (securityGroups) lb.securityGroups = securityGroups;
  const wafv2AclArn = held.get<string>(key.wafv2AclArn);
  if (wafv2AclArn !== undefined) lb.wafv2AclArn = wafv2AclArn;
  const wafv2AclName = held.get<string>(key.wafv2AclName);
  if (wafv2AclName !== undefined) lb.wafv2AclName = wafv2AclName;
  return lb;
}
