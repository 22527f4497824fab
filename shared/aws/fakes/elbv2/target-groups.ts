import type {
  CreateTargetGroupInput,
  CreateTargetGroupOutput,
  DeleteTargetGroupInput,
  DescribeTargetGroupAttributesInput,
  DescribeTargetGroupAttributesOutput,
  DescribeTargetGroupsInput,
  DescribeTargetGroupsOutput,
  ModifyTargetGroupAttributesInput,
  ModifyTargetGroupAttributesOutput,
  ModifyTargetGroupInput,
  ModifyTargetGroupOutput,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import {
  ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
  albHealthCheckDefaults,
  nlbHealthCheckDefaults,
  nlbTargetGroupAttributeDefaults,
  PRESERVE_CLIENT_IP_ATTRIBUTE,
} from '../../elbv2-defaults.ts';
import {
  ELB_NAME_PATTERN,
  type HealthCheck,
  type TargetGroupIpAddressType,
  type TargetGroupProtocol,
  type TargetGroupProtocolVersion,
  type TargetType,
} from '../../elbv2-port.ts';
import { sdkTargetGroup } from './shapes.ts';
import type { Elbv2State, FakeTargetGroup } from './state.ts';
import {
  acceptOnly,
  attributesOfRequest,
  checkListSize,
  checkTagCount,
  elbv2Failure,
  FAKE_ACCOUNT_ID,
  page,
  required,
  sdkAttributes,
  tagsOfRequest,
} from './wire.ts';

/**
 * The target group calls of the fake ELBv2 API: TCP, UDP, TCP_UDP and TLS groups (Network Load Balancers) and HTTP
 * and HTTPS groups (Application Load Balancers, with a protocol version and healthy codes); instance and IP targets.
 */

/**
 * DescribeTargetGroups names or ARNs per call. Not in the API reference; AWS answers more with ValidationError
 * "You cannot describe more than '20' target groups at a time".
 */
const MAX_DESCRIBED = 20;

function notFound(): never {
  throw elbv2Failure('TargetGroupNotFound', 'One or more target groups not found');
}

/** The groups a call sees: a group still hidden after its creation is left out (the lookup uses up one of its calls). */
function visible(elb: Elbv2State, groups: readonly FakeTargetGroup[]): FakeTargetGroup[] {
  return groups.filter((g) => !elb.hiddenTargetGroups.hides(g.tg.arn));
}

/**
 * By names, by ARNs, the groups a load balancer's listeners forward to, or every group, in pages: "you can specify
 * one of the following to filter the results". One name or ARN it does not know fails the whole call with
 * TargetGroupNotFound, and so does one it still hides after its creation.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTargetGroups.html
 */
export function describeTargetGroups(elb: Elbv2State, input: DescribeTargetGroupsInput): DescribeTargetGroupsOutput {
  acceptOnly('DescribeTargetGroups', input, ['LoadBalancerArn', 'TargetGroupArns', 'Names', 'Marker', 'PageSize']);
  const { Names, TargetGroupArns, LoadBalancerArn } = input;
  if ([Names, TargetGroupArns, LoadBalancerArn].filter((f) => f !== undefined).length > 1) {
    throw elbv2Failure('ValidationError', 'Specify only one of load balancer ARN, target group ARNs or names');
  }
  const tooMany = `You cannot describe more than '${MAX_DESCRIBED}' target groups at a time`;
  checkListSize(Names, 'names', MAX_DESCRIBED, tooMany);
  checkListSize(TargetGroupArns, 'targetGroupArns', MAX_DESCRIBED, tooMany);
  const all = [...elb.targetGroups.values()];
  let found: FakeTargetGroup[];
  if (Names || TargetGroupArns) {
    const wanted = new Set(Names ?? TargetGroupArns);
    found = visible(
      elb,
      all.filter((g) => wanted.has(Names ? g.tg.name : g.tg.arn)),
    );
    if (found.length < wanted.size) notFound();
  } else if (LoadBalancerArn !== undefined) {
    const arn = elb.lbOrThrow(LoadBalancerArn).lb.arn;
    found = visible(
      elb,
      all.filter((g) => elb.loadBalancersOf(g).includes(arn)),
    );
  } else {
    found = visible(elb, all);
  }
  const { items, NextMarker } = page('DescribeTargetGroups', input, found);
  return {
    TargetGroups: items.map((g) => sdkTargetGroup(g, elb.loadBalancersOf(g))),
    ...(NextMarker ? { NextMarker } : {}),
  };
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'TCP_UDP', 'TLS', 'HTTP', 'HTTPS']);
const PROTOCOL_VERSIONS: ReadonlySet<string> = new Set(['HTTP1', 'HTTP2', 'GRPC']);
const HEALTH_CHECK_FIELDS = [
  'Matcher',
  'HealthCheckEnabled',
  'HealthCheckProtocol',
  'HealthCheckPort',
  'HealthCheckPath',
  'HealthCheckIntervalSeconds',
  'HealthCheckTimeoutSeconds',
  'HealthyThresholdCount',
  'UnhealthyThresholdCount',
] as const;

type HealthCheckInput = Pick<CreateTargetGroupInput, (typeof HEALTH_CHECK_FIELDS)[number]>;

/** The request's health check over `base`: fields left out keep base's value. */
function healthCheckOf(input: HealthCheckInput, base: HealthCheck): HealthCheck {
  if (input.HealthCheckEnabled === false)
    throw new Error('FakeElbv2 does not model target groups without health checks');
  const protocol = (input.HealthCheckProtocol ?? base.protocol) as HealthCheck['protocol'];
  const other = base.matcher ? { ...base, protocol } : { ...nlbHealthCheckDefaults(protocol), port: base.port };
  const from = protocol === base.protocol ? base : other;
  const hc: HealthCheck = {
    protocol,
    port: input.HealthCheckPort ?? from.port,
    intervalSeconds: input.HealthCheckIntervalSeconds ?? from.intervalSeconds,
    timeoutSeconds: input.HealthCheckTimeoutSeconds ?? from.timeoutSeconds,
    healthyThreshold: input.HealthyThresholdCount ?? from.healthyThreshold,
    unhealthyThreshold: input.UnhealthyThresholdCount ?? from.unhealthyThreshold,
  };
  const path = input.HealthCheckPath ?? from.path;
  if (path !== undefined) hc.path = path;
  if (from.matcher) hc.matcher = matcherOf(input.Matcher, from.matcher);
  else if (input.Matcher !== undefined)
    throw elbv2Failure('ValidationError', 'A matcher can only be set on HTTP and HTTPS target groups');
  checkHealthCheck(hc);
  return hc;
}

/**
 * Healthy codes of an HTTP/HTTPS group: HTTP codes 200-499 (`200`, `200,202`, `200-299`), or gRPC codes 0-99 for a
 * GRPC group. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Matcher.html
 */
function matcherOf(
  given: CreateTargetGroupInput['Matcher'],
  base: NonNullable<HealthCheck['matcher']>,
): NonNullable<HealthCheck['matcher']> {
  if (!given) return base;
  acceptOnly('a matcher', given, ['HttpCode', 'GrpcCode']);
  const grpc = base.grpcCode !== undefined;
  const code = grpc ? given.GrpcCode : given.HttpCode;
  if (code === undefined || (grpc ? given.HttpCode : given.GrpcCode) !== undefined) {
    throw elbv2Failure(
      'ValidationError',
      grpc ? 'A GRPC target group takes a GrpcCode' : 'An HTTP target group takes an HttpCode',
    );
  }
  const [min, max] = grpc ? [0, 99] : [200, 499];
  const ok = code.split(/[,-]/).every((n) => /^\d+$/.test(n) && Number(n) >= min && Number(n) <= max);
  if (!ok) throw elbv2Failure('ValidationError', `Health check matcher '${code}' must be codes from ${min} to ${max}`);
  return grpc ? { grpcCode: code } : { httpCode: code };
}

/**
 * Health check ranges of Network Load Balancer target groups, and a path for HTTP and HTTPS checks only.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
 */
function checkHealthCheck(hc: HealthCheck): void {
  const range = (value: number, min: number, max: number, what: string) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw elbv2Failure('ValidationError', `${what} must be between ${min} and ${max}`);
    }
  };
  if (!['TCP', 'HTTP', 'HTTPS'].includes(hc.protocol)) {
    throw elbv2Failure('ValidationError', `Health check protocol '${hc.protocol}' is not supported`);
  }
  range(hc.intervalSeconds, 5, 300, 'Health check interval');
  range(hc.timeoutSeconds, 2, 120, 'Health check timeout');
  range(hc.healthyThreshold, 2, 10, 'Healthy threshold');
  range(hc.unhealthyThreshold, 2, 10, 'Unhealthy threshold');
  if (hc.port !== 'traffic-port') range(Number(hc.port), 1, 65535, 'Health check port');
  if (hc.protocol === 'TCP' && hc.path)
    throw elbv2Failure('ValidationError', 'A path cannot be set for TCP health checks');
  if (hc.protocol !== 'TCP' && !hc.path?.startsWith('/')) {
    throw elbv2Failure('ValidationError', 'Health check path must begin with a /');
  }
  // HTTP and HTTPS groups (they have a matcher) check over HTTP or HTTPS, with a timeout below the interval.
  if (hc.matcher && hc.protocol === 'TCP') {
    throw elbv2Failure(
      'ValidationError',
      'Health check protocol TCP is not supported for HTTP and HTTPS target groups',
    );
  }
  if (hc.matcher && hc.timeoutSeconds >= hc.intervalSeconds) {
    throw elbv2Failure('ValidationError', 'Health check timeout must be smaller than the interval');
  }
}

function sameHealthCheck(a: HealthCheck, b: HealthCheck): boolean {
  return (
    a.protocol === b.protocol &&
    a.port === b.port &&
    (a.path ?? '') === (b.path ?? '') &&
    JSON.stringify(a.matcher ?? {}) === JSON.stringify(b.matcher ?? {}) &&
    a.intervalSeconds === b.intervalSeconds &&
    a.timeoutSeconds === b.timeoutSeconds &&
    a.healthyThreshold === b.healthyThreshold &&
    a.unhealthyThreshold === b.unhealthyThreshold
  );
}

/** The settings of a CreateTargetGroup request, checked. */
function targetGroupOf(input: CreateTargetGroupInput): Omit<FakeTargetGroup['tg'], 'arn'> {
  const name = required(input.Name, 'name');
  if (!ELB_NAME_PATTERN.test(name))
    throw elbv2Failure('ValidationError', `The target group name '${name}' is not valid`);
  const protocol = required(input.Protocol, 'protocol');
  if (!PROTOCOLS.has(protocol)) throw new Error(`FakeElbv2 does not model ${protocol} target groups`);
  const targetType = input.TargetType ?? 'instance';
  if (targetType !== 'instance' && targetType !== 'ip')
    throw new Error(`FakeElbv2 does not model ${targetType} targets`);
  const port = required(input.Port, 'port');
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw elbv2Failure('ValidationError', `Port ${port} is not valid`);
  const ipAddressType = (input.IpAddressType ?? 'ipv4') as TargetGroupIpAddressType;
  const http = protocol === 'HTTP' || protocol === 'HTTPS';
  if (input.ProtocolVersion !== undefined && (!http || !PROTOCOL_VERSIONS.has(input.ProtocolVersion))) {
    throw elbv2Failure(
      'ValidationError',
      `Protocol version '${input.ProtocolVersion}' is not valid for ${protocol} target groups`,
    );
  }
  const protocolVersion = http ? ((input.ProtocolVersion ?? 'HTTP1') as TargetGroupProtocolVersion) : undefined;
  // An HTTP/HTTPS group's health check defaults are the Application Load Balancer's (HTTP, 5 s timeout, 200 / gRPC 12).
  const base = http ? albHealthCheckDefaults('HTTP', protocolVersion) : nlbHealthCheckDefaults();
  // "IPv6 target groups only support IP type targets."
  // https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-target-groups.html#target-group-ip-address-type
  if (ipAddressType === 'ipv6' && targetType !== 'ip') {
    throw elbv2Failure('InvalidConfigurationRequest', 'IPv6 target groups only support targets of type ip');
  }
  return {
    name,
    protocol: protocol as TargetGroupProtocol,
    port,
    targetType: targetType as TargetType,
    ipAddressType,
    ...(protocolVersion ? { protocolVersion } : {}),
    vpcId: required(input.VpcId, 'vpcId'),
    healthCheck: healthCheckOf(input, base),
  };
}

/**
 * A target group with AWS's attribute defaults. Idempotent: the same name and settings answer the existing group
 * (even while it is still hidden after its creation); other settings are DuplicateTargetGroupName.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
 */
export function createTargetGroup(elb: Elbv2State, input: CreateTargetGroupInput): CreateTargetGroupOutput {
  acceptOnly('CreateTargetGroup', input, [
    'Name',
    'Protocol',
    'Port',
    'VpcId',
    'TargetType',
    'IpAddressType',
    'ProtocolVersion',
    'Tags',
    ...HEALTH_CHECK_FIELDS,
  ]);
  const settings = targetGroupOf(input);
  const tags = tagsOfRequest(input.Tags);
  checkTagCount(tags);
  const existing = [...elb.targetGroups.values()].find((g) => g.tg.name === settings.name);
  if (existing) {
    const { tg } = existing;
    const same =
      tg.protocol === settings.protocol &&
      tg.port === settings.port &&
      tg.targetType === settings.targetType &&
      tg.ipAddressType === settings.ipAddressType &&
      tg.protocolVersion === settings.protocolVersion &&
      tg.vpcId === settings.vpcId &&
      sameHealthCheck(tg.healthCheck, settings.healthCheck);
    if (!same) {
      throw elbv2Failure(
        'DuplicateTargetGroupName',
        `A target group with the same name '${settings.name}' exists, but with different settings`,
      );
    }
    return { TargetGroups: [sdkTargetGroup(existing, elb.loadBalancersOf(existing))] };
  }
  const arn = `arn:aws:elasticloadbalancing:${elb.region}:${FAKE_ACCOUNT_ID}:targetgroup/${settings.name}/${elb.nextId()}`;
  const group: FakeTargetGroup = {
    tg: { arn, ...settings },
    tags,
    attributes: settings.protocolVersion
      ? { ...ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS }
      : nlbTargetGroupAttributeDefaults(settings.targetType, settings.protocol),
    targets: new Map(),
  };
  elb.targetGroups.set(arn, group);
  elb.hiddenTargetGroups.start(arn, elb.newTargetGroupInvisibleMs, elb.newTargetGroupInvisibleCalls);
  return { TargetGroups: [sdkTargetGroup(group, [])] };
}

/** The health check; fields left out keep their values. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyTargetGroup.html */
export function modifyTargetGroup(elb: Elbv2State, input: ModifyTargetGroupInput): ModifyTargetGroupOutput {
  acceptOnly('ModifyTargetGroup', input, ['TargetGroupArn', ...HEALTH_CHECK_FIELDS]);
  const group = elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn'));
  group.tg.healthCheck = healthCheckOf(input, group.tg.healthCheck);
  return { TargetGroups: [sdkTargetGroup(group, elb.loadBalancersOf(group))] };
}

/**
 * ResourceInUse while a listener forwards to it; TargetGroupNotFound for one it does not know, or still hides
 * after its creation (which then stays).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteTargetGroup.html
 */
export function deleteTargetGroup(elb: Elbv2State, input: DeleteTargetGroupInput): object {
  acceptOnly('DeleteTargetGroup', input, ['TargetGroupArn']);
  const group = elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn'));
  if (elb.loadBalancersOf(group).length > 0) {
    throw elbv2Failure('ResourceInUse', `Target group '${group.tg.arn}' is currently in use by a listener or a rule`);
  }
  elb.targetGroups.delete(group.tg.arn);
  elb.hiddenTargetGroups.forget(group.tg.arn);
  return {};
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroupAttribute.html */
export function describeTargetGroupAttributes(
  elb: Elbv2State,
  input: DescribeTargetGroupAttributesInput,
): DescribeTargetGroupAttributesOutput {
  acceptOnly('DescribeTargetGroupAttributes', input, ['TargetGroupArn']);
  return { Attributes: sdkAttributes(elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn')).attributes) };
}

/**
 * Only the attributes given change; a key the group does not have is ValidationError. "Client IP preservation
 * can't be disabled for UDP and TCP_UDP target groups." Answers every attribute.
 */
export function modifyTargetGroupAttributes(
  elb: Elbv2State,
  input: ModifyTargetGroupAttributesInput,
): ModifyTargetGroupAttributesOutput {
  acceptOnly('ModifyTargetGroupAttributes', input, ['TargetGroupArn', 'Attributes']);
  const group = elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn'));
  const next = { ...group.attributes };
  for (const [key, value] of Object.entries(attributesOfRequest(input.Attributes))) {
    if (!(key in group.attributes)) {
      throw elbv2Failure('ValidationError', `Target group attribute key '${key}' is not recognized`);
    }
    const udp = group.tg.protocol === 'UDP' || group.tg.protocol === 'TCP_UDP';
    if (key === PRESERVE_CLIENT_IP_ATTRIBUTE && value === 'false' && udp) {
      throw elbv2Failure(
        'InvalidConfigurationRequest',
        'Client IP preservation cannot be disabled for UDP and TCP_UDP',
      );
    }
    next[key] = value;
  }
  group.attributes = next;
  return { Attributes: sdkAttributes(next) };
}
