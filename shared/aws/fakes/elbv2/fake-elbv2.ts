import type { $Command, ServiceInputTypes, ServiceOutputTypes } from '@aws-sdk/client-elastic-load-balancing-v2';
import {
  addListenerCertificates,
  createListener,
  deleteListener,
  describeListenerAttributes,
  describeListenerCertificates,
  describeListeners,
  modifyListener,
  modifyListenerAttributes,
  removeListenerCertificates,
} from './listeners.ts';
import {
  createLoadBalancer,
  deleteLoadBalancer,
  describeLoadBalancerAttributes,
  describeLoadBalancers,
  modifyLoadBalancerAttributes,
  setIpAddressType,
  setSecurityGroups,
  setSubnets,
} from './load-balancers.ts';
import { createRule, deleteRule, describeRules, modifyRule, setRulePriorities } from './rules.ts';
import { Elbv2State } from './state.ts';
import { addTags, describeTags, removeTags } from './tags.ts';
import {
  createTargetGroup,
  deleteTargetGroup,
  describeTargetGroupAttributes,
  describeTargetGroups,
  modifyTargetGroup,
  modifyTargetGroupAttributes,
} from './target-groups.ts';
import { deregisterTargets, describeTargetHealth, registerTargets } from './targets.ts';
import { elbv2Failure } from './wire.ts';

export type { RequestToRoute, Route } from './matching.ts';
export type { FakeLoadBalancer, FakeRule, FakeTarget, FakeTargetGroup } from './state.ts';

/**
 * Each ELBv2 API operation the fake answers, with what it does. The fake answers the SDK commands Elbv2Adapter sends
 * (`grep -o "new [A-Za-z]*Command" shared/aws/elbv2-adapter.ts`); any other command is refused.
 */
// biome-ignore lint/suspicious/noExplicitAny: each operation reads its own SDK input type.
const OPERATIONS: Record<Elbv2Operation, (elb: Elbv2State, input: any) => object> = {
  DescribeLoadBalancers: describeLoadBalancers,
  CreateLoadBalancer: createLoadBalancer,
  DeleteLoadBalancer: deleteLoadBalancer,
  SetSecurityGroups: setSecurityGroups,
  SetSubnets: setSubnets,
  SetIpAddressType: setIpAddressType,
  DescribeLoadBalancerAttributes: describeLoadBalancerAttributes,
  ModifyLoadBalancerAttributes: modifyLoadBalancerAttributes,
  DescribeListeners: describeListeners,
  CreateListener: createListener,
  ModifyListener: modifyListener,
  DeleteListener: deleteListener,
  DescribeListenerCertificates: describeListenerCertificates,
  AddListenerCertificates: addListenerCertificates,
  RemoveListenerCertificates: removeListenerCertificates,
  DescribeListenerAttributes: describeListenerAttributes,
  ModifyListenerAttributes: modifyListenerAttributes,
  DescribeRules: describeRules,
  CreateRule: createRule,
  ModifyRule: modifyRule,
  DeleteRule: deleteRule,
  SetRulePriorities: setRulePriorities,
  DescribeTargetGroups: describeTargetGroups,
  CreateTargetGroup: createTargetGroup,
  ModifyTargetGroup: modifyTargetGroup,
  DeleteTargetGroup: deleteTargetGroup,
  DescribeTargetGroupAttributes: describeTargetGroupAttributes,
  ModifyTargetGroupAttributes: modifyTargetGroupAttributes,
  DescribeTargetHealth: describeTargetHealth,
  RegisterTargets: registerTargets,
  DeregisterTargets: deregisterTargets,
  DescribeTags: describeTags,
  AddTags: addTags,
  RemoveTags: removeTags,
};

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
  | 'DescribeRules'
  | 'CreateRule'
  | 'ModifyRule'
  | 'DeleteRule'
  | 'SetRulePriorities'
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

/** The operations the fake answers: exactly those Elbv2Adapter sends (a test holds the two together). */
export const ELBV2_OPERATIONS = Object.keys(OPERATIONS) as readonly Elbv2Operation[];

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
  'CreateRule',
  'ModifyRule',
  'DeleteRule',
  'SetRulePriorities',
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
 * An in-memory Elastic Load Balancing v2 account for Network Load Balancers and Application Load Balancers (HTTP
 * and HTTPS listeners, listener rules, `route` to ask which rule a request matches) behind the ELBv2 API, for
 * `new Elbv2Adapter(fake)`: it answers the SDK v3 commands the adapter sends (`send`) with ELBv2's semantics, so the
 * adapter's own paging, chunking, fallbacks and error handling run in every test that uses it. Marker/PageSize
 * paging; DescribeLoadBalancers / DescribeTargetGroups by names and DescribeTags failing the whole call when one
 * name or ARN is unknown; load balancers `provisioning` for a while before `active`; listeners that tie a target
 * group to one load balancer (TargetGroupAssociationLimit); target groups that cannot go while in use (ResourceInUse);
 * targets that start `initial`, turn `healthy` and drain for the deregistration delay; idempotent creates (the same
 * settings answer the existing resource, other settings are DuplicateLoadBalancerName / DuplicateTargetGroupName /
 * DuplicateListener); attributes with AWS's defaults (elbv2-defaults.ts) and validation; subnet changes with Network
 * Load Balancer rules; TLS listeners with ALPN policies and certificate lists; eventual consistency after
 * CreateTargetGroup (opt-in, `newTargetGroupInvisibleMs`); throttling and queued errors per operation; call counters:
 * each command sent is one call of its operation. Errors are the SDK's exceptions as it raises them for ELBv2's
 * answers (wire code in `Code`, HTTP status in `$metadata`). Linked to a FakeEc2, it checks subnets, security groups
 * (one EC2 still hides after its creation is InvalidSecurityGroup) and instance targets against it, and keeps a load
 * balancer's security groups in use there until its network interfaces have drained (`eniDrainMs`).
 */
export class FakeElbv2 extends Elbv2State {
  readonly calls = new Map<Elbv2Operation, number>();
  /** Runs as each call starts, after it is counted: lets a test act between a reconciler's read and its write. */
  beforeCall?: (operation: Elbv2Operation) => void;

  private readonly queuedErrors = new Map<Elbv2Operation, Error[]>();
  private readonly throttleRemaining = new Map<Elbv2Operation, number>();

  /**
   * One ELBv2 API call: the command's class names the operation, its `input` is the request. Answers the SDK's
   * output shape, or throws the error ELBv2 would give as the SDK raises it.
   */
  async send<InputType extends ServiceInputTypes, OutputType extends ServiceOutputTypes>(
    command: $Command<InputType, OutputType, never, ServiceInputTypes, ServiceOutputTypes>,
  ): Promise<OutputType> {
    const operation = command.constructor.name.replace(/Command$/, '');
    if (!(operation in OPERATIONS)) throw new Error(`FakeElbv2 does not implement ${operation}`);
    const op = operation as Elbv2Operation;
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    this.beforeCall?.(op);
    const throttled = this.throttleRemaining.get(op) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(op, throttled - 1);
      // ELBv2 answers a throttled request with HTTP 400 and the wire code Throttling ("Rate exceeded").
      // https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html
      throw elbv2Failure('Throttling', 'Rate exceeded');
    }
    const queued = this.queuedErrors.get(op);
    if (queued && queued.length > 0) throw queued.shift()!;
    // The request is copied in and the answer out, so neither side holds the other's objects.
    const output = OPERATIONS[op](this, structuredClone(command.input));
    return { ...structuredClone(output), $metadata: { httpStatusCode: 200 } } as OutputType;
  }

  /** The next calls of `operation` fail with these errors (SDK-shaped ones, e.g. `AwsServiceError`), in order. */
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

  /** Calls that changed (or tried to change) something. */
  writeCallCount(): number {
    return ELBV2_WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  resetCalls(): void {
    this.calls.clear();
  }
}
