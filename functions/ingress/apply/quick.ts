import { createHash } from 'node:crypto';
import type { LoadBalancer, Target } from '../../../shared/aws/elbv2-port.ts';
import type { GroupBuild, IngressGroupModel } from '../model/types.ts';
import type { GroupPass } from './pass.ts';
import { REPLACES_TAG } from './replacement.ts';
import { TAG } from './tags.ts';

/**
 * A pass with nothing to do costs a handful of calls, not one per target group: the last full pass that left the
 * group in line tagged its load balancer with a digest of what it applied (the model and every target group's
 * targets) and when. A pass whose model and targets have the same digest, within an hour of that full pass, whose
 * members all name the load balancer already, stops there. Anything else (a member changed, a Node or endpoint
 * moved, a member kept as it was, a member leaving, the hour passed) makes the full pass, which looks at every
 * resource and so also puts right what someone changed in AWS behind the controller's back.
 */

/** Our tag on the load balancer: `<digest>@<ISO time of the full pass>`. */
export const APPLIED_TAG = 'serverless-ccm/applied';
/** How long a digest stands in for a full look at AWS. */
export const FULL_PASS_INTERVAL_MS = 60 * 60 * 1000;

/**
 * With stack bindings on (functions/ingress/apply/stack-bindings.ts) the digest differs, so turning them on makes a
 * full pass (which makes the bindings); off, it is what it always was.
 */
export function appliedDigest(
  model: IngressGroupModel,
  targets: ReadonlyMap<string, Target[]>,
  options: { stackBindings: boolean } = { stackBindings: false },
): string {
  const sortedTargets = [...targets.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, list]) => [id, list.map((t) => `${t.id}:${t.port}`).sort()]);
  return createHash('sha256')
    .update(
      JSON.stringify({ model, targets: sortedTargets, ...(options.stackBindings ? { stackBindings: true } : {}) }),
    )
    .digest('hex')
    .slice(0, 32);
}

export function appliedTagValue(digest: string, now: number): string {
  return `${digest}@${new Date(now).toISOString()}`;
}

/** Whether the quick look is enough: same digest, a recent full pass, every member naming the load balancer. */
export function inLine(
  build: GroupBuild,
  lb: LoadBalancer,
  tags: Readonly<Record<string, string>>,
  digest: string,
  pass: GroupPass,
): boolean {
  if (build.leaving.length > 0 || build.members.some((m) => m.state !== 'built')) return false;
  if (lb.state !== 'active' || tags[REPLACES_TAG] !== undefined) return false;
  const [applied, at] = (tags[APPLIED_TAG] ?? '').split('@');
  if (applied !== digest || !at) return false;
  const age = pass.deps.clock.now() - Date.parse(at);
  if (!(age >= 0 && age < FULL_PASS_INTERVAL_MS)) return false;
  const hostname = lb.dnsName.toLowerCase();
  return build.members.every((m) => m.ingress.status?.loadBalancer?.ingress?.[0]?.hostname === hostname);
}

/** Tag keys the load balancer's tag keeping leaves alone: the digest is written at the end of a full pass only. */
export const PASS_TAGS = [APPLIED_TAG, TAG.replacedAt, REPLACES_TAG];
