import { RetryableError } from '../../../shared/errors.ts';
import { codeOf, NotVisibleYetError } from '../../../shared/load-balancers/errors.ts';
import { ensureListeners } from '../../../shared/load-balancers/listeners.ts';
import type { ObservedLoadBalancer } from '../../../shared/load-balancers/observed.ts';
import type { LoadBalancerGroups } from '../../../shared/load-balancers/security-groups.ts';
import { deleteStaleTargetGroups, ensureTargetGroups } from '../../../shared/load-balancers/target-groups.ts';
import { desiredTargets, ensureTargets } from '../../../shared/load-balancers/targets.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { describeProblems, type LoadBalancerOptions } from '../annotations.ts';
import type { LoadBalancerBackend } from '../backend.ts';
import { resourceContext } from '../context.ts';
import { ingressHostname } from '../decide.ts';
import { AnnotationError } from '../deps.ts';
import { EVENT } from '../kube.ts';
import { adoptLbcStack } from '../lbc/adopt.ts';
import { keepServiceStackBindings, withGateWaiting } from '../lbc/stack-bindings.ts';
import { type LoadBalancerSpec, loadBalancerSpec, type SpecResult } from '../model/spec.ts';
import { loadBalancerNameFromHostname, preferredLoadBalancerName, REPLACES_TAG } from '../names.ts';
import type { Pass } from '../writes.ts';
import { deleteNetworkLoadBalancer } from './cleanup.ts';
import { finishPass, retireNetworkLoadBalancer, retireServing } from './finish.ts';
import {
  createLoadBalancer,
  ensureNetworkLoadBalancerGroups,
  narrowLoadBalancer,
  widenLoadBalancer,
} from './load-balancer.ts';
import { ensureNodeAccess } from './node-access.ts';
import { looksInLine } from './quick-check.ts';
import { chooseLoadBalancer, type LoadBalancerChoice } from './replacement.ts';
import { ensureTargetsOnly } from './targets-pass.ts';

/**
 * Network Load Balancers: a front end that builds the model (model/spec.ts) and has the resource modules of
 * shared/load-balancers apply it (docs/adr/0013-load-balancer-resource-modules.md). The order of a pass comes from
 * what each resource needs to exist first:
 *
 *  1. choose      which load balancer serves now, which one this pass builds (replacement.ts)
 *  2. groups      security groups, which the load balancer is created with (load-balancer.ts, with the shared
 *                 security-groups.ts)
 *  3. widen       the load balancer created, or given its groups, zones, dual-stack and tags (load-balancer.ts)
 *  4. targets     target groups (listeners forward to them), listeners, targets (the shared target-groups.ts,
 *                 listeners.ts, targets.ts), then the Node rules that let the load balancer reach the targets
 *                 (node-access.ts: the shared node-rules.ts, or the reference controller's way)
 *  5. narrow      back to IPv4 only once no listener needs IPv6; attributes (load-balancer.ts)
 *  6. unused      target groups no listener uses any more (the shared target-groups.ts)
 *  7. status      names the load balancer built; when another one serves meanwhile, once the new one serves
 *                 (active, a healthy target behind every listener) (finish.ts)
 *  8. retire      the replaced load balancer, SERVICE_REPLACEMENT_GRACE_SECONDS after the status moved (finish.ts)
 */
export const networkLoadBalancers: LoadBalancerBackend = {
  kind: 'nlb',
  ensure: ensureWithFreshResources,
  remove: deleteNetworkLoadBalancer,
  retire: retireNetworkLoadBalancer,
};

/** AWS codes that, right after we created the group or target group they name, mean "not visible yet". */
const NOT_VISIBLE_YET = new Set(['InvalidGroup.NotFound', 'InvalidSecurityGroup', 'TargetGroupNotFound']);
/** Receives of a key's message during which a resource just made may still be invisible (EC2 and ELBv2 are eventually consistent). */
export const FRESH_RESOURCE_ATTEMPTS = 5;
export const FRESH_RESOURCE_REQUEUE_SECONDS = 5;

/**
 * A group or target group made a moment ago may be unknown to the next call that names it: AWS documents
 * this eventual consistency, usually seconds, rarely minutes. The pass is tried again shortly (everything is
 * found again by name), a bounded number of times; after that it fails as any AWS error does, and the queue's
 * backoff takes over: the key is never dropped (a resource really gone is found missing and made again, and one
 * that never shows up ends in the DLQ). Acknowledging it instead left the Service as it was until its next
 * change or resync, and a Node that joined meanwhile was never registered while its instance ran.
 * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
 */
async function ensureWithFreshResources(
  pass: Pass,
  options: LoadBalancerOptions,
): Promise<ReconcileResult | undefined> {
  try {
    return await ensureNetworkLoadBalancer(pass, options);
  } catch (err) {
    const code = err instanceof NotVisibleYetError ? 'NameTakenNotVisible' : codeOf(err);
    if (!code || !(NOT_VISIBLE_YET.has(code) || err instanceof NotVisibleYetError)) throw err;
    if (pass.receiveCount >= FRESH_RESOURCE_ATTEMPTS) {
      throw new RetryableError(
        `a security group or target group is still unknown to AWS after ${pass.receiveCount} attempts (${code}): ${(err as Error).message}`,
        { cause: err },
      );
    }
    pass.deps.metrics.count(MetricName.FreshResourceNotVisible, { reason: code });
    pass.deps.log.info('a resource just made is not visible yet: trying again shortly', {
      serviceKey: `${pass.service.metadata.namespace}/${pass.service.metadata.name}`,
      code,
    });
    return { requeueAfterSeconds: FRESH_RESOURCE_REQUEUE_SECONDS };
  }
}

async function ensureNetworkLoadBalancer(
  pass: Pass,
  options: LoadBalancerOptions,
): Promise<ReconcileResult | undefined> {
  const { deps } = pass;
  const build = (name: string): SpecResult =>
    loadBalancerSpec(pass.service, options, {
      clusterName: deps.clusterName,
      externalManagedTags: deps.externalManagedTags ?? [],
      loadBalancerName: name,
    });
  if (await shortPassDone(pass, options, build)) return undefined;
  if (pass.lbc) await adoptFromReference(pass, options, build);
  const choice = await chooseLoadBalancer(pass, options, build);
  const built = build(choice.name);
  if (!built.ok) throw new AnnotationError(`cannot build the load balancer: ${describeProblems(built.problems)}`);
  const spec = built.spec;
  if (choice.replacing && !choice.existing && choice.serving) {
    await pass.event(
      'Normal',
      EVENT.replacing,
      `Replacing load balancer ${choice.serving.lb.name} with ${spec.loadBalancerName}: ${choice.replacing}`,
    );
  }
  if (choice.deleteFirst && choice.serving) await retireServing(choice.serving, spec.loadBalancerName, pass, true);

  const { observed, groups, created, kept } = await ensureLoadBalancer(choice, spec, pass);
  const ctx = resourceContext(pass);
  const targetGroups = await ensureTargetGroups(spec, observed, ctx);
  await ensureListeners(spec, observed, targetGroups, ctx);
  const targets = await desiredTargets(spec, withGateWaiting(ctx, pass, targetGroups));
  await ensureTargets(spec, targetGroups, targets, ctx);
  // The reference's Services: a TargetGroupBinding per target group, for the readiness gates (lbc/stack-bindings.ts).
  await keepServiceStackBindings(spec, targetGroups, pass);
  const warning = await ensureNodeAccess(spec, observed.lb, groups, targets, pass);
  // Only now that the Nodes admit the backend group do the groups kept from before (the reference's) go.
  if (groups && kept.length > 0) await pass.elbv2.setSecurityGroups(observed.lb.arn, groups.lbGroups);
  await narrowLoadBalancer(observed, spec, pass);
  const pendingGroups = await deleteStaleTargetGroups(observed, targetGroups, ctx);
  const serving =
    choice.serving && !choice.deleteFirst && choice.serving.lb.arn !== observed.lb.arn ? choice.serving : undefined;
  return finishPass(
    {
      spec,
      observed,
      created,
      serving,
      ...(choice.retiring ? { retiring: choice.retiring } : {}),
      ...(choice.retiredName ? { retiredName: choice.retiredName } : {}),
      targetGroups,
      targets,
      warning,
      pending: pendingGroups > 0 || choice.subnets.action === 'remove-first',
    },
    pass,
  );
}

/**
 * A resync's quick look, or a Node-set change's pass (functions/service/resync-check.ts): true when it was all the
 * pass needed, false when the full pass must follow.
 */
async function shortPassDone(
  pass: Pass,
  options: LoadBalancerOptions,
  build: (name: string) => SpecResult,
): Promise<boolean> {
  if (!pass.shortPass) return false;
  const identity = {
    clusterName: pass.deps.clusterName,
    namespace: pass.service.metadata.namespace ?? 'default',
    name: pass.service.metadata.name,
  };
  const preferred = build(preferredLoadBalancerName(identity, options));
  if (!preferred.ok) return false;
  // Nothing differs that a quick look can see: the hourly full pass looks at the rest.
  if (pass.shortPass === 'resync') return looksInLine(preferred.spec, pass);
  return ensureTargetsOnly(preferred.spec, pass);
}

/**
 * A Service the AWS Load Balancer Controller served: the load balancer it made (by the name the reference and we
 * give it, or the one the status names) becomes ours in place, before the pass looks for ours (lbc/adopt.ts).
 */
async function adoptFromReference(
  pass: Pass,
  options: LoadBalancerOptions,
  build: (name: string) => SpecResult,
): Promise<void> {
  const identity = {
    clusterName: pass.deps.clusterName,
    namespace: pass.service.metadata.namespace ?? 'default',
    name: pass.service.metadata.name,
  };
  const preferred = build(preferredLoadBalancerName(identity, options));
  if (!preferred.ok) return;
  const status = loadBalancerNameFromHostname(ingressHostname(pass.service));
  await adoptLbcStack(preferred.spec, [preferred.spec.loadBalancerName, ...(status ? [status] : [])], pass);
}

/** Tag of a load balancer without security groups (made by the reference controller): its rules are on the Nodes' groups. */
export const NODE_RULES_TAG = 'serverless-ccm/node-rules';

async function ensureLoadBalancer(
  choice: LoadBalancerChoice,
  spec: LoadBalancerSpec,
  pass: Pass,
): Promise<{
  observed: ObservedLoadBalancer;
  groups: LoadBalancerGroups | undefined;
  created: boolean;
  /** Groups it keeps until the Nodes admit ours. */
  kept: string[];
}> {
  const existing = choice.deleteFirst ? undefined : choice.existing;
  // A Network Load Balancer made without security groups can never have any: keep it the reference's way.
  const withoutGroups = existing !== undefined && existing.lb.securityGroups.length === 0;
  const tags: Record<string, string> = { ...spec.tags, ...spec.lbc?.loadBalancerTags };
  if (choice.replacing && choice.serving && !choice.deleteFirst) tags[REPLACES_TAG] = choice.serving.lb.name;
  else if (pass.previous) tags[REPLACES_TAG] = pass.previous.name;
  // It serves, and the one it replaced serves out its grace: the tag is how the next pass finds that one again.
  else if (choice.retiring) tags[REPLACES_TAG] = choice.retiring.lb.name;
  else if (choice.retiredName) tags[REPLACES_TAG] = choice.retiredName;
  if (withoutGroups) tags[NODE_RULES_TAG] = 'reference';
  const groups = withoutGroups ? undefined : await ensureNetworkLoadBalancerGroups(spec, pass);
  if (!existing)
    return { observed: await createLoadBalancer(spec, groups!, tags, pass), groups, created: true, kept: [] };
  if (withoutGroups && !(NODE_RULES_TAG in (existing.tags.get(existing.lb.arn) ?? {}))) {
    await pass.event(
      'Warning',
      EVENT.withoutSecurityGroups,
      `Load balancer ${existing.lb.name} was made without security groups, and AWS cannot add any to it: its traffic is allowed by rules on the Nodes' security groups (descriptions kubernetes.io/rule/nlb/*=${existing.lb.name}), as the reference controller did; security-groups annotations do not apply to it`,
    );
  }
  // The groups it has that are not ours (the reference's backend group) stay until the Nodes admit ours (after the
  // targets): moving it to ours at once would cut it off from its targets meanwhile.
  const keep = groups && pass.lbc ? existing.lb.securityGroups.filter((g) => !groups.lbGroups.includes(g)) : [];
  const widened =
    groups && keep.length > 0 ? { ...groups, lbGroups: [...groups.lbGroups, ...keep].slice(0, 5) } : groups;
  await widenLoadBalancer(existing, widened, choice.subnets, spec, tags, pass);
  return { observed: existing, groups, created: false, kept: keep };
}
