import {
  ALPNPolicyNotSupportedException,
  DuplicateListenerException,
  DuplicateLoadBalancerNameException,
  DuplicateTagKeysException,
  DuplicateTargetGroupNameException,
  ElasticLoadBalancingV2ServiceException,
  IncompatibleProtocolsException,
  InvalidConfigurationRequestException,
  InvalidLoadBalancerActionException,
  InvalidSecurityGroupException,
  InvalidTargetException,
  ListenerNotFoundException,
  LoadBalancerNotFoundException,
  OperationNotPermittedException,
  PriorityInUseException,
  ResourceInUseException,
  RuleNotFoundException,
  SubnetNotFoundException,
  type Tag,
  TargetGroupAssociationLimitException,
  TargetGroupNotFoundException,
  TooManyActionsException,
  TooManyCertificatesException,
  TooManyRulesException,
  TooManyTagsException,
  UnsupportedProtocolException,
} from '@aws-sdk/client-elastic-load-balancing-v2';

/**
 * What every ELBv2 API call of the fake shares: errors as the SDK raises them, Marker paging, request checks,
 * tags and attributes, each the way the ELBv2 Query API defines them.
 */

/** The account every fake resource belongs to. */
export const FAKE_ACCOUNT_ID = '111122223333';

type ModeledException = new (opts: {
  message: string;
  $metadata: { httpStatusCode: number };
}) => ElasticLoadBalancingV2ServiceException;

/**
 * The SDK's exception class for each wire code the fake answers. ELBv2 speaks the query protocol: the answer
 * carries the wire code (`LoadBalancerNotFound`) and the SDK throws the modeled class (named `<Code>Exception`,
 * except `ALPNPolicyNotFound`, thrown as ALPNPolicyNotSupportedException) with the wire code in `Code`; a code the
 * model does not list (ValidationError, Throttling) comes as the service's base exception named after the code.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/CommonErrors.html
 */
const MODELED: Readonly<Record<string, ModeledException>> = {
  ALPNPolicyNotFound: ALPNPolicyNotSupportedException,
  DuplicateListener: DuplicateListenerException,
  DuplicateLoadBalancerName: DuplicateLoadBalancerNameException,
  DuplicateTagKeys: DuplicateTagKeysException,
  DuplicateTargetGroupName: DuplicateTargetGroupNameException,
  IncompatibleProtocols: IncompatibleProtocolsException,
  InvalidConfigurationRequest: InvalidConfigurationRequestException,
  InvalidLoadBalancerAction: InvalidLoadBalancerActionException,
  InvalidSecurityGroup: InvalidSecurityGroupException,
  InvalidTarget: InvalidTargetException,
  ListenerNotFound: ListenerNotFoundException,
  LoadBalancerNotFound: LoadBalancerNotFoundException,
  OperationNotPermitted: OperationNotPermittedException,
  PriorityInUse: PriorityInUseException,
  ResourceInUse: ResourceInUseException,
  RuleNotFound: RuleNotFoundException,
  SubnetNotFound: SubnetNotFoundException,
  TargetGroupAssociationLimit: TargetGroupAssociationLimitException,
  TargetGroupNotFound: TargetGroupNotFoundException,
  TooManyActions: TooManyActionsException,
  TooManyCertificates: TooManyCertificatesException,
  TooManyRules: TooManyRulesException,
  TooManyTags: TooManyTagsException,
  UnsupportedProtocol: UnsupportedProtocolException,
};

/**
 * An ELBv2 error as SDK v3 raises it from an error answer: the modeled exception class, `Code` and `Type` from
 * the answer, `$fault` and `$metadata.httpStatusCode` from the HTTP status (every ELBv2 client error is 400).
 */
export function elbv2Failure(
  code: string,
  message: string,
  httpStatusCode = 400,
): ElasticLoadBalancingV2ServiceException {
  const $metadata = { httpStatusCode };
  const $fault = httpStatusCode >= 500 ? 'server' : 'client';
  const Modeled = MODELED[code];
  const err = Modeled
    ? new Modeled({ message, $metadata })
    : new ElasticLoadBalancingV2ServiceException({ name: code, $fault, message, $metadata });
  const Type = $fault === 'client' ? 'Sender' : 'Receiver';
  // The SDK moves the answer's Message into `message` and drops the member.
  delete (err as { Message?: unknown }).Message;
  return Object.assign(err, { Code: code, Type, Error: { Type, Code: code, Message: message } });
}

/**
 * The fake refuses request fields it does not model, loudly and not as an ELBv2 error: silently ignoring a field
 * an adapter starts sending would answer something ELBv2 never would.
 */
export function acceptOnly(operation: string, input: object, fields: readonly string[]): void {
  for (const [field, value] of Object.entries(input)) {
    if (value !== undefined && !fields.includes(field)) {
      throw new Error(`FakeElbv2 does not model ${operation} with ${field}`);
    }
  }
}

/** A request field the API requires: ValidationError when missing, as ELBv2 answers it. */
export function required<T>(value: T | undefined, field: string): T {
  if (value === undefined || value === null || (typeof value === 'string' && value === '')) {
    throw elbv2Failure(
      'ValidationError',
      `1 validation error detected: Value null at '${field}' failed to satisfy constraint: Member must not be null`,
    );
  }
  return value;
}

/** Every paged Describe call of ELBv2 takes PageSize 1-400 and a Marker from an earlier answer. */
export const MAX_PAGE_SIZE = 400;

export interface MarkerInput {
  Marker?: string;
  PageSize?: number;
}

/**
 * One page of `items` as ELBv2 pages: at most PageSize (400 when not given) and a NextMarker while more are left.
 * A PageSize outside 1-400 is ValidationError; a Marker not issued for this very request (same operation and
 * parameters) is ValidationError too.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeLoadBalancers.html
 */
export function page<T>(
  operation: string,
  input: MarkerInput & object,
  items: readonly T[],
): { items: T[]; NextMarker?: string } {
  const { Marker, PageSize, ...request } = input;
  if (PageSize !== undefined && (!Number.isInteger(PageSize) || PageSize < 1 || PageSize > MAX_PAGE_SIZE)) {
    throw elbv2Failure(
      'ValidationError',
      `1 validation error detected: Value '${PageSize}' at 'pageSize' failed to satisfy constraint: Member must have value between 1 and ${MAX_PAGE_SIZE}`,
    );
  }
  const fingerprint = JSON.stringify([operation, request]);
  const offset = Marker === undefined ? 0 : offsetOf(Marker, fingerprint);
  const end = offset + (PageSize ?? MAX_PAGE_SIZE);
  const next =
    end < items.length ? Buffer.from(JSON.stringify({ offset: end, fingerprint })).toString('base64url') : undefined;
  return { items: items.slice(offset, end), ...(next ? { NextMarker: next } : {}) };
}

function offsetOf(marker: string, fingerprint: string): number {
  try {
    const decoded = JSON.parse(Buffer.from(marker, 'base64url').toString()) as {
      offset?: unknown;
      fingerprint?: unknown;
    };
    if (decoded.fingerprint === fingerprint && typeof decoded.offset === 'number') return decoded.offset;
  } catch {
    // not a marker this fake issued: answered below
  }
  throw elbv2Failure('ValidationError', 'Invalid Marker');
}

/**
 * A list parameter with at most `max` members, and at least one when given: ValidationError otherwise.
 */
export function checkListSize(
  values: readonly unknown[] | undefined,
  field: string,
  max: number,
  message?: string,
): void {
  if (values === undefined) return;
  if (values.length === 0 || values.length > max) {
    throw elbv2Failure(
      'ValidationError',
      message ??
        `1 validation error detected: Value at '${field}' failed to satisfy constraint: Member must have length between 1 and ${max}`,
    );
  }
}

/**
 * A resource holds at most 50 tags; a key must not repeat in one request. Keys starting with `aws:` are AWS's
 * own and keep the rules of the service that set them.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddTags.html
 */
export const MAX_TAGS_PER_RESOURCE = 50;

export function tagsOfRequest(tags: readonly Tag[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const tag of tags ?? []) {
    const key = required(tag.Key, 'tags.member.key');
    if (key in out) throw elbv2Failure('DuplicateTagKeys', `Tag key '${key}' is duplicated`);
    out[key] = tag.Value ?? '';
  }
  return out;
}

export function checkTagCount(tags: Readonly<Record<string, string>>): void {
  if (Object.keys(tags).length > MAX_TAGS_PER_RESOURCE) {
    throw elbv2Failure('TooManyTags', 'You have reached the limit on the number of tags you can assign to a resource');
  }
}

export function sdkTags(tags: Readonly<Record<string, string>>): Tag[] {
  return Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
}

export function sdkAttributes(attributes: Readonly<Record<string, string>>): { Key: string; Value: string }[] {
  return Object.entries(attributes).map(([Key, Value]) => ({ Key, Value }));
}

export function attributesOfRequest(
  attributes: readonly { Key?: string; Value?: string }[] | undefined,
): Record<string, string> {
  const list = required(attributes, 'attributes');
  if (list.length === 0) throw elbv2Failure('ValidationError', 'At least one attribute must be specified');
  const out: Record<string, string> = {};
  for (const attribute of list) out[required(attribute.Key, 'attributes.member.key')] = attribute.Value ?? '';
  return out;
}
