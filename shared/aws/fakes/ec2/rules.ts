import type { IpPermission } from '@aws-sdk/client-ec2';
import type { IpProtocol, SecurityGroupRule } from '../../ec2-port.ts';
import { ec2Error, FAKE_ACCOUNT_ID } from './wire.ts';

/**
 * Security group rules between EC2's wire form (permissions: a protocol and port range with lists of sources)
 * and the fake's (one rule per source, as EC2 counts them against the rules quota).
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_IpPermission.html
 */

/** EC2 takes protocols by name or number; the fake models the ones the port knows. */
const PROTOCOLS: Readonly<Record<string, IpProtocol>> = {
  tcp: 'tcp',
  '6': 'tcp',
  udp: 'udp',
  '17': 'udp',
  icmp: 'icmp',
  '1': 'icmp',
  icmpv6: 'icmpv6',
  '58': 'icmpv6',
  '-1': '-1',
};

/** The rules a request's permissions state, one per source; invalid ones fail the call as EC2 fails it. */
export function fromIpPermissions(permissions: readonly IpPermission[]): SecurityGroupRule[] {
  return permissions.flatMap((permission) => {
    if (permission.PrefixListIds?.length) throw new Error('FakeEc2 does not model prefix list sources');
    const base = portsOf(permission);
    const described = (d: string | undefined) => (d ? { description: d } : {});
    return [
      ...(permission.IpRanges ?? []).map((r) => {
        if (!r.CidrIp?.includes('/') || r.CidrIp.includes(':')) throw invalidCidr(r.CidrIp);
        return { ...base, cidrIpv4: r.CidrIp, ...described(r.Description) };
      }),
      ...(permission.Ipv6Ranges ?? []).map((r) => {
        if (!r.CidrIpv6?.includes('/') || !r.CidrIpv6.includes(':')) throw invalidCidr(r.CidrIpv6);
        return { ...base, cidrIpv6: r.CidrIpv6, ...described(r.Description) };
      }),
      ...(permission.UserIdGroupPairs ?? []).map((pair) => {
        if (!pair.GroupId) throw new Error('FakeEc2 models group sources by GroupId only');
        return { ...base, sourceGroupId: pair.GroupId, ...described(pair.Description) };
      }),
    ];
  });
}

/**
 * Protocol and ports as EC2 checks them: TCP and UDP need a port range inside 0..65535, ICMP a type and code
 * (-1: all), and all traffic (`-1`) takes none (its rules are stated with -1).
 */
function portsOf(permission: IpPermission): Pick<SecurityGroupRule, 'protocol' | 'fromPort' | 'toPort'> {
  const raw = permission.IpProtocol?.toLowerCase();
  if (raw === undefined) throw ec2Error('MissingParameter', 'The request must contain the parameter ipProtocol');
  const protocol = PROTOCOLS[raw];
  if (!protocol) throw new Error(`FakeEc2 does not model IP protocol ${raw}`);
  if (protocol === '-1') return { protocol, fromPort: -1, toPort: -1 };
  const { FromPort: from, ToPort: to } = permission;
  if (protocol === 'icmp' || protocol === 'icmpv6') {
    const type = from ?? -1;
    const code = to ?? -1;
    if (type < -1 || type > 255 || code < -1 || code > 255) {
      throw ec2Error(
        'InvalidParameterValue',
        `Invalid value for portRange. ICMP type ${type} or code ${code} is invalid.`,
      );
    }
    return { protocol, fromPort: type, toPort: code };
  }
  if (from === undefined || to === undefined) {
    throw ec2Error(
      'InvalidParameterValue',
      'Invalid value for portRange. Must specify both from and to ports with TCP/UDP.',
    );
  }
  if (from < 0 || to > 65535 || from > to) {
    throw ec2Error('InvalidParameterValue', `Invalid value for portRange. Invalid TCP/UDP port range ${from}-${to}.`);
  }
  return { protocol, fromPort: from, toPort: to };
}

function invalidCidr(cidr: string | undefined): Error {
  return ec2Error('InvalidParameterValue', `CIDR block ${cidr} is malformed`);
}

/**
 * The group's rules as DescribeSecurityGroups states them: one permission per protocol and port range, holding
 * every source of that range, in the order the ranges first appear.
 */
export function toIpPermissions(rules: readonly SecurityGroupRule[]): IpPermission[] {
  const byRange = new Map<
    string,
    Required<Pick<IpPermission, 'IpRanges' | 'Ipv6Ranges' | 'UserIdGroupPairs'>> & IpPermission
  >();
  for (const rule of rules) {
    const key = `${rule.protocol}:${rule.fromPort}:${rule.toPort}`;
    let permission = byRange.get(key);
    if (!permission) {
      permission = {
        IpProtocol: rule.protocol,
        ...(rule.protocol === '-1' ? {} : { FromPort: rule.fromPort, ToPort: rule.toPort }),
        IpRanges: [],
        Ipv6Ranges: [],
        UserIdGroupPairs: [],
        PrefixListIds: [],
      };
      byRange.set(key, permission);
    }
    const description = rule.description ? { Description: rule.description } : {};
    if (rule.cidrIpv4) permission.IpRanges.push({ CidrIp: rule.cidrIpv4, ...description });
    if (rule.cidrIpv6) permission.Ipv6Ranges.push({ CidrIpv6: rule.cidrIpv6, ...description });
    if (rule.sourceGroupId) {
      permission.UserIdGroupPairs.push({ GroupId: rule.sourceGroupId, UserId: FAKE_ACCOUNT_ID, ...description });
    }
  }
  return [...byRange.values()];
}

/** EC2's identity of a rule: protocol, ports and source. The description does not count. */
export function sameRule(a: SecurityGroupRule, b: SecurityGroupRule): boolean {
  // All traffic has no ports, however a rule put by a test states them.
  const ports = (r: SecurityGroupRule) => (r.protocol === '-1' ? '' : `${r.fromPort}:${r.toPort}`);
  return (
    a.protocol === b.protocol &&
    ports(a) === ports(b) &&
    a.cidrIpv4 === b.cidrIpv4 &&
    a.cidrIpv6 === b.cidrIpv6 &&
    a.sourceGroupId === b.sourceGroupId
  );
}

/** How EC2 names a rule in its error messages. */
export function describeRule(rule: SecurityGroupRule): string {
  const peer = rule.cidrIpv4 ?? rule.cidrIpv6 ?? rule.sourceGroupId;
  const protocol = rule.protocol === '-1' ? 'ALL' : rule.protocol.toUpperCase();
  return `peer: ${peer}, ${protocol}, from port: ${rule.fromPort}, to port: ${rule.toPort}, ALLOW`;
}
