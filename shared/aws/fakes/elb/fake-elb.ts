import type * as Sdk from '@aws-sdk/client-elastic-load-balancing';
import type { Clock } from '../../../clock.ts';
import {
  CLASSIC_HEALTH_CHECK_DEFAULTS,
  CLASSIC_TAGS_PER_LOAD_BALANCER,
  classicAttributeDefaults,
} from '../../elb-defaults.ts';
import { CLASSIC_PAGE_SIZE } from '../../elb-port.ts';
import * as config from './config.ts';
import {
  addListeners,
  CLASSIC_WRITE_OPERATIONS,
  checkHealthCheck,
  checkListener,
  checkName,
  checkTags,
  classicFailure,
  describe,
  type ElbEc2Link,
  type FakeClassicLoadBalancer,
  sameListener,
} from './model.ts';
import { addTags, checkTagNames, describeTags, removeTags } from './tags.ts';
import { FakeElbTopology } from './topology.ts';

export { CLASSIC_WRITE_OPERATIONS, type ElbEc2Link } from './model.ts';

type Handler = (input: never) => unknown;

/**
 * An in-memory Classic Load Balancer account (Elastic Load Balancing API 2012-06-01) that answers the SDK's
 * `send(command)`: it dispatches on the command's class name, reads `command.input` and answers the SDK's output
 * shapes, or throws errors shaped as the SDK throws them (`classicFailure`: the SDK's class name, the wire code in
 * `Code`). So the real `ElbAdapter` runs in every test: `new ElbAdapter(new FakeElb(clock, ec2))`.
 *
 * Semantics the service controller depends on: DNS names `<name>-<n>.<region>.elb.amazonaws.com` (`internal-...`
 * for internal ones); idempotent creates (same name and listeners: the existing DNS name; other listeners:
 * DuplicateLoadBalancerName); one subnet per zone; listener conflicts (DuplicateListener); the API's default
 * attributes and health check; proxy protocol and SSL negotiation policies; tags (50 at most); instances that are
 * OutOfService while registering, then InService. Linked to an EC2 fake it checks subnets (SubnetNotFound, one VPC,
 * an internet gateway for internet-facing: InvalidSubnet), security groups (a group EC2 does not show yet is
 * InvalidSecurityGroup), instances (unknown or not running: InvalidInstance), and keeps a load balancer's groups
 * in use until its network interfaces have drained (`eniDrainMs` after the delete). Call counters per operation,
 * queued errors and throttling for tests.
 */
export class FakeElb {
  readonly loadBalancers = new Map<string, FakeClassicLoadBalancer>();
  readonly calls = new Map<string, number>();
  region = 'eu-west-1';
  account = '111122223333';
  /** DescribeInstanceHealth answers during which a new instance is OutOfService before InService. */
  registeringDescribes = 1;
  /** How long a deleted load balancer's network interfaces keep its security groups in use. */
  eniDrainMs = 120_000;
  /** "Classic Load Balancers per Region" (20 unless raised): CreateLoadBalancer beyond it answers TooManyLoadBalancers. */
  loadBalancerQuota = 20;
  /** Runs as each call starts, after it is counted: lets a test act between a caller's read and its write. */
  beforeCall?: (operation: string) => void;
  /**
   * Certificate ARNs neither ACM nor IAM has (deleted, another region's): a listener naming one is refused with
   * CertificateNotFound, as AWS refuses it. Every other ARN is taken to exist (the fake keeps no certificates).
   */
  readonly missingCertificates = new Set<string>();

  private readonly queuedErrors = new Map<string, Error[]>();
  private readonly throttleRemaining = new Map<string, number>();
  private readonly topology: FakeElbTopology;
  private idCounter = 0;

  constructor(
    private readonly clock: Clock,
    readonly ec2?: ElbEc2Link,
  ) {
    this.topology = new FakeElbTopology(ec2);
  }

  // ---- test controls -------------------------------------------------------------------------------

  /** The next calls of `operation` (e.g. `CreateLoadBalancer`) fail with these errors, in order. */
  queueError(operation: string, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  /** The next `times` calls of `operation` answer Throttling. */
  throttle(operation: string, times: number): void {
    this.throttleRemaining.set(operation, times);
  }

  callCount(operation?: string): number {
    if (operation) return this.calls.get(operation) ?? 0;
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }

  writeCallCount(): number {
    return CLASSIC_WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  resetCalls(): void {
    this.calls.clear();
  }

  /** The load balancer as DescribeLoadBalancers would answer it, without counting a call. */
  describeNamed(name: string): Sdk.LoadBalancerDescription | undefined {
    const lb = this.byName(name);
    return lb ? describe(lb, (s) => this.topology.zoneOf(s)) : undefined;
  }

  /** The live state of a load balancer (tags, attributes, policies, instances), for assertions. */
  stateOf(name: string): FakeClassicLoadBalancer | undefined {
    return this.byName(name);
  }

  /** What health checks would have found: the instance answers this state from now on. */
  setInstanceHealth(name: string, instanceId: string, state: 'InService' | 'OutOfService'): void {
    const registered = this.byName(name)?.instances.get(instanceId);
    if (!registered) throw new Error(`FakeElb: ${instanceId} is not registered with ${name}`);
    registered.forced = state;
  }

  // ---- the API -------------------------------------------------------------------------------------

  /**
   * The SDK client's `send`: `command.constructor.name` picks the operation (`CreateLoadBalancerCommand` ->
   * CreateLoadBalancer). `any` because the SDK's `send` is generic over every command's output.
   */
  // biome-ignore lint/suspicious/noExplicitAny: answers whichever output shape the command has.
  async send(command: object): Promise<any> {
    const operation = command.constructor.name.replace(/Command$/, '');
    const handler = (this.handlers as Record<string, Handler | undefined>)[operation];
    if (!handler) throw new Error(`FakeElb: ${operation} is not implemented`);
    await this.call(operation);
    const input = structuredClone((command as { input?: unknown }).input ?? {}) as never;
    return { $metadata: { httpStatusCode: 200 }, ...(handler(input) as object) };
  }

  /** The operations, by name: the load balancer and its network, then what hangs on it. */
  private readonly handlers = { ...this.loadBalancerHandlers(), ...this.memberHandlers() };

  private loadBalancerHandlers() {
    return {
      DescribeLoadBalancers: (input: Sdk.DescribeAccessPointsInput) => this.describeLoadBalancers(input),
      CreateLoadBalancer: (input: Sdk.CreateAccessPointInput) => this.createLoadBalancer(input),
      DeleteLoadBalancer: (input: Sdk.DeleteAccessPointInput) => this.deleteLoadBalancer(input.LoadBalancerName),
      CreateLoadBalancerListeners: (input: Sdk.CreateLoadBalancerListenerInput) => {
        const lb = this.lb(input.LoadBalancerName);
        this.checkCertificates(input.Listeners ?? []);
        addListeners(lb, input.Listeners ?? []);
        return {};
      },
      DeleteLoadBalancerListeners: (input: Sdk.DeleteLoadBalancerListenerInput) => {
        const lb = this.lb(input.LoadBalancerName);
        for (const port of input.LoadBalancerPorts ?? []) lb.listeners.delete(port);
        return {};
      },
      AttachLoadBalancerToSubnets: (input: Sdk.AttachLoadBalancerToSubnetsInput) => {
        const lb = this.lb(input.LoadBalancerName);
        lb.subnets = this.topology.attach(lb, input.Subnets ?? []);
        return { Subnets: [...lb.subnets] };
      },
      DetachLoadBalancerFromSubnets: (input: Sdk.DetachLoadBalancerFromSubnetsInput) => {
        const lb = this.lb(input.LoadBalancerName);
        lb.subnets = this.topology.detach(lb, input.Subnets ?? []);
        return { Subnets: [...lb.subnets] };
      },
      ApplySecurityGroupsToLoadBalancer: (input: Sdk.ApplySecurityGroupsToLoadBalancerInput) => {
        const lb = this.lb(input.LoadBalancerName);
        if (!input.SecurityGroups?.length) throw classicFailure('ValidationError', 'SecurityGroups is required');
        this.topology.checkSecurityGroups(input.SecurityGroups);
        lb.securityGroups = [...new Set(input.SecurityGroups)];
        this.ec2?.holdSecurityGroups(lb.holder, lb.securityGroups);
        return { SecurityGroups: [...lb.securityGroups] };
      },
      ConfigureHealthCheck: (input: Sdk.ConfigureHealthCheckInput) => {
        const lb = this.lb(input.LoadBalancerName);
        const hc = input.HealthCheck;
        const healthCheck = {
          target: hc?.Target ?? '',
          intervalSeconds: hc?.Interval ?? Number.NaN,
          timeoutSeconds: hc?.Timeout ?? Number.NaN,
          healthyThreshold: hc?.HealthyThreshold ?? Number.NaN,
          unhealthyThreshold: hc?.UnhealthyThreshold ?? Number.NaN,
        };
        // Checked before it is kept: a refused request leaves the health check the load balancer has.
        checkHealthCheck(healthCheck);
        lb.healthCheck = healthCheck;
        return { HealthCheck: hc };
      },
      DescribeLoadBalancerAttributes: (input: Sdk.DescribeLoadBalancerAttributesInput) => ({
        LoadBalancerAttributes: config.describeAttributes(this.lb(input.LoadBalancerName)),
      }),
      ModifyLoadBalancerAttributes: (input: Sdk.ModifyLoadBalancerAttributesInput) => {
        const lb = this.lb(input.LoadBalancerName);
        config.modifyAttributes(lb, input.LoadBalancerAttributes);
        return { LoadBalancerName: lb.name, LoadBalancerAttributes: config.describeAttributes(lb) };
      },
      RegisterInstancesWithLoadBalancer: (input: Sdk.RegisterEndPointsInput) => {
        const lb = this.lb(input.LoadBalancerName);
        const ids = (input.Instances ?? []).map((i) => i.InstanceId ?? '');
        for (const id of ids) this.topology.checkInstance(lb, id);
        for (const id of ids) {
          if (!lb.instances.has(id)) lb.instances.set(id, { outOfServiceDescribesLeft: this.registeringDescribes });
        }
        return { Instances: [...lb.instances.keys()].map((InstanceId) => ({ InstanceId })) };
      },
      DeregisterInstancesFromLoadBalancer: (input: Sdk.DeregisterEndPointsInput) => {
        const lb = this.lb(input.LoadBalancerName);
        for (const i of input.Instances ?? []) lb.instances.delete(i.InstanceId ?? '');
        return { Instances: [...lb.instances.keys()].map((InstanceId) => ({ InstanceId })) };
      },
    };
  }

  /** Instances, tags, attributes and policies. */
  private memberHandlers() {
    return {
      DescribeInstanceHealth: (input: Sdk.DescribeEndPointStateInput) => {
        const lb = this.lb(input.LoadBalancerName);
        const asked = input.Instances?.length
          ? input.Instances.map((i) => i.InstanceId ?? '')
          : [...lb.instances.keys()];
        return { InstanceStates: asked.map((id) => this.topology.instanceState(lb, id)) };
      },
      DescribeTags: (input: Sdk.DescribeTagsInput) => {
        checkTagNames(input.LoadBalancerNames ?? []);
        return describeTags((input.LoadBalancerNames ?? []).map((n) => this.lb(n)));
      },
      AddTags: (input: Sdk.AddTagsInput) => {
        addTags(
          (input.LoadBalancerNames ?? []).map((n) => this.lb(n)),
          input.Tags ?? [],
        );
        return {};
      },
      RemoveTags: (input: Sdk.RemoveTagsInput) => {
        removeTags(
          (input.LoadBalancerNames ?? []).map((n) => this.lb(n)),
          input.Tags ?? [],
        );
        return {};
      },
      DescribeLoadBalancerPolicies: (input: Sdk.DescribeLoadBalancerPoliciesInput) => ({
        // Without a load balancer name AWS answers its sample policies, which this fake does not keep.
        PolicyDescriptions: input.LoadBalancerName
          ? config.describePolicies(this.lb(input.LoadBalancerName), input)
          : [],
      }),
      CreateLoadBalancerPolicy: (input: Sdk.CreateLoadBalancerPolicyInput) => {
        config.createPolicy(this.lb(input.LoadBalancerName), input);
        return {};
      },
      SetLoadBalancerPoliciesOfListener: (input: Sdk.SetLoadBalancerPoliciesOfListenerInput) => {
        config.setListenerPolicies(this.lb(input.LoadBalancerName), input);
        return {};
      },
      SetLoadBalancerPoliciesForBackendServer: (input: Sdk.SetLoadBalancerPoliciesForBackendServerInput) => {
        config.setBackendPolicies(this.lb(input.LoadBalancerName), input);
        return {};
      },
      DeleteLoadBalancerPolicy: (input: Sdk.DeleteLoadBalancerPolicyInput) => {
        config.deletePolicy(this.lb(input.LoadBalancerName), input.PolicyName ?? '');
        return {};
      },
    };
  }

  /**
   * By name (LoadBalancerNotFound when one named is unknown), or every load balancer a page at a time: PageSize
   * 1-400, Marker the opaque position this fake handed out.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeLoadBalancers.html
   */
  private describeLoadBalancers(input: Sdk.DescribeAccessPointsInput): Sdk.DescribeAccessPointsOutput {
    const zoneOf = (s: string) => this.topology.zoneOf(s);
    if (input.LoadBalancerNames?.length) {
      return { LoadBalancerDescriptions: input.LoadBalancerNames.map((n) => describe(this.lb(n), zoneOf)) };
    }
    const pageSize = input.PageSize ?? CLASSIC_PAGE_SIZE;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > CLASSIC_PAGE_SIZE) {
      throw classicFailure('ValidationError', `PageSize must be between 1 and ${CLASSIC_PAGE_SIZE}`);
    }
    const start = input.Marker === undefined ? 0 : Number(input.Marker);
    if (!Number.isInteger(start) || start < 0) throw classicFailure('ValidationError', 'Invalid Marker');
    const all = [...this.loadBalancers.values()];
    const page = all.slice(start, start + pageSize);
    const next = start + pageSize < all.length ? { NextMarker: String(start + pageSize) } : {};
    return { LoadBalancerDescriptions: page.map((lb) => describe(lb, zoneOf)), ...next };
  }

  /**
   * Same name and listeners: the existing one's DNS name; other listeners: DuplicateLoadBalancerName. Without
   * security groups a load balancer gets its VPC's default group.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancer.html
   */
  private createLoadBalancer(input: Sdk.CreateAccessPointInput): Sdk.CreateAccessPointOutput {
    const name = checkName(input.LoadBalancerName);
    if (!input.Listeners?.length) throw classicFailure('ValidationError', 'At least one listener is required');
    const listeners = input.Listeners.map(checkListener);
    this.checkCertificates(input.Listeners);
    const existing = this.byName(name);
    if (existing) {
      const current = [...existing.listeners.values()].map((l) => l.listener);
      const same =
        current.length === listeners.length && listeners.every((l) => current.some((c) => sameListener(c, l)));
      if (same) return { DNSName: existing.dnsName };
      throw classicFailure('DuplicateLoadBalancerName', `Load balancer name '${name}' already exists`);
    }
    if (this.loadBalancers.size >= this.loadBalancerQuota) {
      throw classicFailure('TooManyLoadBalancers', `Exceeded quota of account ${this.account}`);
    }
    const scheme = input.Scheme ?? 'internet-facing';
    if (scheme !== 'internet-facing' && scheme !== 'internal') {
      throw classicFailure('InvalidScheme', `Scheme '${scheme}' is not valid`);
    }
    const { subnets, vpcId } = this.topology.subnetsForCreate(input.Subnets ?? [], scheme);
    const securityGroups = this.topology.securityGroupsForCreate(input.SecurityGroups ?? [], vpcId);
    checkTags(input.Tags ?? []);
    if ((input.Tags ?? []).length > CLASSIC_TAGS_PER_LOAD_BALANCER) {
      throw classicFailure('TooManyTags', `A load balancer can have at most ${CLASSIC_TAGS_PER_LOAD_BALANCER} tags`);
    }
    const lb = this.newLoadBalancer(name, scheme, subnets, securityGroups, vpcId);
    addListeners(lb, input.Listeners);
    for (const t of input.Tags ?? []) lb.tags[t.Key ?? ''] = t.Value ?? '';
    return { DNSName: lb.dnsName };
  }

  /** A listener's certificate must exist: CertificateNotFound, and nothing of the call is done, when it does not. */
  private checkCertificates(listeners: readonly Sdk.Listener[]): void {
    for (const listener of listeners) {
      const arn = listener.SSLCertificateId;
      if (arn && this.missingCertificates.has(arn)) {
        throw classicFailure(
          'CertificateNotFound',
          `The specified SSL ID ${arn} does not refer to a valid SSL certificate in ACM or IAM`,
        );
      }
    }
  }

  private newLoadBalancer(
    name: string,
    scheme: FakeClassicLoadBalancer['scheme'],
    subnets: string[],
    securityGroups: string[],
    vpcId: string | undefined,
  ): FakeClassicLoadBalancer {
    const n = ++this.idCounter;
    const number = 1_000_000_000 + n * 7_654_321;
    const lb: FakeClassicLoadBalancer = {
      name,
      dnsName: `${scheme === 'internal' ? 'internal-' : ''}${name}-${number}.${this.region}.elb.amazonaws.com`,
      scheme,
      ...(vpcId ? { vpcId } : {}),
      subnets,
      securityGroups,
      listeners: new Map(),
      backendPolicies: new Map(),
      policies: new Map(),
      healthCheck: { ...CLASSIC_HEALTH_CHECK_DEFAULTS },
      instances: new Map(),
      attributes: classicAttributeDefaults(),
      tags: {},
      createdTime: new Date(this.clock.now()),
      holder: `arn:aws:elasticloadbalancing:${this.region}:${this.account}:loadbalancer/${name}#${n}`,
    };
    this.loadBalancers.set(name.toLowerCase(), lb);
    this.ec2?.holdSecurityGroups(lb.holder, securityGroups);
    return lb;
  }

  /** "If the load balancer does not exist or has already been deleted, the call to DeleteLoadBalancer still succeeds." */
  private deleteLoadBalancer(name: string | undefined): object {
    const lb = this.byName(name ?? '');
    if (!lb) return {};
    this.loadBalancers.delete(lb.name.toLowerCase());
    this.ec2?.releaseSecurityGroups(lb.holder, this.eniDrainMs);
    return {};
  }

  private byName(name: string): FakeClassicLoadBalancer | undefined {
    // Names are unique whatever their case.
    return this.loadBalancers.get(name.toLowerCase());
  }

  private lb(name: string | undefined): FakeClassicLoadBalancer {
    const lb = this.byName(name ?? '');
    if (!lb) throw classicFailure('LoadBalancerNotFound', `There is no ACTIVE Load Balancer named '${name}'`);
    return lb;
  }

  private async call(operation: string): Promise<void> {
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
    this.beforeCall?.(operation);
    const throttled = this.throttleRemaining.get(operation) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(operation, throttled - 1);
      throw classicFailure('Throttling', 'Rate exceeded');
    }
    const queued = this.queuedErrors.get(operation);
    if (queued && queued.length > 0) throw queued.shift()!;
  }
}
