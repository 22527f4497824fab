/*
 * This file is longer than 400 lines because it is the one adapter of the Elastic Load Balancing v2 SDK client: it
 * maps every command the ports (shared/aws/elbv2-port.ts) use, request and answer, and their errors. One adapter per
 * SDK client keeps that client's request shapes in one place; split, they would be scattered across files. The
 * conversions of listener rules, conditions and actions (Application Load Balancers) are elbv2-adapter-rules.ts.
 */
import {
  type Action,
  AddListenerCertificatesCommand,
  AddTagsCommand,
  CreateListenerCommand,
  CreateLoadBalancerCommand,
  CreateRuleCommand,
  CreateTargetGroupCommand,
  DeleteListenerCommand,
  DeleteLoadBalancerCommand,
  DeleteRuleCommand,
  DeleteTargetGroupCommand,
  DeregisterTargetsCommand,
  DescribeListenerAttributesCommand,
  DescribeListenerCertificatesCommand,
  DescribeListenersCommand,
  DescribeLoadBalancerAttributesCommand,
  DescribeLoadBalancersCommand,
  DescribeRulesCommand,
  DescribeTagsCommand,
  DescribeTargetGroupAttributesCommand,
  DescribeTargetGroupsCommand,
  type DescribeTargetGroupsCommandInput,
  DescribeTargetHealthCommand,
  type ElasticLoadBalancingV2Client,
  ModifyListenerAttributesCommand,
  ModifyListenerCommand,
  ModifyLoadBalancerAttributesCommand,
  ModifyRuleCommand,
  ModifyTargetGroupAttributesCommand,
  ModifyTargetGroupCommand,
  RegisterTargetsCommand,
  RemoveListenerCertificatesCommand,
  RemoveTagsCommand,
  type Listener as SdkListener,
  type LoadBalancer as SdkLoadBalancer,
  type TargetGroup as SdkTargetGroup,
  SetIpAddressTypeCommand,
  SetRulePrioritiesCommand,
  SetSecurityGroupsCommand,
  SetSubnetsCommand,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { byPriority, fromSdkActions, toRule, toSdkAction, toSdkCondition } from './elbv2-adapter-rules.ts';
import {
  ALPN_POLICIES,
  type AlpnPolicy,
  type ApplicationListenerSpec,
  type CreateLoadBalancerInput,
  type CreateTargetGroupInput,
  ELBV2_PAGE_SIZE,
  type Elbv2Port,
  type HealthCheck,
  type Listener,
  type ListenerCertificate,
  type ListenerProtocol,
  type ListenerSpec,
  type LoadBalancer,
  type LoadBalancerIpAddressType,
  type LoadBalancerStateCode,
  type Rule,
  type RuleSpec,
  type SubnetMapping,
  TAGS_ARNS_PER_CALL,
  TARGET_GROUP_NAMES_PER_CALL,
  type Target,
  type TargetGroup,
  type TargetGroupProtocol,
  type TargetGroupProtocolVersion,
  type TargetHealth,
  type TargetHealthState,
} from './elbv2-port.ts';
import { awsErrorCode, toControllerErrorByCode } from './errors.ts';
import { allPages, chunks, unique } from './paging.ts';
import { fromKeyValues, toKeyValues } from './tag-lists.ts';

/**
 * The AWS error code of an ELBv2 failure. ELBv2 speaks the query protocol: the SDK keeps the wire code
 * (`LoadBalancerNotFound`) in `Code` and names the exception class after it (`LoadBalancerNotFoundException`);
 * either form comes back as the wire code.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/CommonErrors.html
 */
export function elbv2ErrorCode(err: unknown): string | undefined {
  return awsErrorCode(err)?.replace(/Exception$/, '');
}

/** The controller error for an ELBv2 failure, classified by its wire code. */
function elbv2Error(doing: string, err: unknown): Error {
  return toControllerErrorByCode(doing, err, elbv2ErrorCode(err));
}

const LISTENER_PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'TCP_UDP', 'TLS', 'HTTP', 'HTTPS']);
const PROTOCOL_VERSIONS: ReadonlySet<string> = new Set(['HTTP1', 'HTTP2', 'GRPC']);
/** The codes of a resource gone since it was listed: DescribeTags fails the whole call on one of them. */
const NOT_FOUND_CODES: ReadonlySet<string | undefined> = new Set([
  'LoadBalancerNotFound',
  'TargetGroupNotFound',
  'ListenerNotFound',
  'RuleNotFound',
]);
const HEALTH_STATES: ReadonlySet<string> = new Set([
  'initial',
  'healthy',
  'unhealthy',
  'unhealthy.draining',
  'unused',
  'draining',
  'unavailable',
]);

/**
 * Elbv2Port over the AWS SDK: a pure translation (no caching). Pages, chunks and turns "not found" into
 * absence so that callers never do.
 */
export class Elbv2Adapter implements Elbv2Port {
  constructor(private readonly client: Pick<ElasticLoadBalancingV2Client, 'send'>) {}

  async findLoadBalancer(name: string): Promise<LoadBalancer | undefined> {
    try {
      const output = await this.client.send(new DescribeLoadBalancersCommand({ Names: [name] }));
      return (output.LoadBalancers ?? []).flatMap((lb) => toLoadBalancer(lb) ?? [])[0];
    } catch (err) {
      if (elbv2ErrorCode(err) === 'LoadBalancerNotFound') return undefined;
      throw elbv2Error(`describing load balancer ${name}`, err);
    }
  }

  async listLoadBalancers(): Promise<LoadBalancer[]> {
    try {
      const pages = await allPages(
        (Marker) => this.client.send(new DescribeLoadBalancersCommand({ PageSize: ELBV2_PAGE_SIZE, Marker })),
        (page) => page.NextMarker,
      );
      return pages.flatMap((page) => (page.LoadBalancers ?? []).flatMap((lb) => toLoadBalancer(lb) ?? []));
    } catch (err) {
      throw elbv2Error('listing load balancers', err);
    }
  }

  async createLoadBalancer(input: CreateLoadBalancerInput): Promise<LoadBalancer | 'name-taken'> {
    try {
      const type = input.type ?? 'network';
      // An Application Load Balancer created without security groups gets the VPC's default one: send none.
      const groups = type === 'application' && input.securityGroups.length === 0 ? [] : [...input.securityGroups];
      const output = await this.client.send(
        new CreateLoadBalancerCommand({
          Name: input.name,
          Type: type,
          Scheme: input.scheme,
          IpAddressType: input.ipAddressType ?? 'ipv4',
          SubnetMappings: input.subnetMappings.map((m) => ({
            SubnetId: m.subnetId,
            ...(m.allocationId ? { AllocationId: m.allocationId } : {}),
            ...(m.privateIPv4Address ? { PrivateIPv4Address: m.privateIPv4Address } : {}),
          })),
          ...(groups.length > 0 || type === 'network' ? { SecurityGroups: groups } : {}),
          Tags: toKeyValues(input.tags),
        }),
      );
      const created = (output.LoadBalancers ?? []).flatMap((lb) => toLoadBalancer(lb) ?? [])[0];
      if (!created) throw new Error('CreateLoadBalancer answered without a load balancer');
      return created;
    } catch (err) {
      if (elbv2ErrorCode(err) === 'DuplicateLoadBalancerName') return 'name-taken';
      throw elbv2Error(`creating load balancer ${input.name}`, err);
    }
  }

  async deleteLoadBalancer(arn: string): Promise<void> {
    try {
      await this.client.send(new DeleteLoadBalancerCommand({ LoadBalancerArn: arn }));
    } catch (err) {
      if (elbv2ErrorCode(err) === 'LoadBalancerNotFound') return;
      throw elbv2Error(`deleting load balancer ${arn}`, err);
    }
  }

  async setSecurityGroups(arn: string, securityGroups: readonly string[]): Promise<void> {
    try {
      await this.client.send(
        new SetSecurityGroupsCommand({ LoadBalancerArn: arn, SecurityGroups: [...securityGroups] }),
      );
    } catch (err) {
      throw elbv2Error(`setting security groups of ${arn}`, err);
    }
  }

  async setSubnets(arn: string, subnetMappings: readonly SubnetMapping[]): Promise<void> {
    try {
      await this.client.send(
        new SetSubnetsCommand({
          LoadBalancerArn: arn,
          SubnetMappings: subnetMappings.map((m) => ({
            SubnetId: m.subnetId,
            ...(m.allocationId ? { AllocationId: m.allocationId } : {}),
            ...(m.privateIPv4Address ? { PrivateIPv4Address: m.privateIPv4Address } : {}),
          })),
        }),
      );
    } catch (err) {
      throw elbv2Error(`setting subnets of ${arn}`, err);
    }
  }

  async setIpAddressType(arn: string, ipAddressType: LoadBalancerIpAddressType): Promise<void> {
    try {
      await this.client.send(new SetIpAddressTypeCommand({ LoadBalancerArn: arn, IpAddressType: ipAddressType }));
    } catch (err) {
      throw elbv2Error(`setting IP address type of ${arn} to ${ipAddressType}`, err);
    }
  }

  async describeLoadBalancerAttributes(arn: string): Promise<Record<string, string>> {
    try {
      const output = await this.client.send(new DescribeLoadBalancerAttributesCommand({ LoadBalancerArn: arn }));
      return fromAttributes(output.Attributes);
    } catch (err) {
      throw elbv2Error(`describing attributes of ${arn}`, err);
    }
  }

  async modifyLoadBalancerAttributes(arn: string, attributes: Readonly<Record<string, string>>): Promise<void> {
    try {
      await this.client.send(
        new ModifyLoadBalancerAttributesCommand({ LoadBalancerArn: arn, Attributes: toKeyValues(attributes) }),
      );
    } catch (err) {
      throw elbv2Error(`modifying attributes of ${arn}`, err);
    }
  }

  async describeListeners(loadBalancerArn: string): Promise<Listener[]> {
    try {
      const pages = await allPages(
        (Marker) =>
          this.client.send(
            new DescribeListenersCommand({ LoadBalancerArn: loadBalancerArn, PageSize: ELBV2_PAGE_SIZE, Marker }),
          ),
        (page) => page.NextMarker,
      );
      return pages.flatMap((page) => (page.Listeners ?? []).flatMap((l) => toListener(l) ?? []));
    } catch (err) {
      throw elbv2Error(`describing listeners of ${loadBalancerArn}`, err);
    }
  }

  async createListener(
    loadBalancerArn: string,
    spec: ListenerSpec,
    tags: Readonly<Record<string, string>>,
  ): Promise<Listener> {
    try {
      // AWS refuses an empty Tags list: leave it out when there are none.
      const tagged = Object.keys(tags).length > 0 ? { Tags: toKeyValues(tags) } : {};
      const output = await this.client.send(
        new CreateListenerCommand({ LoadBalancerArn: loadBalancerArn, ...listenerInput(spec), ...tagged }),
      );
      const created = (output.Listeners ?? []).flatMap((l) => toListener(l) ?? [])[0];
      if (!created) throw new Error('CreateListener answered without a listener');
      return created;
    } catch (err) {
      throw elbv2Error(`creating listener ${spec.protocol}:${spec.port} on ${loadBalancerArn}`, err);
    }
  }

  async modifyListener(listenerArn: string, spec: ListenerSpec): Promise<void> {
    try {
      await this.client.send(new ModifyListenerCommand({ ListenerArn: listenerArn, ...listenerInput(spec) }));
    } catch (err) {
      throw elbv2Error(`modifying listener ${listenerArn}`, err);
    }
  }

  async createApplicationListener(
    loadBalancerArn: string,
    spec: ApplicationListenerSpec,
    tags: Readonly<Record<string, string>>,
  ): Promise<Listener> {
    try {
      const tagged = Object.keys(tags).length > 0 ? { Tags: toKeyValues(tags) } : {};
      const output = await this.client.send(
        new CreateListenerCommand({ LoadBalancerArn: loadBalancerArn, ...applicationListenerInput(spec), ...tagged }),
      );
      const created = (output.Listeners ?? []).flatMap((l) => toListener(l) ?? [])[0];
      if (!created) throw new Error('CreateListener answered without a listener');
      return created;
    } catch (err) {
      throw elbv2Error(`creating listener ${spec.protocol}:${spec.port} on ${loadBalancerArn}`, err);
    }
  }

  async modifyApplicationListener(listenerArn: string, spec: ApplicationListenerSpec): Promise<void> {
    try {
      await this.client.send(
        new ModifyListenerCommand({ ListenerArn: listenerArn, ...applicationListenerInput(spec) }),
      );
    } catch (err) {
      throw elbv2Error(`modifying listener ${listenerArn}`, err);
    }
  }

  async deleteListener(listenerArn: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.client.send(new DeleteListenerCommand({ ListenerArn: listenerArn }));
      return 'deleted';
    } catch (err) {
      if (elbv2ErrorCode(err) === 'ListenerNotFound') return 'not-found';
      throw elbv2Error(`deleting listener ${listenerArn}`, err);
    }
  }

  async describeListenerCertificates(listenerArn: string): Promise<ListenerCertificate[]> {
    try {
      const pages = await allPages(
        (Marker) =>
          this.client.send(
            new DescribeListenerCertificatesCommand({ ListenerArn: listenerArn, PageSize: ELBV2_PAGE_SIZE, Marker }),
          ),
        (page) => page.NextMarker,
      );
      return pages.flatMap((page) =>
        (page.Certificates ?? []).flatMap((c): ListenerCertificate[] =>
          c.CertificateArn ? [{ certificateArn: c.CertificateArn, isDefault: c.IsDefault === true }] : [],
        ),
      );
    } catch (err) {
      throw elbv2Error(`describing certificates of ${listenerArn}`, err);
    }
  }

  /**
   * One call per certificate: AWS takes one per AddListenerCertificates call. One already in the list is not
   * added again (success). https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddListenerCertificates.html
   */
  async addListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void> {
    for (const certificateArn of unique(certificateArns)) {
      try {
        await this.client.send(
          new AddListenerCertificatesCommand({
            ListenerArn: listenerArn,
            Certificates: [{ CertificateArn: certificateArn }],
          }),
        );
      } catch (err) {
        throw elbv2Error(`adding certificate ${certificateArn} to ${listenerArn}`, err);
      }
    }
  }

  /**
   * One call per certificate, as for adding. The default certificate cannot be removed (OperationNotPermitted).
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RemoveListenerCertificates.html
   */
  async removeListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void> {
    for (const certificateArn of unique(certificateArns)) {
      try {
        await this.client.send(
          new RemoveListenerCertificatesCommand({
            ListenerArn: listenerArn,
            Certificates: [{ CertificateArn: certificateArn }],
          }),
        );
      } catch (err) {
        throw elbv2Error(`removing certificate ${certificateArn} from ${listenerArn}`, err);
      }
    }
  }

  async describeListenerAttributes(listenerArn: string): Promise<Record<string, string>> {
    try {
      const output = await this.client.send(new DescribeListenerAttributesCommand({ ListenerArn: listenerArn }));
      return fromAttributes(output.Attributes);
    } catch (err) {
      throw elbv2Error(`describing attributes of ${listenerArn}`, err);
    }
  }

  /** Nothing to change sends nothing (AWS requires at least one attribute). */
  async modifyListenerAttributes(listenerArn: string, attributes: Readonly<Record<string, string>>): Promise<void> {
    if (Object.keys(attributes).length === 0) return;
    try {
      await this.client.send(
        new ModifyListenerAttributesCommand({ ListenerArn: listenerArn, Attributes: toKeyValues(attributes) }),
      );
    } catch (err) {
      throw elbv2Error(`modifying attributes of ${listenerArn}`, err);
    }
  }

  async describeRules(listenerArn: string): Promise<Rule[]> {
    try {
      const pages = await allPages(
        (Marker) =>
          this.client.send(new DescribeRulesCommand({ ListenerArn: listenerArn, PageSize: ELBV2_PAGE_SIZE, Marker })),
        (page) => page.NextMarker,
      );
      return pages.flatMap((page) => (page.Rules ?? []).flatMap((r) => toRule(r) ?? [])).sort(byPriority);
    } catch (err) {
      throw elbv2Error(`describing rules of ${listenerArn}`, err);
    }
  }

  async createRule(listenerArn: string, spec: RuleSpec, tags: Readonly<Record<string, string>>): Promise<Rule> {
    try {
      const tagged = Object.keys(tags).length > 0 ? { Tags: toKeyValues(tags) } : {};
      const output = await this.client.send(
        new CreateRuleCommand({
          ListenerArn: listenerArn,
          Priority: spec.priority,
          Conditions: spec.conditions.map(toSdkCondition),
          Actions: spec.actions.map(toSdkAction),
          ...tagged,
        }),
      );
      const created = (output.Rules ?? []).flatMap((r) => toRule(r) ?? [])[0];
      if (!created) throw new Error('CreateRule answered without a rule');
      return created;
    } catch (err) {
      throw elbv2Error(`creating rule ${spec.priority} on ${listenerArn}`, err);
    }
  }

  async modifyRule(ruleArn: string, change: Omit<RuleSpec, 'priority'>): Promise<Rule> {
    try {
      const output = await this.client.send(
        new ModifyRuleCommand({
          RuleArn: ruleArn,
          // No conditions: the default rule, which takes none (a rule of its own needs one at least).
          ...(change.conditions.length > 0 ? { Conditions: change.conditions.map(toSdkCondition) } : {}),
          Actions: change.actions.map(toSdkAction),
        }),
      );
      const modified = (output.Rules ?? []).flatMap((r) => toRule(r) ?? [])[0];
      if (!modified) throw new Error('ModifyRule answered without a rule');
      return modified;
    } catch (err) {
      throw elbv2Error(`modifying rule ${ruleArn}`, err);
    }
  }

  async deleteRule(ruleArn: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.client.send(new DeleteRuleCommand({ RuleArn: ruleArn }));
      return 'deleted';
    } catch (err) {
      if (elbv2ErrorCode(err) === 'RuleNotFound') return 'not-found';
      throw elbv2Error(`deleting rule ${ruleArn}`, err);
    }
  }

  /** Nothing to move sends nothing (AWS requires at least one pair). */
  async setRulePriorities(priorities: readonly { ruleArn: string; priority: number }[]): Promise<void> {
    if (priorities.length === 0) return;
    try {
      await this.client.send(
        new SetRulePrioritiesCommand({
          RulePriorities: priorities.map((p) => ({ RuleArn: p.ruleArn, Priority: p.priority })),
        }),
      );
    } catch (err) {
      throw elbv2Error(`setting priorities of ${priorities.length} rules`, err);
    }
  }

  async findTargetGroups(names: readonly string[]): Promise<TargetGroup[]> {
    const found: TargetGroup[] = [];
    for (const chunk of chunks(unique(names), TARGET_GROUP_NAMES_PER_CALL)) {
      try {
        found.push(...(await this.targetGroups({ Names: chunk })));
      } catch (err) {
        // One unknown name fails the whole call: ask for each name on its own, keeping the ones that exist.
        if (elbv2ErrorCode(err) !== 'TargetGroupNotFound') throw elbv2Error('describing target groups', err);
        if (chunk.length === 1) continue;
        for (const name of chunk) found.push(...(await this.findTargetGroups([name])));
      }
    }
    return found;
  }

  async describeTargetGroupsByArn(arns: readonly string[]): Promise<TargetGroup[]> {
    const found: TargetGroup[] = [];
    for (const chunk of chunks(unique(arns), TARGET_GROUP_NAMES_PER_CALL)) {
      try {
        found.push(...(await this.targetGroups({ TargetGroupArns: chunk })));
      } catch (err) {
        // One unknown ARN fails the whole call: ask for each ARN on its own, keeping the ones that exist.
        if (elbv2ErrorCode(err) !== 'TargetGroupNotFound') throw elbv2Error('describing target groups by ARN', err);
        if (chunk.length === 1) continue;
        for (const arn of chunk) found.push(...(await this.describeTargetGroupsByArn([arn])));
      }
    }
    return found;
  }

  async describeTargetGroupsOfLoadBalancer(loadBalancerArn: string): Promise<TargetGroup[]> {
    try {
      return await this.targetGroups({ LoadBalancerArn: loadBalancerArn });
    } catch (err) {
      throw elbv2Error(`describing target groups of ${loadBalancerArn}`, err);
    }
  }

  async listTargetGroups(): Promise<TargetGroup[]> {
    try {
      return await this.targetGroups({});
    } catch (err) {
      throw elbv2Error('listing target groups', err);
    }
  }

  async createTargetGroup(input: CreateTargetGroupInput): Promise<TargetGroup | 'name-taken'> {
    try {
      const output = await this.client.send(
        new CreateTargetGroupCommand({
          Name: input.name,
          Protocol: input.protocol,
          Port: input.port,
          VpcId: input.vpcId,
          TargetType: input.targetType,
          IpAddressType: input.ipAddressType ?? 'ipv4',
          ...(input.protocolVersion ? { ProtocolVersion: input.protocolVersion } : {}),
          ...healthCheckInput(input.healthCheck),
          Tags: toKeyValues(input.tags),
        }),
      );
      const created = (output.TargetGroups ?? []).flatMap((g) => toTargetGroup(g) ?? [])[0];
      if (!created) throw new Error('CreateTargetGroup answered without a target group');
      return created;
    } catch (err) {
      if (elbv2ErrorCode(err) === 'DuplicateTargetGroupName') return 'name-taken';
      throw elbv2Error(`creating target group ${input.name}`, err);
    }
  }

  async modifyTargetGroupHealthCheck(arn: string, healthCheck: HealthCheck): Promise<void> {
    try {
      await this.client.send(new ModifyTargetGroupCommand({ TargetGroupArn: arn, ...healthCheckInput(healthCheck) }));
    } catch (err) {
      throw elbv2Error(`modifying health check of ${arn}`, err);
    }
  }

  async deleteTargetGroup(arn: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.client.send(new DeleteTargetGroupCommand({ TargetGroupArn: arn }));
      return 'deleted';
    } catch (err) {
      if (elbv2ErrorCode(err) === 'TargetGroupNotFound') return 'not-found';
      throw elbv2Error(`deleting target group ${arn}`, err);
    }
  }

  async describeTargetGroupAttributes(arn: string): Promise<Record<string, string>> {
    try {
      const output = await this.client.send(new DescribeTargetGroupAttributesCommand({ TargetGroupArn: arn }));
      return fromAttributes(output.Attributes);
    } catch (err) {
      throw elbv2Error(`describing attributes of ${arn}`, err);
    }
  }

  async modifyTargetGroupAttributes(arn: string, attributes: Readonly<Record<string, string>>): Promise<void> {
    try {
      await this.client.send(
        new ModifyTargetGroupAttributesCommand({ TargetGroupArn: arn, Attributes: toKeyValues(attributes) }),
      );
    } catch (err) {
      throw elbv2Error(`modifying attributes of ${arn}`, err);
    }
  }

  async describeTargetHealth(targetGroupArn: string): Promise<TargetHealth[]> {
    try {
      // Not paged by ELBv2: one answer holds every registered target.
      const output = await this.client.send(new DescribeTargetHealthCommand({ TargetGroupArn: targetGroupArn }));
      return (output.TargetHealthDescriptions ?? []).flatMap((d): TargetHealth[] => {
        if (!d.Target?.Id || d.Target.Port === undefined) return [];
        const raw = d.TargetHealth?.State ?? 'unavailable';
        const health: TargetHealth = {
          target: { id: d.Target.Id, port: d.Target.Port },
          state: HEALTH_STATES.has(raw) ? (raw as TargetHealthState) : 'unavailable',
        };
        if (d.TargetHealth?.Reason) health.reason = d.TargetHealth.Reason;
        if (d.TargetHealth?.Description) health.description = d.TargetHealth.Description;
        return [health];
      });
    } catch (err) {
      throw elbv2Error(`describing target health of ${targetGroupArn}`, err);
    }
  }

  async registerTargets(targetGroupArn: string, targets: readonly Target[]): Promise<void> {
    if (targets.length === 0) return;
    try {
      await this.client.send(
        new RegisterTargetsCommand({ TargetGroupArn: targetGroupArn, Targets: targets.map(toSdkTarget) }),
      );
    } catch (err) {
      throw elbv2Error(`registering ${targets.length} targets in ${targetGroupArn}`, err);
    }
  }

  async deregisterTargets(targetGroupArn: string, targets: readonly Target[]): Promise<void> {
    if (targets.length === 0) return;
    try {
      await this.client.send(
        new DeregisterTargetsCommand({ TargetGroupArn: targetGroupArn, Targets: targets.map(toSdkTarget) }),
      );
    } catch (err) {
      throw elbv2Error(`deregistering ${targets.length} targets from ${targetGroupArn}`, err);
    }
  }

  async describeTags(arns: readonly string[]): Promise<Map<string, Record<string, string>>> {
    const out = new Map<string, Record<string, string>>();
    for (const chunk of chunks(unique(arns), TAGS_ARNS_PER_CALL)) {
      try {
        const output = await this.client.send(new DescribeTagsCommand({ ResourceArns: chunk }));
        for (const description of output.TagDescriptions ?? []) {
          if (!description.ResourceArn) continue;
          out.set(description.ResourceArn, fromKeyValues(description.Tags));
        }
      } catch (err) {
        // One unknown ARN fails the whole call (deleted since it was listed): ask for each ARN on its own.
        if (!NOT_FOUND_CODES.has(elbv2ErrorCode(err))) throw elbv2Error('describing tags', err);
        if (chunk.length === 1) continue;
        for (const arn of chunk) for (const [k, v] of await this.describeTags([arn])) out.set(k, v);
      }
    }
    return out;
  }

  async addTags(arn: string, tags: Readonly<Record<string, string>>): Promise<void> {
    if (Object.keys(tags).length === 0) return;
    try {
      await this.client.send(new AddTagsCommand({ ResourceArns: [arn], Tags: toKeyValues(tags) }));
    } catch (err) {
      throw elbv2Error(`tagging ${arn}`, err);
    }
  }

  async removeTags(arn: string, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    try {
      await this.client.send(new RemoveTagsCommand({ ResourceArns: [arn], TagKeys: unique(keys) }));
    } catch (err) {
      throw elbv2Error(`removing tags ${keys.join(', ')} from ${arn}`, err);
    }
  }

  private async targetGroups(input: Omit<DescribeTargetGroupsCommandInput, 'Marker'>): Promise<TargetGroup[]> {
    // PageSize may not be combined with Names (nor, here, with ARNs: a list of at most 20 is one page).
    const pageSize = input.Names || input.TargetGroupArns ? {} : { PageSize: ELBV2_PAGE_SIZE };
    const pages = await allPages(
      (Marker) => this.client.send(new DescribeTargetGroupsCommand({ ...input, ...pageSize, Marker })),
      (page) => page.NextMarker,
    );
    return pages.flatMap((page) => (page.TargetGroups ?? []).flatMap((g) => toTargetGroup(g) ?? []));
  }
}

function listenerInput(spec: ListenerSpec) {
  const action: Action = { Type: 'forward', TargetGroupArn: spec.targetGroupArn };
  return {
    Port: spec.port,
    Protocol: spec.protocol,
    DefaultActions: [action],
    ...(spec.protocol === 'TLS' && spec.certificateArn
      ? { Certificates: [{ CertificateArn: spec.certificateArn }] }
      : {}),
    ...(spec.protocol === 'TLS' && spec.sslPolicy ? { SslPolicy: spec.sslPolicy } : {}),
    ...(spec.protocol === 'TLS' && spec.alpnPolicy ? { AlpnPolicy: [spec.alpnPolicy] } : {}),
  };
}

function applicationListenerInput(spec: ApplicationListenerSpec) {
  return {
    Port: spec.port,
    Protocol: spec.protocol,
    DefaultActions: spec.defaultActions.map(toSdkAction),
    ...(spec.protocol === 'HTTPS' && spec.certificateArn
      ? { Certificates: [{ CertificateArn: spec.certificateArn }] }
      : {}),
    ...(spec.protocol === 'HTTPS' && spec.sslPolicy ? { SslPolicy: spec.sslPolicy } : {}),
  };
}

function healthCheckInput(hc: HealthCheck) {
  return {
    HealthCheckEnabled: true,
    HealthCheckProtocol: hc.protocol,
    HealthCheckPort: hc.port,
    HealthCheckIntervalSeconds: hc.intervalSeconds,
    HealthCheckTimeoutSeconds: hc.timeoutSeconds,
    HealthyThresholdCount: hc.healthyThreshold,
    UnhealthyThresholdCount: hc.unhealthyThreshold,
    ...(hc.protocol === 'TCP' ? {} : { HealthCheckPath: hc.path ?? '/' }),
    ...(hc.matcher ? { Matcher: matcherInput(hc.matcher) } : {}),
  };
}

function matcherInput(matcher: NonNullable<HealthCheck['matcher']>) {
  return {
    ...(matcher.httpCode ? { HttpCode: matcher.httpCode } : {}),
    ...(matcher.grpcCode ? { GrpcCode: matcher.grpcCode } : {}),
  };
}

function toSdkTarget(target: Target) {
  return { Id: target.id, Port: target.port };
}

function fromAttributes(attributes: { Key?: string; Value?: string }[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const attribute of attributes ?? []) if (attribute.Key) out[attribute.Key] = attribute.Value ?? '';
  return out;
}

function toLoadBalancer(sdk: SdkLoadBalancer): LoadBalancer | undefined {
  if (!sdk.LoadBalancerArn || !sdk.LoadBalancerName) return undefined;
  const state = (sdk.State?.Code ?? 'provisioning') as LoadBalancerStateCode;
  const lb: LoadBalancer = {
    arn: sdk.LoadBalancerArn,
    name: sdk.LoadBalancerName,
    dnsName: sdk.DNSName ?? '',
    scheme: sdk.Scheme === 'internal' ? 'internal' : 'internet-facing',
    type: sdk.Type ?? '',
    // `dualstack-without-public-ipv4` (Application Load Balancers only) also serves IPv6 clients: dualstack.
    ipAddressType: sdk.IpAddressType?.startsWith('dualstack') ? 'dualstack' : 'ipv4',
    state,
    vpcId: sdk.VpcId,
    subnets: (sdk.AvailabilityZones ?? []).flatMap((zone) => {
      if (!zone.SubnetId) return [];
      const address = zone.LoadBalancerAddresses?.[0];
      const mapping: SubnetMapping & { zoneName?: string } = { subnetId: zone.SubnetId };
      if (zone.ZoneName) mapping.zoneName = zone.ZoneName;
      if (address?.AllocationId) mapping.allocationId = address.AllocationId;
      if (address?.PrivateIPv4Address) mapping.privateIPv4Address = address.PrivateIPv4Address;
      return [mapping];
    }),
    securityGroups: sdk.SecurityGroups ?? [],
  };
  if (sdk.State?.Reason) lb.stateReason = sdk.State.Reason;
  return lb;
}

function toListener(sdk: SdkListener): Listener | undefined {
  if (!sdk.ListenerArn || !sdk.LoadBalancerArn || sdk.Port === undefined || !sdk.Protocol) return undefined;
  // Only a listener with a single forward action to one target group is in the shape this controller writes.
  const actions = sdk.DefaultActions ?? [];
  const forward = actions.length === 1 && actions[0]?.Type === 'forward' ? actions[0] : undefined;
  const targetGroupArn =
    forward?.TargetGroupArn ??
    (forward?.ForwardConfig?.TargetGroups?.length === 1
      ? forward.ForwardConfig.TargetGroups[0]?.TargetGroupArn
      : undefined);
  const certificates = [...(sdk.Certificates ?? [])].sort(
    (a, b) => Number(b.IsDefault ?? false) - Number(a.IsDefault ?? false),
  );
  const listener: Listener = {
    arn: sdk.ListenerArn,
    loadBalancerArn: sdk.LoadBalancerArn,
    port: sdk.Port,
    protocol: (LISTENER_PROTOCOLS.has(sdk.Protocol) ? sdk.Protocol : 'TCP') as ListenerProtocol,
    certificateArns: certificates.flatMap((c) => (c.CertificateArn ? [c.CertificateArn] : [])),
  };
  if (sdk.SslPolicy) listener.sslPolicy = sdk.SslPolicy;
  // AWS states the policy as a list of one name.
  const alpn = sdk.AlpnPolicy?.[0];
  if (alpn && (ALPN_POLICIES as readonly string[]).includes(alpn)) listener.alpnPolicy = alpn as AlpnPolicy;
  if (targetGroupArn) listener.targetGroupArn = targetGroupArn;
  if (listener.protocol === 'HTTP' || listener.protocol === 'HTTPS') listener.defaultActions = fromSdkActions(actions);
  return listener;
}

function toTargetGroup(sdk: SdkTargetGroup): TargetGroup | undefined {
  if (!sdk.TargetGroupArn || !sdk.TargetGroupName || !sdk.Protocol) return undefined;
  const healthCheck: HealthCheck = {
    protocol: (sdk.HealthCheckProtocol ?? 'TCP') as HealthCheck['protocol'],
    port: sdk.HealthCheckPort ?? 'traffic-port',
    intervalSeconds: sdk.HealthCheckIntervalSeconds ?? 30,
    timeoutSeconds: sdk.HealthCheckTimeoutSeconds ?? 10,
    healthyThreshold: sdk.HealthyThresholdCount ?? 3,
    unhealthyThreshold: sdk.UnhealthyThresholdCount ?? 3,
  };
  if (healthCheck.protocol !== 'TCP' && sdk.HealthCheckPath) healthCheck.path = sdk.HealthCheckPath;
  // Only Application Load Balancer target groups (HTTP, HTTPS) say which codes are healthy and how they speak.
  const http = sdk.Protocol === 'HTTP' || sdk.Protocol === 'HTTPS';
  if (http && (sdk.Matcher?.HttpCode || sdk.Matcher?.GrpcCode)) {
    healthCheck.matcher = {
      ...(sdk.Matcher.HttpCode ? { httpCode: sdk.Matcher.HttpCode } : {}),
      ...(sdk.Matcher.GrpcCode ? { grpcCode: sdk.Matcher.GrpcCode } : {}),
    };
  }
  const protocolVersion =
    http && sdk.ProtocolVersion && PROTOCOL_VERSIONS.has(sdk.ProtocolVersion)
      ? { protocolVersion: sdk.ProtocolVersion as TargetGroupProtocolVersion }
      : {};
  return {
    arn: sdk.TargetGroupArn,
    name: sdk.TargetGroupName,
    protocol: sdk.Protocol as TargetGroupProtocol,
    port: sdk.Port ?? 0,
    targetType: sdk.TargetType === 'ip' ? 'ip' : 'instance',
    ipAddressType: sdk.IpAddressType === 'ipv6' ? 'ipv6' : 'ipv4',
    ...protocolVersion,
    vpcId: sdk.VpcId,
    healthCheck,
    loadBalancerArns: sdk.LoadBalancerArns ?? [],
  };
}
