import { RULE_LIMITS } from '../../../shared/aws/elbv2-port.ts';
import type { ModelAction, ModelListener, ModelRule, ModelTargetGroup, Problem } from './types.ts';

/**
 * The quotas an IngressGroup's load balancer can cross. The reference wedges the whole group when AWS refuses
 * (TooManyRules, TooManyTargetGroups...); here members are added in group order and one whose rules, target groups
 * listeners or certificates would cross a quota is kept with a problem naming it, while the members after it still get their
 * chance (a smaller one may fit).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html
 */
export const ALB_LIMITS = {
  /** Rules per load balancer, every listener counted, default rules not. Adjustable: the default quota. */
  rulesPerLoadBalancer: RULE_LIMITS.rulesPerLoadBalancer,
  /** Target groups per load balancer (not adjustable). */
  targetGroupsPerLoadBalancer: 100,
  /** Certificates per load balancer besides each listener's default one. */
  certificatesPerLoadBalancer: 25,
  /** Listeners per load balancer. */
  listenersPerLoadBalancer: 50,
} as const;

export type AlbLimits = { [K in keyof typeof ALB_LIMITS]: number };

function actionTargets(action: ModelAction): string[] {
  if (action.type !== 'forward') return [];
  return action.targetGroups.map(({ ref }) =>
    'resourceId' in ref ? `model:${ref.resourceId}` : 'arn' in ref ? `arn:${ref.arn}` : `name:${ref.name}`,
  );
}

/** Distinct target groups the load balancer would use: the model's, and those the users name in actions. */
export function countTargetGroups(
  listeners: readonly ModelListener[],
  targetGroups: readonly ModelTargetGroup[],
): number {
  const used = new Set(targetGroups.map((tg) => `model:${tg.resourceId}`));
  const actions = listeners.flatMap((l) => [...l.defaultActions, ...l.rules.flatMap((r: ModelRule) => r.actions)]);
  for (const action of actions) for (const ref of actionTargets(action)) used.add(ref);
  return used.size;
}

export function countRules(listeners: readonly ModelListener[]): number {
  return listeners.reduce((sum, l) => sum + l.rules.length, 0);
}

/** Certificates besides each HTTPS listener's default one, counted per listener (each is an attachment). */
export function countExtraCertificates(listeners: readonly ModelListener[]): number {
  return listeners.reduce((sum, l) => sum + Math.max(0, l.certificateArns.length - 1), 0);
}

/** The quotas the load balancer as assembled would cross, each a problem for the member whose addition it tests. */
export function limitProblems(
  listeners: readonly ModelListener[],
  targetGroups: readonly ModelTargetGroup[],
  limits: AlbLimits = ALB_LIMITS,
): Problem[] {
  const problems: Problem[] = [];
  const rules = countRules(listeners);
  if (rules > limits.rulesPerLoadBalancer) {
    problems.push({
      at: 'spec.rules',
      message: `TooManyRules: the group would have ${rules} rules, AWS allows ${limits.rulesPerLoadBalancer} per load balancer`,
    });
  }
  const groups = countTargetGroups(listeners, targetGroups);
  if (groups > limits.targetGroupsPerLoadBalancer) {
    problems.push({
      at: 'spec.rules',
      message: `TooManyTargetGroups: the group would use ${groups} target groups, AWS allows ${limits.targetGroupsPerLoadBalancer} per load balancer`,
    });
  }
  if (listeners.length > limits.listenersPerLoadBalancer) {
    problems.push({
      at: 'alb.ingress.kubernetes.io/listen-ports',
      message: `TooManyListeners: the group would have ${listeners.length} listeners, AWS allows ${limits.listenersPerLoadBalancer} per load balancer`,
    });
  }
  const certificates = countExtraCertificates(listeners);
  if (certificates > limits.certificatesPerLoadBalancer) {
    problems.push({
      at: 'alb.ingress.kubernetes.io/certificate-arn',
      message: `TooManyCertificates: the group would have ${certificates} certificates besides each listener's default, AWS allows ${limits.certificatesPerLoadBalancer} per load balancer`,
    });
  }
  return problems;
}
