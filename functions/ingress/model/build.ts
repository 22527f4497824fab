import {
  type ClassLookup,
  compareMembers,
  GROUP_ORDER_ANNOTATION,
  type GroupId,
  groupOrderOf,
  membersOf,
} from '../../../shared/ingress/membership.ts';
import { type Ingress, type IngressClassParams, ingressKey } from '../../../shared/k8s/ingress-types.ts';
import { parseMemberSettings } from './annotations.ts';
import { CertificateDiscovery } from './certificates.ts';
import { GroupSettings } from './conflicts.ts';
import { ALB_LIMITS, type AlbLimits, limitProblems } from './limits.ts';
import { assembleListeners, type ListenerContribution, listenerClaims, sslRedirectProblems } from './listeners.ts';
import { assembleLoadBalancer, isDualstack, loadBalancerClaims } from './load-balancer.ts';
import { buildMemberRules } from './member.ts';
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

/** The state of the group as built so far: only built members ever change it. */
interface Built {
  held: GroupSettings;
  contributions: ListenerContribution[];
  targetGroups: ModelTargetGroup[];
}

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

  const buildMember = input.buildMember ?? buildMemberRules;
  const discovery = new CertificateDiscovery(input.reads);
  const limits = input.limits ?? ALB_LIMITS;
  let built: Built = { held: new GroupSettings(), contributions: [], targetGroups: [] };

  for (const candidate of candidates) {
    const outcome: MemberOutcome = {
      ingress: candidate.ingress,
      key: ingressKey(candidate.ingress),
      order: candidate.order,
      state: 'kept',
      problems: [],
      warnings: [],
    };
    build.members.push(outcome);
    const next = await tryMember(candidate, outcome, built, { ...input, buildMember, discovery, limits });
    if (next) {
      built = next;
      outcome.state = 'built';
    }
  }

  const { held, contributions, targetGroups } = built;
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

/** The group with the member in, or undefined when it is kept (its problems and warnings go on `outcome`). */
async function tryMember(
  candidate: Candidate,
  outcome: MemberOutcome,
  built: Built,
  context: BuildGroupInput & { buildMember: MemberBuilder; discovery: CertificateDiscovery; limits: AlbLimits },
): Promise<Built | undefined> {
  const { ingress, params } = candidate;
  const kept = (problems: readonly Problem[]) => {
    outcome.problems.push(...problems);
    return outcome.problems.length === 0;
  };
  if (candidate.invalidClass !== undefined) {
    kept([{ at: 'spec.ingressClassName', message: candidate.invalidClass }]);
    return undefined;
  }
  if (candidate.orderProblem) kept([{ at: GROUP_ORDER_ANNOTATION, message: candidate.orderProblem }]);

  const parsed = parseMemberSettings(ingress, params, context.settings);
  outcome.warnings.push(...parsed.warnings);
  const member = await context.buildMember({
    ingress,
    group: context.group,
    ...(params ? { params } : {}),
    reads: context.reads,
    settings: context.settings,
  });
  outcome.warnings.push(...member.warnings);
  if (!kept([...parsed.problems, ...member.problems])) return undefined;

  const certificates = await context.discovery.forMember(ingress, parsed.settings, member.hosts);
  if (!kept(certificates.problems)) return undefined;

  const claims = [
    ...loadBalancerClaims(parsed.settings),
    ...listenerClaims(outcome.key, parsed.settings, member.defaultActions !== undefined),
  ];
  if (!kept(built.held.disagreements(claims))) return undefined;
  const held = built.held.clone();
  held.commit(outcome.key, claims);
  if (!kept(sslRedirectProblems(held))) return undefined;

  const contribution: ListenerContribution = {
    member: outcome.key,
    ports: parsed.settings.listenPorts.value,
    rules: member.rules,
    certificates: certificates.arns,
    ...(member.defaultActions ? { defaultActions: member.defaultActions } : {}),
  };
  const contributions = [...built.contributions, contribution];
  const targetGroups = withTargetGroups(built.targetGroups, member.targetGroups);
  const listeners = assembleListeners({
    contributions,
    group: held,
    dualstack: isDualstack(held),
    defaultSslPolicy: context.settings.defaultSslPolicy,
  });
  if (!kept(limitProblems(listeners, targetGroups, context.limits))) return undefined;
  return { held, contributions, targetGroups };
}
