import type { Elbv2Port, Target, TargetHealth } from '../aws/elbv2-port.ts';
import { MetricName, type MetricsPort } from '../observability/metrics.ts';
import { planTargets } from './targets.ts';

/**
 * The one path by which targets go into and out of a target group, whichever front end wants them (an Ingress
 * group's target groups, a TargetGroupBinding's): the registered targets read, the difference written, deregistering
 * first (a target group at its quota of targets still takes the newcomers).
 */

export interface RegistrationPorts {
  elbv2: Pick<Elbv2Port, 'describeTargetHealth' | 'registerTargets' | 'deregisterTargets'>;
  /** When given, `TargetsRegistered` and `TargetsDeregistered` count the targets named. */
  metrics?: MetricsPort;
}

export interface TargetChanges {
  register: readonly Target[];
  deregister: readonly Target[];
}

/** Writes a plan; answers the number of calls made (0: nothing differed). */
export async function applyTargetChanges(ports: RegistrationPorts, arn: string, plan: TargetChanges): Promise<number> {
  let writes = 0;
  if (plan.deregister.length > 0) {
    await ports.elbv2.deregisterTargets(arn, plan.deregister);
    ports.metrics?.count(MetricName.TargetsDeregistered, {}, plan.deregister.length);
    writes++;
  }
  if (plan.register.length > 0) {
    await ports.elbv2.registerTargets(arn, plan.register);
    ports.metrics?.count(MetricName.TargetsRegistered, {}, plan.register.length);
    writes++;
  }
  return writes;
}

/**
 * The group's targets made exactly `wanted`: read (unless the group was just created, when none can be registered),
 * then the difference written. Answers the writes and what was registered before.
 */
export async function registerByDifference(
  ports: RegistrationPorts,
  arn: string,
  wanted: readonly Target[],
  options: { created?: boolean } = {},
): Promise<{ writes: number; current: TargetHealth[] }> {
  const current = options.created ? [] : await ports.elbv2.describeTargetHealth(arn);
  const writes = await applyTargetChanges(ports, arn, planTargets(wanted, current));
  return { writes, current };
}
