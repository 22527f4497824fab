import type { Listener, LoadBalancer, Rule, RuleAction } from '../../../shared/aws/elbv2-port.ts';
import { TAGS_ARNS_PER_CALL } from '../../../shared/aws/elbv2-port.ts';
import {
  type DesiredApplicationListener,
  deleteUnwantedListeners,
  ensureApplicationListeners,
} from '../../../shared/load-balancers/application-listeners.ts';
import { applyRules, type DesiredRule } from '../../../shared/load-balancers/rules.ts';
import type { GroupBuild, IngressGroupModel, ModelAction, ModelListener } from '../model/types.ts';
import type { GroupPass } from './pass.ts';
import { APPLIED_TAG } from './quick.ts';
import { adoptionTags, isStackResource, RESOURCE, stackTags, TAG } from './tags.ts';
import { type StackTargetGroups, tagsOf } from './target-groups.ts';

/**
 * Listeners and their rules: the target groups' ARNs put into the model's actions, listeners created or kept in
 * line, then each listener's rules applied by the shared rules module (new rules before the ones they replace go,
 * priorities moved without a gap), and only then listeners no longer wanted deleted. A member kept as it was (its
 * model could not be built) keeps the rules it has, in its place in the group's order.
 */

export interface Routing {
  listeners: Map<number, Listener>;
  /** Every target group a rule or a default action forwards to after the pass. */
  referenced: Set<string>;
  /** Rule writes (created, modified, deleted, moved calls). */
  writes: number;
}

export async function ensureRouting(
  build: GroupBuild,
  model: IngressGroupModel,
  lb: { lb: LoadBalancer; created: boolean; adopted?: boolean; tags: Record<string, string> },
  groups: StackTargetGroups,
  pass: GroupPass,
): Promise<Routing> {
  const { elbv2 } = pass.deps;
  const resolve = await actionResolver(model, groups, pass);
  const current = lb.created ? [] : await elbv2.describeListeners(lb.lb.arn);
  // A load balancer adopted now, or on which no full pass has completed yet (no digest tag: an adoption may have
  // stopped half way), may have the reference's listeners and rules: they are tagged ours before anything is
  // written to them (IAM allows writes on ours only). A listener's rules are tagged before the listener, so a
  // listener that is ours has rules that are ours: one DescribeTags for the listeners says whether to look further.
  if (!lb.created && (lb.adopted === true || lb.tags[APPLIED_TAG] === undefined)) await adoptListeners(current, pass);
  const desired: DesiredApplicationListener[] = model.listeners.map((l) => ({
    port: l.port,
    protocol: l.protocol,
    ...(l.sslPolicy ? { sslPolicy: l.sslPolicy } : {}),
    certificateArns: l.certificateArns,
    defaultActions: l.defaultActions.map(resolve),
    attributes: l.attributes,
    tags: stackTags(pass.deps.clusterName, pass.group, RESOURCE.listener(l.port)),
  }));
  const listeners = await ensureApplicationListeners(lb.lb.arn, desired, current, elbv2);
  const referenced = new Set<string>();
  for (const l of desired) for (const a of l.defaultActions) addForwards(referenced, a);
  let writes = 0;
  const keptMembers = new Set(build.members.filter((m) => m.state === 'kept').map((m) => m.key));
  for (const spec of model.listeners) {
    const listener = listeners.get(spec.port)!;
    const existing = current.some((c) => c.arn === listener.arn) ? await elbv2.describeRules(listener.arn) : [];
    const kept = keptMembers.size > 0 ? await keptRules(existing, keptMembers, pass) : new Map<string, Rule[]>();
    const rules = desiredRules(build, spec, kept, resolve, pass);
    for (const r of rules) for (const a of r.actions) addForwards(referenced, a);
    const result = await applyRules(listener.arn, rules, existing, elbv2);
    writes += result.calls;
  }
  // A listener only kept members use (their port is in no built member's listen-ports) stays with their rules.
  const modelPorts = new Set(model.listeners.map((l) => l.port));
  const spare = current.filter((l) => !modelPorts.has(l.port));
  const keep = new Set<string>();
  if (keptMembers.size > 0) {
    for (const listener of spare) {
      const rules = await elbv2.describeRules(listener.arn);
      const kept = await keptRules(rules, keptMembers, pass);
      if (kept.size === 0) continue;
      keep.add(listener.arn);
      for (const rule of [...kept.values()].flat()) {
        for (const a of rule.actions) addForwards(referenced, a);
      }
      for (const a of listener.defaultActions ?? []) addForwards(referenced, a);
    }
  }
  await deleteUnwantedListeners(
    desired,
    current.filter((l) => !keep.has(l.arn)),
    elbv2,
  );
  return { listeners, referenced, writes };
}

/** The rules of one listener in group order: each built member's from the model, each kept member's as they are. */
function desiredRules(
  build: GroupBuild,
  spec: ModelListener,
  kept: ReadonlyMap<string, Rule[]>,
  resolve: (a: ModelAction) => RuleAction,
  pass: GroupPass,
): DesiredRule[] {
  const out: DesiredRule[] = [];
  for (const member of build.members) {
    const tags = (priority: number) => ({
      ...stackTags(pass.deps.clusterName, pass.group, `${spec.port}:${priority}`),
      [TAG.member]: member.key,
    });
    if (member.state === 'kept') {
      for (const rule of kept.get(member.key) ?? []) {
        out.push({ conditions: rule.conditions, actions: rule.actions, tags: tags(out.length + 1) });
      }
      continue;
    }
    for (const rule of spec.rules.filter((r) => r.member === member.key)) {
      out.push({ conditions: rule.conditions, actions: rule.actions.map(resolve), tags: tags(out.length + 1) });
    }
  }
  return out;
}

/** The existing rules of the kept members, by member, in priority order (read from the rules' member tag). */
async function keptRules(
  existing: readonly Rule[],
  members: ReadonlySet<string>,
  pass: GroupPass,
): Promise<Map<string, Rule[]>> {
  const rules = existing.filter((r) => !r.isDefault);
  const out = new Map<string, Rule[]>();
  for (let i = 0; i < rules.length; i += TAGS_ARNS_PER_CALL) {
    const chunk = rules.slice(i, i + TAGS_ARNS_PER_CALL);
    const tags = await pass.deps.elbv2.describeTags(chunk.map((r) => r.arn));
    for (const rule of chunk) {
      const member = tags.get(rule.arn)?.[TAG.member];
      if (member && members.has(member)) out.set(member, [...(out.get(member) ?? []), rule]);
    }
  }
  return out;
}

/** The reference's listeners of the stack, and their rules first, tagged ours. */
async function adoptListeners(listeners: readonly Listener[], pass: GroupPass): Promise<void> {
  const { elbv2, clusterName } = pass.deps;
  const tags = await tagsOf(
    listeners.map((l) => l.arn),
    pass,
  );
  for (const listener of listeners) {
    const t = tags.get(listener.arn) ?? {};
    if (!isStackResource(t, clusterName, pass.group)) continue;
    const missing = adoptionTags(t, clusterName);
    if (Object.keys(missing).length === 0) continue;
    const rules = (await elbv2.describeRules(listener.arn)).filter((r) => !r.isDefault).map((r) => r.arn);
    const ruleTags = await tagsOf(rules, pass);
    for (const rule of rules) {
      const r = ruleTags.get(rule) ?? {};
      const lacking = adoptionTags(r, clusterName);
      if (isStackResource(r, clusterName, pass.group) && Object.keys(lacking).length > 0) {
        await elbv2.addTags(rule, lacking);
      }
    }
    await elbv2.addTags(listener.arn, missing);
  }
}

/** Adds the target groups a forward action sends to. */
function addForwards(into: Set<string>, action: RuleAction): void {
  if (action.type === 'forward') for (const g of action.targetGroups) into.add(g.arn);
}

/**
 * Model actions with ARNs: the model's target groups by resource ID, the user's by ARN as given or by name (one
 * DescribeTargetGroups for all the names the model uses). A name AWS does not know is the user's to fix.
 */
async function actionResolver(
  model: IngressGroupModel,
  groups: StackTargetGroups,
  pass: GroupPass,
): Promise<(action: ModelAction) => RuleAction> {
  const names = new Set<string>();
  const all = [...model.listeners.flatMap((l) => [...l.defaultActions, ...l.rules.flatMap((r) => r.actions)])];
  for (const a of all) {
    if (a.type !== 'forward') continue;
    for (const g of a.targetGroups) if ('name' in g.ref) names.add(g.ref.name);
  }
  const byName =
    names.size > 0
      ? new Map((await pass.deps.elbv2.findTargetGroups([...names])).map((g) => [g.name, g.arn]))
      : new Map<string, string>();
  for (const name of names) {
    if (!byName.has(name)) throw pass.ctx.userError(`actions: target group ${name} does not exist`);
  }
  return (action) => {
    if (action.type !== 'forward') return action;
    return {
      type: 'forward',
      stickiness: action.stickiness,
      targetGroups: action.targetGroups.map(({ ref, weight }) => {
        let arn: string | undefined;
        if ('arn' in ref) arn = ref.arn;
        else if ('name' in ref) arn = byName.get(ref.name);
        else arn = groups.wanted.get(ref.resourceId)?.arn;
        if (!arn) throw new Error(`target group ${JSON.stringify(ref)} is not in the model`);
        return { arn, weight };
      }),
    };
  };
}
