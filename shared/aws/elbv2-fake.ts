import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import type { Clock } from '../clock.ts';
import { type FakeEc2, NewResourceWindow } from './ec2-fake.ts';
import {
  ALPN_POLICIES,
  type CreateLoadBalancerInput,
  type CreateTargetGroupInput,
  ELBV2_PAGE_SIZE,
  type Elbv2Port,
  type HealthCheck,
  isValidElbName,
  type Listener,
  type ListenerCertificate,
  type ListenerProtocol,
  type ListenerSpec,
  type LoadBalancer,
  type LoadBalancerIpAddressType,
  type SubnetMapping,
  TAGS_ARNS_PER_CALL,
  TARGET_GROUP_NAMES_PER_CALL,
  type Target,
  type TargetGroup,
  type TargetGroupProtocol,
  type TargetHealth,
  type TargetHealthState,
} from './elbv2-port.ts';
import { AwsServiceError, toControllerError } from './errors.ts';

export type Elbv2Operation =
  | 'DescribeLoadBalancers'
  | 'CreateLoadBalancer'
  | 'DeleteLoadBalancer'
  | 'SetSecurityGroups'
  | 'SetSubnets'
  | 'SetIpAddressType'
  | 'DescribeLoadBalancerAttributes'
  | 'ModifyLoadBalancerAttributes'
  | 'DescribeListeners'
  | 'CreateListener'
  | 'ModifyListener'
  | 'DeleteListener'
  | 'DescribeListenerCertificates'
  | 'AddListenerCertificates'
  | 'RemoveListenerCertificates'
  | 'DescribeListenerAttributes'
  | 'ModifyListenerAttributes'
  | 'DescribeTargetGroups'
  | 'CreateTargetGroup'
  | 'ModifyTargetGroup'
  | 'DeleteTargetGroup'
  | 'DescribeTargetGroupAttributes'
  | 'ModifyTargetGroupAttributes'
  | 'DescribeTargetHealth'
  | 'RegisterTargets'
  | 'DeregisterTargets'
  | 'DescribeTags'
  | 'AddTags'
  | 'RemoveTags';

/** Operations that change the account: a reconcile that finds everything in place makes none of them. */
export const ELBV2_WRITE_OPERATIONS: readonly Elbv2Operation[] = [
  'CreateLoadBalancer',
  'DeleteLoadBalancer',
  'SetSecurityGroups',
  'SetSubnets',
  'SetIpAddressType',
  'ModifyLoadBalancerAttributes',
  'CreateListener',
  'ModifyListener',
  'DeleteListener',
  'AddListenerCertificates',
  'RemoveListenerCertificates',
  'ModifyListenerAttributes',
  'CreateTargetGroup',
  'ModifyTargetGroup',
  'DeleteTargetGroup',
  'ModifyTargetGroupAttributes',
  'RegisterTargets',
  'DeregisterTargets',
  'AddTags',
  'RemoveTags',
];

/**
 * Network Load Balancer attributes and their defaults.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#load-balancer-attributes
 */
export const NLB_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deletion_protection.enabled': 'false',
  'load_balancing.cross_zone.enabled': 'false',
  'access_logs.s3.enabled': 'false',
  'access_logs.s3.bucket': '',
  'access_logs.s3.prefix': '',
  'ipv6.deny_all_igw_traffic': 'false',
  'dns_record.client_routing_policy': 'any_availability_zone',
  'zonal_shift.config.enabled': 'false',
};

/**
 * Target group attributes of a Network Load Balancer target group; `preserve_client_ip.enabled` depends on
 * the target type and protocol, so it is filled in at creation.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/edit-target-group-attributes.html
 */
export const NLB_TARGET_GROUP_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deregistration_delay.timeout_seconds': '300',
  'deregistration_delay.connection_termination.enabled': 'false',
  'proxy_protocol_v2.enabled': 'false',
  'stickiness.enabled': 'false',
  'stickiness.type': 'source_ip',
  'load_balancing.cross_zone.enabled': 'use_load_balancer_configuration',
  'target_health_state.unhealthy.connection_termination.enabled': 'true',
  'target_group_health.dns_failover.minimum_healthy_targets.count': '1',
  'target_group_health.unhealthy_state_routing.minimum_healthy_targets.count': '1',
};

/**
 * The one listener attribute of a Network Load Balancer, on TCP listeners only; a TLS listener's idle timeout is
 * fixed at 350 seconds and UDP listeners have none.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html
 */
export const TCP_IDLE_TIMEOUT = 'tcp.idle_timeout.seconds';
export const TCP_LISTENER_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = { [TCP_IDLE_TIMEOUT]: '350' };

interface FakeLoadBalancer {
  lb: LoadBalancer;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  createdAt: number;
  /** DescribeLoadBalancers answers that still show `provisioning`. */
  provisioningDescribesLeft: number;
  /** Zones (by name, or subnet ID when the zone is unknown) whose removal is still under way, and until when. */
  removingZones: Map<string, number>;
}

interface FakeTarget {
  target: Target;
  state: TargetHealthState;
  reason?: string;
  /** DescribeTargetHealth answers that still show `initial`. */
  initialDescribesLeft: number;
  /** While draining: when the deregistration delay ends and the target is gone. */
  drainUntil?: number;
}

interface FakeTargetGroup {
  tg: Omit<TargetGroup, 'loadBalancerArns'>;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  targets: Map<string, FakeTarget>;
}

const ACCOUNT = '111122223333';

/**
 * An in-memory Elastic Load Balancing v2 account for Network Load Balancers, with the semantics the service
 * controller depends on: load balancers that are `provisioning` for a while before `active` (a number of
 * describes or clock time), listeners that tie a target group to one load balancer
 * (TargetGroupAssociationLimit), target groups that cannot be deleted while in use (ResourceInUse),
 * targets that start `initial`, turn `healthy`, and drain for the deregistration delay; idempotent creates
 * (same name and settings: the existing resource; other settings: DuplicateLoadBalancerName /
 * DuplicateTargetGroupName); tags (listeners' too), attributes with AWS's defaults and validation; dualstack load
 * balancers and IPv6 target groups; subnet changes with Network Load Balancer rules (a zone keeps its subnet and
 * addresses; a removed zone takes minutes to go); TLS listeners with ALPN policies and certificate lists; the TCP idle
 * timeout listener attribute; eventual consistency after CreateTargetGroup (opt-in, `newTargetGroupInvisibleMs`);
 * throttling and queued errors per operation; call counters that count calls as the adapter makes them (pages, chunks,
 * fallbacks). Linked to a FakeEc2, it checks subnets, security groups (a group EC2 still hides after its creation
 * is as unknown here: InvalidSecurityGroup) and instance targets against it and keeps a load balancer's security
 * groups in use until its network interfaces have drained.
 */
export class FakeElbv2 implements Elbv2Port {
  readonly loadBalancers = new Map<string, FakeLoadBalancer>();
  readonly listeners = new Map<string, Listener>();
  /** Each listener's tags, by listener ARN (`{}` for one created untagged). */
  readonly listenerTags = new Map<string, Record<string, string>>();
  /** Each TLS listener's certificate list (the extra, SNI certificates; the default one is in the listener). */
  readonly listenerCertificates = new Map<string, string[]>();
  /** Each listener's attributes (`tcp.idle_timeout.seconds` on TCP listeners, none on others). */
  readonly listenerAttributes = new Map<string, Record<string, string>>();
  readonly targetGroups = new Map<string, FakeTargetGroup>();
  readonly calls = new Map<Elbv2Operation, number>();
  region = 'eu-west-1';
  /** DescribeLoadBalancers answers during which a new load balancer is still `provisioning`. */
  provisioningDescribes = 2;
  /** ... or until this much time has passed, whichever comes first. */
  provisioningMs = 180_000;
  /** DescribeTargetHealth answers during which a new target is `initial` before `healthy`. */
  initialDescribes = 1;
  /** How long a deleted load balancer's network interfaces keep its security groups in use. */
  eniDrainMs = 120_000;
  /**
   * How long removing a subnet (a zone) from a Network Load Balancer takes: the zone is gone from
   * DescribeLoadBalancers at once, but no subnet of that zone can be added until then ("up to 3 minutes").
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html
   */
  subnetRemovalMs = 180_000;
  /**
   * Extra (non-default) certificates a load balancer's listeners may hold together: the "Certificates per Network
   * Load Balancer" quota. https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-limits.html
   */
  certificateQuota = 25;
  /**
   * Eventual consistency after CreateTargetGroup (off by default): for this long on the clock a new target group
   * is unknown to every call naming it (CreateListener, ModifyListener, RegisterTargets, DeregisterTargets,
   * DescribeTargetHealth, ModifyTargetGroup, Describe/ModifyTargetGroupAttributes, tags: TargetGroupNotFound;
   * DeleteTargetGroup: 'not-found', and it stays) and missing from DescribeTargetGroups. ELBv2 documents no such
   * window, but callers meet TargetGroupNotFound right after a create, as EC2 documents for its own resources
   * (https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html). CreateTargetGroup with the same
   * name and settings still returns it, being idempotent:
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
   */
  newTargetGroupInvisibleMs = 0;
  /** ... or for this many lookups of it (each call that would have found it), whichever ends first (0: no limit). */
  newTargetGroupInvisibleCalls = 0;
  /** Runs as each call starts, after it is counted: lets a test act between a reconciler's read and its write. */
  beforeCall?: (operation: Elbv2Operation) => void;

  private readonly queuedErrors = new Map<Elbv2Operation, Error[]>();
  private readonly throttleRemaining = new Map<Elbv2Operation, number>();
  private readonly hiddenTargetGroups = new NewResourceWindow(() => this.clock.now());
  private idCounter = 0;

  constructor(
    private readonly clock: Clock,
    private readonly ec2?: FakeEc2,
  ) {}

  // ---- test controls -------------------------------------------------------------------------------

  queueError(operation: Elbv2Operation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  /** The next `times` calls of `operation` answer Throttling. */
  throttle(operation: Elbv2Operation, times: number): void {
    this.throttleRemaining.set(operation, times);
  }

  callCount(operation?: Elbv2Operation): number {
    if (operation) return this.calls.get(operation) ?? 0;
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }

  writeCallCount(): number {
    return ELBV2_WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  resetCalls(): void {
    this.calls.clear();
  }

  /** Finish provisioning now. */
  activate(name: string): void {
    const found = this.byName(name);
    if (!found) throw new Error(`FakeElbv2: no load balancer ${name}`);
    found.lb.state = 'active';
  }

  /** Put a target in a state, as health checks would (e.g. `unhealthy`). */
  setTargetHealth(targetGroupArn: string, id: string, state: TargetHealthState): void {
    const group = this.targetGroups.get(targetGroupArn);
    const target = group && [...group.targets.values()].find((t) => t.target.id === id);
    if (!target) throw new Error(`FakeElbv2: no target ${id} in ${targetGroupArn}`);
    target.state = state;
    target.initialDescribesLeft = 0;
  }

  /** A load balancer someone else made (another cluster, a user, a controller's earlier run). */
  putLoadBalancer(input: CreateLoadBalancerInput & { state?: LoadBalancer['state'] }): LoadBalancer {
    const lb = this.newLoadBalancer(input);
    if (input.state) lb.lb.state = input.state;
    return structuredClone(lb.lb);
  }

  loadBalancerNamed(name: string): LoadBalancer | undefined {
    const found = this.byName(name);
    return found ? structuredClone(found.lb) : undefined;
  }

  targetGroupNamed(name: string): (TargetGroup & { tags: Record<string, string> }) | undefined {
    const found = [...this.targetGroups.values()].find((g) => g.tg.name === name);
    return found ? { ...this.describeGroup(found), tags: { ...found.tags } } : undefined;
  }

  tagsOf(arn: string): Record<string, string> | undefined {
    const tags = this.tagsRef(arn);
    return tags ? { ...tags } : undefined;
  }

  attributesOf(arn: string): Record<string, string> | undefined {
    const attributes = this.loadBalancers.get(arn)?.attributes ?? this.targetGroups.get(arn)?.attributes;
    return attributes ? { ...attributes } : undefined;
  }

  /** Registered targets (draining ones included) without moving any health state along. */
  targetsOf(targetGroupArn: string): TargetHealth[] {
    const group = this.targetGroups.get(targetGroupArn);
    if (!group) throw new Error(`FakeElbv2: no target group ${targetGroupArn}`);
    return [...group.targets.values()].map((t) => ({ target: { ...t.target }, state: t.state }));
  }

  listenersOf(loadBalancerArn: string): Listener[] {
    return [...this.listeners.values()].filter((l) => l.loadBalancerArn === loadBalancerArn).map((l) => ({ ...l }));
  }

  // ---- load balancers ------------------------------------------------------------------------------

  async findLoadBalancer(name: string): Promise<LoadBalancer | undefined> {
    await this.call('DescribeLoadBalancers');
    const found = this.byName(name);
    return found ? this.describeLoadBalancer(found) : undefined;
  }

  async listLoadBalancers(): Promise<LoadBalancer[]> {
    const all = [...this.loadBalancers.values()];
    for (let i = 0; i === 0 || i < all.length; i += ELBV2_PAGE_SIZE) await this.call('DescribeLoadBalancers');
    return all.map((lb) => this.describeLoadBalancer(lb));
  }

  async createLoadBalancer(input: CreateLoadBalancerInput): Promise<LoadBalancer | 'name-taken'> {
    await this.call('CreateLoadBalancer');
    const doing = `creating load balancer ${input.name}`;
    if (!isValidElbName(input.name))
      throw fail(doing, 'ValidationError', `Load balancer name '${input.name}' is not valid`);
    const ipAddressType = input.ipAddressType ?? 'ipv4';
    const existing = this.byName(input.name);
    if (existing) {
      // "If you attempt to create multiple load balancers with the same settings, each call succeeds."
      const same =
        existing.lb.scheme === input.scheme &&
        existing.lb.type === 'network' &&
        existing.lb.ipAddressType === ipAddressType &&
        sameSet(
          existing.lb.subnets.map((s) => s.subnetId),
          input.subnetMappings.map((s) => s.subnetId),
        ) &&
        sameSet(existing.lb.securityGroups, input.securityGroups);
      return same ? structuredClone(existing.lb) : 'name-taken';
    }
    this.checkSubnets(doing, input.scheme, input.subnetMappings);
    if (ipAddressType === 'dualstack') this.checkDualStackSubnets(doing, input.subnetMappings);
    this.checkSecurityGroups(doing, input.securityGroups);
    const created = this.newLoadBalancer(input);
    return structuredClone(created.lb);
  }

  async deleteLoadBalancer(arn: string): Promise<void> {
    await this.call('DeleteLoadBalancer');
    const found = this.loadBalancers.get(arn);
    // "If the load balancer does not exist or has already been deleted, the call succeeds."
    if (!found) return;
    if (found.attributes['deletion_protection.enabled'] === 'true') {
      throw fail(
        `deleting load balancer ${found.lb.name}`,
        'OperationNotPermitted',
        `Load balancer '${arn}' cannot be deleted because deletion protection is enabled`,
      );
    }
    for (const [listenerArn, listener] of this.listeners) {
      if (listener.loadBalancerArn === arn) this.forgetListener(listenerArn);
    }
    this.loadBalancers.delete(arn);
    this.ec2?.releaseSecurityGroups(arn, this.eniDrainMs);
  }

  async setSecurityGroups(arn: string, securityGroups: readonly string[]): Promise<void> {
    await this.call('SetSecurityGroups');
    const doing = `setting security groups of ${arn}`;
    const found = this.lbOrThrow(arn, doing);
    if (found.lb.securityGroups.length === 0) {
      throw fail(
        doing,
        'InvalidConfigurationRequest',
        'You cannot set security groups on a Network Load Balancer which was created without any security groups',
      );
    }
    this.checkSecurityGroups(doing, securityGroups);
    found.lb.securityGroups = [...securityGroups];
    this.ec2?.holdSecurityGroups(arn, securityGroups);
  }

  /**
   * Network Load Balancer semantics: every zone that stays keeps its subnet and addresses (an address left out
   * keeps the one it has); a zone can be added, or removed, which takes `subnetRemovalMs` to complete. Changing a
   * zone's subnet or address is therefore two steps: remove the zone, wait, add it again.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetSubnets.html
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html
   */
  async setSubnets(arn: string, subnetMappings: readonly SubnetMapping[]): Promise<void> {
    await this.call('SetSubnets');
    const doing = `setting subnets of ${arn}`;
    const found = this.lbOrThrow(arn, doing);
    this.checkSubnets(doing, found.lb.scheme, subnetMappings);
    const now = this.clock.now();
    for (const [zone, until] of found.removingZones) if (now >= until) found.removingZones.delete(zone);
    const current = new Map(found.lb.subnets.map((s) => [s.zoneName ?? s.subnetId, s]));
    const next: LoadBalancer['subnets'] = [];
    const added: SubnetMapping[] = [];
    for (const mapping of subnetMappings) {
      const zoneName = this.zoneOf(mapping.subnetId);
      const zone = zoneName ?? mapping.subnetId;
      const existing = current.get(zone);
      if (existing) {
        const changed =
          existing.subnetId !== mapping.subnetId ||
          (mapping.allocationId !== undefined && mapping.allocationId !== existing.allocationId) ||
          (mapping.privateIPv4Address !== undefined && mapping.privateIPv4Address !== existing.privateIPv4Address);
        if (changed) {
          throw fail(
            doing,
            'InvalidConfigurationRequest',
            `The subnet or address of zone '${zone}' cannot be changed in place: remove the existing subnet first, then add the new one`,
          );
        }
        next.push({ ...existing });
        continue;
      }
      if (found.removingZones.has(zone)) {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          `A subnet of zone '${zone}' is still being removed from the load balancer; try again later`,
        );
      }
      added.push(mapping);
      next.push({ ...mapping, zoneName });
    }
    if (found.lb.ipAddressType === 'dualstack') this.checkDualStackSubnets(doing, added);
    const kept = new Set(next.map((s) => s.zoneName ?? s.subnetId));
    for (const zone of current.keys()) if (!kept.has(zone)) found.removingZones.set(zone, now + this.subnetRemovalMs);
    found.lb.subnets = next;
  }

  async setIpAddressType(arn: string, ipAddressType: LoadBalancerIpAddressType): Promise<void> {
    await this.call('SetIpAddressType');
    const doing = `setting IP address type of ${arn} to ${ipAddressType}`;
    const found = this.lbOrThrow(arn, doing);
    if (ipAddressType === 'dualstack') {
      this.checkDualStackSubnets(doing, found.lb.subnets);
    } else {
      // "IPv6 target groups can only be associated with dualstack Network Load Balancers."
      const ipv6Group = this.listenersOf(arn).find(
        (l) => l.targetGroupArn && this.targetGroups.get(l.targetGroupArn)?.tg.ipAddressType === 'ipv6',
      );
      if (ipv6Group) {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          `Listener '${ipv6Group.arn}' forwards to an IPv6 target group, which needs a dualstack load balancer`,
        );
      }
    }
    found.lb.ipAddressType = ipAddressType;
  }

  async describeLoadBalancerAttributes(arn: string): Promise<Record<string, string>> {
    await this.call('DescribeLoadBalancerAttributes');
    return { ...this.lbOrThrow(arn, `describing attributes of ${arn}`).attributes };
  }

  async modifyLoadBalancerAttributes(arn: string, attributes: Readonly<Record<string, string>>): Promise<void> {
    await this.call('ModifyLoadBalancerAttributes');
    const doing = `modifying attributes of ${arn}`;
    const found = this.lbOrThrow(arn, doing);
    const next = { ...found.attributes };
    for (const [key, value] of Object.entries(attributes)) {
      if (!(key in NLB_ATTRIBUTE_DEFAULTS)) {
        throw fail(doing, 'ValidationError', `Load balancer attribute key '${key}' is not recognized`);
      }
      next[key] = value;
    }
    if (next['access_logs.s3.enabled'] === 'true' && !next['access_logs.s3.bucket']) {
      throw fail(doing, 'InvalidConfigurationRequest', "The value of 'access_logs.s3.bucket' cannot be empty");
    }
    found.attributes = next;
  }

  // ---- listeners -----------------------------------------------------------------------------------

  async describeListeners(loadBalancerArn: string): Promise<Listener[]> {
    await this.call('DescribeListeners');
    this.lbOrThrow(loadBalancerArn, `describing listeners of ${loadBalancerArn}`);
    return this.listenersOf(loadBalancerArn);
  }

  async createListener(
    loadBalancerArn: string,
    spec: ListenerSpec,
    tags: Readonly<Record<string, string>>,
  ): Promise<Listener> {
    await this.call('CreateListener');
    const doing = `creating listener ${spec.protocol}:${spec.port}`;
    const found = this.lbOrThrow(loadBalancerArn, doing);
    const existing = [...this.listeners.values()].find(
      (l) => l.loadBalancerArn === loadBalancerArn && l.port === spec.port,
    );
    if (existing) {
      // Idempotent like the creates of load balancers and target groups.
      if (sameListener(existing, spec)) return { ...existing };
      throw fail(doing, 'DuplicateListener', 'A listener already exists on this port for this load balancer');
    }
    this.checkListener(doing, found, spec);
    const arn = `arn:aws:elasticloadbalancing:${this.region}:${ACCOUNT}:listener/net/${found.lb.name}/${idOf(found.lb.arn)}/${this.nextId()}`;
    if (Object.keys(tags).length > 50)
      throw fail(doing, 'TooManyTags', 'You have reached the limit on the number of tags');
    const listener = toListener(arn, loadBalancerArn, spec);
    this.listeners.set(arn, listener);
    this.listenerTags.set(arn, { ...tags });
    this.listenerCertificates.set(arn, []);
    this.listenerAttributes.set(arn, spec.protocol === 'TCP' ? { ...TCP_LISTENER_ATTRIBUTE_DEFAULTS } : {});
    return { ...listener };
  }

  async modifyListener(listenerArn: string, spec: ListenerSpec): Promise<void> {
    await this.call('ModifyListener');
    const doing = `modifying listener ${listenerArn}`;
    const listener = this.listeners.get(listenerArn);
    if (!listener) throw fail(doing, 'ListenerNotFound', 'One or more listeners not found');
    const clash = [...this.listeners.values()].find(
      (l) => l.loadBalancerArn === listener.loadBalancerArn && l.port === spec.port && l.arn !== listenerArn,
    );
    if (clash) throw fail(doing, 'DuplicateListener', 'A listener already exists on this port for this load balancer');
    // "Any properties that you do not specify retain their current values": a TLS listener staying TLS keeps its
    // certificate and policies unless new ones are given.
    const effective: ListenerSpec =
      listener.protocol === 'TLS' && spec.protocol === 'TLS'
        ? {
            ...spec,
            certificateArn: spec.certificateArn ?? listener.certificateArns[0],
            sslPolicy: spec.sslPolicy ?? listener.sslPolicy,
            alpnPolicy: spec.alpnPolicy ?? listener.alpnPolicy,
          }
        : spec;
    this.checkListener(doing, this.lbOrThrow(listener.loadBalancerArn, doing), effective);
    // A new default certificate simply replaces the old one, which does not join the certificate list.
    this.listeners.set(listenerArn, toListener(listenerArn, listener.loadBalancerArn, effective));
    if (spec.protocol !== 'TLS') this.listenerCertificates.set(listenerArn, []);
    if (spec.protocol !== listener.protocol) {
      this.listenerAttributes.set(listenerArn, spec.protocol === 'TCP' ? { ...TCP_LISTENER_ATTRIBUTE_DEFAULTS } : {});
    }
  }

  async deleteListener(listenerArn: string): Promise<'deleted' | 'not-found'> {
    await this.call('DeleteListener');
    return this.forgetListener(listenerArn) ? 'deleted' : 'not-found';
  }

  /**
   * The default certificate (IsDefault) and then the certificate list. A certificate that is both default and
   * listed appears twice, as AWS documents; a listener other than TLS has none.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListenerCertificates.html
   */
  async describeListenerCertificates(listenerArn: string): Promise<ListenerCertificate[]> {
    await this.call('DescribeListenerCertificates');
    const listener = this.listenerOrThrow(listenerArn, `describing certificates of ${listenerArn}`);
    if (listener.protocol !== 'TLS') return [];
    const out: ListenerCertificate[] = listener.certificateArns
      .slice(0, 1)
      .map((certificateArn) => ({ certificateArn, isDefault: true }));
    for (const certificateArn of this.listenerCertificates.get(listenerArn) ?? []) {
      out.push({ certificateArn, isDefault: false });
    }
    for (let i = ELBV2_PAGE_SIZE; i < out.length; i += ELBV2_PAGE_SIZE) await this.call('DescribeListenerCertificates');
    return out;
  }

  /**
   * One AddListenerCertificates call per certificate, as the adapter makes them (AWS takes one per call). A
   * certificate already in the list is not added again; the default certificate is not in the list until added.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddListenerCertificates.html
   */
  async addListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void> {
    for (const certificateArn of new Set(certificateArns)) {
      await this.call('AddListenerCertificates');
      const doing = `adding certificate ${certificateArn} to ${listenerArn}`;
      const listener = this.listenerOrThrow(listenerArn, doing);
      if (listener.protocol !== 'TLS') {
        throw fail(doing, 'InvalidConfigurationRequest', `Certificates can only be added to TLS listeners`);
      }
      const list = this.listenerCertificates.get(listenerArn) ?? [];
      if (list.includes(certificateArn)) continue;
      const inUse = this.listenersOf(listener.loadBalancerArn).reduce(
        (n, l) => n + (this.listenerCertificates.get(l.arn)?.length ?? 0),
        0,
      );
      if (inUse >= this.certificateQuota) {
        throw fail(doing, 'TooManyCertificates', 'You have reached the limit on the number of certificates');
      }
      this.listenerCertificates.set(listenerArn, [...list, certificateArn]);
    }
  }

  /**
   * One call per certificate, like adding. The default certificate cannot be removed (ModifyListener replaces it);
   * a certificate not in the list is not an error.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RemoveListenerCertificates.html
   */
  async removeListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void> {
    for (const certificateArn of new Set(certificateArns)) {
      await this.call('RemoveListenerCertificates');
      const doing = `removing certificate ${certificateArn} from ${listenerArn}`;
      const listener = this.listenerOrThrow(listenerArn, doing);
      if (listener.certificateArns[0] === certificateArn) {
        throw fail(doing, 'OperationNotPermitted', "The default certificate of a listener can't be removed");
      }
      const list = this.listenerCertificates.get(listenerArn) ?? [];
      this.listenerCertificates.set(
        listenerArn,
        list.filter((c) => c !== certificateArn),
      );
    }
  }

  async describeListenerAttributes(listenerArn: string): Promise<Record<string, string>> {
    await this.call('DescribeListenerAttributes');
    const listener = this.listenerOrThrow(listenerArn, `describing attributes of ${listenerArn}`);
    return { ...this.attributesOfListener(listener) };
  }

  /** Nothing to change makes no call (the adapter sends none). */
  async modifyListenerAttributes(listenerArn: string, attributes: Readonly<Record<string, string>>): Promise<void> {
    if (Object.keys(attributes).length === 0) return;
    await this.call('ModifyListenerAttributes');
    const doing = `modifying attributes of ${listenerArn}`;
    const listener = this.listenerOrThrow(listenerArn, doing);
    for (const [key, value] of Object.entries(attributes)) {
      if (key !== TCP_IDLE_TIMEOUT) {
        throw fail(doing, 'ValidationError', `Listener attribute key '${key}' is not recognized`);
      }
      if (listener.protocol !== 'TCP') {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          `The attribute '${key}' can only be set on TCP listeners, not ${listener.protocol}`,
        );
      }
      const seconds = Number(value);
      if (!/^\d+$/.test(value) || seconds < 60 || seconds > 6000) {
        throw fail(doing, 'InvalidConfigurationRequest', `The value of '${key}' must be between 60 and 6000 seconds`);
      }
    }
    this.listenerAttributes.set(listenerArn, { ...this.attributesOfListener(listener), ...attributes });
  }

  // ---- target groups -------------------------------------------------------------------------------

  async findTargetGroups(names: readonly string[]): Promise<TargetGroup[]> {
    const wanted = [...new Set(names)];
    const found: TargetGroup[] = [];
    for (let i = 0; i < wanted.length; i += TARGET_GROUP_NAMES_PER_CALL) {
      const chunk = wanted.slice(i, i + TARGET_GROUP_NAMES_PER_CALL);
      await this.call('DescribeTargetGroups');
      const groups = chunk.flatMap((name) => {
        const group = [...this.targetGroups.values()].find((g) => g.tg.name === name);
        return group && !this.hiddenTargetGroups.hides(group.tg.arn) ? [group] : [];
      });
      // TargetGroupNotFound fails the whole call: the adapter then asks for each name on its own.
      if (groups.length < chunk.length && chunk.length > 1) {
        for (let n = 0; n < chunk.length; n++) await this.call('DescribeTargetGroups');
      }
      found.push(...groups.map((g) => this.describeGroup(g)));
    }
    return found;
  }

  async describeTargetGroupsOfLoadBalancer(loadBalancerArn: string): Promise<TargetGroup[]> {
    await this.call('DescribeTargetGroups');
    this.lbOrThrow(loadBalancerArn, `describing target groups of ${loadBalancerArn}`);
    return [...this.targetGroups.values()]
      .map((g) => this.describeGroup(g))
      .filter((g) => g.loadBalancerArns.includes(loadBalancerArn) && !this.hiddenTargetGroups.hides(g.arn));
  }

  async listTargetGroups(): Promise<TargetGroup[]> {
    const all = [...this.targetGroups.values()].filter((g) => !this.hiddenTargetGroups.hides(g.tg.arn));
    for (let i = 0; i === 0 || i < all.length; i += ELBV2_PAGE_SIZE) await this.call('DescribeTargetGroups');
    return all.map((g) => this.describeGroup(g));
  }

  async createTargetGroup(input: CreateTargetGroupInput): Promise<TargetGroup | 'name-taken'> {
    await this.call('CreateTargetGroup');
    const doing = `creating target group ${input.name}`;
    if (!isValidElbName(input.name))
      throw fail(doing, 'ValidationError', `Target group name '${input.name}' is not valid`);
    checkHealthCheck(doing, input.protocol, input.healthCheck);
    const ipAddressType = input.ipAddressType ?? 'ipv4';
    const existing = [...this.targetGroups.values()].find((g) => g.tg.name === input.name);
    if (existing) {
      const same =
        existing.tg.protocol === input.protocol &&
        existing.tg.port === input.port &&
        existing.tg.targetType === input.targetType &&
        existing.tg.ipAddressType === ipAddressType &&
        existing.tg.vpcId === input.vpcId &&
        sameHealthCheck(existing.tg.healthCheck, input.healthCheck);
      return same ? this.describeGroup(existing) : 'name-taken';
    }
    // "IPv6 target groups only support IP type targets."
    // https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-target-groups.html#target-group-ip-address-type
    if (ipAddressType === 'ipv6' && input.targetType !== 'ip') {
      throw fail(doing, 'InvalidConfigurationRequest', 'IPv6 target groups only support targets of type ip');
    }
    const arn = `arn:aws:elasticloadbalancing:${this.region}:${ACCOUNT}:targetgroup/${input.name}/${this.nextId()}`;
    const preserve = input.targetType === 'instance' || input.protocol === 'UDP' || input.protocol === 'TCP_UDP';
    const group: FakeTargetGroup = {
      tg: {
        arn,
        name: input.name,
        protocol: input.protocol,
        port: input.port,
        targetType: input.targetType,
        ipAddressType,
        vpcId: input.vpcId,
        healthCheck: { ...input.healthCheck },
      },
      tags: { ...input.tags },
      attributes: { ...NLB_TARGET_GROUP_ATTRIBUTE_DEFAULTS, 'preserve_client_ip.enabled': String(preserve) },
      targets: new Map(),
    };
    this.targetGroups.set(arn, group);
    this.hiddenTargetGroups.start(arn, this.newTargetGroupInvisibleMs, this.newTargetGroupInvisibleCalls);
    return this.describeGroup(group);
  }

  async modifyTargetGroupHealthCheck(arn: string, healthCheck: HealthCheck): Promise<void> {
    await this.call('ModifyTargetGroup');
    const doing = `modifying health check of ${arn}`;
    const group = this.groupOrThrow(arn, doing);
    checkHealthCheck(doing, group.tg.protocol, healthCheck);
    group.tg.healthCheck = { ...healthCheck };
  }

  async deleteTargetGroup(arn: string): Promise<'deleted' | 'not-found'> {
    await this.call('DeleteTargetGroup');
    const group = this.targetGroups.get(arn);
    // One still hidden after its creation answers TargetGroupNotFound (the adapter's 'not-found') and stays.
    if (!group || this.hiddenTargetGroups.hides(arn)) return 'not-found';
    if ([...this.listeners.values()].some((l) => l.targetGroupArn === arn)) {
      throw fail(
        `deleting target group ${group.tg.name}`,
        'ResourceInUse',
        `Target group '${arn}' is currently in use by a listener or a rule`,
      );
    }
    this.targetGroups.delete(arn);
    this.hiddenTargetGroups.forget(arn);
    return 'deleted';
  }

  async describeTargetGroupAttributes(arn: string): Promise<Record<string, string>> {
    await this.call('DescribeTargetGroupAttributes');
    return { ...this.groupOrThrow(arn, `describing attributes of ${arn}`).attributes };
  }

  async modifyTargetGroupAttributes(arn: string, attributes: Readonly<Record<string, string>>): Promise<void> {
    await this.call('ModifyTargetGroupAttributes');
    const doing = `modifying attributes of ${arn}`;
    const group = this.groupOrThrow(arn, doing);
    for (const [key, value] of Object.entries(attributes)) {
      if (!(key in group.attributes)) {
        throw fail(doing, 'ValidationError', `Target group attribute key '${key}' is not recognized`);
      }
      if (
        key === 'preserve_client_ip.enabled' &&
        value === 'false' &&
        group.tg.protocol !== 'TCP' &&
        group.tg.protocol !== 'TLS'
      ) {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          'Client IP preservation cannot be disabled for UDP and TCP_UDP',
        );
      }
      group.attributes[key] = value;
    }
  }

  // ---- targets -------------------------------------------------------------------------------------

  async describeTargetHealth(targetGroupArn: string): Promise<TargetHealth[]> {
    await this.call('DescribeTargetHealth');
    const group = this.groupOrThrow(targetGroupArn, `describing target health of ${targetGroupArn}`);
    const inUse = [...this.listeners.values()].some((l) => l.targetGroupArn === targetGroupArn);
    const now = this.clock.now();
    const out: TargetHealth[] = [];
    for (const [key, target] of group.targets) {
      if (target.state === 'draining' && target.drainUntil !== undefined && now >= target.drainUntil) {
        group.targets.delete(key);
        continue;
      }
      if (target.state === 'initial' || target.state === 'unused') {
        if (!inUse) {
          target.state = 'unused';
          target.reason = 'Target.NotInUse';
        } else if (target.initialDescribesLeft > 0) {
          target.state = 'initial';
          target.reason = 'Elb.RegistrationInProgress';
          target.initialDescribesLeft--;
        } else {
          target.state = 'healthy';
          target.reason = undefined;
        }
      }
      out.push({
        target: { ...target.target },
        state: target.state,
        ...(target.reason ? { reason: target.reason } : {}),
      });
    }
    return out;
  }

  async registerTargets(targetGroupArn: string, targets: readonly Target[]): Promise<void> {
    await this.call('RegisterTargets');
    const doing = `registering targets in ${targetGroupArn}`;
    const group = this.groupOrThrow(targetGroupArn, doing);
    for (const target of targets) this.checkTarget(doing, group, target);
    for (const target of targets) {
      const key = targetKey(target);
      const existing = group.targets.get(key);
      if (existing && existing.state !== 'draining') continue;
      group.targets.set(key, {
        target: { ...target },
        state: 'initial',
        initialDescribesLeft: this.initialDescribes,
      });
    }
  }

  async deregisterTargets(targetGroupArn: string, targets: readonly Target[]): Promise<void> {
    await this.call('DeregisterTargets');
    const group = this.groupOrThrow(targetGroupArn, `deregistering targets from ${targetGroupArn}`);
    const delaySeconds = Number(group.attributes['deregistration_delay.timeout_seconds'] ?? '300');
    for (const target of targets) {
      const registered = group.targets.get(targetKey(target));
      if (!registered || registered.state === 'draining') continue;
      registered.state = 'draining';
      registered.reason = 'Target.DeregistrationInProgress';
      registered.drainUntil = this.clock.now() + delaySeconds * 1000;
    }
  }

  // ---- tags ----------------------------------------------------------------------------------------

  async describeTags(arns: readonly string[]): Promise<Map<string, Record<string, string>>> {
    const wanted = [...new Set(arns)];
    const out = new Map<string, Record<string, string>>();
    for (let i = 0; i < wanted.length; i += TAGS_ARNS_PER_CALL) {
      const chunk = wanted.slice(i, i + TAGS_ARNS_PER_CALL);
      await this.call('DescribeTags');
      const known = chunk.filter((arn) => this.visibleTagsRef(arn) !== undefined);
      // An unknown ARN fails the whole call: the adapter then asks for each ARN on its own.
      if (known.length < chunk.length && chunk.length > 1) {
        for (let n = 0; n < chunk.length; n++) await this.call('DescribeTags');
      }
      for (const arn of known) out.set(arn, this.tagsOf(arn)!);
    }
    return out;
  }

  async addTags(arn: string, tags: Readonly<Record<string, string>>): Promise<void> {
    await this.call('AddTags');
    const doing = `tagging ${arn}`;
    const target = this.taggedOrThrow(arn, doing);
    const next = { ...target, ...tags };
    if (Object.keys(next).length > 50)
      throw fail(doing, 'TooManyTags', 'You have reached the limit on the number of tags');
    Object.assign(target, tags);
  }

  /** No keys makes no call (the adapter sends none); keys the resource does not have are not an error. */
  async removeTags(arn: string, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.call('RemoveTags');
    const target = this.taggedOrThrow(arn, `removing tags from ${arn}`);
    for (const key of keys) delete target[key];
  }

  // ---- internals -----------------------------------------------------------------------------------

  /** The live tag record of `arn`, or the not-found error of its kind. */
  private taggedOrThrow(arn: string, doing: string): Record<string, string> {
    const target = this.visibleTagsRef(arn);
    if (target) return target;
    const code = arn.includes(':targetgroup/')
      ? 'TargetGroupNotFound'
      : arn.includes(':listener/')
        ? 'ListenerNotFound'
        : 'LoadBalancerNotFound';
    throw fail(doing, code, `${arn} not found`);
  }

  /** Drops a listener with everything kept beside it; false when there was none. */
  private forgetListener(listenerArn: string): boolean {
    this.listenerTags.delete(listenerArn);
    this.listenerCertificates.delete(listenerArn);
    this.listenerAttributes.delete(listenerArn);
    return this.listeners.delete(listenerArn);
  }

  private listenerOrThrow(listenerArn: string, doing: string): Listener {
    const listener = this.listeners.get(listenerArn);
    if (!listener) throw fail(doing, 'ListenerNotFound', 'One or more listeners not found');
    return listener;
  }

  private attributesOfListener(listener: Listener): Record<string, string> {
    return (
      this.listenerAttributes.get(listener.arn) ?? (listener.protocol === 'TCP' ? TCP_LISTENER_ATTRIBUTE_DEFAULTS : {})
    );
  }

  /**
   * A dualstack load balancer needs an IPv6 CIDR block in every subnet.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-ip-address-type.html
   */
  private checkDualStackSubnets(doing: string, mappings: readonly SubnetMapping[]): void {
    if (!this.ec2) return;
    for (const mapping of mappings) {
      const subnet = this.ec2.subnets.get(mapping.subnetId);
      if (subnet && !subnet.ipv6CidrBlocks?.length) {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          `Subnet '${mapping.subnetId}' has no IPv6 CIDR block, which a dualstack load balancer needs`,
        );
      }
    }
  }

  /** The live tag record of a load balancer, target group or listener. */
  private tagsRef(arn: string): Record<string, string> | undefined {
    return this.loadBalancers.get(arn)?.tags ?? this.targetGroups.get(arn)?.tags ?? this.listenerTags.get(arn);
  }

  /** The tag record as a call naming `arn` sees it: none for a target group still hidden after its creation. */
  private visibleTagsRef(arn: string): Record<string, string> | undefined {
    if (this.targetGroups.has(arn) && this.hiddenTargetGroups.hides(arn)) return undefined;
    return this.tagsRef(arn);
  }

  private newLoadBalancer(input: CreateLoadBalancerInput): FakeLoadBalancer {
    const id = this.nextId();
    const arn = `arn:aws:elasticloadbalancing:${this.region}:${ACCOUNT}:loadbalancer/net/${input.name}/${id}`;
    const vpcId = input.subnetMappings[0] ? this.ec2?.subnets.get(input.subnetMappings[0].subnetId)?.vpcId : undefined;
    const lb: FakeLoadBalancer = {
      lb: {
        arn,
        name: input.name,
        dnsName: `${input.name}-${id}.elb.${this.region}.amazonaws.com`,
        scheme: input.scheme,
        type: 'network',
        ipAddressType: input.ipAddressType ?? 'ipv4',
        state: 'provisioning',
        vpcId: vpcId ?? 'vpc-0a1b2c3d',
        subnets: input.subnetMappings.map((m) => ({ ...m, zoneName: this.zoneOf(m.subnetId) })),
        securityGroups: [...input.securityGroups],
      },
      tags: { ...input.tags },
      attributes: { ...NLB_ATTRIBUTE_DEFAULTS },
      createdAt: this.clock.now(),
      provisioningDescribesLeft: this.provisioningDescribes,
      removingZones: new Map(),
    };
    this.loadBalancers.set(arn, lb);
    this.ec2?.holdSecurityGroups(arn, input.securityGroups);
    return lb;
  }

  private describeLoadBalancer(found: FakeLoadBalancer): LoadBalancer {
    if (found.lb.state === 'provisioning') {
      if (found.provisioningDescribesLeft <= 0 || this.clock.now() - found.createdAt >= this.provisioningMs) {
        found.lb.state = 'active';
      } else {
        found.provisioningDescribesLeft--;
      }
    }
    return structuredClone(found.lb);
  }

  private describeGroup(group: FakeTargetGroup): TargetGroup {
    const loadBalancerArns = [
      ...new Set(
        [...this.listeners.values()].filter((l) => l.targetGroupArn === group.tg.arn).map((l) => l.loadBalancerArn),
      ),
    ];
    return { ...structuredClone(group.tg), loadBalancerArns };
  }

  private byName(name: string): FakeLoadBalancer | undefined {
    const wanted = name.toLowerCase();
    return [...this.loadBalancers.values()].find((lb) => lb.lb.name.toLowerCase() === wanted);
  }

  private lbOrThrow(arn: string, doing: string): FakeLoadBalancer {
    const found = this.loadBalancers.get(arn);
    if (!found) throw fail(doing, 'LoadBalancerNotFound', 'One or more load balancers not found');
    return found;
  }

  /** The target group a call naming `arn` sees: TargetGroupNotFound while unknown or still hidden after its creation. */
  private groupOrThrow(arn: string, doing: string): FakeTargetGroup {
    const found = this.targetGroups.get(arn);
    if (!found || this.hiddenTargetGroups.hides(arn))
      throw fail(doing, 'TargetGroupNotFound', 'One or more target groups not found');
    return found;
  }

  private zoneOf(subnetId: string): string | undefined {
    return this.ec2?.subnets.get(subnetId)?.availabilityZone;
  }

  private checkSubnets(doing: string, scheme: LoadBalancer['scheme'], mappings: readonly SubnetMapping[]): void {
    if (mappings.length === 0) throw fail(doing, 'ValidationError', 'At least one subnet must be specified');
    const zones = new Set<string>();
    for (const mapping of mappings) {
      if (mapping.allocationId && scheme !== 'internet-facing') {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          'Elastic IP addresses can only be used with internet-facing load balancers',
        );
      }
      if (mapping.privateIPv4Address && scheme !== 'internal') {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          'Private IPv4 addresses can only be set on internal load balancers',
        );
      }
      if (!this.ec2) continue;
      const subnet = this.ec2.subnets.get(mapping.subnetId);
      if (!subnet) throw fail(doing, 'SubnetNotFound', `The subnet ID '${mapping.subnetId}' is not valid`);
      if (zones.has(subnet.availabilityZone)) {
        throw fail(
          doing,
          'InvalidConfigurationRequest',
          'A load balancer cannot be attached to multiple subnets in the same Availability Zone',
        );
      }
      zones.add(subnet.availabilityZone);
    }
  }

  private checkSecurityGroups(doing: string, groupIds: readonly string[]): void {
    if (!this.ec2) return;
    for (const id of groupIds) {
      if (!this.ec2.visibleSecurityGroup(id)) {
        throw fail(doing, 'InvalidSecurityGroup', `One or more security groups are invalid: ${id}`);
      }
    }
  }

  private checkListener(doing: string, lb: FakeLoadBalancer, spec: ListenerSpec): void {
    const loadBalancerArn = lb.lb.arn;
    const group = this.groupOrThrow(spec.targetGroupArn, doing);
    if (spec.port < 1 || spec.port > 65535) throw fail(doing, 'ValidationError', `Port ${spec.port} is not valid`);
    if (spec.protocol === 'TLS' && !spec.certificateArn) {
      throw fail(doing, 'ValidationError', 'A certificate must be specified for TLS listeners');
    }
    // ALPN policies are for TLS listeners only.
    // https://docs.aws.amazon.com/elasticloadbalancing/latest/network/tls-listener.html#alpn-policies
    if (spec.alpnPolicy !== undefined) {
      if (spec.protocol !== 'TLS' || !(ALPN_POLICIES as readonly string[]).includes(spec.alpnPolicy)) {
        throw fail(
          doing,
          'ALPNPolicyNotSupported',
          `The ALPN policy '${spec.alpnPolicy}' is not supported for ${spec.protocol} listeners`,
        );
      }
    }
    if (group.tg.ipAddressType === 'ipv6' && lb.lb.ipAddressType !== 'dualstack') {
      throw fail(
        doing,
        'InvalidConfigurationRequest',
        `The IPv6 target group '${spec.targetGroupArn}' can only be used with a dualstack load balancer`,
      );
    }
    if (!compatible(spec.protocol, group.tg.protocol)) {
      throw fail(
        doing,
        'IncompatibleProtocols',
        `The listener protocol '${spec.protocol}' is not compatible with the target group protocol '${group.tg.protocol}'`,
      );
    }
    const elsewhere = [...this.listeners.values()].some(
      (l) => l.targetGroupArn === spec.targetGroupArn && l.loadBalancerArn !== loadBalancerArn,
    );
    if (elsewhere) {
      throw fail(
        doing,
        'TargetGroupAssociationLimit',
        `The following target groups cannot be associated with more than one load balancer: ${spec.targetGroupArn}`,
      );
    }
  }

  private checkTarget(doing: string, group: FakeTargetGroup, target: Target): void {
    if (target.port < 1 || target.port > 65535)
      throw fail(doing, 'ValidationError', `Port ${target.port} is not valid`);
    if (group.tg.targetType === 'ip') {
      // "All IP addresses within a target group must have the same IP address type."
      const ipv6 = group.tg.ipAddressType === 'ipv6';
      if (ipv6 ? !isIPv6(target.id) : !isIPv4(target.id)) {
        throw fail(
          doing,
          'InvalidTarget',
          `The IP address '${target.id}' is not a valid ${ipv6 ? 'IPv6' : 'IPv4'} address for this target group`,
        );
      }
      return;
    }
    if (!/^i-[0-9a-f]+$/.test(target.id)) throw fail(doing, 'ValidationError', `'${target.id}' is not an instance ID`);
    const instance = this.ec2?.instances.get(target.id);
    if (this.ec2 && instance?.state !== 'running') {
      throw fail(
        doing,
        'InvalidTarget',
        `The following targets are not in a running state and cannot be registered: '${target.id}'`,
      );
    }
  }

  private nextId(): string {
    return createHash('sha256')
      .update(String(++this.idCounter))
      .digest('hex')
      .slice(0, 16);
  }

  private async call(operation: Elbv2Operation): Promise<void> {
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
    this.beforeCall?.(operation);
    const throttled = this.throttleRemaining.get(operation) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(operation, throttled - 1);
      throw toControllerError(operation, new AwsServiceError('Throttling', 'Rate exceeded', 400));
    }
    const queued = this.queuedErrors.get(operation);
    if (queued && queued.length > 0) throw toControllerError(operation, queued.shift()!);
  }
}

function fail(doing: string, code: string, message: string): Error {
  return toControllerError(doing, new AwsServiceError(code, message));
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

function sameHealthCheck(a: HealthCheck, b: HealthCheck): boolean {
  return (
    a.protocol === b.protocol &&
    a.port === b.port &&
    (a.path ?? '') === (b.path ?? '') &&
    a.intervalSeconds === b.intervalSeconds &&
    a.timeoutSeconds === b.timeoutSeconds &&
    a.healthyThreshold === b.healthyThreshold &&
    a.unhealthyThreshold === b.unhealthyThreshold
  );
}

function sameListener(listener: Listener, spec: ListenerSpec): boolean {
  return (
    listener.protocol === spec.protocol &&
    listener.targetGroupArn === spec.targetGroupArn &&
    (listener.certificateArns[0] ?? '') === (spec.certificateArn ?? '') &&
    (spec.sslPolicy === undefined || listener.sslPolicy === spec.sslPolicy) &&
    (spec.alpnPolicy === undefined || listener.alpnPolicy === spec.alpnPolicy)
  );
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-listeners.html */
function compatible(listener: ListenerProtocol, group: TargetGroupProtocol): boolean {
  if (listener === 'TLS') return group === 'TLS' || group === 'TCP';
  return listener === group;
}

/** Health check ranges of Network Load Balancer target groups. */
function checkHealthCheck(doing: string, protocol: TargetGroupProtocol, hc: HealthCheck): void {
  const range = (value: number, min: number, max: number, what: string) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw fail(doing, 'ValidationError', `${what} must be between ${min} and ${max}`);
    }
  };
  range(hc.intervalSeconds, 5, 300, 'Health check interval');
  range(hc.timeoutSeconds, 2, 120, 'Health check timeout');
  range(hc.healthyThreshold, 2, 10, 'Healthy threshold');
  range(hc.unhealthyThreshold, 2, 10, 'Unhealthy threshold');
  if (hc.port !== 'traffic-port') range(Number(hc.port), 1, 65535, 'Health check port');
  if (hc.protocol === 'TCP' && hc.path)
    throw fail(doing, 'ValidationError', 'A path cannot be set for TCP health checks');
  if (hc.protocol !== 'TCP' && !hc.path?.startsWith('/')) {
    throw fail(doing, 'ValidationError', 'Health check path must begin with a /');
  }
  // UDP cannot be health-checked over UDP: AWS requires TCP, HTTP or HTTPS, which the type already says.
  void protocol;
}

const TLS_API_DEFAULT_SSL_POLICY = 'ELBSecurityPolicy-2016-08';

function toListener(arn: string, loadBalancerArn: string, spec: ListenerSpec): Listener {
  const listener: Listener = {
    arn,
    loadBalancerArn,
    port: spec.port,
    protocol: spec.protocol,
    certificateArns: spec.certificateArn ? [spec.certificateArn] : [],
    targetGroupArn: spec.targetGroupArn,
  };
  // A TLS listener created through the API without a policy gets ELBSecurityPolicy-2016-08 (the console's default
  // differs). https://docs.aws.amazon.com/elasticloadbalancing/latest/network/describe-ssl-policies.html
  if (spec.protocol === 'TLS') listener.sslPolicy = spec.sslPolicy ?? TLS_API_DEFAULT_SSL_POLICY;
  if (spec.protocol === 'TLS' && spec.alpnPolicy !== undefined) listener.alpnPolicy = spec.alpnPolicy;
  return listener;
}

function targetKey(target: Target): string {
  return `${target.id}:${target.port}`;
}

function idOf(arn: string): string {
  return arn.slice(arn.lastIndexOf('/') + 1);
}
