import { BlockList, isIP } from 'node:net';
import type { RuleAction, RuleCondition } from '../../elbv2-port.ts';
import type { Elbv2State } from './state.ts';

/**
 * How an Application Load Balancer listener routes a request, for tests that must check every intermediate AWS
 * state of a change ("no request sees a 404"): the rules are evaluated in priority order, lowest first, and the
 * first whose conditions all match performs its actions; none matching, the default rule's. Within a condition
 * any value may match.
 * - host-header: not case-sensitive, `*` (any characters) and `?` (one character); the port is not part of it.
 * - path-pattern: case-sensitive, `*` and `?`, the path only (not the query string).
 * - http-header: the name is not case-sensitive, the values are not either, with `*` and `?`.
 * - http-request-method: case-sensitive, exact.
 * - query-string: a `key=value` pair of the request, key and value not case-sensitive with `*` and `?`; a
 *   condition pair without a key matches any key.
 * - source-ip: the client's address within one of the CIDR blocks.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/listener-rules.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-condition-types.html
 */

export interface RequestToRoute {
  host: string;
  path: string;
  /** Default GET. */
  method?: string;
  headers?: Readonly<Record<string, string | readonly string[]>>;
  /** The query string's pairs, decoded (a repeated key as several pairs). */
  query?: readonly (readonly [string, string])[];
  sourceIp?: string;
}

export interface Route {
  /** The rule that matched: its ARN and priority, or `default`. */
  ruleArn: string;
  priority: number | 'default';
  actions: RuleAction[];
}

export function routeRequest(elb: Elbv2State, listenerArn: string, request: RequestToRoute): Route {
  const listener = elb.listenerOrThrow(listenerArn);
  if (listener.protocol !== 'HTTP' && listener.protocol !== 'HTTPS') {
    throw new Error(
      `FakeElbv2: listener ${listenerArn} is ${listener.protocol}; only HTTP and HTTPS listeners route by rules`,
    );
  }
  for (const rule of elb.rulesOf(listenerArn)) {
    if (rule.conditions.every((c) => conditionMatches(c, request))) {
      return { ruleArn: rule.arn, priority: rule.priority, actions: structuredClone(rule.actions) };
    }
  }
  return {
    ruleArn: elb.defaultRules.get(listenerArn)?.arn ?? '',
    priority: 'default',
    actions: structuredClone(listener.defaultActions ?? []),
  };
}

export function conditionMatches(condition: RuleCondition, request: RequestToRoute): boolean {
  switch (condition.field) {
    case 'host-header': {
      const host = request.host.replace(/:\d+$/, '');
      return condition.values.some((v) => wildcard(v, false).test(host));
    }
    case 'path-pattern': {
      const path = request.path.split('?')[0] ?? '';
      return condition.values.some((v) => wildcard(v, true).test(path));
    }
    case 'http-request-method':
      return condition.values.includes(request.method ?? 'GET');
    case 'http-header': {
      const wanted = condition.headerName.toLowerCase();
      const values = Object.entries(request.headers ?? {})
        .filter(([name]) => name.toLowerCase() === wanted)
        .flatMap(([, value]) => (typeof value === 'string' ? [value] : [...value]));
      return values.some((value) => condition.values.some((v) => wildcard(v, false).test(value)));
    }
    case 'query-string':
      return (request.query ?? []).some(([key, value]) =>
        condition.values.some(
          (pair) =>
            (pair.key === undefined || wildcard(pair.key, false).test(key)) && wildcard(pair.value, false).test(value),
        ),
      );
    case 'source-ip':
      return request.sourceIp !== undefined && condition.values.some((cidr) => inCidr(request.sourceIp!, cidr));
  }
}

/** A pattern with `*` and `?` as a whole-string regular expression; every other character stands for itself. */
function wildcard(pattern: string, caseSensitive: boolean): RegExp {
  const source = [...pattern]
    .map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, caseSensitive ? 's' : 'is');
}

function inCidr(ip: string, cidr: string): boolean {
  const [network = '', bits = '0'] = cidr.split('/');
  const family = isIP(network) === 6 ? 'ipv6' : 'ipv4';
  if ((isIP(ip) === 6 ? 'ipv6' : 'ipv4') !== family) return false;
  const list = new BlockList();
  list.addSubnet(network, Number(bits), family);
  return list.check(ip, family);
}
