import type { RuleAction } from '../../../shared/aws/elbv2-port.ts';
import {
  asArray,
  asObject,
  field,
  type JsonObject,
  JsonShapeError,
  optionalBoolean,
  optionalInteger,
  optionalIntOrString,
  optionalObject,
  optionalString,
  parseJson,
} from './json.ts';

/**
 * The `alb.ingress.kubernetes.io/actions.<service>` annotation (a backend whose port name is `use-annotation`):
 * `fixed-response`, `redirect` or `forward` as JSON, keys in any case. A forward names its target groups by
 * Service and port (a target group of the model), by ARN or by name (one the user made); the simplified form
 * `{"type":"forward","targetGroupARN":...}` (or `targetGroupName`) is one group.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Action.html
 */

export type ForwardTarget = { service: { name: string; port: number | string } } | { arn: string } | { name: string };

export type ParsedAction =
  | {
      type: 'forward';
      targets: { target: ForwardTarget; weight: number }[];
      stickiness: { enabled: boolean; durationSeconds?: number };
    }
  | Exclude<RuleAction, { type: 'forward' }>;

/** AWS's limit of target groups in one forward action. */
export const MAX_FORWARD_TARGET_GROUPS = 5;
/** AWS's range of a forward target group's weight. */
export const MAX_WEIGHT = 999;

/** Throws JsonShapeError for bad JSON, an unknown type or a missing or malformed field. */
export function parseAction(raw: string): ParsedAction {
  const action = asObject(parseJson(raw), 'action');
  const type = optionalString(action, 'type', 'action');
  switch (type) {
    case 'fixed-response':
      return fixedResponse(action);
    case 'redirect':
      return redirect(action);
    case 'forward':
      return forward(action);
    case undefined:
      throw new JsonShapeError('action.type is required');
    default:
      throw new JsonShapeError(`unknown action type ${JSON.stringify(type)} (fixed-response, redirect or forward)`);
  }
}

function fixedResponse(action: JsonObject): ParsedAction {
  const config = optionalObject(action, 'fixedResponseConfig', 'action');
  if (!config) throw new JsonShapeError('missing fixedResponseConfig');
  const at = 'fixedResponseConfig';
  const statusCode = optionalString(config, 'statusCode', at) ?? '';
  if (statusCode === '') throw new JsonShapeError(`${at}.statusCode is required`);
  if (!/^[245]\d\d$/.test(statusCode)) throw new JsonShapeError(`${at}.statusCode must be 2XX, 4XX or 5XX`);
  const contentType = optionalString(config, 'contentType', at);
  const messageBody = optionalString(config, 'messageBody', at);
  return {
    type: 'fixed-response',
    statusCode,
    ...(contentType !== undefined ? { contentType } : {}),
    ...(messageBody !== undefined ? { messageBody } : {}),
  };
}

/** Every component stated, as AWS answers: those left out keep the request's. */
function redirect(action: JsonObject): ParsedAction {
  const config = optionalObject(action, 'redirectConfig', 'action');
  if (!config) throw new JsonShapeError('missing redirectConfig');
  const at = 'redirectConfig';
  const statusCode = optionalString(config, 'statusCode', at) ?? '';
  if (statusCode === '') throw new JsonShapeError(`${at}.statusCode is required`);
  if (statusCode !== 'HTTP_301' && statusCode !== 'HTTP_302') {
    throw new JsonShapeError(`${at}.statusCode must be HTTP_301 or HTTP_302`);
  }
  return {
    type: 'redirect',
    statusCode,
    protocol: optionalString(config, 'protocol', at) ?? '#{protocol}',
    host: optionalString(config, 'host', at) ?? '#{host}',
    port: optionalString(config, 'port', at) ?? '#{port}',
    path: optionalString(config, 'path', at) ?? '/#{path}',
    query: optionalString(config, 'query', at) ?? '#{query}',
  };
}

function forward(action: JsonObject): ParsedAction {
  const arn = optionalString(action, 'targetGroupARN', 'action');
  const name = optionalString(action, 'targetGroupName', 'action');
  const config = optionalObject(action, 'forwardConfig', 'action');
  const given = [arn, name, config].filter((v) => v !== undefined).length;
  if (given !== 1) {
    throw new JsonShapeError('precisely one of targetGroupARN, targetGroupName and forwardConfig can be specified');
  }
  if (arn !== undefined) return { type: 'forward', targets: [{ target: { arn }, weight: 1 }], stickiness: off() };
  if (name !== undefined) return { type: 'forward', targets: [{ target: { name }, weight: 1 }], stickiness: off() };
  const at = 'forwardConfig';
  const groups = field(config!, 'targetGroups');
  const tuples = groups === undefined ? [] : asArray(groups, `${at}.targetGroups`);
  if (tuples.length === 0) throw new JsonShapeError(`${at}.targetGroups cannot be empty`);
  if (tuples.length > MAX_FORWARD_TARGET_GROUPS) {
    throw new JsonShapeError(`${at}.targetGroups: at most ${MAX_FORWARD_TARGET_GROUPS} target groups per action`);
  }
  const targets = tuples.map((tuple, i) => targetOf(asObject(tuple, `${at}.targetGroups[${i}]`), i, tuples.length));
  const stickinessConfig = optionalObject(config!, 'targetGroupStickinessConfig', at);
  const stickiness = stickinessConfig ? stickinessOf(stickinessConfig) : off();
  return { type: 'forward', targets, stickiness };
}

function off(): { enabled: boolean } {
  return { enabled: false };
}

function targetOf(tuple: JsonObject, index: number, count: number): { target: ForwardTarget; weight: number } {
  const at = `forwardConfig.targetGroups[${index}]`;
  const arn = optionalString(tuple, 'targetGroupARN', at);
  const name = optionalString(tuple, 'targetGroupName', at);
  const serviceName = optionalString(tuple, 'serviceName', at);
  if ([arn, name, serviceName].filter((v) => v !== undefined).length !== 1) {
    throw new JsonShapeError(
      `${at}: precisely one of targetGroupARN, targetGroupName and serviceName can be specified`,
    );
  }
  const weight = optionalInteger(tuple, 'weight', at);
  if (weight === undefined && count > 1) {
    throw new JsonShapeError(`${at}.weight must be set when forwarding to more than one target group`);
  }
  if (weight !== undefined && (weight < 0 || weight > MAX_WEIGHT)) {
    throw new JsonShapeError(`${at}.weight must be from 0 to ${MAX_WEIGHT}`);
  }
  let target: ForwardTarget;
  if (serviceName !== undefined) {
    const port = optionalIntOrString(tuple, 'servicePort', at);
    if (port === undefined) throw new JsonShapeError(`${at}: missing servicePort`);
    target = { service: { name: serviceName, port: normalizePort(port) } };
  } else target = arn !== undefined ? { arn } : { name: name! };
  return { target, weight: weight ?? 1 };
}

function stickinessOf(config: JsonObject): { enabled: boolean; durationSeconds?: number } {
  const at = 'forwardConfig.targetGroupStickinessConfig';
  const enabled = optionalBoolean(config, 'enabled', at) ?? false;
  const durationSeconds = optionalInteger(config, 'durationSeconds', at);
  return durationSeconds === undefined ? { enabled } : { enabled, durationSeconds };
}

/**
 * A service port written as a string of digits is the number (`"80"` is port 80), as the reference reads it for
 * manifests of the older ALB ingress controller, where the port was always a string.
 */
export function normalizePort(port: number | string): number | string {
  return typeof port === 'string' && /^[+-]?\d+$/.test(port) ? Number(port) : port;
}
