import type { ReconcileResult } from '../../shared/queue/runner.ts';
import type { LoadBalancerOptions } from './annotations.ts';
import type { Pass } from './writes.ts';

/**
 * A kind of load balancer a Service can have. The reconciler decides that a Service is ours, adds the
 * finalizer and reports failures; a backend does the rest for its kind: build or keep in line (`ensure`),
 * and remove everything it made (`remove`); the reconciler removes the finalizer once every backend is done. A new kind (Classic ELB, ALB) is a new
 * backend beside the others, without touching them.
 */
export interface LoadBalancerBackend {
  readonly kind: string;
  ensure(pass: Pass, options: LoadBalancerOptions): Promise<ReconcileResult | undefined>;
  /** Everything of this kind the Service has, removed; `done` once nothing is left (the finalizer may go). */
  remove(pass: Pass): Promise<RemoveResult>;
  /** The load balancer of that name, when it is the Service's, deleted: another kind has taken over from it. */
  retire(pass: Pass, name: string, successor: string): Promise<void>;
}

export type RemoveResult = { done: true; name: string } | { done: false; requeueAfterSeconds: number };

/** The first look again at a security group still in use after its load balancer went: AWS often frees it within seconds. */
export const FIRST_CLEANUP_RETRY_SECONDS = 5;

/**
 * How long a deletion waits before trying a security group (or target group) AWS still holds again, on its
 * `attempt`-th receive: 5 s, then three times longer each time, up to `capSeconds` (SERVICE_CLEANUP_REQUEUE_SECONDS).
 * Where AWS frees it at once (the first try, in the pass that deleted the load balancer) the Service goes at once;
 * where the network interfaces hold it for minutes, a handful of early tries is all it costs.
 */
export function cleanupRetrySeconds(attempt: number, capSeconds: number): number {
  return Math.min(capSeconds, FIRST_CLEANUP_RETRY_SECONDS * 3 ** Math.max(0, attempt - 1));
}
