import type { Target } from '../../shared/aws/elbv2-port.ts';
import { sortTargets, targetKey } from '../../shared/load-balancers/targets.ts';

/**
 * The targets a multi-cluster binding registered, kept on the binding itself (the reference keeps them in a ConfigMap
 * of its own): a target group shared with other clusters is deregistered only of these. Compact, `id:port` joined
 * by commas, sorted, and written only when it changes.
 */
export const REGISTERED_TARGETS_ANNOTATION = 'serverless-ccm/registered-targets';

export function parseRecord(value: string | undefined): Target[] | undefined {
  if (value === undefined) return undefined;
  const out: Target[] = [];
  for (const item of value.split(',')) {
    const at = item.lastIndexOf(':');
    const port = Number(item.slice(at + 1));
    if (at <= 0 || !Number.isInteger(port)) continue;
    out.push({ id: item.slice(0, at), port });
  }
  return out;
}

export function formatRecord(targets: readonly Target[]): string {
  const unique = new Map(targets.map((t) => [targetKey(t), t]));
  return sortTargets([...unique.values()])
    .map(targetKey)
    .join(',');
}
