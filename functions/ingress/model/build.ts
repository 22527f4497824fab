import {
  type ClassLookup,
  compareMembers,
  GROUP_ORDER_ANNOTATION,
  type GroupId,
  groupOrderOf,
  membersOf,
} from '../../../shared/ingress/membership.ts';
import { type Ingress, type IngressClassParams, ingressKey } from '../../../shared/k8s/ingress-types.ts';
import { type MemberLoadBalancerSettings, parseMemberSettings } from './annotations.ts';
import { CertificateDiscovery } from './certificates.ts';
import { GroupSettings } from './conflicts.ts';
import { ALB_LIMITS, type AlbLimits, limitProblems } from './limits.ts';
import {
  assembleListeners,
  type ListenerContribution,
  listenerClaims,
  listenersWithoutCertificate,
  sslRedirectProblems,
} from './listeners.ts';
import { assembleLoadBalancer, isDualstack, loadBalancerClaims } from './load-balancer.ts';
import { buildMemberRules, type MemberRules } from './member.ts';
import type { GroupBuild, MemberOutcome, ModelReads, ModelSettings, ModelTargetGroup, Problem } from './types.ts';

/**
 * The model of one IngressGroup (docs/adr/0013-load-balancer-resource-modules.md: a front end builds a model, the
 * resource modules apply it). Members are taken in group order; each is either built (its rules, target groups and
 * settings are in the model) or kept (the pass leaves what it had on AWS), never able to take the group down:
 * - its class cannot be used, its `group.order` or its own annotations are invalid, or its rules cannot be built;
 * - its certificates cannot be discovered (a host no ISSUED certificate covers);
 * - it disagrees with an earlier member on a setting the group shares (conflicts.ts);
 * - adding it would cross a quota of the load balancer (limits.ts).
 * The reference fails the whole group in each of these cases instead.
 */

/** The per-member half (member.ts), as a seam for tests. */
export type MemberBuilder = typeof buildMemberRules;

export interface BuildGroupInput {
  group: GroupId;
  /** Every Ingress of the cluster (membership is worked out here). */
  ingresses: readonly Ingress[];
  lookup: ClassLookup;
  reads: ModelReads;
  settings: ModelSettings;
  /** Quotas of the account, when they differ from AWS's defaults. */
  limits?: AlbLimits;
  buildMember?: MemberBuilder;
}

interface Candidate {
  ingress: Ingress;
  order: number;
  orderProblem?: string;
  params?: IngressClassParams;
  invalidClass?: string;
}

/** A member with everything that does not depend on the other members worked out. */
interface Prepared {
  outcome: MemberOutcome;
  /** Problems of its own (class, order, annotations, rules, certificates): it is kept whatever the others do. */
  problems: Problem[];
  settings: MemberLoadBalancerSettings;
  member: MemberRules;
  certificates: string[];
}

/** The state of the group as built so far: only built members ever change it. */
interface Built {
  held: GroupSettings;
  contributions: ListenerContribution[];
  targetGroups: ModelTargetGroup[];
}

const PREPARE_CONCURRENCY = 8;

function withTargetGroups(known: readonly ModelTargetGroup[], more: readonly ModelTargetGroup[]): ModelTargetGroup[] {
  const ids = new Set(known.map((tg) => tg.resourceId));
  return [...known, ...more.filter((tg) => !ids.has(tg.resourceId) && ids.add(tg.resourceId))];
}

export async function buildGroup(input: BuildGroupInput): Promise<GroupBuild> {
  const found = membersOf(input.group, input.ingresses, input.lookup);
  const candidates: Candidate[] = [
    ...found.active,
    ...found.invalid.map(({ ingress, problem }) => {
      const order = groupOrderOf(ingress);
      return { ingress, order: order.ok ? order.order : 0, invalidClass: problem };
    }),
  ].sort(compareMembers);
  const build: GroupBuild = { group: input.group, members: [], leaving: found.leaving };
  if (candidates.length === 0) return build;

  const context = {
    ...input,
    buildMember: input.buildMember ?? buildMemberRules,
    discovery: new CertificateDiscovery(input.reads),
  };
  // A few members at a time: their Service reads overlap without a burst on the API server for a large group.
  const prepared: Prepared[] = [];
  for (let i = 0; i < candidates.length; i += PREPARE_CONCURRENCY) {
    const chunk = candidates.slice(i, i + PREPARE_CONCURRENCY);
    prepared.push(...(await Promise.all(chunk.map((candidate) => prepare(candidate, context)))));
  }

  // An HTTPS listener whose members bring no certificate cannot be made: those members are kept, and the group is
  // folded again without them (their settings may have kept others out, who may in turn need a certificate).
  // Each round keeps at least one more member, so it ends.
  const limits = input.limits ?? ALB_LIMITS;
  const excluded = new Map<string, Problem[]>();
  let folded = fold(prepared, excluded, input.settings, limits);
  for (;;) {
    const uncertified = listenersWithoutCertificate(folded.built.contributions, folded.built.held);
    if (uncertified.size === 0) break;
    for (const [key, problems] of uncertified) excluded.set(key, problems);
    folded = fold(prepared, excluded, input.settings, limits);
  }

  for (const p of prepared) {
    const problems = folded.problems.get(p.outcome.key) ?? [];
    build.members.push({ ...p.outcome, problems, state: problems.length === 0 ? 'built' : 'kept' });
  }
  const { held, contributions, targetGroups } = folded.built;
  build.model = {
    group: input.group,
    loadBalancer: assembleLoadBalancer({ group: input.group, held, settings: input.settings }),
    listeners: assembleListeners({
      contributions,
      group: held,
      dualstack: isDualstack(held),
      defaultSslPolicy: input.settings.defaultSslPolicy,
    }),
    targetGroups,
  };
  return build;
}

/** What a member is on its own: its class, order, settings, rules and certificates, and their problems. */
async function prepare(
  candidate: Candidate,
  context: BuildGroupInput & { buildMember: MemberBuilder; discovery: CertificateDiscovery },
): Promise<Prepared> {
  const { ingress, params } = candidate;
  const outcome: MemberOutcome = {
    ingress,
    key: ingressKey(ingress),
    order: candidate.order,
    state: 'kept',
    problems: [],
    warnings: [],
  };
  const parsed = parseMemberSettings(ingress, params, context.settings);
  const empty: MemberRules = { rules: [], targetGroups: [], hosts: [], problems: [], warnings: [] };
  if (candidate.invalidClass !== undefined) {
    const problems = [{ at: 'spec.ingressClassName', message: candidate.invalidClass }];
    return { outcome, problems, settings: parsed.settings, member: empty, certificates: [] };
  }
  const problems: Problem[] = [];
  if (candidate.orderProblem) problems.push({ at: GROUP_ORDER_ANNOTATION, message: candidate.orderProblem });
  const member = await context.buildMember({
    ingress,
    group: context.group,
    ...(params ? { params } : {}),
    reads: context.reads,
    settings: context.settings,
  });
  outcome.warnings.push(...parsed.warnings, ...member.warnings);
  problems.push(...parsed.problems, ...member.problems);
  if (problems.length > 0) return { outcome, problems, settings: parsed.settings, member, certificates: [] };
  const certificates = await context.discovery.forMember(ingress, parsed.settings, member.hosts);
  problems.push(...certificates.problems);
  return { outcome, problems, settings: parsed.settings, member, certificates: certificates.arns };
}

/**
 * The group from its prepared members in group order: each one without problems of its own is tried against the
 * members built before it (conflicts, ssl-redirect, quotas) and either built or kept. Pure, so it can run again.
 */
function fold(
  prepared: readonly Prepared[],
  excluded: ReadonlyMap<string, Problem[]>,
  settings: ModelSettings,
  limits: AlbLimits,
): { built: Built; problems: Map<string, Problem[]> } {
  let built: Built = { held: new GroupSettings(), contributions: [], targetGroups: [] };
  const problems = new Map<string, Problem[]>();
  for (const p of prepared) {
    const own = [...p.problems, ...(excluded.get(p.outcome.key) ?? [])];
    const next = own.length === 0 ? tryMember(p, built, settings, limits) : own;
    if (Array.isArray(next)) problems.set(p.outcome.key, next);
    else built = next;
  }
  return { built, problems };
}

/** The group with the member in, or the problems that keep it out. */
function tryMember(p: Prepared, built: Built, settings: ModelSettings, limits: AlbLimits): Built | Problem[] {
  const key = p.outcome.key;
  const claims = [
    ...loadBalancerClaims(p.settings),
    ...listenerClaims(key, p.settings, p.member.defaultActions !== undefined),
  ];
  const disagreements = built.held.disagreements(claims);
  if (disagreements.length > 0) return disagreements;
  const held = built.held.clone();
  held.commit(key, claims);
  const redirect = sslRedirectProblems(held);
  if (redirect.length > 0) return redirect;

  const contribution: ListenerContribution = {
    member: key,
    ports: p.settings.listenPorts.value,
    rules: p.member.rules,
    certificates: p.certificates,
    ...(p.member.defaultActions ? { defaultActions: p.member.defaultActions } : {}),
  };
  const contributions = [...built.contributions, contribution];
  const targetGroups = withTargetGroups(built.targetGroups, p.member.targetGroups);
  const listeners = assembleListeners({
    contributions,
    group: held,
    dualstack: isDualstack(held),
    defaultSslPolicy: settings.defaultSslPolicy,
  });
  const crossed = limitProblems(listeners, targetGroups, limits);
  if (crossed.length > 0) return crossed;
  return { held, contributions, targetGroups };
}
