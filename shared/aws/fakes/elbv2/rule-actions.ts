import type { Action } from '@aws-sdk/client-elastic-load-balancing-v2';
import { RULE_LIMITS, type RuleAction, type WeightedTargetGroup } from '../../elbv2-port.ts';
import type { Elbv2State, FakeLoadBalancer } from './state.ts';
import { acceptOnly, elbv2Failure, required } from './wire.ts';

/**
 * The actions of a listener rule or an HTTP/HTTPS listener's default rule, read from a request and checked as ELBv2
 * checks them: exactly one of forward, fixed-response or redirect (the only actions modeled; authenticate actions
 * are refused as unmodeled), target groups that exist, are HTTP or HTTPS, and serve no other load balancer, weights
 * 0-999, at most 5 groups, stickiness 1-604800 s, fixed responses with a 2XX/4XX/5XX code, a known content type and
 * at most 1024 characters, redirects with HTTP_301/302 that change something.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Action.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-action-types.html
 */

const ACTION_TYPES = new Set(['forward', 'fixed-response', 'redirect']);
const CONTENT_TYPES = new Set(['text/plain', 'text/css', 'text/html', 'application/javascript', 'application/json']);
const MAX_STICKINESS_SECONDS = 604_800;
const MAX_WEIGHT = 999;
const MAX_MESSAGE_BODY = 1024;

export function actionsOf(elb: Elbv2State, lb: FakeLoadBalancer, actions: readonly Action[] | undefined): RuleAction[] {
  const list = [...required(actions, 'actions')].sort((a, b) => (a.Order ?? 0) - (b.Order ?? 0));
  if (list.length === 0) throw elbv2Failure('ValidationError', 'At least one action must be specified');
  for (const action of list) {
    const type = required(action.Type, 'actions.member.type');
    if (type.startsWith('authenticate-')) throw new Error(`FakeElbv2 does not model ${type} actions`);
    if (!ACTION_TYPES.has(type)) throw elbv2Failure('ValidationError', `Action type '${type}' is not valid`);
  }
  // "Each rule must include exactly one of the following actions: forward, redirect, or fixed-response."
  if (list.length > 1)
    throw elbv2Failure('TooManyActions', 'A rule can have only one forward, redirect or fixed-response action');
  return list.map((action) => actionOf(elb, lb, action));
}

function actionOf(elb: Elbv2State, lb: FakeLoadBalancer, action: Action): RuleAction {
  acceptOnly('an action', action, [
    'Type',
    'Order',
    'TargetGroupArn',
    'ForwardConfig',
    'FixedResponseConfig',
    'RedirectConfig',
  ]);
  if (action.Type === 'forward') return forwardOf(elb, lb, action);
  if (action.Type === 'fixed-response') {
    const config = required(action.FixedResponseConfig, 'actions.member.fixedResponseConfig');
    acceptOnly('a fixed response', config, ['StatusCode', 'ContentType', 'MessageBody']);
    const statusCode = required(config.StatusCode, 'fixedResponseConfig.statusCode');
    if (!/^(2|4|5)\d\d$/.test(statusCode))
      invalidAction(`Fixed response status code '${statusCode}' must be 2XX, 4XX or 5XX`);
    if (config.ContentType !== undefined && !CONTENT_TYPES.has(config.ContentType)) {
      invalidAction(`Content type '${config.ContentType}' is not valid`);
    }
    if ((config.MessageBody ?? '').length > MAX_MESSAGE_BODY)
      invalidAction('The message body can be at most 1024 characters');
    return {
      type: 'fixed-response',
      statusCode,
      ...(config.ContentType !== undefined ? { contentType: config.ContentType } : {}),
      ...(config.MessageBody !== undefined ? { messageBody: config.MessageBody } : {}),
    };
  }
  return redirectOf(required(action.RedirectConfig, 'actions.member.redirectConfig'));
}

/**
 * TargetGroupArn, or a ForwardConfig of 1-5 groups; both only when they name the one same group. AWS answers a
 * group without a weight as weight 1, and stickiness off.
 */
function forwardOf(elb: Elbv2State, lb: FakeLoadBalancer, action: Action): RuleAction {
  const config = action.ForwardConfig;
  if (config) acceptOnly('a forward config', config, ['TargetGroups', 'TargetGroupStickinessConfig']);
  const listed = config?.TargetGroups ?? [];
  let groups: WeightedTargetGroup[] = listed.map((g) => {
    acceptOnly('a weighted target group', g, ['TargetGroupArn', 'Weight']);
    return { arn: required(g.TargetGroupArn, 'targetGroups.member.targetGroupArn'), weight: g.Weight ?? 1 };
  });
  if (action.TargetGroupArn !== undefined) {
    if (groups.length > 0 && (groups.length !== 1 || groups[0]?.arn !== action.TargetGroupArn)) {
      invalidAction('TargetGroupArn and ForwardConfig must name the same single target group');
    }
    groups = [{ arn: action.TargetGroupArn, weight: groups[0]?.weight ?? 1 }];
  }
  if (groups.length === 0) throw elbv2Failure('ValidationError', 'A forward action needs a target group');
  if (groups.length > RULE_LIMITS.targetGroupsPerAction) {
    throw elbv2Failure(
      'ValidationError',
      `A forward action can have at most ${RULE_LIMITS.targetGroupsPerAction} target groups`,
    );
  }
  if (new Set(groups.map((g) => g.arn)).size !== groups.length)
    invalidAction('A target group can be named once per action');
  for (const { arn, weight } of groups) {
    if (!Number.isInteger(weight) || weight < 0 || weight > MAX_WEIGHT) {
      throw elbv2Failure('ValidationError', `Weight ${weight} must be between 0 and ${MAX_WEIGHT}`);
    }
    checkGroup(elb, lb, arn);
  }
  const sticky = config?.TargetGroupStickinessConfig;
  if (sticky) acceptOnly('a stickiness config', sticky, ['Enabled', 'DurationSeconds']);
  const enabled = sticky?.Enabled === true;
  if (enabled) {
    const seconds = required(sticky?.DurationSeconds, 'targetGroupStickinessConfig.durationSeconds');
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_STICKINESS_SECONDS) {
      throw elbv2Failure(
        'ValidationError',
        `Stickiness duration must be between 1 and ${MAX_STICKINESS_SECONDS} seconds`,
      );
    }
  }
  return {
    type: 'forward',
    targetGroups: groups,
    stickiness: enabled ? { enabled, durationSeconds: sticky!.DurationSeconds! } : { enabled: false },
  };
}

/** An HTTP or HTTPS group of the load balancer's VPC that no other load balancer uses ("Load balancers per target group: 1"). */
function checkGroup(elb: Elbv2State, lb: FakeLoadBalancer, arn: string): void {
  const group = elb.groupOrThrow(arn);
  if (group.tg.protocol !== 'HTTP' && group.tg.protocol !== 'HTTPS') {
    throw elbv2Failure(
      'IncompatibleProtocols',
      `The target group protocol '${group.tg.protocol}' is not compatible with an Application Load Balancer listener`,
    );
  }
  if (elb.loadBalancersOf(group).some((other) => other !== lb.lb.arn)) {
    throw elbv2Failure(
      'TargetGroupAssociationLimit',
      `The following target groups cannot be associated with more than one load balancer: ${arn}`,
    );
  }
}

/**
 * Components left out keep the request's (`#{protocol}`, `#{host}`, `#{port}`, `/#{path}`, `#{query}`), as AWS
 * answers them; a redirect that keeps all of them would loop. HTTPS to HTTP is not allowed.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RedirectActionConfig.html
 */
function redirectOf(config: NonNullable<Action['RedirectConfig']>): RuleAction {
  acceptOnly('a redirect config', config, ['Protocol', 'Port', 'Host', 'Path', 'Query', 'StatusCode']);
  const statusCode = required(config.StatusCode, 'redirectConfig.statusCode');
  if (statusCode !== 'HTTP_301' && statusCode !== 'HTTP_302')
    invalidAction(`Redirect status code '${statusCode}' is not valid`);
  const redirect = {
    type: 'redirect' as const,
    statusCode: statusCode as 'HTTP_301' | 'HTTP_302',
    protocol: config.Protocol ?? '#{protocol}',
    host: config.Host ?? '#{host}',
    port: config.Port ?? '#{port}',
    path: config.Path ?? '/#{path}',
    query: config.Query ?? '#{query}',
  };
  if (!['HTTP', 'HTTPS', '#{protocol}'].includes(redirect.protocol))
    invalidAction(`Redirect protocol '${redirect.protocol}' is not valid`);
  if (
    redirect.port !== '#{port}' &&
    !(Number.isInteger(Number(redirect.port)) && Number(redirect.port) >= 1 && Number(redirect.port) <= 65535)
  ) {
    invalidAction(`Redirect port '${redirect.port}' is not valid`);
  }
  if (!redirect.path.startsWith('/')) invalidAction('The redirect path must start with /');
  const loops =
    redirect.protocol === '#{protocol}' &&
    redirect.host === '#{host}' &&
    redirect.port === '#{port}' &&
    redirect.path === '/#{path}' &&
    redirect.query === '#{query}';
  if (loops) invalidAction('The redirect must change at least one of protocol, host, port, path or query, or it loops');
  return redirect;
}

function invalidAction(message: string): never {
  throw elbv2Failure('InvalidLoadBalancerAction', message);
}

/** The target groups a list of actions forwards to. */
export function forwardedGroups(actions: readonly RuleAction[]): string[] {
  return actions.flatMap((a) => (a.type === 'forward' ? a.targetGroups.map((g) => g.arn) : []));
}
