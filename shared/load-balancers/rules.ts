import type { Elbv2Port } from '../aws/elbv2-port.ts';
import { codeOf } from './errors.ts';
import { type DesiredRule, type ExistingRule, planRules, type RulesPlan } from './rules-plan.ts';
import { changedEntries, staleTagKeys } from './tags.ts';

/**
 * The listener rules of an Application Load Balancer listener, for any front end (an Ingress group today): the caller
 * gives the rules in their final order with the target group ARNs resolved, and what DescribeRules answered; this
 * module writes the difference without a request ever finding no rule on the way (rules-plan.ts) and with as few
 * calls as the change allows (rule-priorities.ts).
 */

export { sameRuleContent } from './rule-content.ts';
export type { DesiredRule, ExistingRule, RulesPlan };
export { planRules };

export interface RulesApplied {
  created: number;
  modified: number;
  deleted: number;
  /** Moves made (one SetRulePriorities call, a second for rules that do not forward). */
  moved: number;
  /** Write calls made. */
  calls: number;
}

/**
 * Applies the plan from `existing` to `desired` in the order rules-plan.ts gives: creates and safe modifications,
 * moves, modifications, late creates, late moves, deletes. A load balancer
 * at its rule quota (TooManyRules) cannot hold the new rules beside the old ones: a rule that is going is deleted
 * first to make room, then the create is tried again, as the AWS Load Balancer Controller does.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html
 */
export async function applyRules(
  listenerArn: string,
  desired: readonly DesiredRule[],
  existing: readonly ExistingRule[],
  elbv2: Elbv2Port,
): Promise<RulesApplied> {
  const plan = planRules(desired, existing);
  const done: RulesApplied = { created: 0, modified: 0, deleted: 0, moved: 0, calls: 0 };
  const deletes = [...plan.deletes];
  const gone = new Set<string>();
  const deleteOne = async (arn: string) => {
    done.calls++;
    gone.add(arn);
    if ((await elbv2.deleteRule(arn)) === 'deleted') done.deleted++;
  };
  // A rule deleted early (TooManyRules) is no longer moved.
  const setPriorities = async (moves: readonly { ruleArn: string; priority: number }[]) => {
    const left = moves.filter((m) => !gone.has(m.ruleArn));
    if (left.length === 0) return 0;
    done.calls++;
    await elbv2.setRulePriorities(left.map((m) => ({ ruleArn: m.ruleArn, priority: m.priority })));
    return left.length;
  };

  const modify = async (change: RulesPlan['modifies'][number]) => {
    done.calls++;
    await elbv2.modifyRule(change.ruleArn, { conditions: change.rule.conditions, actions: change.rule.actions });
    done.modified++;
    done.calls += await retag(change.ruleArn, change.rule.tags, change.tags, elbv2);
  };
  const create = async ({ priority, rule }: RulesPlan['creates'][number]) => {
    for (;;) {
      try {
        done.calls++;
        await elbv2.createRule(
          listenerArn,
          { priority, conditions: rule.conditions, actions: rule.actions },
          rule.tags,
        );
        done.created++;
        return;
      } catch (err) {
        const room = codeOf(err) === 'TooManyRules' ? deletes.shift() : undefined;
        if (!room) throw err;
        await deleteOne(room.arn);
      }
    }
  };
  for (const next of plan.creates) await create(next);
  for (const change of plan.earlyModifies) await modify(change);
  done.moved += await setPriorities(plan.moves);
  for (const change of plan.modifies) await modify(change);
  for (const next of plan.lateCreates) await create(next);
  done.moved += await setPriorities(plan.lateMoves);
  for (const rule of deletes) await deleteOne(rule.arn);
  return done;
}

/**
 * A rule modified into another one takes that one's tags (whose rule it is). With the current tags known, only
 * what differs is written; unknown, the desired tags are added. Answers the calls made.
 */
async function retag(
  arn: string,
  desired: Readonly<Record<string, string>>,
  current: Readonly<Record<string, string>> | undefined,
  elbv2: Elbv2Port,
): Promise<number> {
  let calls = 0;
  const add = current ? changedEntries(desired, current) : { ...desired };
  if (Object.keys(add).length > 0) {
    calls++;
    await elbv2.addTags(arn, add);
  }
  const stale = current ? staleTagKeys(desired, current, []) : [];
  if (stale.length > 0) {
    calls++;
    await elbv2.removeTags(arn, stale);
  }
  return calls;
}
