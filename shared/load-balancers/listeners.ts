import type { Listener, ListenerCertificate, ListenerSpec, LoadBalancer } from '../aws/elbv2-port.ts';
import { defaultListenerAttributes } from './aws-defaults.ts';
import type { AwsPorts, LoadBalancerContext, ResourceChange } from './context.ts';
import { retryAssociationLimit } from './errors.ts';
import type { Elbv2LoadBalancerModel } from './model.ts';
import type { ObservedLoadBalancer } from './observed.ts';
import { changedEntries, keepTagsInLine } from './tags.ts';
import type { EnsuredGroups } from './target-groups.ts';

/**
 * Listeners: one per port, forwarding to its target group; certificates (the default one and SNI ones),
 * ALPN, attributes and tags kept in line. Usable by any Elastic Load Balancing v2 front end.
 */

export interface ListenerPlan {
  create: ListenerSpec[];
  modify: { arn: string; spec: ListenerSpec; was: Listener }[];
  remove: Listener[];
}

/** Listeners by port: create missing ones, modify those that differ, delete ports the owner no longer has. */
export function planListeners(desired: readonly ListenerSpec[], current: readonly Listener[]): ListenerPlan {
  const plan: ListenerPlan = { create: [], modify: [], remove: [] };
  const byPort = new Map(current.map((l) => [l.port, l]));
  for (const spec of desired) {
    const existing = byPort.get(spec.port);
    if (!existing) plan.create.push(spec);
    else if (!listenerMatches(existing, spec)) plan.modify.push({ arn: existing.arn, spec, was: existing });
  }
  const wanted = new Set(desired.map((s) => s.port));
  plan.remove = current.filter((l) => !wanted.has(l.port));
  return plan;
}

function listenerMatches(listener: Listener, spec: ListenerSpec): boolean {
  return (
    listener.protocol === spec.protocol &&
    listener.targetGroupArn === spec.targetGroupArn &&
    (spec.protocol !== 'TLS' ||
      ((listener.certificateArns[0] ?? '') === (spec.certificateArn ?? '') &&
        (spec.sslPolicy === undefined || listener.sslPolicy === spec.sslPolicy) &&
        (listener.alpnPolicy ?? 'None') === (spec.alpnPolicy ?? 'None')))
  );
}

/**
 * The listener to send for a change: an ALPN policy the owner no longer sets is turned off explicitly
 * (`None`), since leaving it out of ModifyListener keeps the old one.
 */
export function listenerUpdate(spec: ListenerSpec, was: Listener): ListenerSpec {
  if (spec.protocol !== 'TLS' || spec.alpnPolicy || (was.alpnPolicy ?? 'None') === 'None') return spec;
  return { ...spec, alpnPolicy: 'None' };
}

/**
 * SNI certificates to remove from a TLS listener's certificate list (before the listener's default changes)
 * and to add (after). The default certificate is the listener's own and not wanted in the list; a listed
 * copy of the current default is left alone, since AWS refuses to remove the default (it goes on a later
 * pass, once it is no longer the default).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListenerCertificates.html
 */
export function planListenerCertificates(
  wanted: readonly string[],
  current: readonly ListenerCertificate[],
  defaults: { current?: string; next?: string } = {},
): { add: string[]; remove: string[] } {
  const listed = new Set(current.filter((c) => !c.isDefault).map((c) => c.certificateArn));
  const want = new Set(wanted.filter((arn) => arn !== defaults.next));
  return {
    add: [...want].filter((arn) => !listed.has(arn)),
    remove: [...listed].filter((arn) => !want.has(arn) && arn !== defaults.current),
  };
}

/** What the listeners are made from. */
export type ListenerModel = Pick<Elbv2LoadBalancerModel, 'listeners' | 'targetGroups' | 'tags' | 'externalManagedTags'>;

/** Listeners as the model wants them, pointing at the ensured target groups. */
function desiredListeners(model: ListenerModel, groups: EnsuredGroups): ListenerSpec[] {
  return model.listeners.map((l) => {
    const listener: ListenerSpec = {
      port: l.port,
      protocol: l.protocol,
      targetGroupArn: groups.get(l.targetGroupName)!.group.arn,
    };
    if (l.certificateArn) listener.certificateArn = l.certificateArn;
    if (l.sslPolicy) listener.sslPolicy = l.sslPolicy;
    if (l.alpnPolicy) listener.alpnPolicy = l.alpnPolicy;
    return listener;
  });
}

export async function ensureListeners(
  model: ListenerModel,
  observed: ObservedLoadBalancer,
  groups: EnsuredGroups,
  ctx: LoadBalancerContext,
): Promise<void> {
  // Listeners carry the ownership tags, and IAM allows ModifyListener / DeleteListener only on listeners
  // tagged owned (stacks/iam.ts, granted in stacks/service.ts). Listeners of our load balancer made untagged by an earlier
  // version get them first (AddTags then needs the narrow backfill grant), and every listener's tags are kept
  // in line like the load balancer's: nothing to add, no call. A listener absent from the tag answer is gone.
  const live: Listener[] = [];
  for (const listener of observed.listeners) {
    const have = observed.tags.get(listener.arn);
    if (!have) continue;
    live.push(listener);
    await keepTagsInLine(listener.arn, have, listenerTags(model, listener.port), ctx);
  }
  const plan = planListeners(desiredListeners(model, groups), observed.listeners);
  for (const listener of plan.remove) await ctx.elbv2.deleteListener(listener.arn);
  const removed = new Set(plan.remove.map((l) => l.arn));
  const remaining = live.filter((l) => !removed.has(l.arn));
  const certificatesToAdd = await removeUnwantedCertificates(model, remaining, ctx);
  for (const change of plan.modify) {
    await sayTargetGroupReplaced(change, observed, model, groups, ctx);
    await ctx.elbv2
      .modifyListener(change.arn, listenerUpdate(change.spec, change.was))
      .catch((err: unknown) => retryAssociationLimit(err, `modifying listener ${change.spec.port}`));
  }
  const created = new Map<number, Listener>();
  for (const next of plan.create) {
    const listener = await ctx.elbv2
      .createListener(observed.lb.arn, next, listenerTags(model, next.port).tags)
      .catch((err: unknown) => retryAssociationLimit(err, `creating listener ${next.port}`));
    created.set(next.port, listener);
  }
  await completeListeners(model, remaining, created, certificatesToAdd, ctx);
}

/** The model's tags with the listener's own (the desired listener on that port) over them. */
function listenerTags(model: ListenerModel, port: number): Pick<ListenerModel, 'tags' | 'externalManagedTags'> {
  const own = model.listeners.find((l) => l.port === port)?.tags;
  return { tags: own ? { ...model.tags, ...own } : model.tags, externalManagedTags: model.externalManagedTags };
}

/**
 * SNI certificates no longer wanted go before ModifyListener, so that a listed certificate about to become
 * the default is removed from the list while it is not the default (AWS will not remove a default one).
 * Answers the certificates to add once the listeners are in place, by port.
 */
async function removeUnwantedCertificates(
  model: ListenerModel,
  live: readonly Listener[],
  ctx: LoadBalancerContext,
): Promise<Map<number, string[]>> {
  const toAdd = new Map<number, string[]>();
  for (const wanted of model.listeners) {
    if (wanted.protocol !== 'TLS') continue;
    const listener = live.find((l) => l.port === wanted.port && l.protocol === 'TLS');
    if (!listener) {
      toAdd.set(wanted.port, wanted.extraCertificateArns);
      continue;
    }
    const certificates = await ctx.elbv2.describeListenerCertificates(listener.arn);
    const certs = planListenerCertificates(wanted.extraCertificateArns, certificates, {
      current: listener.certificateArns[0],
      next: wanted.certificateArn,
    });
    if (certs.remove.length > 0) await ctx.elbv2.removeListenerCertificates(listener.arn, certs.remove);
    toAdd.set(wanted.port, certs.add);
  }
  return toAdd;
}

/** A listener moving to a new target group because AWS cannot change the old one in place: say what changed. */
async function sayTargetGroupReplaced(
  change: ListenerPlan['modify'][number],
  observed: ObservedLoadBalancer,
  model: ListenerModel,
  groups: EnsuredGroups,
  ctx: LoadBalancerContext,
): Promise<void> {
  const from = observed.attached.find((g) => g.arn === change.was.targetGroupArn);
  const to = model.targetGroups.find((g) => groups.get(g.name)?.group.arn === change.spec.targetGroupArn);
  if (!from || !to || from.arn === change.spec.targetGroupArn) return;
  const differences: Extract<ResourceChange, { kind: 'target-group-replaced' }>['differences'] = [];
  if (from.protocol !== to.protocol) differences.push({ what: 'protocol', from: from.protocol, to: to.protocol });
  if (from.targetType !== to.targetType) {
    differences.push({ what: 'target type', from: from.targetType, to: to.targetType });
  }
  if (from.ipAddressType !== to.ipAddressType) {
    differences.push({ what: 'address family', from: from.ipAddressType, to: to.ipAddressType });
  }
  await ctx.announce({
    kind: 'target-group-replaced',
    listenerPort: change.spec.port,
    from: from.name,
    to: to.name,
    differences,
  });
}

/**
 * What ModifyListener does not carry: the SNI certificates to add and the listener attributes. A listener
 * made in this pass has AWS's default attributes, so it needs no describe.
 */
async function completeListeners(
  model: ListenerModel,
  live: readonly Listener[],
  created: ReadonlyMap<number, Listener>,
  certificatesToAdd: ReadonlyMap<number, string[]>,
  ctx: LoadBalancerContext,
): Promise<void> {
  for (const wanted of model.listeners) {
    const fresh = created.get(wanted.port);
    const listener = fresh ?? live.find((l) => l.port === wanted.port);
    if (!listener) continue;
    const add = certificatesToAdd.get(wanted.port) ?? [];
    if (add.length > 0) await ctx.elbv2.addListenerCertificates(listener.arn, add);
    if (Object.keys(wanted.attributes).length === 0) continue;
    const have = fresh
      ? defaultListenerAttributes(wanted.protocol)
      : await ctx.elbv2.describeListenerAttributes(listener.arn);
    const changed = changedEntries(wanted.attributes, have);
    if (Object.keys(changed).length > 0) await ctx.elbv2.modifyListenerAttributes(listener.arn, changed);
  }
}

/**
 * The load balancer, and with it its listeners: DeleteLoadBalancer deletes them (freeing their target
 * groups), and is authorized on the load balancer's own owned tag. Deleting listeners one by one first would
 * need DeleteListener on each, which IAM allows only on listeners tagged owned, and listeners made by
 * earlier versions are untagged. AWS answers success for a load balancer that is already gone.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteLoadBalancer.html
 */
export async function deleteLoadBalancerAndListeners(lb: LoadBalancer, ports: AwsPorts): Promise<void> {
  await ports.elbv2.deleteLoadBalancer(lb.arn);
}
