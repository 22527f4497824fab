import type { IpProtocol, SecurityGroup, SecurityGroupRule } from '../../shared/aws/ec2-port.ts';
import type { TargetGroupBinding, TgbNetworkingIngressRule } from '../../shared/k8s/tgb-types.ts';
import { parseCidr } from '../../shared/net/cidr.ts';

/**
 * `networking.ingress`, pure: the rules a binding wants on its targets' security groups, which group of a network
 * interface takes them, and what to authorize and revoke. Rules carry the reference's description, and only rules
 * with it are ever revoked, and only when no live binding still asks for them.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/spec/#networkingingressrule
 */

/** The description of every rule a binding makes (the reference's, so either controller recognises the other's). */
export const SHARED_RULE_DESCRIPTION = 'elbv2.k8s.aws/targetGroupBinding=shared';

const ALL_PORTS = { fromPort: 0, toPort: 65535 } as const;

export interface NetworkProblem {
  message: string;
}

/**
 * The rules a binding's `networking.ingress` asks for. A port by name is resolved against the target (`resolve`),
 * and one that cannot be is a problem; no port means every port of the protocol.
 */
export function wantedRules(
  ingress: readonly TgbNetworkingIngressRule[],
  resolve: (name: string) => number | undefined,
): { rules: SecurityGroupRule[]; problems: NetworkProblem[] } {
  const rules: SecurityGroupRule[] = [];
  const problems: NetworkProblem[] = [];
  ingress.forEach((rule, i) => {
    const at = `spec.networking.ingress[${i}]`;
    const sources = (rule.from ?? []).flatMap((peer, j) => {
      const source = checkedSource(peer, `${at}.from[${j}]`);
      if ('message' in source) {
        problems.push(source);
        return [];
      }
      return [source];
    });
    const ports = rule.ports?.length ? rule.ports : [{}];
    ports.forEach((port, k) => {
      const protocol: IpProtocol = port.protocol === 'UDP' ? 'udp' : 'tcp';
      let range: { fromPort: number; toPort: number } = ALL_PORTS;
      if (typeof port.port === 'number') range = { fromPort: port.port, toPort: port.port };
      else if (typeof port.port === 'string') {
        const resolved = resolve(port.port);
        if (resolved === undefined) {
          problems.push({
            message: `${at}.ports[${k}].port: networking port ${port.port} names no port of the targets`,
          });
          return;
        }
        range = { fromPort: resolved, toPort: resolved };
      }
      for (const source of sources) rules.push({ protocol, ...range, ...source, description: SHARED_RULE_DESCRIPTION });
    });
  });
  return { rules: dedupe(rules), problems };
}

/**
 * A peer as EC2 takes it, or a problem naming the field: a CIDR block EC2 would refuse (not an address, a prefix
 * length past the family's width, host bits set) never goes to EC2, whose error would name no field of the binding.
 */
function checkedSource(
  peer: TgbNetworkingIngressRule['from'][number],
  at: string,
): Partial<SecurityGroupRule> | NetworkProblem {
  if (peer.ipBlock?.cidr !== undefined) {
    const parsed = parseCidr(peer.ipBlock.cidr);
    if (!parsed.ok) return { message: `${at}.ipBlock.cidr: networking peer ${parsed.error}` };
  }
  const groupId = peer.securityGroup?.groupID;
  if (groupId !== undefined && !/^sg-[0-9a-f]{8,17}$/.test(groupId)) {
    return {
      message: `${at}.securityGroup.groupID: networking peer ${JSON.stringify(groupId)} is not a security group ID`,
    };
  }
  return sourceOf(peer) ?? { message: `${at}: a networking peer names neither ipBlock.cidr nor securityGroup.groupID` };
}

function sourceOf(peer: TgbNetworkingIngressRule['from'][number]): Partial<SecurityGroupRule> | undefined {
  if (peer.ipBlock?.cidr) {
    return peer.ipBlock.cidr.includes(':') ? { cidrIpv6: peer.ipBlock.cidr } : { cidrIpv4: peer.ipBlock.cidr };
  }
  if (peer.securityGroup?.groupID) return { sourceGroupId: peer.securityGroup.groupID };
  return undefined;
}

/** A rule's identity as EC2 sees it: the description is not part of it. */
export function ruleKey(r: SecurityGroupRule): string {
  return `${r.protocol}:${r.fromPort}-${r.toPort}:${r.cidrIpv4 ?? ''}:${r.cidrIpv6 ?? ''}:${r.sourceGroupId ?? ''}`;
}

function dedupe(rules: SecurityGroupRule[]): SecurityGroupRule[] {
  return [...new Map(rules.map((r) => [ruleKey(r), r])).values()];
}

/**
 * The group of a network interface that takes the rules: its only group, else the one of its groups tagged
 * `kubernetes.io/cluster/<cluster>` (owned or shared); anything else is a problem naming the interface.
 */
export function ruleGroupOf(
  eni: { id: string; groupIds: readonly string[] },
  groups: ReadonlyMap<string, SecurityGroup>,
  clusterName: string,
): string | NetworkProblem {
  if (eni.groupIds.length === 1) return eni.groupIds[0]!;
  const tag = `kubernetes.io/cluster/${clusterName}`;
  const tagged = eni.groupIds.filter((id) => ['owned', 'shared'].includes(groups.get(id)?.tags[tag] ?? ''));
  if (tagged.length === 1) return tagged[0]!;
  return {
    message:
      `network interface ${eni.id} has ${eni.groupIds.length} security groups, ${tagged.length} of them tagged ${tag}: ` +
      'expected exactly one to put the networking rules on',
  };
}

/** What another live binding asks for, loosely: a port by name counts as any port (never revoke wrongly). */
interface Want {
  protocol: IpProtocol;
  source: string;
  range?: { fromPort: number; toPort: number };
}

export function wantsOf(binding: TargetGroupBinding): Want[] {
  const out: Want[] = [];
  for (const rule of binding.spec.networking?.ingress ?? []) {
    const ports = rule.ports?.length ? rule.ports : [{}];
    for (const port of ports) {
      const protocol: IpProtocol = port.protocol === 'UDP' ? 'udp' : 'tcp';
      const range =
        typeof port.port === 'number'
          ? { fromPort: port.port, toPort: port.port }
          : typeof port.port === 'string'
            ? undefined
            : ALL_PORTS;
      for (const peer of rule.from ?? []) {
        const source = sourceOf(peer);
        if (source) out.push({ protocol, source: sourceKey(source), range });
      }
    }
  }
  return out;
}

function sourceKey(r: Partial<SecurityGroupRule>): string {
  return `${r.cidrIpv4 ?? ''}:${r.cidrIpv6 ?? ''}:${r.sourceGroupId ?? ''}`;
}

function wanted(rule: SecurityGroupRule, wants: readonly Want[]): boolean {
  return wants.some(
    (w) =>
      w.protocol === rule.protocol &&
      w.source === sourceKey(rule) &&
      (!w.range || (w.range.fromPort === rule.fromPort && w.range.toPort === rule.toPort)),
  );
}

export interface NetworkPlan {
  authorize: Map<string, SecurityGroupRule[]>;
  revoke: Map<string, SecurityGroupRule[]>;
}

/**
 * On each of the targets' groups: the wanted rules it lacks are authorized; its rules with the shared description
 * that this binding no longer wants and no other live binding asks for are revoked.
 */
export function planNetworking(
  groupIds: readonly string[],
  groups: ReadonlyMap<string, SecurityGroup>,
  rules: readonly SecurityGroupRule[],
  others: readonly Want[],
): NetworkPlan {
  const plan: NetworkPlan = { authorize: new Map(), revoke: new Map() };
  const mine = new Set(rules.map(ruleKey));
  for (const id of [...new Set(groupIds)].sort()) {
    const existing = groups.get(id)?.ingress ?? [];
    const have = new Set(existing.map(ruleKey));
    const missing = rules.filter((r) => !have.has(ruleKey(r)));
    if (missing.length > 0) plan.authorize.set(id, missing);
    const stale = existing.filter(
      (r) => r.description === SHARED_RULE_DESCRIPTION && !mine.has(ruleKey(r)) && !wanted(r, others),
    );
    if (stale.length > 0) plan.revoke.set(id, stale);
  }
  return plan;
}
