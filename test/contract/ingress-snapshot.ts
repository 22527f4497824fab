import { APPLIED_TAG } from '../../functions/ingress/apply/quick.ts';
import { TAG } from '../../functions/ingress/apply/tags.ts';
import type { RuleAction, RuleCondition } from '../../shared/aws/elbv2-port.ts';
import type { IngressAccount } from './ingress-backends.ts';

/**
 * What an IngressGroup's pass left in an account, described through the ports (never the fakes' state), with every
 * ID and ARN replaced by the name it stands for, so the emulator's and the fakes' answers compare as they are.
 */
export interface StackSnapshot {
  loadBalancers: {
    name: string;
    scheme: string;
    type: string;
    zones: number;
    securityGroups: string[];
    tags: Record<string, string>;
    webAcl?: string;
    listeners: {
      port: number;
      protocol: string;
      certificates: string[];
      sslPolicy?: string;
      defaultActions: unknown[];
      rules: { priority: number; conditions: RuleCondition[]; actions: unknown[]; tags: Record<string, string> }[];
    }[];
  }[];
  targetGroups: {
    name: string;
    protocol: string;
    port: number;
    targetType: string;
    tags: Record<string, string>;
    targets: string[];
  }[];
  /** The stack's own security groups, and the Node group's rules (but the one admitting the Nodes themselves). */
  securityGroups: { name: string; tags: Record<string, string>; ingress: string[] }[];
  nodeGroupRules: string[];
}

/** The tags a snapshot shows: every tag but the applied digest, whose value carries a time. */
function shownTags(tags: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(tags ?? {})
      .filter(([k]) => k !== APPLIED_TAG)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

export async function snapshotStack(account: IngressAccount, stack: string): Promise<StackSnapshot> {
  const { elbv2, ec2, wafv2 } = account.look;
  const names = new Map<string, string>([
    [account.certificateArn, 'certificate'],
    [account.webAclArn, 'web-acl'],
    [account.nodeGroupId, 'nodes'],
  ]);
  const name = (id: string) => names.get(id) ?? `unknown:${id}`;
  const ours = (tags: Record<string, string> | undefined) => tags?.[TAG.stack] === stack;

  const groups = await ec2.findSecurityGroups({ tags: { [TAG.stack]: stack } });
  for (const g of groups) names.set(g.groupId, g.groupName);
  const allGroups = await elbv2.listTargetGroups();
  const groupTags = await elbv2.describeTags(allGroups.map((g) => g.arn));
  const targetGroups = allGroups.filter((g) => ours(groupTags.get(g.arn)));
  for (const g of targetGroups) names.set(g.arn, g.name);

  const action = (a: RuleAction): unknown =>
    a.type === 'forward'
      ? { ...a, targetGroups: a.targetGroups.map((t) => ({ name: name(t.arn), weight: t.weight })) }
      : a;

  const lbs = await elbv2.listLoadBalancers();
  const lbTags = await elbv2.describeTags(lbs.map((l) => l.arn));
  const loadBalancers: StackSnapshot['loadBalancers'] = [];
  for (const lb of lbs.filter((l) => ours(lbTags.get(l.arn)))) {
    for (const g of await ec2.findSecurityGroups({ groupIds: lb.securityGroups })) names.set(g.groupId, g.groupName);
    const listeners: StackSnapshot['loadBalancers'][number]['listeners'] = [];
    for (const l of (await elbv2.describeListeners(lb.arn)).sort((a, b) => a.port - b.port)) {
      const rules = (await elbv2.describeRules(l.arn)).filter((r) => !r.isDefault);
      const ruleTags = await elbv2.describeTags(rules.map((r) => r.arn));
      const certificates = l.protocol === 'HTTPS' ? await elbv2.describeListenerCertificates(l.arn) : [];
      listeners.push({
        port: l.port,
        protocol: l.protocol,
        certificates: certificates.map((c) => `${name(c.certificateArn)}${c.isDefault ? ' (default)' : ''}`).sort(),
        ...(l.protocol === 'HTTPS' ? { sslPolicy: l.sslPolicy } : {}),
        defaultActions: (l.defaultActions ?? []).map(action),
        rules: rules
          .map((r) => ({
            priority: r.priority as number,
            conditions: r.conditions,
            actions: r.actions.map(action),
            tags: shownTags(ruleTags.get(r.arn)),
          }))
          .sort((a, b) => a.priority - b.priority),
      });
    }
    const acl = await wafv2.webAclForResource(lb.arn);
    loadBalancers.push({
      name: lb.name,
      scheme: lb.scheme,
      type: lb.type,
      zones: lb.subnets.length,
      securityGroups: lb.securityGroups.map(name).sort(),
      tags: shownTags(lbTags.get(lb.arn)),
      ...(acl ? { webAcl: name(acl) } : {}),
      listeners,
    });
  }

  const rule = (r: { protocol: string; fromPort: number; toPort: number; cidrIpv4?: string; sourceGroupId?: string }) =>
    `${r.protocol} ${r.fromPort}-${r.toPort} from ${r.cidrIpv4 ?? name(r.sourceGroupId ?? '')}`;
  const [nodeGroup] = await ec2.findSecurityGroups({ groupIds: [account.nodeGroupId] });
  const sources = (nodeGroup?.ingress ?? []).flatMap((r) => (r.sourceGroupId ? [r.sourceGroupId] : []));
  for (const g of await ec2.findSecurityGroups({ groupIds: sources })) names.set(g.groupId, g.groupName);
  return {
    loadBalancers: loadBalancers.sort((a, b) => a.name.localeCompare(b.name)),
    targetGroups: await Promise.all(
      targetGroups
        .sort((a, b) => a.name.localeCompare(b.name))
        .map(async (g) => ({
          name: g.name,
          protocol: g.protocol,
          port: g.port,
          targetType: g.targetType,
          tags: shownTags(groupTags.get(g.arn)),
          targets: (await elbv2.describeTargetHealth(g.arn))
            .map((t) => `${account.nodeOf.get(t.target.id) ?? t.target.id}:${t.target.port}`)
            .sort(),
        })),
    ),
    securityGroups: groups
      .map((g) => ({ name: g.groupName, tags: shownTags(g.tags), ingress: g.ingress.map(rule).sort() }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    nodeGroupRules: (nodeGroup?.ingress ?? [])
      .filter((r) => r.sourceGroupId !== account.nodeGroupId)
      .map(rule)
      .sort(),
  };
}
