import { isIP } from 'node:net';
import type { RuleCondition as SdkCondition } from '@aws-sdk/client-elastic-load-balancing-v2';
import { type QueryStringPair, RULE_LIMITS, type RuleCondition } from '../../elbv2-port.ts';
import { acceptOnly, elbv2Failure, required } from './wire.ts';

/**
 * The conditions of a listener rule, read from a request and checked as ELBv2 checks them: at least one; at most
 * one each of host-header, path-pattern, http-request-method and source-ip (http-header and query-string may
 * repeat); 1-3 values per condition, 5 values and 5 wildcards per rule; values within their length and character
 * rules. Host and path values come from the field's config or from the legacy `Values`.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-condition-types.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RuleCondition.html
 */

const ONCE_PER_RULE = new Set(['host-header', 'path-pattern', 'http-request-method', 'source-ip']);
const MAX_VALUE_LENGTH = 128;
const MAX_HEADER_NAME = 40;
const MAX_METHOD = 40;

export function conditionsOf(conditions: readonly SdkCondition[] | undefined): RuleCondition[] {
  const list = required(conditions, 'conditions');
  if (list.length === 0) throw elbv2Failure('ValidationError', 'A rule must have at least one condition');
  const parsed = list.map(conditionOf);
  const seen = new Set<string>();
  for (const condition of parsed) {
    if (ONCE_PER_RULE.has(condition.field) && seen.has(condition.field)) {
      throw elbv2Failure('ValidationError', `A rule can have only one '${condition.field}' condition`);
    }
    seen.add(condition.field);
  }
  const values = parsed.reduce((n, c) => n + c.values.length, 0);
  if (values > RULE_LIMITS.conditionValuesPerRule) {
    throw elbv2Failure(
      'ValidationError',
      `A rule can only have '${RULE_LIMITS.conditionValuesPerRule}' condition values`,
    );
  }
  const wildcards = parsed.reduce((n, c) => n + wildcardsOf(c), 0);
  if (wildcards > RULE_LIMITS.wildcardsPerRule) {
    throw elbv2Failure('ValidationError', `A rule can only have '${RULE_LIMITS.wildcardsPerRule}' wildcards`);
  }
  return parsed;
}

function wildcardsOf(condition: RuleCondition): number {
  const count = (text: string) => (text.match(/[*?]/g) ?? []).length;
  if (condition.field === 'query-string') {
    return condition.values.reduce((n, pair) => n + count(pair.key ?? '') + count(pair.value), 0);
  }
  if (condition.field === 'source-ip' || condition.field === 'http-request-method') return 0;
  return condition.values.reduce((n, value) => n + count(value), 0);
}

function conditionOf(sdk: SdkCondition): RuleCondition {
  acceptOnly('a rule condition', sdk, [
    'Field',
    'Values',
    'HostHeaderConfig',
    'PathPatternConfig',
    'HttpHeaderConfig',
    'QueryStringConfig',
    'HttpRequestMethodConfig',
    'SourceIpConfig',
  ]);
  const field = required(sdk.Field, 'conditions.member.field');
  const legacy = sdk.Values;
  if (legacy !== undefined && field !== 'host-header' && field !== 'path-pattern') {
    throw elbv2Failure('ValidationError', `Values cannot be used with a '${field}' condition: use its config`);
  }
  switch (field) {
    case 'host-header':
      return { field, values: checked(sdk.HostHeaderConfig?.Values ?? legacy, field, hostValue) };
    case 'path-pattern':
      return { field, values: checked(sdk.PathPatternConfig?.Values ?? legacy, field, pathValue) };
    case 'http-request-method':
      return { field, values: checked(sdk.HttpRequestMethodConfig?.Values, field, methodValue) };
    case 'source-ip':
      return { field, values: checked(sdk.SourceIpConfig?.Values, field, cidrValue) };
    case 'http-header': {
      const config = required(sdk.HttpHeaderConfig, 'httpHeaderConfig');
      const headerName = required(config.HttpHeaderName, 'httpHeaderConfig.httpHeaderName');
      if (headerName.length > MAX_HEADER_NAME || !/^[A-Za-z0-9!#$%&'+.^_`|~-]+$/.test(headerName)) {
        throw elbv2Failure('ValidationError', `HTTP header name '${headerName}' is not valid (no wildcards)`);
      }
      return { field, headerName, values: checked(config.Values, field, plainValue) };
    }
    case 'query-string': {
      const pairs = required(sdk.QueryStringConfig?.Values, 'queryStringConfig.values');
      checkCount(pairs.length, field);
      return {
        field,
        values: pairs.map((pair): QueryStringPair => {
          const value = required(pair.Value, 'queryStringConfig.values.member.value');
          plainValue(value);
          if (pair.Key !== undefined) plainValue(pair.Key);
          return { ...(pair.Key !== undefined ? { key: pair.Key } : {}), value };
        }),
      };
    }
    default:
      throw elbv2Failure('ValidationError', `Condition field '${field}' is not valid`);
  }
}

function checkCount(count: number, field: string): void {
  if (count === 0 || count > RULE_LIMITS.valuesPerCondition) {
    throw elbv2Failure('ValidationError', `A '${field}' condition takes 1 to ${RULE_LIMITS.valuesPerCondition} values`);
  }
}

function checked(values: readonly string[] | undefined, field: string, check: (value: string) => void): string[] {
  const list = required(values, `conditions.member.${field}.values`);
  checkCount(list.length, field);
  for (const value of list) check(value);
  return [...list];
}

function invalid(value: string, what: string): never {
  throw elbv2Failure('ValidationError', `'${value}' is not a valid ${what}`);
}

/**
 * "Allowed characters are a-z, A-Z, 0-9; the following special characters: -_.; and wildcards (* and ?). You must
 * include at least one "." character. You can include only alphabetical characters after the final "." character."
 */
function hostValue(value: string): void {
  const ok = /^[A-Za-z0-9._*?-]+$/.test(value) && /\.[A-Za-z]+$/.test(value);
  if (value.length > MAX_VALUE_LENGTH || !ok) invalid(value, 'host header');
}

/** Case-sensitive, at most 128 characters, "A-Z, a-z, 0-9, _ - . $ / ~ " ' @ : + & (using &amp;) * ?". */
function pathValue(value: string): void {
  if (value.length > MAX_VALUE_LENGTH || !/^[A-Za-z0-9_\-.$/~"'@:+&*?]+$/.test(value)) invalid(value, 'path pattern');
}

/** "The maximum size is 40 characters. The allowed characters are A-Z, hyphen (-), and underscore (_)." */
function methodValue(value: string): void {
  if (value.length > MAX_METHOD || !/^[A-Z_-]+$/.test(value)) invalid(value, 'HTTP request method');
}

function plainValue(value: string): void {
  // "Rules are applied only to visible ASCII characters; control characters (0x00 to 0x1f and 0x7f) are excluded."
  const control = [...value].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);
  if (value.length > MAX_VALUE_LENGTH || control) invalid(value, 'condition value');
}

function cidrValue(value: string): void {
  const [address = '', bits = '', ...rest] = value.split('/');
  const family = isIP(address);
  const max = family === 6 ? 128 : 32;
  if (family === 0 || rest.length > 0 || !/^\d+$/.test(bits) || Number(bits) > max) invalid(value, 'CIDR block');
}
