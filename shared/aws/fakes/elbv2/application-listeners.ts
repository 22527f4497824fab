import type {
  Certificate,
  CreateListenerInput,
  CreateListenerOutput,
  ModifyListenerInput,
  ModifyListenerOutput,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { HTTPS_LISTENER_DEFAULT_SSL_POLICY } from '../../elbv2-defaults.ts';
import type { Listener, RuleAction } from '../../elbv2-port.ts';
import { actionsOf } from './rule-actions.ts';
import { sdkListener } from './shapes.ts';
import type { Elbv2State, FakeLoadBalancer } from './state.ts';
import { acceptOnly, checkTagCount, elbv2Failure, FAKE_ACCOUNT_ID, required, tagsOfRequest } from './wire.ts';

/**
 * CreateListener and ModifyListener on an Application Load Balancer: HTTP and HTTPS listeners (UnsupportedProtocol
 * otherwise); HTTPS needs its default certificate and gets ELBSecurityPolicy-2016-08 without a policy; a security
 * policy or certificate on HTTP is refused; the default actions are checked as a rule's (rule-actions.ts). Each
 * listener has a default rule with its own ARN, which DescribeRules lists last.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateListener.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/create-https-listener.html
 */

interface Settings {
  port: number;
  protocol: 'HTTP' | 'HTTPS';
  certificateArn?: string;
  sslPolicy?: string;
  defaultActions: RuleAction[];
}

function protocolOf(value: string): 'HTTP' | 'HTTPS' {
  if (value !== 'HTTP' && value !== 'HTTPS') {
    throw elbv2Failure('UnsupportedProtocol', `The protocol '${value}' is not supported by Application Load Balancers`);
  }
  return value;
}

function certificateOf(certificates: readonly Certificate[] | undefined): string | undefined {
  if (!certificates) return undefined;
  if (certificates.length !== 1)
    throw elbv2Failure('ValidationError', 'A listener takes exactly one default certificate');
  acceptOnly('a certificate', certificates[0]!, ['CertificateArn']);
  return required(certificates[0]?.CertificateArn, 'certificates.member.certificateArn');
}

function checkSettings(settings: Settings): void {
  const { port, protocol } = settings;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw elbv2Failure('ValidationError', `Port ${port} is not valid`);
  if (protocol === 'HTTPS' && !settings.certificateArn) {
    throw elbv2Failure('ValidationError', 'A certificate must be specified for HTTPS listeners');
  }
  if (protocol === 'HTTP' && (settings.certificateArn !== undefined || settings.sslPolicy !== undefined)) {
    throw elbv2Failure('ValidationError', 'Certificates and SSL policies can only be set on HTTPS listeners');
  }
}

function listenerOf(arn: string, lb: FakeLoadBalancer, settings: Settings): Listener {
  const listener: Listener = {
    arn,
    loadBalancerArn: lb.lb.arn,
    port: settings.port,
    protocol: settings.protocol,
    certificateArns: settings.certificateArn ? [settings.certificateArn] : [],
    defaultActions: settings.defaultActions,
  };
  if (settings.protocol === 'HTTPS') listener.sslPolicy = settings.sslPolicy ?? HTTPS_LISTENER_DEFAULT_SSL_POLICY;
  const only = settings.defaultActions[0];
  if (settings.defaultActions.length === 1 && only?.type === 'forward' && only.targetGroups.length === 1) {
    listener.targetGroupArn = only.targetGroups[0]!.arn;
  }
  return listener;
}

export function createApplicationListener(
  elb: Elbv2State,
  lb: FakeLoadBalancer,
  input: CreateListenerInput,
): CreateListenerOutput {
  if (input.AlpnPolicy !== undefined) {
    throw elbv2Failure('ALPNPolicyNotFound', 'ALPN policies are for TLS listeners of Network Load Balancers');
  }
  const settings: Settings = {
    port: required(input.Port, 'port'),
    protocol: protocolOf(required(input.Protocol, 'protocol')),
    certificateArn: certificateOf(input.Certificates),
    sslPolicy: input.SslPolicy,
    defaultActions: actionsOf(elb, lb, input.DefaultActions),
  };
  checkSettings(settings);
  const tags = tagsOfRequest(input.Tags);
  checkTagCount(tags);
  const existing = elb.listenersOf(lb.lb.arn).find((l) => l.port === settings.port);
  if (existing) {
    const candidate = listenerOf(existing.arn, lb, settings);
    if (JSON.stringify(candidate) === JSON.stringify(existing)) return { Listeners: [sdkListener(existing)] };
    throw elbv2Failure('DuplicateListener', 'A listener already exists on this port for this load balancer');
  }
  const lbId = lb.lb.arn.slice(lb.lb.arn.lastIndexOf('/') + 1);
  const listenerId = elb.nextId();
  const base = `arn:aws:elasticloadbalancing:${elb.region}:${FAKE_ACCOUNT_ID}`;
  const arn = `${base}:listener/app/${lb.lb.name}/${lbId}/${listenerId}`;
  const listener = listenerOf(arn, lb, settings);
  elb.listeners.set(arn, listener);
  elb.listenerTags.set(arn, tags);
  elb.listenerCertificates.set(arn, []);
  elb.listenerAttributes.set(arn, {});
  elb.defaultRules.set(arn, {
    arn: `${base}:listener-rule/app/${lb.lb.name}/${lbId}/${listenerId}/${elb.nextId()}`,
    tags: {},
  });
  return { Listeners: [sdkListener(listener)] };
}

/** "Any properties that you do not specify retain their current values"; leaving HTTPS drops the certificate and policy. */
export function modifyApplicationListener(
  elb: Elbv2State,
  listener: Listener,
  input: ModifyListenerInput,
): ModifyListenerOutput {
  if (input.AlpnPolicy !== undefined) {
    throw elbv2Failure('ALPNPolicyNotFound', 'ALPN policies are for TLS listeners of Network Load Balancers');
  }
  const lb = elb.lbOrThrow(listener.loadBalancerArn);
  const protocol = input.Protocol === undefined ? (listener.protocol as 'HTTP' | 'HTTPS') : protocolOf(input.Protocol);
  const stillHttps = protocol === 'HTTPS' && listener.protocol === 'HTTPS';
  const settings: Settings = {
    port: input.Port ?? listener.port,
    protocol,
    certificateArn: certificateOf(input.Certificates) ?? (stillHttps ? listener.certificateArns[0] : undefined),
    sslPolicy: input.SslPolicy ?? (stillHttps ? listener.sslPolicy : undefined),
    defaultActions: input.DefaultActions ? actionsOf(elb, lb, input.DefaultActions) : (listener.defaultActions ?? []),
  };
  checkSettings(settings);
  const clash = elb.listenersOf(lb.lb.arn).find((l) => l.port === settings.port && l.arn !== listener.arn);
  if (clash) throw elbv2Failure('DuplicateListener', 'A listener already exists on this port for this load balancer');
  const modified = listenerOf(listener.arn, lb, settings);
  elb.listeners.set(listener.arn, modified);
  if (protocol !== 'HTTPS') elb.listenerCertificates.set(listener.arn, []);
  return { Listeners: [sdkListener(modified)] };
}
