import { elbv2ErrorCode } from '../aws/elbv2-adapter.ts';
import { awsErrorCode } from '../aws/errors.ts';
import { RetryableError } from '../errors.ts';

/** The AWS error code behind a controller error (its `cause`), ELBv2's `...Exception` names normalised. */
export function codeOf(err: unknown): string | undefined {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return elbv2ErrorCode(cause) ?? awsErrorCode(cause);
}

/** A resource we just made that AWS does not show yet (eventual consistency): retried shortly, for a bounded while. */
export class NotVisibleYetError extends RetryableError {}

/** An AWS error that only means "the load balancer replacing this one has not let go of the target group yet". */
export function retryAssociationLimit(err: unknown, doing: string): never {
  if (codeOf(err) === 'TargetGroupAssociationLimit') {
    throw new RetryableError(`${doing}: the target group is still attached to another load balancer`, { cause: err });
  }
  throw err;
}
