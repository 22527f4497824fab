import type { RuleAction, RuleCondition } from '../aws/elbv2-port.ts';

/**
 * What a listener rule does, compared in the form AWS keeps it, so that a rule read back is never taken for a
 * different one (a ModifyRule on every pass, the AWS Load Balancer Controller's issue #4064). The adapter already
 * reads the legacy `Values` / `TargetGroupArn` members as the per-field configs (shared/aws/elbv2-adapter-rules.ts);
 * this module evens out what is left, where two forms route every request the same way:
 * - the values of one condition are a set (any one may match): their order does not count, nor do repeats; the same
 *   for its regular expressions (`regexValues`), which are compared as written;
 * - the conditions of a rule are all required: their order does not count;
 * - host names, header names and values, query-string keys and values match without regard to case;
 * - a forward action's target groups are a set with weights (AWS states weight 1 where none was given); a single
 *   group takes all the traffic whatever its weight; stickiness off has no duration;
 * - a fixed response without a body is the same as one with an empty body;
 * - a redirect's protocol is named in capitals (`HTTPS`), its components are kept as given (`#{host}`...).
 * Actions keep their order: AWS performs them in that order.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-condition-types.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Action.html
 */

export interface RuleContent {
  conditions: readonly RuleCondition[];
  actions: readonly RuleAction[];
}

const uniqueSorted = (values: readonly string[]) => [...new Set(values)].sort();

function conditionForm(condition: RuleCondition): string {
  switch (condition.field) {
    case 'host-header':
      return JSON.stringify([
        condition.field,
        uniqueSorted(condition.values.map((v) => v.toLowerCase())),
        uniqueSorted(condition.regexValues ?? []),
      ]);
    case 'path-pattern':
    case 'http-request-method':
    case 'source-ip':
      return JSON.stringify([
        condition.field,
        uniqueSorted(condition.values),
        uniqueSorted(condition.regexValues ?? []),
      ]);
    case 'http-header':
      return JSON.stringify([
        condition.field,
        condition.headerName.toLowerCase(),
        uniqueSorted(condition.values.map((v) => v.toLowerCase())),
        uniqueSorted(condition.regexValues ?? []),
      ]);
    case 'query-string':
      return JSON.stringify([
        condition.field,
        uniqueSorted(
          condition.values.map((p) => JSON.stringify([p.key?.toLowerCase() ?? null, p.value.toLowerCase()])),
        ),
      ]);
  }
}

function actionForm(action: RuleAction): unknown {
  switch (action.type) {
    case 'forward': {
      const single = action.targetGroups.length === 1;
      const groups = action.targetGroups
        .map((g) => [g.arn, single && g.weight > 0 ? 1 : g.weight] as const)
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
      const sticky = action.stickiness.enabled ? [true, action.stickiness.durationSeconds ?? null] : [false];
      return ['forward', groups, sticky];
    }
    case 'fixed-response':
      return ['fixed-response', action.statusCode, action.contentType ?? null, action.messageBody ?? ''];
    case 'redirect':
      return [
        'redirect',
        action.statusCode,
        action.protocol.toUpperCase(),
        action.host,
        action.port,
        action.path,
        action.query,
      ];
  }
}

/** The conditions alone, in normal form: two rules with the same key match the same requests. */
export function conditionsKey(conditions: readonly RuleCondition[]): string {
  return JSON.stringify(conditions.map(conditionForm).sort());
}

/** Conditions and actions in normal form: two rules with the same key do the same thing to the same requests. */
export function ruleContentKey(rule: RuleContent): string {
  return JSON.stringify([conditionsKey(rule.conditions), rule.actions.map(actionForm)]);
}

/** Whether two rules (desired or read back from AWS) do the same thing, in AWS's normal form. */
export function sameRuleContent(a: RuleContent, b: RuleContent): boolean {
  return ruleContentKey(a) === ruleContentKey(b);
}

/** Whether the rule forwards (a request it takes reaches a target group rather than a fixed answer). */
export function forwards(rule: RuleContent): boolean {
  return rule.actions.some((a) => a.type === 'forward');
}

/**
 * Whether some request could match both rules' conditions. Conservative: `false` only when a field both rules test
 * has value sets that cannot meet (each pair of patterns differs in the characters before its first wildcard or
 * after its last); anything else may meet.
 */
export function mayOverlap(a: readonly RuleCondition[], b: readonly RuleCondition[]): boolean {
  for (const ca of a) {
    for (const cb of b) {
      if (ca.field !== cb.field) continue;
      // Regular expressions are not compared: they may meet anything.
      if ('regexValues' in ca && ca.regexValues?.length) continue;
      if ('regexValues' in cb && cb.regexValues?.length) continue;
      if (ca.field === 'host-header' || ca.field === 'path-pattern') {
        const fold = ca.field === 'host-header';
        const disjoint = ca.values.every((va) => (cb.values as string[]).every((vb) => patternsDisjoint(va, vb, fold)));
        if (disjoint) return false;
      }
      if (ca.field === 'http-request-method' && cb.field === 'http-request-method') {
        if (!ca.values.some((v) => cb.values.includes(v))) return false;
      }
    }
  }
  return true;
}

/** Two `*` / `?` patterns no string matches both of: their literal heads or tails disagree. */
function patternsDisjoint(a: string, b: string, caseInsensitive: boolean): boolean {
  const [x, y] = caseInsensitive ? [a.toLowerCase(), b.toLowerCase()] : [a, b];
  const head = (s: string) => s.slice(0, firstWildcard(s));
  const tail = (s: string) => s.slice(lastWildcard(s) + 1);
  const hx = head(x);
  const hy = head(y);
  if (!hx.startsWith(hy) && !hy.startsWith(hx)) return true;
  const tx = tail(x);
  const ty = tail(y);
  if (!tx.endsWith(ty) && !ty.endsWith(tx)) return true;
  // Neither has a wildcard: only equal strings meet.
  return firstWildcard(x) === x.length && firstWildcard(y) === y.length && x !== y;
}

function firstWildcard(s: string): number {
  const i = s.search(/[*?]/);
  return i < 0 ? s.length : i;
}

function lastWildcard(s: string): number {
  return Math.max(s.lastIndexOf('*'), s.lastIndexOf('?'));
}
