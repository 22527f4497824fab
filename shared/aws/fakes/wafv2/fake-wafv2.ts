import type { $Command, ServiceInputTypes, ServiceOutputTypes } from '@aws-sdk/client-wafv2';
import {
  associateWebAcl,
  createWebAcl,
  deleteWebAcl,
  disassociateWebAcl,
  getWebAcl,
  getWebAclForResource,
  listResourcesForWebAcl,
  listWebAcls,
  Wafv2State,
} from './web-acls.ts';
import { wafFailure } from './wire.ts';

export type { FakeWebAcl } from './web-acls.ts';

/**
 * Each WAFv2 operation the fake answers: those Wafv2Adapter sends, and those a test or a seed manages web ACLs
 * with. Any other command is refused.
 */
// biome-ignore lint/suspicious/noExplicitAny: each operation reads its own SDK input type.
const OPERATIONS: Record<Wafv2Operation, (waf: Wafv2State, input: any) => object> = {
  GetWebACLForResource: getWebAclForResource,
  ListWebACLs: listWebAcls,
  AssociateWebACL: associateWebAcl,
  DisassociateWebACL: disassociateWebAcl,
  CreateWebACL: createWebAcl,
  GetWebACL: getWebAcl,
  DeleteWebACL: deleteWebAcl,
  ListResourcesForWebACL: listResourcesForWebAcl,
};

export type Wafv2Operation =
  | 'GetWebACLForResource'
  | 'ListWebACLs'
  | 'AssociateWebACL'
  | 'DisassociateWebACL'
  | 'CreateWebACL'
  | 'GetWebACL'
  | 'DeleteWebACL'
  | 'ListResourcesForWebACL';

export const WAFV2_OPERATIONS = Object.keys(OPERATIONS) as readonly Wafv2Operation[];

/** Operations that change the account: a pass that finds the web ACL in place makes none of them. */
export const WAFV2_WRITE_OPERATIONS: readonly Wafv2Operation[] = [
  'AssociateWebACL',
  'DisassociateWebACL',
  'CreateWebACL',
  'DeleteWebACL',
];

/**
 * An in-memory AWS WAFv2 account behind the WAFv2 API, for `new Wafv2Adapter(fake)`: it answers the SDK v3 commands
 * (`send`) with WAF's semantics, so the adapter's paging and error handling run in every test that uses it.
 * Regional and CloudFront web ACLs (names unique per scope, WAFDuplicateItemException), ListWebACLs paged by
 * Limit/NextMarker, one web ACL per resource (associating another replaces it), resources a regional web ACL can
 * protect (a Network Load Balancer cannot be: WAFInvalidParameterException), WAFNonexistentItemException for web
 * ACLs (and, linked to an ELBv2 account by `resourceExists`, load balancers) that are not there, no deleting a web
 * ACL in use (WAFAssociatedItemException) or with a stale lock token (WAFOptimisticLockException). Throttling,
 * queued errors and call counters per operation; errors are the SDK's exception classes.
 */
export class FakeWafv2 extends Wafv2State {
  readonly calls = new Map<Wafv2Operation, number>();
  /** Runs as each call starts, after it is counted: lets a test act between a caller's read and its write. */
  beforeCall?: (operation: Wafv2Operation) => void;

  private readonly queuedErrors = new Map<Wafv2Operation, Error[]>();
  private readonly throttleRemaining = new Map<Wafv2Operation, number>();

  /** One WAFv2 API call: the command's class names the operation, its `input` is the request. */
  async send<InputType extends ServiceInputTypes, OutputType extends ServiceOutputTypes>(
    command: $Command<InputType, OutputType, never, ServiceInputTypes, ServiceOutputTypes>,
  ): Promise<OutputType> {
    const operation = command.constructor.name.replace(/Command$/, '');
    if (!(operation in OPERATIONS)) throw new Error(`FakeWafv2 does not implement ${operation}`);
    const op = operation as Wafv2Operation;
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    this.beforeCall?.(op);
    const throttled = this.throttleRemaining.get(op) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(op, throttled - 1);
      // WAF answers a throttled request with HTTP 400 and ThrottlingException ("Rate exceeded").
      // https://docs.aws.amazon.com/waf/latest/APIReference/CommonErrors.html
      throw wafFailure('ThrottlingException', 'Rate exceeded');
    }
    const queued = this.queuedErrors.get(op);
    if (queued && queued.length > 0) throw queued.shift()!;
    const output = OPERATIONS[op](this, structuredClone(command.input));
    return { ...structuredClone(output), $metadata: { httpStatusCode: 200 } } as OutputType;
  }

  /** The next calls of `operation` fail with these errors (SDK-shaped ones), in order. */
  queueError(operation: Wafv2Operation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  /** The next `times` calls of `operation` answer ThrottlingException. */
  throttle(operation: Wafv2Operation, times: number): void {
    this.throttleRemaining.set(operation, times);
  }

  callCount(operation?: Wafv2Operation): number {
    if (operation) return this.calls.get(operation) ?? 0;
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }

  writeCallCount(): number {
    return WAFV2_WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  resetCalls(): void {
    this.calls.clear();
  }
}
