import type {
  Action,
  AddListenerCertificatesInput,
  AddListenerCertificatesOutput,
  Certificate,
  CreateListenerInput,
  CreateListenerOutput,
  DeleteListenerInput,
  DescribeListenerAttributesInput,
  DescribeListenerAttributesOutput,
  DescribeListenerCertificatesInput,
  DescribeListenerCertificatesOutput,
  DescribeListenersInput,
  DescribeListenersOutput,
  ModifyListenerAttributesInput,
  ModifyListenerAttributesOutput,
  ModifyListenerInput,
  ModifyListenerOutput,
  RemoveListenerCertificatesInput,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { nlbListenerAttributeDefaults } from '../../elbv2-defaults.ts';
import type { AlpnPolicy, Listener, ListenerProtocol, ListenerSpec } from '../../elbv2-port.ts';
import { createApplicationListener, modifyApplicationListener } from './application-listeners.ts';
import { checkListener, checkListenerAttributes } from './listener-rules.ts';
import { listenerOf, sdkListener } from './shapes.ts';
import type { Elbv2State } from './state.ts';
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
 * The listener calls of the fake ELBv2 API: TCP, UDP, TCP_UDP and TLS listeners with one forward action on Network
 * Load Balancers; HTTP and HTTPS listeners of Application Load Balancers are application-listeners.ts.
 */

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'TCP_UDP', 'TLS']);

/** The one target group of a single forward action (TargetGroupArn, or a ForwardConfig of one group). */
function forwardTarget(actions: readonly Action[] | undefined): string {
  const list = required(actions, 'defaultActions');
  const action = list[0];
  if (list.length !== 1 || action?.Type !== 'forward') {
    throw new Error('FakeElbv2 models listeners with a single forward action only');
  }
  acceptOnly('a forward action', action, ['Type', 'TargetGroupArn', 'ForwardConfig']);
  const groups = action.ForwardConfig?.TargetGroups ?? [];
  const arn = action.TargetGroupArn ?? (groups.length === 1 ? groups[0]?.TargetGroupArn : undefined);
  if (!arn) throw elbv2Failure('ValidationError', 'A forward action needs exactly one target group');
  return arn;
}

function protocolOf(value: string | undefined): ListenerProtocol {
  const protocol = required(value, 'protocol');
  if (!PROTOCOLS.has(protocol)) {
    throw elbv2Failure('UnsupportedProtocol', `The protocol '${protocol}' is not supported by Network Load Balancers`);
  }
  return protocol as ListenerProtocol;
}

/** A TLS listener's default certificate: the one certificate of the request. */
function defaultCertificate(certificates: readonly Certificate[] | undefined): string | undefined {
  if (!certificates) return undefined;
  if (certificates.length !== 1)
    throw elbv2Failure('ValidationError', 'A listener takes exactly one default certificate');
  acceptOnly('a certificate', certificates[0]!, ['CertificateArn']);
  return certificates[0]?.CertificateArn;
}

function alpnOf(policy: readonly string[] | undefined): AlpnPolicy | undefined {
  if (policy === undefined) return undefined;
  if (policy.length !== 1) throw elbv2Failure('ValidationError', 'AlpnPolicy takes exactly one policy name');
  return policy[0] as AlpnPolicy;
}

/** What a request says of the certificate and policies, refused on a listener other than TLS. */
function tlsSettings(protocol: ListenerProtocol, input: CreateListenerInput | ModifyListenerInput) {
  const settings = {
    certificateArn: defaultCertificate(input.Certificates),
    sslPolicy: input.SslPolicy,
    alpnPolicy: alpnOf(input.AlpnPolicy),
  };
  if (protocol !== 'TLS' && (settings.certificateArn !== undefined || settings.sslPolicy !== undefined)) {
    throw new Error(`FakeElbv2 does not model certificates or security policies on ${protocol} listeners`);
  }
  return settings;
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListeners.html */
export function describeListeners(elb: Elbv2State, input: DescribeListenersInput): DescribeListenersOutput {
  acceptOnly('DescribeListeners', input, ['LoadBalancerArn', 'ListenerArns', 'Marker', 'PageSize']);
  let found: Listener[];
  if (input.LoadBalancerArn !== undefined) {
    found = elb.listenersOf(elb.lbOrThrow(input.LoadBalancerArn).lb.arn);
  } else {
    const arns = required(input.ListenerArns, 'listenerArns');
    checkListSize(arns, 'listenerArns', 20);
    found = arns.map((arn) => elb.listenerOrThrow(arn));
  }
  const { items, NextMarker } = page('DescribeListeners', input, found);
  return { Listeners: items.map(sdkListener), ...(NextMarker ? { NextMarker } : {}) };
}

/**
 * A listener forwarding to one target group, tagged on create. Idempotent like the other creates: a listener on
 * that port with the same settings is answered; other settings are DuplicateListener.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateListener.html
 */
export function createListener(elb: Elbv2State, input: CreateListenerInput): CreateListenerOutput {
  acceptOnly('CreateListener', input, [
    'LoadBalancerArn',
    'Protocol',
    'Port',
    'SslPolicy',
    'Certificates',
    'DefaultActions',
    'AlpnPolicy',
    'Tags',
  ]);
  const found = elb.lbOrThrow(required(input.LoadBalancerArn, 'loadBalancerArn'));
  if (found.lb.type === 'application') return createApplicationListener(elb, found, input);
  const protocol = protocolOf(input.Protocol);
  const spec: ListenerSpec = {
    port: required(input.Port, 'port'),
    protocol,
    targetGroupArn: forwardTarget(input.DefaultActions),
    ...tlsSettings(protocol, input),
  };
  const tags = tagsOfRequest(input.Tags);
  const existing = elb.listenersOf(found.lb.arn).find((l) => l.port === spec.port);
  if (existing) {
    if (sameListener(existing, spec)) return { Listeners: [sdkListener(existing)] };
    throw elbv2Failure('DuplicateListener', 'A listener already exists on this port for this load balancer');
  }
  checkListener(elb, found, spec);
  checkTagCount(tags);
  const arn = `arn:aws:elasticloadbalancing:${elb.region}:${FAKE_ACCOUNT_ID}:listener/net/${found.lb.name}/${idOf(found.lb.arn)}/${elb.nextId()}`;
  const listener = listenerOf(arn, found.lb.arn, spec);
  elb.listeners.set(arn, listener);
  elb.listenerTags.set(arn, tags);
  elb.listenerCertificates.set(arn, []);
  elb.listenerAttributes.set(arn, nlbListenerAttributeDefaults(protocol));
  return { Listeners: [sdkListener(listener)] };
}

/**
 * "Any properties that you do not specify retain their current values": a TLS listener staying TLS keeps its
 * certificate and policies unless new ones are given; one leaving TLS loses them. A new default certificate
 * replaces the old one, which does not join the certificate list.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyListener.html
 */
export function modifyListener(elb: Elbv2State, input: ModifyListenerInput): ModifyListenerOutput {
  acceptOnly('ModifyListener', input, [
    'ListenerArn',
    'Port',
    'Protocol',
    'SslPolicy',
    'Certificates',
    'DefaultActions',
    'AlpnPolicy',
  ]);
  const listener = elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn'));
  if (elb.lbOrThrow(listener.loadBalancerArn).lb.type === 'application') {
    return modifyApplicationListener(elb, listener, input);
  }
  const protocol = input.Protocol === undefined ? listener.protocol : protocolOf(input.Protocol);
  const given = tlsSettings(protocol, input);
  const stillTls = protocol === 'TLS' && listener.protocol === 'TLS';
  const spec: ListenerSpec = {
    port: input.Port ?? listener.port,
    protocol,
    targetGroupArn: input.DefaultActions ? forwardTarget(input.DefaultActions) : (listener.targetGroupArn ?? ''),
    certificateArn: given.certificateArn ?? (stillTls ? listener.certificateArns[0] : undefined),
    sslPolicy: given.sslPolicy ?? (stillTls ? listener.sslPolicy : undefined),
    alpnPolicy: given.alpnPolicy ?? (stillTls ? listener.alpnPolicy : undefined),
  };
  const clash = elb.listenersOf(listener.loadBalancerArn).find((l) => l.port === spec.port && l.arn !== listener.arn);
  if (clash) throw elbv2Failure('DuplicateListener', 'A listener already exists on this port for this load balancer');
  checkListener(elb, elb.lbOrThrow(listener.loadBalancerArn), spec);
  const modified = listenerOf(listener.arn, listener.loadBalancerArn, spec);
  elb.listeners.set(listener.arn, modified);
  if (protocol !== 'TLS') elb.listenerCertificates.set(listener.arn, []);
  if (protocol !== listener.protocol) elb.listenerAttributes.set(listener.arn, nlbListenerAttributeDefaults(protocol));
  return { Listeners: [sdkListener(modified)] };
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteListener.html */
export function deleteListener(elb: Elbv2State, input: DeleteListenerInput): object {
  acceptOnly('DeleteListener', input, ['ListenerArn']);
  elb.forgetListener(elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn')).arn);
  return {};
}

/**
 * The default certificate (IsDefault) and then the certificate list, in pages. A certificate that is both default
 * and listed appears twice, as AWS documents; a listener other than TLS has none.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListenerCertificates.html
 */
export function describeListenerCertificates(
  elb: Elbv2State,
  input: DescribeListenerCertificatesInput,
): DescribeListenerCertificatesOutput {
  acceptOnly('DescribeListenerCertificates', input, ['ListenerArn', 'Marker', 'PageSize']);
  const listener = elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn'));
  const all: Certificate[] =
    listener.protocol !== 'TLS' && listener.protocol !== 'HTTPS'
      ? []
      : [
          ...listener.certificateArns.slice(0, 1).map((CertificateArn) => ({ CertificateArn, IsDefault: true })),
          ...(elb.listenerCertificates.get(listener.arn) ?? []).map((CertificateArn) => ({
            CertificateArn,
            IsDefault: false,
          })),
        ];
  const { items, NextMarker } = page('DescribeListenerCertificates', input, all);
  return { Certificates: items, ...(NextMarker ? { NextMarker } : {}) };
}

/** The one certificate of an Add/RemoveListenerCertificates call: "You can specify one certificate per call." */
function oneCertificate(certificates: readonly Certificate[] | undefined): string {
  const list = required(certificates, 'certificates');
  if (list.length !== 1) throw elbv2Failure('ValidationError', 'You can specify one certificate per call');
  acceptOnly('a certificate', list[0]!, ['CertificateArn']);
  return required(list[0]?.CertificateArn, 'certificates.member.certificateArn');
}

/**
 * A certificate already in the list is not added again; the default certificate is not in the list until added.
 * The certificates of all listeners of a load balancer count against `certificateQuota`.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddListenerCertificates.html
 */
export function addListenerCertificates(
  elb: Elbv2State,
  input: AddListenerCertificatesInput,
): AddListenerCertificatesOutput {
  acceptOnly('AddListenerCertificates', input, ['ListenerArn', 'Certificates']);
  const listener = elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn'));
  const certificateArn = oneCertificate(input.Certificates);
  if (listener.protocol !== 'TLS' && listener.protocol !== 'HTTPS') {
    throw elbv2Failure('InvalidConfigurationRequest', 'Certificates can only be added to TLS and HTTPS listeners');
  }
  const list = elb.listenerCertificates.get(listener.arn) ?? [];
  if (!list.includes(certificateArn)) {
    const inUse = elb
      .listenersOf(listener.loadBalancerArn)
      .reduce((n, l) => n + (elb.listenerCertificates.get(l.arn)?.length ?? 0), 0);
    if (inUse >= elb.certificateQuota) {
      throw elbv2Failure('TooManyCertificates', 'You have reached the limit on the number of certificates');
    }
    elb.listenerCertificates.set(listener.arn, [...list, certificateArn]);
  }
  const listed = elb.listenerCertificates.get(listener.arn) ?? [];
  return { Certificates: listed.map((CertificateArn) => ({ CertificateArn, IsDefault: false })) };
}

/**
 * The default certificate cannot be removed (ModifyListener replaces it); a certificate not in the list is no error.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RemoveListenerCertificates.html
 */
export function removeListenerCertificates(elb: Elbv2State, input: RemoveListenerCertificatesInput): object {
  acceptOnly('RemoveListenerCertificates', input, ['ListenerArn', 'Certificates']);
  const listener = elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn'));
  const certificateArn = oneCertificate(input.Certificates);
  if (listener.certificateArns[0] === certificateArn) {
    throw elbv2Failure('OperationNotPermitted', "The default certificate of a listener can't be removed");
  }
  const list = elb.listenerCertificates.get(listener.arn) ?? [];
  elb.listenerCertificates.set(
    listener.arn,
    list.filter((c) => c !== certificateArn),
  );
  return {};
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ListenerAttribute.html */
export function describeListenerAttributes(
  elb: Elbv2State,
  input: DescribeListenerAttributesInput,
): DescribeListenerAttributesOutput {
  acceptOnly('DescribeListenerAttributes', input, ['ListenerArn']);
  const listener = elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn'));
  return { Attributes: sdkAttributes(attributesOfListener(elb, listener)) };
}

/** Only the TCP idle timeout, on TCP listeners, within 60-6000 seconds. Answers every attribute. */
export function modifyListenerAttributes(
  elb: Elbv2State,
  input: ModifyListenerAttributesInput,
): ModifyListenerAttributesOutput {
  acceptOnly('ModifyListenerAttributes', input, ['ListenerArn', 'Attributes']);
  const listener = elb.listenerOrThrow(required(input.ListenerArn, 'listenerArn'));
  const attributes = attributesOfRequest(input.Attributes);
  checkListenerAttributes(listener, attributes);
  const next = { ...attributesOfListener(elb, listener), ...attributes };
  elb.listenerAttributes.set(listener.arn, next);
  return { Attributes: sdkAttributes(next) };
}

function attributesOfListener(elb: Elbv2State, listener: Listener): Record<string, string> {
  return elb.listenerAttributes.get(listener.arn) ?? nlbListenerAttributeDefaults(listener.protocol);
}

function sameListener(listener: Listener, spec: ListenerSpec): boolean {
  return (
    listener.protocol === spec.protocol &&
    listener.targetGroupArn === spec.targetGroupArn &&
    (listener.certificateArns[0] ?? '') === (spec.certificateArn ?? '') &&
    (spec.sslPolicy === undefined || listener.sslPolicy === spec.sslPolicy) &&
    (spec.alpnPolicy === undefined || listener.alpnPolicy === spec.alpnPolicy)
  );
}

function idOf(arn: string): string {
  return arn.slice(arn.lastIndexOf('/') + 1);
}
