import type { ReconcileResult } from '../../shared/queue/runner.ts';
import type { LoadBalancerOptions } from './annotations.ts';
import type { Pass } from './writes.ts';

/**
 * A kind of load balancer a Service can have. The reconciler decides that a Service is ours, adds the
 * finalizer and reports failures; a backend does the rest for its kind: build or keep in line (`ensure`),
 * and remove everything it made (`remove`) before the finalizer goes. A new kind (Classic ELB, ALB) is a new
 * backend beside the others, without touching them.
 */
export interface LoadBalancerBackend {
  readonly kind: string;
  ensure(pass: Pass, options: LoadBalancerOptions): Promise<ReconcileResult | undefined>;
  remove(pass: Pass, why: 'deleting' | 'not-ours-any-more'): Promise<ReconcileResult | undefined>;
}
