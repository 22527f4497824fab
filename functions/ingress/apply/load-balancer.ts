import type { SecurityGroupRule } from '../../../shared/aws/ec2-port.ts';
import type { LoadBalancer, SubnetMapping } from '../../../shared/aws/elbv2-port.ts';
import { RetryableError } from '../../../shared/errors.ts';
import { stackName } from '../../../shared/ingress/membership.ts';
import { NotVisibleYetError } from '../../../shared/load-balancers/errors.ts';
import {
  backendSecurityGroupName,
  ensureBackendGroup,
  ensureManagedGroup,
  MAX_LOAD_BALANCER_GROUPS,
  resolveGroups,
} from '../../../shared/load-balancers/security-groups.ts';
import { dedupeRules, sameMembers } from '../../../shared/load-balancers/security-rules.ts';
import { wantedSubnets } from '../../../shared/load-balancers/subnets.ts';
import { changedEntries, keepTagsInLine } from '../../../shared/load-balancers/tags.ts';
import type { IngressGroupModel, ModelLoadBalancer } from '../model/types.ts';
import type { GroupPass } from './pass.ts';
import { PASS_TAGS } from './quick.ts';
import { REPLACES_TAG } from './replacement.ts';
import { adoptionTags, isStackResource, RESOURCE, stackTags } from './tags.ts';

/**
 * The group's Application Load Balancer and its security groups: found by name (the reference's name, so one it
 * made is found), adopted when its tracking tags say it is this group's, else created; then kept in line (groups,
 * subnets the user names, address type, tags, attributes). Writes only what differs.
 */

export interface EnsuredLoadBalancer {
  lb: LoadBalancer;
  tags: Record<string, string>;
  created: boolean;
  /** It was the reference's (it lacked our tags) and has just been tagged ours. */
  adopted?: boolean;
  /** The cluster's backend group, when the load balancer has it (the Nodes' groups admit it on the target ports). */
  backendGroupId?: string;
}

/** The load balancer's tags: the user's, then the stack's tracking tags. */
export function loadBalancerTags(model: IngressGroupModel, pass: GroupPass): Record<string, string> {
  return {
    ...model.loadBalancer.tags,
    ...stackTags(pass.deps.clusterName, pass.group, RESOURCE.loadBalancer),
  };
}

/** The group's load balancer, as it stands, when there is one: by name, and only the stack's. */
export async function findGroupLoadBalancer(
  name: string,
  pass: GroupPass,
): Promise<{ lb: LoadBalancer; tags: Record<string, string> } | undefined> {
  const lb = await pass.deps.elbv2.findLoadBalancer(name);
  if (!lb) return undefined;
  const tags = (await pass.deps.elbv2.describeTags([lb.arn])).get(lb.arn) ?? {};
  if (!isStackResource(tags, pass.deps.clusterName, pass.group) || lb.type !== 'application') {
    throw pass.ctx.userError(
      `load balancer name ${name} is taken by ${lb.type !== 'application' ? `a ${lb.type} load balancer` : (tags['ingress.k8s.aws/stack'] ?? 'a load balancer this group does not own')}`,
    );
  }
  return { lb, tags };
}

export async function ensureLoadBalancer(
  model: IngressGroupModel,
  pass: GroupPass,
  found: { lb: LoadBalancer; tags: Record<string, string> } | undefined,
  replacing?: string,
): Promise<EnsuredLoadBalancer> {
  const spec = model.loadBalancer;
  let adopted = false;
  if (found) {
    const adopt = adoptionTags(found.tags, pass.deps.clusterName);
    if (Object.keys(adopt).length > 0) {
      await pass.deps.elbv2.addTags(found.lb.arn, adopt);
      Object.assign(found.tags, adopt);
      adopted = true;
    }
  }
  const groups = await ensureGroups(model, pass);
  if (!found) {
    const created = await createLoadBalancer(model, groups.ids, pass, replacing);
    return { ...created, ...(groups.backend ? { backendGroupId: groups.backend } : {}) };
  }
  const { lb, tags } = found;
  const { elbv2 } = pass.deps;
  if (!sameMembers(lb.securityGroups, groups.ids)) await elbv2.setSecurityGroups(lb.arn, groups.ids);
  if (spec.subnets) {
    const wanted = await subnetsOf(spec, pass);
    if (
      !sameMembers(
        lb.subnets.map((s) => s.subnetId),
        wanted.map((s) => s.subnetId),
      )
    ) {
      await elbv2.setSubnets(lb.arn, wanted);
    }
  }
  const ipAddressType = spec.ipAddressType === 'ipv4' ? 'ipv4' : 'dualstack';
  if (lb.ipAddressType !== ipAddressType) await elbv2.setIpAddressType(lb.arn, ipAddressType);
  await keepTagsInLine(
    lb.arn,
    tags,
    { tags: loadBalancerTags(model, pass), externalManagedTags: [...pass.deps.externalManagedTags, ...PASS_TAGS] },
    pass.ctx,
  );
  await keepAttributes(lb.arn, spec.attributes, pass);
  return { lb, tags, created: false, adopted, ...(groups.backend ? { backendGroupId: groups.backend } : {}) };
}

async function createLoadBalancer(
  model: IngressGroupModel,
  securityGroups: string[],
  pass: GroupPass,
  replacing: string | undefined,
): Promise<Omit<EnsuredLoadBalancer, 'backendGroupId'>> {
  const spec = model.loadBalancer;
  const tags = { ...loadBalancerTags(model, pass), ...(replacing ? { [REPLACES_TAG]: replacing } : {}) };
  const result = await pass.deps.elbv2.createLoadBalancer({
    name: spec.name,
    type: 'application',
    scheme: spec.scheme,
    subnetMappings: (await subnetsOf(spec, pass)).map((m) => ({ subnetId: m.subnetId })),
    securityGroups,
    ipAddressType: spec.ipAddressType === 'ipv4' ? 'ipv4' : 'dualstack',
    tags,
  });
  if (result === 'name-taken') {
    // Made a moment ago (by an earlier attempt) and not visible yet: the next attempt finds it by name.
    throw new NotVisibleYetError(`creating load balancer ${spec.name}: the name is in use but not visible yet`);
  }
  await keepAttributes(result.arn, spec.attributes, pass, true);
  return { lb: result, tags, created: true };
}

/** Only the attributes the group sets, and only those that differ: AWS's defaults for the rest stay. */
async function keepAttributes(
  arn: string,
  wanted: Readonly<Record<string, string>>,
  pass: GroupPass,
  fresh = false,
): Promise<void> {
  if (Object.keys(wanted).length === 0) return;
  const current = fresh ? {} : await pass.deps.elbv2.describeLoadBalancerAttributes(arn);
  const changed = changedEntries(wanted, current);
  if (Object.keys(changed).length > 0) await pass.deps.elbv2.modifyLoadBalancerAttributes(arn, changed);
}

/** Subnets the group names (IDs, Name tags, or tags to match), or those discovery finds by role tags. */
async function subnetsOf(spec: ModelLoadBalancer, pass: GroupPass): Promise<SubnetMapping[]> {
  const { ctx } = pass;
  const model = { scheme: spec.scheme, ipAddressType: spec.ipAddressType === 'ipv4' ? 'ipv4' : 'dualstack' } as const;
  const subnets = spec.subnets;
  if (!subnets) return wantedSubnets(model, ctx, undefined);
  if ('ids' in subnets) return wantedSubnets(model, ctx, subnets.ids);
  if ('names' in subnets) return wantedSubnets(model, ctx, subnets.names);
  const all = await ctx.ec2.describeSubnets({ vpcId: ctx.vpcId });
  const matching = all.filter((s) =>
    Object.entries(subnets.tags).every(([key, values]) => {
      const value = s.tags?.[key];
      return value !== undefined && (values.length === 0 || values.includes(value));
    }),
  );
  if (matching.length === 0) {
    throw ctx.userError(
      `IngressClassParams subnets.tags: no subnet of ${ctx.vpcId} has tags ${JSON.stringify(subnets.tags)}`,
    );
  }
  return wantedSubnets(
    model,
    ctx,
    matching.map((s) => s.subnetId),
    all,
  );
}

/**
 * The load balancer's security groups: the user's (and the backend group when they ask us to manage the backend
 * rules), or the managed frontend group (listen ports from the inbound CIDRs) and the cluster's backend group.
 */
async function ensureGroups(model: IngressGroupModel, pass: GroupPass): Promise<{ ids: string[]; backend?: string }> {
  const { ctx, deps } = pass;
  const spec = model.loadBalancer;
  const backendName = backendSecurityGroupName(deps.clusterName);
  const names = spec.securityGroups ? [backendName] : [spec.securityGroupName, backendName];
  const found = await deps.ec2.findSecurityGroups({ vpcId: deps.vpcId, groupNames: names });
  const wantsBackend = !spec.securityGroups || spec.manageBackendSecurityGroupRules;
  const backend = wantsBackend
    ? await ensureBackendGroup(
        found.find((g) => g.groupName === backendName),
        ctx,
      )
    : undefined;
  let frontend: string[];
  if (spec.securityGroups) frontend = await resolveGroups(spec.securityGroups, ctx.settings.securityGroups, ctx);
  else {
    const existing = found.find((g) => g.groupName === spec.securityGroupName);
    if (existing && isStackResource(existing.tags, deps.clusterName, pass.group)) {
      const adopt = adoptionTags(existing.tags, deps.clusterName);
      if (Object.keys(adopt).length > 0) {
        await deps.ec2.createTags([existing.groupId], adopt);
        Object.assign(existing.tags, adopt);
      }
    }
    const tags = { ...spec.tags, ...stackTags(deps.clusterName, pass.group, RESOURCE.managedSecurityGroup) };
    frontend = [
      await ensureManagedGroup(
        {
          securityGroupName: spec.securityGroupName,
          tags,
          externalManagedTags: deps.externalManagedTags,
          managedIngress: frontendRules(model),
        },
        existing,
        ctx,
        { description: '[k8s] Managed SecurityGroup for LoadBalancer' },
      ),
    ];
  }
  const ids = [...new Set([...frontend, ...(backend ? [backend] : [])])];
  if (ids.length > MAX_LOAD_BALANCER_GROUPS) {
    throw ctx.userError(
      `${ctx.settings.securityGroups}: ${ids.length} security groups for group ${stackName(pass.group)}'s load balancer; an Application Load Balancer takes ${MAX_LOAD_BALANCER_GROUPS}`,
    );
  }
  if (ids.length === 0) throw new RetryableError('no security group for the load balancer');
  return { ids, ...(backend ? { backend } : {}) };
}

/** The managed group's inbound rules: every listen port, TCP, from its inbound CIDRs. */
export function frontendRules(model: IngressGroupModel): SecurityGroupRule[] {
  return dedupeRules(
    model.listeners.flatMap((l) =>
      l.inboundCidrs.map((cidr) => ({
        protocol: 'tcp' as const,
        fromPort: l.port,
        toPort: l.port,
        ...(cidr.includes(':') ? { cidrIpv6: cidr } : { cidrIpv4: cidr }),
      })),
    ),
  );
}
