import type { $Command, ServiceInputTypes, ServiceOutputTypes } from '@aws-sdk/client-ec2';
import {
  describeAvailabilityZones,
  describeInstances,
  describeInstanceTypes,
  modifyInstanceAttribute,
  modifyNetworkInterfaceAttribute,
} from './instances.ts';
import {
  assignPrivateIpAddresses,
  deleteNetworkInterface,
  describeNetworkInterfaces,
  unassignPrivateIpAddresses,
} from './network-interfaces.ts';
import { createRoute, deleteRoute, describeRouteTables, replaceRoute } from './route-tables.ts';
import {
  authorizeSecurityGroupIngress,
  createSecurityGroup,
  deleteSecurityGroup,
  describeSecurityGroups,
  revokeSecurityGroupIngress,
} from './security-groups.ts';
import { Ec2State } from './state.ts';
import { createTags, deleteTags, describeSubnets } from './subnets-and-tags.ts';
import { ec2Error } from './wire.ts';

export { makeInstance, makeNetworkInterface, makeRouteTable, makeSubnet } from './builders.ts';
export { NewResourceWindow } from './new-resource-window.ts';
export type { FakeNetworkInterface, FakeRoute, FakeRouteTable } from './records.ts';

/**
 * Each EC2 API operation the fake answers, with what it does. The fake answers the SDK commands Ec2Adapter sends
 * (`grep -o "new [A-Za-z]*Command" shared/aws/ec2-adapter.ts`); any other command is refused.
 */
// biome-ignore lint/suspicious/noExplicitAny: each operation reads its own SDK input type.
const OPERATIONS: Record<Ec2Operation, (ec2: Ec2State, input: any) => object> = {
  DescribeInstances: describeInstances,
  DescribeAvailabilityZones: describeAvailabilityZones,
  DescribeInstanceTypes: describeInstanceTypes,
  ModifyInstanceAttribute: modifyInstanceAttribute,
  ModifyNetworkInterfaceAttribute: modifyNetworkInterfaceAttribute,
  DescribeRouteTables: describeRouteTables,
  CreateRoute: createRoute,
  ReplaceRoute: replaceRoute,
  DeleteRoute: deleteRoute,
  DescribeSubnets: describeSubnets,
  DescribeSecurityGroups: describeSecurityGroups,
  CreateSecurityGroup: createSecurityGroup,
  AuthorizeSecurityGroupIngress: authorizeSecurityGroupIngress,
  RevokeSecurityGroupIngress: revokeSecurityGroupIngress,
  DeleteSecurityGroup: deleteSecurityGroup,
  DescribeNetworkInterfaces: describeNetworkInterfaces,
  AssignPrivateIpAddresses: assignPrivateIpAddresses,
  UnassignPrivateIpAddresses: unassignPrivateIpAddresses,
  DeleteNetworkInterface: deleteNetworkInterface,
  CreateTags: createTags,
  DeleteTags: deleteTags,
};

/** The operations the fake answers: exactly those Ec2Adapter sends (a test holds the two together). */
export const EC2_OPERATIONS = Object.keys(OPERATIONS) as readonly Ec2Operation[];

export type Ec2Operation =
  | 'DescribeInstances'
  | 'DescribeAvailabilityZones'
  | 'DescribeInstanceTypes'
  | 'ModifyInstanceAttribute'
  | 'ModifyNetworkInterfaceAttribute'
  | 'DescribeRouteTables'
  | 'CreateRoute'
  | 'ReplaceRoute'
  | 'DeleteRoute'
  | 'DescribeSubnets'
  | 'DescribeSecurityGroups'
  | 'CreateSecurityGroup'
  | 'AuthorizeSecurityGroupIngress'
  | 'RevokeSecurityGroupIngress'
  | 'DeleteSecurityGroup'
  | 'DescribeNetworkInterfaces'
  | 'AssignPrivateIpAddresses'
  | 'UnassignPrivateIpAddresses'
  | 'DeleteNetworkInterface'
  | 'CreateTags'
  | 'DeleteTags';

/** Operations that change the account: a reconcile that finds everything in place makes none of them. */
export const EC2_WRITE_OPERATIONS: readonly Ec2Operation[] = [
  'ModifyInstanceAttribute',
  'ModifyNetworkInterfaceAttribute',
  'CreateRoute',
  'ReplaceRoute',
  'DeleteRoute',
  'CreateSecurityGroup',
  'AuthorizeSecurityGroupIngress',
  'RevokeSecurityGroupIngress',
  'DeleteSecurityGroup',
  'AssignPrivateIpAddresses',
  'UnassignPrivateIpAddresses',
  'DeleteNetworkInterface',
  'CreateTags',
  'DeleteTags',
];

/**
 * An in-memory EC2 account behind the EC2 API, for `new Ec2Adapter(fake)`: it answers the SDK v3 commands the
 * adapter sends (`send`) with EC2's semantics (paging, filters, limits, error codes as SDK service exceptions), so
 * the adapter's own paging, chunking and error handling run in every test that uses it. Its account: instances
 * with state, ENIs, addresses, DNS names, tags and zones; standalone network interfaces with secondary addresses and
 * /28 prefixes drawn from their subnets; route tables, subnets and security groups. Eventual
 * consistency (a new instance stays invisible for N lookups; a security group this fake creates can stay unknown
 * for a while, see `newSecurityGroupInvisibleMs`), throttling and queued errors per operation, and call counters:
 * each command sent is one call of its operation, exactly as the adapter makes them.
 */
export class FakeEc2 extends Ec2State {
  readonly calls = new Map<Ec2Operation, number>();
  /** Artificial latency per call, for the local simulation (0 in tests). */
  latencyMs = 0;
  /**
   * Runs as each call starts, after it is counted: lets a test play another writer acting between a
   * reconciler's read and its write (e.g. someone creating the same route first).
   */
  beforeCall?: (operation: Ec2Operation) => void;

  private readonly queuedErrors = new Map<Ec2Operation, Error[]>();
  private readonly throttleRemaining = new Map<Ec2Operation, number>();

  /**
   * One EC2 API call: the command's class names the operation, its `input` is the request. Answers the SDK's
   * output shape, or throws the error EC2 would give as the SDK raises it (name = EC2 error code).
   */
  async send<InputType extends ServiceInputTypes, OutputType extends ServiceOutputTypes>(
    command: $Command<InputType, OutputType, never, ServiceInputTypes, ServiceOutputTypes>,
  ): Promise<OutputType> {
    const operation = command.constructor.name.replace(/Command$/, '');
    if (!(operation in OPERATIONS)) throw new Error(`FakeEc2 does not implement ${operation}`);
    const op = operation as Ec2Operation;
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    this.beforeCall?.(op);
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    const throttled = this.throttleRemaining.get(op) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(op, throttled - 1);
      // EC2 throttles with HTTP 503. https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html
      throw ec2Error('RequestLimitExceeded', 'Request limit exceeded.', 503);
    }
    const queued = this.queuedErrors.get(op);
    if (queued && queued.length > 0) throw queued.shift()!;
    // The request is copied in and the answer out, so neither side holds the other's objects.
    const output = OPERATIONS[op](this, structuredClone(command.input));
    return { ...structuredClone(output), $metadata: { httpStatusCode: 200 } } as OutputType;
  }

  /** The next calls of `operation` fail with these errors (SDK-shaped ones, e.g. `AwsServiceError`), in order. */
  queueError(operation: Ec2Operation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  /** The next `times` calls of `operation` answer RequestLimitExceeded. */
  throttle(operation: Ec2Operation, times: number): void {
    this.throttleRemaining.set(operation, times);
  }

  callCount(operation?: Ec2Operation): number {
    if (operation) return this.calls.get(operation) ?? 0;
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }

  /** Calls that changed (or tried to change) something. */
  writeCallCount(): number {
    return EC2_WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  reset(): void {
    this.clearState();
    this.queuedErrors.clear();
    this.throttleRemaining.clear();
    this.calls.clear();
  }

  resetCalls(): void {
    this.calls.clear();
  }
}
