import type { Filter, Tag } from '@aws-sdk/client-ec2';
import { AwsServiceError } from '../../errors.ts';

/**
 * What every EC2 API call of the fake shares: errors as the SDK raises them, filters, paging, tags and ID
 * formats, each the way the EC2 Query API defines it.
 */

/** The account every fake resource belongs to (OwnerId). */
export const FAKE_ACCOUNT_ID = '111122223333';

/**
 * An EC2 error as the SDK raises it: `name` is EC2's error code, client errors are HTTP 400, server errors 5xx.
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
 */
export function ec2Error(code: string, message: string, httpStatusCode = 400): AwsServiceError {
  return new AwsServiceError(code, message, httpStatusCode);
}

/**
 * The fake refuses request fields it does not model, loudly and not as an EC2 error: silently ignoring a field an
 * adapter starts sending would answer something EC2 never would.
 */
export function acceptOnly(operation: string, input: object, fields: readonly string[]): void {
  for (const [field, value] of Object.entries(input)) {
    if (value !== undefined && !fields.includes(field)) {
      throw new Error(`FakeEc2 does not model ${operation} with ${field}`);
    }
  }
}

/** EC2 resource IDs: the type's prefix and 8 or 17 hex digits (`i-0123456789abcdef0`). */
export function isWellFormedId(prefix: string, id: string): boolean {
  return new RegExp(`^${prefix}-(?:[0-9a-f]{8}|[0-9a-f]{17})$`).test(id);
}

/** `tag:<key>`, `tag-key` and `tag-value` filter every taggable resource the same way. */
const TAG_FILTERS = ['tag-key', 'tag-value'];

/**
 * EC2 counts filter values over every filter of a call ("FilterLimitExceeded: The maximum number of filter values
 * specified on a single call is 200"), and refuses a filter name the operation does not define.
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Using_Filtering.html
 */
export const MAX_FILTER_VALUES = 200;

export function checkFilters(filters: readonly Filter[] | undefined, names: readonly string[]): void {
  const total = (filters ?? []).reduce((n, f) => n + (f.Values?.length ?? 0), 0);
  if (total > MAX_FILTER_VALUES) {
    throw ec2Error(
      'FilterLimitExceeded',
      `The maximum number of filter values specified on a single call is ${MAX_FILTER_VALUES}`,
    );
  }
  for (const filter of filters ?? []) {
    const name = filter.Name ?? '';
    if (!name.startsWith('tag:') && !TAG_FILTERS.includes(name) && !names.includes(name)) {
      throw ec2Error('InvalidParameterValue', `The filter '${name}' is invalid`);
    }
  }
}

/** What a resource shows each filter: the filter's name -> the resource's values for it. */
export type FilterFields = Readonly<Record<string, readonly (string | undefined)[]>>;

/**
 * EC2 ANDs filters and ORs the values of one filter; a resource matches a filter when one of its values matches
 * one of the filter's. Values are case sensitive, `*` matches any run of characters and `?` at most one.
 */
export function matchesFilters(
  filters: readonly Filter[] | undefined,
  fields: FilterFields,
  tags: Readonly<Record<string, string>>,
): boolean {
  return (filters ?? []).every((filter) => {
    const name = filter.Name ?? '';
    const own = name.startsWith('tag:')
      ? [tags[name.slice(4)]]
      : name === 'tag-key'
        ? Object.keys(tags)
        : name === 'tag-value'
          ? Object.values(tags)
          : (fields[name] ?? []);
    return (filter.Values ?? []).some((pattern) => own.some((value) => value !== undefined && glob(pattern, value)));
  });
}

function glob(pattern: string, value: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern === value;
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[++i]!);
    else if (c === '*') source += '.*';
    else if (c === '?') source += '.?';
    else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, 's').test(value);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The paging fields every paginated EC2 Describe call takes. */
export interface PageInput {
  MaxResults?: number;
  NextToken?: string;
}

/**
 * One page of `items` as EC2 pages: without MaxResults everything comes at once; with it, at most that many and a
 * NextToken while more are left. MaxResults outside the operation's range is InvalidParameterValue; a token that
 * was not issued for this very request (same operation and parameters) is InvalidPaginationToken.
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Query-Requests.html#api-pagination
 */
export function page<T>(
  operation: string,
  input: PageInput & object,
  items: readonly T[],
  range: { min: number; max: number },
): { items: T[]; NextToken?: string } {
  const { MaxResults, NextToken, ...request } = input;
  if (MaxResults !== undefined && (MaxResults < range.min || MaxResults > range.max)) {
    throw ec2Error(
      'InvalidParameterValue',
      `Value ( ${MaxResults} ) for parameter maxResults is invalid. Parameter must be between ${range.min} and ${range.max}.`,
    );
  }
  const fingerprint = JSON.stringify([operation, request]);
  const offset = NextToken === undefined ? 0 : offsetOf(NextToken, fingerprint);
  const end = MaxResults === undefined ? items.length : offset + MaxResults;
  const next = end < items.length ? tokenFor(end, fingerprint) : undefined;
  return { items: items.slice(offset, end), ...(next ? { NextToken: next } : {}) };
}

function tokenFor(offset: number, fingerprint: string): string {
  return Buffer.from(JSON.stringify({ offset, fingerprint })).toString('base64url');
}

function offsetOf(token: string, fingerprint: string): number {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString()) as {
      offset?: unknown;
      fingerprint?: unknown;
    };
    if (decoded.fingerprint === fingerprint && typeof decoded.offset === 'number') return decoded.offset;
  } catch {
    // not a token this fake issued: answered below
  }
  throw ec2Error('InvalidPaginationToken', 'The specified pagination token is not valid or is expired.');
}

export function sdkTags(tags: Readonly<Record<string, string>>): Tag[] {
  return Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
}

/**
 * Tags as a create call gives them. Keys starting with `aws:` are AWS's own, and a resource holds at most 50 tags.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions
 */
export const MAX_TAGS_PER_RESOURCE = 50;

export function checkTagKeys(tags: readonly Tag[]): void {
  for (const tag of tags) {
    if (tag.Key === undefined || tag.Key === '') throw ec2Error('InvalidParameterValue', 'Tag key cannot be empty');
    if (tag.Key.toLowerCase().startsWith('aws:')) {
      throw ec2Error('InvalidParameterValue', "Tag keys starting with 'aws:' are reserved for internal use");
    }
  }
}

export function checkTagCount(resourceId: string, tags: Readonly<Record<string, string>>): void {
  if (Object.keys(tags).length > MAX_TAGS_PER_RESOURCE) {
    throw ec2Error('TagLimitExceeded', `The maximum number of Tags for a resource has been reached (${resourceId}).`);
  }
}
