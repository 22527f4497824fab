import type {
  Action,
  Listener as SdkListener,
  LoadBalancer as SdkLoadBalancer,
  TargetGroup as SdkTargetGroup,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { TLS_LISTENER_DEFAULT_SSL_POLICY } from '../../elbv2-defaults.ts';
import type { Listener, ListenerSpec } from '../../elbv2-port.ts';
import { sdkAction } from './rule-shapes.ts';
import type { FakeLoadBalancer, FakeTargetGroup } from './state.ts';

/** The fake's resources in the SDK's output shapes, as the ELBv2 API answers them. */

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancer.html */
export function sdkLoadBalancer(found: FakeLoadBalancer): SdkLoadBalancer {
  const { lb } = found;
  return {
    LoadBalancerArn: lb.arn,
    DNSName: lb.dnsName,
    CreatedTime: new Date(found.createdAt),
    LoadBalancerName: lb.name,
    Scheme: lb.scheme,
    VpcId: lb.vpcId,
    State: { Code: lb.state, ...(lb.stateReason ? { Reason: lb.stateReason } : {}) },
    Type: lb.type as SdkLoadBalancer['Type'],
    AvailabilityZones: lb.subnets.map((s) => ({
      ...(s.zoneName ? { ZoneName: s.zoneName } : {}),
      SubnetId: s.subnetId,
      LoadBalancerAddresses:
        s.allocationId || s.privateIPv4Address
          ? [
              {
                ...(s.allocationId ? { AllocationId: s.allocationId } : {}),
                ...(s.privateIPv4Address ? { PrivateIPv4Address: s.privateIPv4Address } : {}),
              },
            ]
          : [],
    })),
    SecurityGroups: [...lb.securityGroups],
    IpAddressType: lb.ipAddressType,
  };
}

/**
 * A listener as DescribeListeners states it: its single forward action both as TargetGroupArn and as a
 * ForwardConfig of one group, as AWS answers a forward action; of the certificates only the default one.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Listener.html
 */
export function sdkListener(listener: Listener): SdkListener {
  const actions: Action[] = listener.defaultActions
    ? listener.defaultActions.map(sdkAction)
    : listener.targetGroupArn
      ? [
          {
            Type: 'forward',
            TargetGroupArn: listener.targetGroupArn,
            ForwardConfig: {
              TargetGroups: [{ TargetGroupArn: listener.targetGroupArn, Weight: 1 }],
              TargetGroupStickinessConfig: { Enabled: false },
            },
          },
        ]
      : [];
  return {
    ListenerArn: listener.arn,
    LoadBalancerArn: listener.loadBalancerArn,
    Port: listener.port,
    Protocol: listener.protocol,
    ...(listener.certificateArns.length > 0
      ? { Certificates: listener.certificateArns.slice(0, 1).map((CertificateArn) => ({ CertificateArn })) }
      : {}),
    ...(listener.sslPolicy ? { SslPolicy: listener.sslPolicy } : {}),
    ...(listener.alpnPolicy ? { AlpnPolicy: [listener.alpnPolicy] } : {}),
    DefaultActions: actions,
  };
}

/** The listener a spec makes: a TLS listener created without a security policy gets the API's default one. */
export function listenerOf(arn: string, loadBalancerArn: string, spec: ListenerSpec): Listener {
  const listener: Listener = {
    arn,
    loadBalancerArn,
    port: spec.port,
    protocol: spec.protocol,
    certificateArns: spec.certificateArn ? [spec.certificateArn] : [],
    targetGroupArn: spec.targetGroupArn,
  };
  if (spec.protocol === 'TLS') listener.sslPolicy = spec.sslPolicy ?? TLS_LISTENER_DEFAULT_SSL_POLICY;
  if (spec.protocol === 'TLS' && spec.alpnPolicy !== undefined) listener.alpnPolicy = spec.alpnPolicy;
  return listener;
}

/**
 * A target group with its health check as AWS states it (a path and success codes for HTTP and HTTPS checks).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroup.html
 */
export function sdkTargetGroup(group: FakeTargetGroup, loadBalancerArns: readonly string[]): SdkTargetGroup {
  const { tg } = group;
  const hc = tg.healthCheck;
  const http = hc.protocol !== 'TCP';
  return {
    TargetGroupArn: tg.arn,
    TargetGroupName: tg.name,
    Protocol: tg.protocol,
    Port: tg.port,
    VpcId: tg.vpcId,
    HealthCheckProtocol: hc.protocol,
    HealthCheckPort: hc.port,
    HealthCheckEnabled: true,
    HealthCheckIntervalSeconds: hc.intervalSeconds,
    HealthCheckTimeoutSeconds: hc.timeoutSeconds,
    HealthyThresholdCount: hc.healthyThreshold,
    UnhealthyThresholdCount: hc.unhealthyThreshold,
    ...(http ? { HealthCheckPath: hc.path ?? '/', Matcher: matcherOf(group) } : {}),
    LoadBalancerArns: [...loadBalancerArns],
    TargetType: tg.targetType,
    IpAddressType: tg.ipAddressType,
    ...(tg.protocolVersion ? { ProtocolVersion: tg.protocolVersion } : {}),
  };
}

/**
 * The healthy codes: as set on an HTTP/HTTPS group (Application Load Balancers; default 200, gRPC 12); a Network
 * Load Balancer group's HTTP check accepts 200-399.
 */
function matcherOf(group: FakeTargetGroup): { HttpCode?: string; GrpcCode?: string } {
  const matcher = group.tg.healthCheck.matcher;
  if (!matcher) return { HttpCode: '200-399' };
  return {
    ...(matcher.httpCode ? { HttpCode: matcher.httpCode } : {}),
    ...(matcher.grpcCode ? { GrpcCode: matcher.grpcCode } : {}),
  };
}
