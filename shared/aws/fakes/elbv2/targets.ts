import { isIPv4, isIPv6 } from 'node:net';
import type {
  DeregisterTargetsInput,
  DescribeTargetHealthInput,
  DescribeTargetHealthOutput,
  RegisterTargetsInput,
  TargetDescription,
  TargetHealthDescription,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import type { Target } from '../../elbv2-port.ts';
import type { Elbv2State, FakeTarget, FakeTargetGroup } from './state.ts';
import { acceptOnly, elbv2Failure, required } from './wire.ts';

/**
 * The target calls of the fake ELBv2 API. A target starts `initial` (or `unused` while no listener forwards to
 * its group), turns `healthy` after `initialDescribes` looks, and drains for the group's deregistration delay.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetHealth.html
 */

function targetKey(target: Target): string {
  return `${target.id}:${target.port}`;
}

/** The request's targets; a target without a port takes the group's. */
function targetsOf(group: FakeTargetGroup, targets: readonly TargetDescription[] | undefined): Target[] {
  const list = required(targets, 'targets');
  if (list.length === 0) throw elbv2Failure('ValidationError', 'At least one target must be specified');
  return list.map((t) => {
    acceptOnly('a target', t, ['Id', 'Port']);
    return { id: required(t.Id, 'targets.member.id'), port: t.Port ?? group.tg.port };
  });
}

/**
 * Instance targets must be running instances EC2 knows; IP targets addresses of the group's family ("All IP
 * addresses within a target group must have the same IP address type").
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RegisterTargets.html
 */
function checkTarget(elb: Elbv2State, group: FakeTargetGroup, target: Target): void {
  if (!Number.isInteger(target.port) || target.port < 1 || target.port > 65535) {
    throw elbv2Failure('ValidationError', `Port ${target.port} is not valid`);
  }
  if (group.tg.targetType === 'ip') {
    const ipv6 = group.tg.ipAddressType === 'ipv6';
    if (ipv6 ? !isIPv6(target.id) : !isIPv4(target.id)) {
      throw elbv2Failure(
        'InvalidTarget',
        `The IP address '${target.id}' is not a valid ${ipv6 ? 'IPv6' : 'IPv4'} address for this target group`,
      );
    }
    return;
  }
  if (!/^i-[0-9a-f]+$/.test(target.id)) throw elbv2Failure('ValidationError', `'${target.id}' is not an instance ID`);
  if (elb.ec2 && elb.ec2.instances.get(target.id)?.state !== 'running') {
    throw elbv2Failure(
      'InvalidTarget',
      `The following targets are not in a running state and cannot be registered: '${target.id}'`,
    );
  }
}

/** Every registered target, draining ones included until their delay has passed; not paged by ELBv2. */
export function describeTargetHealth(elb: Elbv2State, input: DescribeTargetHealthInput): DescribeTargetHealthOutput {
  acceptOnly('DescribeTargetHealth', input, ['TargetGroupArn']);
  const group = elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn'));
  const inUse = elb.loadBalancersOf(group).length > 0;
  const now = elb.clock.now();
  const out: TargetHealthDescription[] = [];
  for (const [key, target] of group.targets) {
    if (target.state === 'draining' && target.drainUntil !== undefined && now >= target.drainUntil) {
      group.targets.delete(key);
      continue;
    }
    if (target.state === 'initial' || target.state === 'unused') progress(target, inUse);
    out.push({
      Target: { Id: target.target.id, Port: target.target.port },
      HealthCheckPort:
        group.tg.healthCheck.port === 'traffic-port' ? String(target.target.port) : group.tg.healthCheck.port,
      TargetHealth: {
        State: target.state,
        ...(target.reason ? { Reason: target.reason as never } : {}),
        ...(target.reason && DESCRIPTIONS[target.reason] ? { Description: DESCRIPTIONS[target.reason] } : {}),
      },
    });
  }
  return { TargetHealthDescriptions: out };
}

/**
 * ELB's description of each reason code, as its API reference words them.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetHealth.html
 */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  'Elb.RegistrationInProgress': 'Target registration is in progress',
  'Elb.InitialHealthChecking': 'Initial health checks in progress',
  'Target.NotInUse': 'Target group is not configured to receive traffic from the load balancer',
  'Target.DeregistrationInProgress': 'Target deregistration is in progress',
  'Target.FailedHealthChecks': 'Health checks failed',
  'Target.Timeout': 'Request timed out',
  'Target.ResponseCodeMismatch': 'Health checks failed with these codes',
};

function progress(target: FakeTarget, inUse: boolean): void {
  if (!inUse) {
    target.state = 'unused';
    target.reason = 'Target.NotInUse';
  } else if (target.initialDescribesLeft > 0) {
    target.state = 'initial';
    target.reason = 'Elb.RegistrationInProgress';
    target.initialDescribesLeft--;
  } else {
    target.state = 'healthy';
    target.reason = undefined;
  }
}

/** A target registered already stays as it is; a draining one starts again. */
export function registerTargets(elb: Elbv2State, input: RegisterTargetsInput): object {
  acceptOnly('RegisterTargets', input, ['TargetGroupArn', 'Targets']);
  const group = elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn'));
  const targets = targetsOf(group, input.Targets);
  for (const target of targets) checkTarget(elb, group, target);
  for (const target of targets) {
    const existing = group.targets.get(targetKey(target));
    if (existing && existing.state !== 'draining') continue;
    group.targets.set(targetKey(target), { target, state: 'initial', initialDescribesLeft: elb.initialDescribes });
  }
  return {};
}

/**
 * Registered targets drain for `deregistration_delay.timeout_seconds`; a target that is not registered is no error.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeregisterTargets.html
 */
export function deregisterTargets(elb: Elbv2State, input: DeregisterTargetsInput): object {
  acceptOnly('DeregisterTargets', input, ['TargetGroupArn', 'Targets']);
  const group = elb.groupOrThrow(required(input.TargetGroupArn, 'targetGroupArn'));
  const delaySeconds = Number(group.attributes['deregistration_delay.timeout_seconds'] ?? '300');
  for (const target of targetsOf(group, input.Targets)) {
    const registered = group.targets.get(targetKey(target));
    if (!registered || registered.state === 'draining') continue;
    registered.state = 'draining';
    registered.reason = 'Target.DeregistrationInProgress';
    registered.drainUntil = elb.clock.now() + delaySeconds * 1000;
  }
  return {};
}
