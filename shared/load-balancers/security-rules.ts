import type { SecurityGroupRule } from '../aws/ec2-port.ts';
import type { ListenerProtocol, TargetGroupProtocol } from '../aws/elbv2-port.ts';
import type { DesiredListener } from './model.ts';

// Security group rules as values: their identity, the managed group's rules, and the plan between two sets.

/** ICMP "destination unreachable / fragmentation needed": path MTU discovery through the load balancer. */
const ICMP_FRAGMENTATION_NEEDED = { protocol: 'icmp', fromPort: 3, toPort: 4 } as const;

/** ICMPv6 "packet too big" (type 2, code 0): the same for IPv6 clients. */
const ICMPV6_PACKET_TOO_BIG = { protocol: 'icmpv6', fromPort: 2, toPort: 0 } as const;

/**
 * The managed group's inbound rules: every listener port from every source range (TLS and TCP_UDP need TCP,
 * UDP and TCP_UDP need UDP), plus ICMP fragmentation-needed from the IPv4 ranges.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
 */
export function managedIngressRules(
  listeners: readonly DesiredListener[],
  sourceRanges: readonly string[],
): SecurityGroupRule[] {
  const rules: SecurityGroupRule[] = [];
  const source = (range: string) => (range.includes(':') ? { cidrIpv6: range } : { cidrIpv4: range });
  for (const listener of listeners) {
    for (const protocol of transportProtocols(listener.protocol)) {
      for (const range of sourceRanges) {
        rules.push({ protocol, fromPort: listener.port, toPort: listener.port, ...source(range) });
      }
    }
  }
  for (const range of sourceRanges) {
    if (range.includes(':')) rules.push({ ...ICMPV6_PACKET_TOO_BIG, cidrIpv6: range });
    else rules.push({ ...ICMP_FRAGMENTATION_NEEDED, cidrIpv4: range });
  }
  return dedupeRules(rules);
}

export function transportProtocols(protocol: ListenerProtocol | TargetGroupProtocol): ('tcp' | 'udp')[] {
  if (protocol === 'TCP_UDP') return ['tcp', 'udp'];
  return protocol === 'UDP' ? ['udp'] : ['tcp'];
}

/** EC2's identity of a rule: protocol, ports and source (not the description). */
export function ruleKey(rule: SecurityGroupRule): string {
  const ports = rule.protocol === '-1' ? '-1:-1' : `${rule.fromPort}:${rule.toPort}`;
  return `${rule.protocol}:${ports}:${rule.cidrIpv4 ?? ''}:${rule.cidrIpv6 ?? ''}:${rule.sourceGroupId ?? ''}`;
}

export function dedupeRules(rules: readonly SecurityGroupRule[]): SecurityGroupRule[] {
  const seen = new Map<string, SecurityGroupRule>();
  for (const rule of rules) if (!seen.has(ruleKey(rule))) seen.set(ruleKey(rule), rule);
  return [...seen.values()];
}

/**
 * Rules to add and remove. `owned` says which current rules are ours to remove: every rule of the managed
 * group, only our described rules on a Node group. A wanted rule that exists already under another
 * description (a user's) is left as it is, since EC2 would refuse a duplicate.
 */
export function planRules(
  desired: readonly SecurityGroupRule[],
  current: readonly SecurityGroupRule[],
  owned: (rule: SecurityGroupRule) => boolean,
): { authorize: SecurityGroupRule[]; revoke: SecurityGroupRule[] } {
  const wanted = new Map(dedupeRules(desired).map((r) => [ruleKey(r), r]));
  const present = new Set(current.map(ruleKey));
  return {
    authorize: [...wanted].filter(([key]) => !present.has(key)).map(([, r]) => r),
    revoke: current.filter((r) => owned(r) && !wanted.has(ruleKey(r))),
  };
}

/** The Service node port range (kube-apiserver `--service-node-port-range`). */
export interface PortRange {
  from: number;
  to: number;
}

export const DEFAULT_NODE_PORT_RANGE: PortRange = { from: 30000, to: 32767 };

/** Two lists of security group IDs hold the same groups (a load balancer's order does not matter). */
export function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}
