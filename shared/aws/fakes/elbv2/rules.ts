import type {
  CreateRuleInput,
  CreateRuleOutput,
  DeleteRuleInput,
  DescribeRulesInput,
  DescribeRulesOutput,
  ModifyRuleInput,
  ModifyRuleOutput,
  SetRulePrioritiesInput,
  SetRulePrioritiesOutput,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { type Listener, RULE_LIMITS } from '../../elbv2-port.ts';
import { actionsOf } from './rule-actions.ts';
import { conditionsOf } from './rule-conditions.ts';
import { sdkRule } from './rule-shapes.ts';
import type { Elbv2State, FakeRule } from './state.ts';
import { acceptOnly, checkListSize, checkTagCount, elbv2Failure, page, required, tagsOfRequest } from './wire.ts';

/**
 * The listener rule calls of the fake ELBv2 API (HTTP and HTTPS listeners of Application Load Balancers). Rules
 * have priorities 1-50000, unique on their listener (PriorityInUse); a load balancer holds at most `ruleQuota`
 * rules besides the default ones (TooManyRules); the default rule is the listener's default actions: it can be
 * described and its actions modified, never given conditions, moved or deleted (OperationNotPermitted).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateRule.html
 */

function ruleNotFound(): never {
  throw elbv2Failure('RuleNotFound', 'One or more rules not found');
}

type Found = { kind: 'rule'; rule: FakeRule } | { kind: 'default'; listener: Listener; arn: string };

function findRule(elb: Elbv2State, arn: string): Found {
  const rule = elb.rules.get(arn);
  if (rule) return { kind: 'rule', rule };
  for (const [listenerArn, defaultRule] of elb.defaultRules) {
    if (defaultRule.arn === arn) return { kind: 'default', listener: elb.listenerOrThrow(listenerArn), arn };
  }
  return ruleNotFound();
}

function sdkOf(found: Found) {
  if (found.kind === 'rule') return sdkRule(found.rule);
  const { listener, arn } = found;
  return sdkRule({ arn, priority: 'default', conditions: [], actions: listener.defaultActions ?? [] });
}

function applicationListener(elb: Elbv2State, arn: string | undefined): Listener {
  const listener = elb.listenerOrThrow(arn);
  if (!elb.defaultRules.has(listener.arn)) {
    throw elbv2Failure(
      'ValidationError',
      'Rules can only be added to HTTP and HTTPS listeners of Application Load Balancers',
    );
  }
  return listener;
}

/** A listener's rules in priority order, the default rule last; or rules by ARN (one unknown fails the call). */
export function describeRules(elb: Elbv2State, input: DescribeRulesInput): DescribeRulesOutput {
  acceptOnly('DescribeRules', input, ['ListenerArn', 'RuleArns', 'Marker', 'PageSize']);
  if ((input.ListenerArn === undefined) === (input.RuleArns === undefined)) {
    throw elbv2Failure('ValidationError', 'Specify either a listener ARN or rule ARNs');
  }
  let found: Found[];
  if (input.ListenerArn !== undefined) {
    const listener = applicationListener(elb, input.ListenerArn);
    const defaultArn = elb.defaultRules.get(listener.arn)!.arn;
    found = [
      ...elb.rulesOf(listener.arn).map((rule): Found => ({ kind: 'rule', rule })),
      { kind: 'default', listener, arn: defaultArn },
    ];
  } else {
    checkListSize(input.RuleArns, 'ruleArns', 20);
    found = input.RuleArns!.map((arn) => findRule(elb, arn));
  }
  const { items, NextMarker } = page('DescribeRules', input, found);
  return { Rules: items.map((f) => sdkOf(f)), ...(NextMarker ? { NextMarker } : {}) };
}

function checkPriority(priority: number): void {
  if (!Number.isInteger(priority) || priority < RULE_LIMITS.minPriority || priority > RULE_LIMITS.maxPriority) {
    throw elbv2Failure(
      'ValidationError',
      `Priority ${priority} must be between ${RULE_LIMITS.minPriority} and ${RULE_LIMITS.maxPriority}`,
    );
  }
}

export function createRule(elb: Elbv2State, input: CreateRuleInput): CreateRuleOutput {
  acceptOnly('CreateRule', input, ['ListenerArn', 'Conditions', 'Priority', 'Actions', 'Tags']);
  const listener = applicationListener(elb, required(input.ListenerArn, 'listenerArn'));
  const lb = elb.lbOrThrow(listener.loadBalancerArn);
  const priority = required(input.Priority, 'priority');
  checkPriority(priority);
  const conditions = conditionsOf(input.Conditions);
  const actions = actionsOf(elb, lb, input.Actions);
  const tags = tagsOfRequest(input.Tags);
  checkTagCount(tags);
  if (elb.rulesOf(listener.arn).some((r) => r.priority === priority)) {
    throw elbv2Failure('PriorityInUse', `Priority '${priority}' is currently in use`);
  }
  const held = elb.listenersOf(lb.lb.arn).reduce((n, l) => n + elb.rulesOf(l.arn).length, 0);
  if (held >= elb.ruleQuota) {
    throw elbv2Failure('TooManyRules', 'You have reached the limit on the number of rules per load balancer');
  }
  // listener-rule/app/<lb name>/<lb id>/<listener id>/<rule id>
  const arn = `${listener.arn.replace(':listener/', ':listener-rule/')}/${elb.nextId()}`;
  const rule: FakeRule = { arn, listenerArn: listener.arn, priority, conditions, actions, tags };
  elb.rules.set(arn, rule);
  return { Rules: [sdkRule(rule)] };
}

/**
 * Conditions and actions given replace the rule's; those left out are kept. The default rule takes actions only.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyRule.html
 */
export function modifyRule(elb: Elbv2State, input: ModifyRuleInput): ModifyRuleOutput {
  acceptOnly('ModifyRule', input, ['RuleArn', 'Conditions', 'Actions']);
  const found = findRule(elb, required(input.RuleArn, 'ruleArn'));
  const listenerArn = found.kind === 'rule' ? found.rule.listenerArn : found.listener.arn;
  const lb = elb.lbOrThrow(elb.listenerOrThrow(listenerArn).loadBalancerArn);
  if (found.kind === 'default') {
    if (input.Conditions !== undefined) {
      throw elbv2Failure('OperationNotPermitted', 'The conditions of a default rule cannot be modified');
    }
    const actions = input.Actions ? actionsOf(elb, lb, input.Actions) : (found.listener.defaultActions ?? []);
    const only = actions[0];
    const single = actions.length === 1 && only?.type === 'forward' && only.targetGroups.length === 1;
    const listener: Listener = { ...found.listener, defaultActions: actions };
    if (single) listener.targetGroupArn = only.targetGroups[0]!.arn;
    else delete listener.targetGroupArn;
    elb.listeners.set(listener.arn, listener);
    return { Rules: [sdkOf({ ...found, listener })] };
  }
  const conditions = input.Conditions ? conditionsOf(input.Conditions) : found.rule.conditions;
  const actions = input.Actions ? actionsOf(elb, lb, input.Actions) : found.rule.actions;
  Object.assign(found.rule, { conditions, actions });
  return { Rules: [sdkRule(found.rule)] };
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteRule.html */
export function deleteRule(elb: Elbv2State, input: DeleteRuleInput): object {
  acceptOnly('DeleteRule', input, ['RuleArn']);
  const found = findRule(elb, required(input.RuleArn, 'ruleArn'));
  if (found.kind === 'default') throw elbv2Failure('OperationNotPermitted', 'A default rule cannot be deleted');
  elb.rules.delete(found.rule.arn);
  return {};
}

/**
 * "You can reorder the rules as long as there are no priority conflicts in the new order. Any existing rules that
 * you do not specify retain their current priority." The new order is checked as a whole: rules may trade
 * priorities in one call, and a priority another rule keeps is PriorityInUse. All or nothing.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetRulePriorities.html
 */
export function setRulePriorities(elb: Elbv2State, input: SetRulePrioritiesInput): SetRulePrioritiesOutput {
  acceptOnly('SetRulePriorities', input, ['RulePriorities']);
  const pairs = required(input.RulePriorities, 'rulePriorities');
  if (pairs.length === 0) throw elbv2Failure('ValidationError', 'At least one rule priority must be specified');
  const moves = new Map<string, number>();
  for (const pair of pairs) {
    acceptOnly('a rule priority pair', pair, ['RuleArn', 'Priority']);
    const found = findRule(elb, required(pair.RuleArn, 'rulePriorities.member.ruleArn'));
    if (found.kind === 'default')
      throw elbv2Failure('OperationNotPermitted', 'The priority of a default rule cannot be set');
    const priority = required(pair.Priority, 'rulePriorities.member.priority');
    checkPriority(priority);
    if (moves.has(found.rule.arn)) throw elbv2Failure('ValidationError', 'A rule can be named once per call');
    moves.set(found.rule.arn, priority);
  }
  const listeners = new Set([...moves.keys()].map((arn) => elb.rules.get(arn)!.listenerArn));
  for (const listenerArn of listeners) {
    const taken = new Set<number>();
    for (const rule of elb.rulesOf(listenerArn)) {
      const priority = moves.get(rule.arn) ?? rule.priority;
      if (taken.has(priority)) throw elbv2Failure('PriorityInUse', `Priority '${priority}' is currently in use`);
      taken.add(priority);
    }
  }
  for (const [arn, priority] of moves) elb.rules.get(arn)!.priority = priority;
  return { Rules: [...moves.keys()].map((arn) => sdkRule(elb.rules.get(arn)!)) };
}
