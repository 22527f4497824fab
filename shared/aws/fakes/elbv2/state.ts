import { createHash } from 'node:crypto';
import type { Clock } from '../../../clock.ts';
import { ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS, NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS } from '../../elbv2-defaults.ts';
import type {
  CreateLoadBalancerInput,
  Listener,
  LoadBalancer,
  RuleAction,
  RuleCondition,
  SubnetMapping,
  Target,
  TargetGroup,
  TargetHealth,
  TargetHealthState,
} from '../../elbv2-port.ts';
import { type Ec2State, NewResourceWindow } from '../ec2/state.ts';
import { type RequestToRoute, type Route, routeRequest } from './matching.ts';
import { elbv2Failure, FAKE_ACCOUNT_ID } from './wire.ts';

export interface FakeLoadBalancer {
  lb: LoadBalancer;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  createdAt: number;
  /** DescribeLoadBalancers answers that still show `provisioning`. */
  provisioningDescribesLeft: number;
  /** Zones (by name, or subnet ID when the zone is unknown) whose removal is still under way, and until when. */
  removingZones: Map<string, number>;
}

export interface FakeTarget {
  target: Target;
  state: TargetHealthState;
  reason?: string;
  /** DescribeTargetHealth answers that still show `initial`. */
  initialDescribesLeft: number;
  /** While draining: when the deregistration delay ends and the target is gone. */
  drainUntil?: number;
}

/** A listener rule other than the default one (that one is the listener's default actions). */
export interface FakeRule {
  arn: string;
  listenerArn: string;
  priority: number;
  conditions: RuleCondition[];
  actions: RuleAction[];
  tags: Record<string, string>;
}

export interface FakeTargetGroup {
  tg: Omit<TargetGroup, 'loadBalancerArns'>;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  targets: Map<string, FakeTarget>;
}

/**
 * The account behind the fake ELBv2 API: what exists, its settings (timings, quotas, eventual consistency), and the
 * few rules several API calls share (what a lookup sees, which subnets and security groups a load balancer may use,
 * how provisioning ends). Tests set it up with `putLoadBalancer` and read it back through the maps and helpers;
 * the API calls live in the modules beside this one. Resources are kept in the port's shapes (elbv2-port.ts) and
 * turned into the SDK's shapes on the way out (shapes.ts).
 */
export class Elbv2State {
  readonly loadBalancers = new Map<string, FakeLoadBalancer>();
  readonly listeners = new Map<string, Listener>();
  /** Each listener's tags, by listener ARN (`{}` for one created untagged). */
  readonly listenerTags = new Map<string, Record<string, string>>();
  /** Each TLS listener's certificate list (the extra, SNI certificates; the default one is in the listener). */
  readonly listenerCertificates = new Map<string, string[]>();
  /** Each listener's attributes (`tcp.idle_timeout.seconds` on TCP listeners, none on others). */
  readonly listenerAttributes = new Map<string, Record<string, string>>();
  readonly targetGroups = new Map<string, FakeTargetGroup>();
  /** Listener rules (Application Load Balancers) by ARN, the default rules left out. */
  readonly rules = new Map<string, FakeRule>();
  /** The ARN of each HTTP/HTTPS listener's default rule, by listener ARN (and its tags). */
  readonly defaultRules = new Map<string, { arn: string; tags: Record<string, string> }>();
  /**
   * Rules an Application Load Balancer may hold, default rules not counted: "Rules per Application Load Balancer".
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html
   */
  ruleQuota = 100;
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
   * is unknown to every call naming it (TargetGroupNotFound, from DeleteTargetGroup too, and it stays) and missing
   * from DescribeTargetGroups. ELBv2 documents no such window, but callers meet TargetGroupNotFound right after a
   * create, as EC2 documents for its own resources
   * (https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html). CreateTargetGroup with the same
   * name and settings still returns it, being idempotent:
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
   */
  newTargetGroupInvisibleMs = 0;
  /** ... or for this many lookups of it (each call that would have found it), whichever ends first (0: no limit). */
  newTargetGroupInvisibleCalls = 0;

  readonly hiddenTargetGroups = new NewResourceWindow(() => this.clock.now());
  private idCounter = 0;

  constructor(
    readonly clock: Clock,
    /** The EC2 account whose subnets, security groups and instances the load balancers use (none: not checked). */
    readonly ec2?: Ec2State,
  ) {}

  // ---- test-facing helpers: set the account up and read it back without making API calls --------------

  /** Finish provisioning now. */
  activate(name: string): void {
    const found = this.byName(name);
    if (!found) throw new Error(`FakeElbv2: no load balancer ${name}`);
    found.lb.state = 'active';
  }

  /** Put a target in a state, as health checks would (e.g. `unhealthy`, with `Target.FailedHealthChecks`). */
  setTargetHealth(targetGroupArn: string, id: string, state: TargetHealthState, reason?: string): void {
    const group = this.targetGroups.get(targetGroupArn);
    const target = group && [...group.targets.values()].find((t) => t.target.id === id);
    if (!target) throw new Error(`FakeElbv2: no target ${id} in ${targetGroupArn}`);
    target.state = state;
    target.reason = reason;
    target.initialDescribesLeft = 0;
  }

  /** A load balancer someone else made (another cluster, a user, a controller's earlier run); nothing is checked. */
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
    return found
      ? { ...structuredClone(found.tg), loadBalancerArns: this.loadBalancersOf(found), tags: { ...found.tags } }
      : undefined;
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

  /**
   * What an HTTP/HTTPS listener does right now with a request: the first rule, in priority order, whose conditions
   * all match it, else the default rule (matching.ts). Reads the account, changes nothing.
   */
  route(listenerArn: string, request: RequestToRoute): Route {
    return routeRequest(this, listenerArn, request);
  }

  /** The rules of a listener, in priority order (the default rule is the listener's default actions). */
  rulesOf(listenerArn: string): FakeRule[] {
    return [...this.rules.values()]
      .filter((r) => r.listenerArn === listenerArn)
      .sort((a, b) => a.priority - b.priority);
  }

  // ---- what several API calls share ------------------------------------------------------------------

  /** Load balancer names are unique per region and account whatever their case. */
  byName(name: string): FakeLoadBalancer | undefined {
    const wanted = name.toLowerCase();
    return [...this.loadBalancers.values()].find((lb) => lb.lb.name.toLowerCase() === wanted);
  }

  lbOrThrow(arn: string | undefined): FakeLoadBalancer {
    const found = arn === undefined ? undefined : this.loadBalancers.get(arn);
    if (!found) throw elbv2Failure('LoadBalancerNotFound', 'One or more load balancers not found');
    return found;
  }

  /** The target group a call naming `arn` sees: TargetGroupNotFound while unknown or still hidden after its creation. */
  groupOrThrow(arn: string | undefined): FakeTargetGroup {
    const found = arn === undefined ? undefined : this.targetGroups.get(arn);
    if (!found || this.hiddenTargetGroups.hides(found.tg.arn)) {
      throw elbv2Failure('TargetGroupNotFound', 'One or more target groups not found');
    }
    return found;
  }

  listenerOrThrow(arn: string | undefined): Listener {
    const listener = arn === undefined ? undefined : this.listeners.get(arn);
    if (!listener) throw elbv2Failure('ListenerNotFound', 'One or more listeners not found');
    return listener;
  }

  /**
   * The load balancers whose listeners (default actions or rules) forward to the group: one at most, as "Load
   * balancers per target group" is 1 for both kinds.
   */
  loadBalancersOf(group: FakeTargetGroup): string[] {
    const arns = [...this.listeners.values()]
      .filter((l) => this.targetGroupsOfListener(l).includes(group.tg.arn))
      .map((l) => l.loadBalancerArn);
    return [...new Set(arns)];
  }

  /** Every target group a listener forwards to: its default actions' and its rules'. */
  targetGroupsOfListener(listener: Listener): string[] {
    const actions = [...(listener.defaultActions ?? []), ...this.rulesOf(listener.arn).flatMap((r) => r.actions)];
    const arns = actions.flatMap((a) => (a.type === 'forward' ? a.targetGroups.map((g) => g.arn) : []));
    if (listener.targetGroupArn) arns.push(listener.targetGroupArn);
    return [...new Set(arns)];
  }

  /** The live tag record of a load balancer, target group or listener. */
  tagsRef(arn: string): Record<string, string> | undefined {
    return (
      this.loadBalancers.get(arn)?.tags ??
      this.targetGroups.get(arn)?.tags ??
      this.listenerTags.get(arn) ??
      this.rules.get(arn)?.tags ??
      [...this.defaultRules.values()].find((r) => r.arn === arn)?.tags
    );
  }

  /** The tag record as a call naming `arn` sees it: none for a target group still hidden after its creation. */
  visibleTagsRef(arn: string): Record<string, string> | undefined {
    if (this.targetGroups.has(arn) && this.hiddenTargetGroups.hides(arn)) return undefined;
    return this.tagsRef(arn);
  }

  /** Drops a listener with everything kept beside it. */
  forgetListener(listenerArn: string): void {
    for (const rule of this.rulesOf(listenerArn)) this.rules.delete(rule.arn);
    this.defaultRules.delete(listenerArn);
    this.listenerTags.delete(listenerArn);
    this.listenerCertificates.delete(listenerArn);
    this.listenerAttributes.delete(listenerArn);
    this.listeners.delete(listenerArn);
  }

  zoneOf(subnetId: string): string | undefined {
    return this.ec2?.subnets.get(subnetId)?.availabilityZone;
  }

  newLoadBalancer(input: CreateLoadBalancerInput): FakeLoadBalancer {
    const id = this.nextId();
    const application = input.type === 'application';
    const kind = application ? 'app' : 'net';
    const arn = `arn:aws:elasticloadbalancing:${this.region}:${FAKE_ACCOUNT_ID}:loadbalancer/${kind}/${input.name}/${id}`;
    const vpcId = input.subnetMappings[0] ? this.ec2?.subnets.get(input.subnetMappings[0].subnetId)?.vpcId : undefined;
    const lb: FakeLoadBalancer = {
      lb: {
        arn,
        name: input.name,
        // An Application Load Balancer's name has the Classic form (`internal-` for an internal one, a number);
        // a Network Load Balancer's, `<name>-<hex>.elb.<region>.amazonaws.com`.
        dnsName: application
          ? `${input.scheme === 'internal' ? 'internal-' : ''}${input.name}-${Number.parseInt(id.slice(-8), 16)}.${this.region}.elb.amazonaws.com`
          : `${input.name}-${id}.elb.${this.region}.amazonaws.com`,
        scheme: input.scheme,
        type: application ? 'application' : 'network',
        ipAddressType: input.ipAddressType ?? 'ipv4',
        state: 'provisioning',
        vpcId: vpcId ?? 'vpc-0a1b2c3d',
        subnets: input.subnetMappings.map((m) => ({ ...m, zoneName: this.zoneOf(m.subnetId) })),
        securityGroups: [...input.securityGroups],
      },
      tags: { ...input.tags },
      attributes: { ...(application ? ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS : NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS) },
      createdAt: this.clock.now(),
      provisioningDescribesLeft: this.provisioningDescribes,
      removingZones: new Map(),
    };
    this.loadBalancers.set(arn, lb);
    this.ec2?.holdSecurityGroups(arn, input.securityGroups);
    return lb;
  }

  /** A DescribeLoadBalancers answer looks at the load balancer: provisioning ends after enough of them, or in time. */
  lookAt(found: FakeLoadBalancer): void {
    if (found.lb.state !== 'provisioning') return;
    if (found.provisioningDescribesLeft <= 0 || this.clock.now() - found.createdAt >= this.provisioningMs) {
      found.lb.state = 'active';
    } else {
      found.provisioningDescribesLeft--;
    }
  }

  /**
   * Subnets of a load balancer: at least one, one per zone, known to EC2; an Elastic IP only on an internet-facing
   * load balancer and a private address only on an internal one.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SubnetMapping.html
   */
  checkSubnets(scheme: LoadBalancer['scheme'], mappings: readonly SubnetMapping[]): void {
    if (mappings.length === 0) throw elbv2Failure('ValidationError', 'At least one subnet must be specified');
    const zones = new Set<string>();
    for (const mapping of mappings) {
      if (mapping.allocationId && scheme !== 'internet-facing') {
        throw elbv2Failure(
          'InvalidConfigurationRequest',
          'Elastic IP addresses can only be used with internet-facing load balancers',
        );
      }
      if (mapping.privateIPv4Address && scheme !== 'internal') {
        throw elbv2Failure(
          'InvalidConfigurationRequest',
          'Private IPv4 addresses can only be set on internal load balancers',
        );
      }
      if (!this.ec2) continue;
      const subnet = this.ec2.subnets.get(mapping.subnetId);
      if (!subnet) throw elbv2Failure('SubnetNotFound', `The subnet ID '${mapping.subnetId}' is not valid`);
      if (zones.has(subnet.availabilityZone)) {
        throw elbv2Failure(
          'InvalidConfigurationRequest',
          'A load balancer cannot be attached to multiple subnets in the same Availability Zone',
        );
      }
      zones.add(subnet.availabilityZone);
    }
  }

  /**
   * A dualstack load balancer needs an IPv6 CIDR block in every subnet.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-ip-address-type.html
   */
  checkDualStackSubnets(mappings: readonly SubnetMapping[]): void {
    for (const mapping of mappings) {
      const subnet = this.ec2?.subnets.get(mapping.subnetId);
      if (subnet && !subnet.ipv6CidrBlocks?.length) {
        throw elbv2Failure(
          'InvalidConfigurationRequest',
          `Subnet '${mapping.subnetId}' has no IPv6 CIDR block, which a dualstack load balancer needs`,
        );
      }
    }
  }

  /** Security groups as EC2 sees them now: one it still hides after its creation is as unknown as one never made. */
  checkSecurityGroups(groupIds: readonly string[]): void {
    if (!this.ec2) return;
    for (const id of groupIds) {
      if (!this.ec2.visibleSecurityGroup(id)) {
        throw elbv2Failure('InvalidSecurityGroup', `One or more security groups are invalid: ${id}`);
      }
    }
  }

  nextId(): string {
    return createHash('sha256')
      .update(String(++this.idCounter))
      .digest('hex')
      .slice(0, 16);
  }
}
