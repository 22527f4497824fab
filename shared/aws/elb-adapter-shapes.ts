import type {
  HealthCheck as SdkHealthCheck,
  Listener as SdkListener,
  LoadBalancerAttributes as SdkLoadBalancerAttributes,
  LoadBalancerDescription as SdkLoadBalancerDescription,
  PolicyDescription as SdkPolicyDescription,
} from '@aws-sdk/client-elastic-load-balancing';
import { CLASSIC_ATTRIBUTE_DEFAULTS, CLASSIC_HEALTH_CHECK_DEFAULTS } from './elb-defaults.ts';
import type {
  ClassicAttributes,
  ClassicHealthCheck,
  ClassicListener,
  ClassicLoadBalancer,
  ClassicPolicy,
  ClassicProtocol,
} from './elb-port.ts';

/**
 * The Classic ELB SDK shapes and the port's, both ways: what `ElbAdapter` sends and reads.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_LoadBalancerDescription.html
 */

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'SSL', 'HTTP', 'HTTPS']);

/** AWS answers protocols in upper case but accepts any case; anything unknown reads as TCP. */
function protocol(value: string | undefined): ClassicProtocol {
  const upper = (value ?? '').toUpperCase();
  return (PROTOCOLS.has(upper) ? upper : 'TCP') as ClassicProtocol;
}

export function toSdkListener(listener: ClassicListener): SdkListener {
  return {
    Protocol: listener.protocol,
    LoadBalancerPort: listener.loadBalancerPort,
    InstanceProtocol: listener.instanceProtocol,
    InstancePort: listener.instancePort,
    ...(listener.sslCertificateId ? { SSLCertificateId: listener.sslCertificateId } : {}),
  };
}

export function toSdkHealthCheck(hc: ClassicHealthCheck): SdkHealthCheck {
  return {
    Target: hc.target,
    Interval: hc.intervalSeconds,
    Timeout: hc.timeoutSeconds,
    HealthyThreshold: hc.healthyThreshold,
    UnhealthyThreshold: hc.unhealthyThreshold,
  };
}

/** A field AWS always answers; the API's default stands in should one be missing. */
export function fromSdkHealthCheck(hc: SdkHealthCheck | undefined): ClassicHealthCheck {
  const d = CLASSIC_HEALTH_CHECK_DEFAULTS;
  return {
    target: hc?.Target ?? d.target,
    intervalSeconds: hc?.Interval ?? d.intervalSeconds,
    timeoutSeconds: hc?.Timeout ?? d.timeoutSeconds,
    healthyThreshold: hc?.HealthyThreshold ?? d.healthyThreshold,
    unhealthyThreshold: hc?.UnhealthyThreshold ?? d.unhealthyThreshold,
  };
}

/** A description without a name is nothing this controller can act on. */
export function fromSdkLoadBalancer(sdk: SdkLoadBalancerDescription): ClassicLoadBalancer | undefined {
  if (!sdk.LoadBalancerName) return undefined;
  const lb: ClassicLoadBalancer = {
    name: sdk.LoadBalancerName,
    dnsName: sdk.DNSName ?? '',
    scheme: sdk.Scheme === 'internal' ? 'internal' : 'internet-facing',
    subnets: sdk.Subnets ?? [],
    securityGroups: sdk.SecurityGroups ?? [],
    listeners: (sdk.ListenerDescriptions ?? []).flatMap((d) => {
      const l = d.Listener;
      if (!l || l.LoadBalancerPort === undefined || l.InstancePort === undefined) return [];
      const listener: ClassicListener & { policyNames: string[] } = {
        loadBalancerPort: l.LoadBalancerPort,
        protocol: protocol(l.Protocol),
        instancePort: l.InstancePort,
        // "If the front-end protocol is TCP or SSL, the back-end protocol defaults to TCP; HTTP or HTTPS: HTTP."
        instanceProtocol: protocol(l.InstanceProtocol ?? (/^HTTPS?$/i.test(l.Protocol ?? '') ? 'HTTP' : 'TCP')),
        policyNames: d.PolicyNames ?? [],
      };
      if (l.SSLCertificateId) listener.sslCertificateId = l.SSLCertificateId;
      return [listener];
    }),
    healthCheck: fromSdkHealthCheck(sdk.HealthCheck),
    instanceIds: (sdk.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : [])),
    backendPolicies: (sdk.BackendServerDescriptions ?? []).flatMap((b) =>
      b.InstancePort === undefined ? [] : [{ instancePort: b.InstancePort, policyNames: b.PolicyNames ?? [] }],
    ),
  };
  if (sdk.VPCId) lb.vpcId = sdk.VPCId;
  return lb;
}

/**
 * Attributes AWS leaves out read as the API's defaults.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_LoadBalancerAttributes.html
 */
export function fromSdkAttributes(sdk: SdkLoadBalancerAttributes | undefined): ClassicAttributes {
  const d = CLASSIC_ATTRIBUTE_DEFAULTS;
  const accessLog: ClassicAttributes['accessLog'] = { enabled: sdk?.AccessLog?.Enabled ?? d.accessLog.enabled };
  if (sdk?.AccessLog?.S3BucketName) accessLog.s3BucketName = sdk.AccessLog.S3BucketName;
  if (sdk?.AccessLog?.S3BucketPrefix) accessLog.s3BucketPrefix = sdk.AccessLog.S3BucketPrefix;
  if (sdk?.AccessLog?.EmitInterval !== undefined) accessLog.emitIntervalMinutes = sdk.AccessLog.EmitInterval;
  return {
    crossZone: sdk?.CrossZoneLoadBalancing?.Enabled ?? d.crossZone,
    idleTimeoutSeconds: sdk?.ConnectionSettings?.IdleTimeout ?? d.idleTimeoutSeconds,
    connectionDraining: {
      enabled: sdk?.ConnectionDraining?.Enabled ?? d.connectionDraining.enabled,
      timeoutSeconds: sdk?.ConnectionDraining?.Timeout ?? d.connectionDraining.timeoutSeconds,
    },
    accessLog,
  };
}

/** A disabled access log is sent as `Enabled: false` alone: AWS keeps no bucket for it. */
export function toSdkAttributes(attributes: ClassicAttributes): SdkLoadBalancerAttributes {
  const log = attributes.accessLog;
  return {
    CrossZoneLoadBalancing: { Enabled: attributes.crossZone },
    ConnectionSettings: { IdleTimeout: attributes.idleTimeoutSeconds },
    ConnectionDraining: {
      Enabled: attributes.connectionDraining.enabled,
      Timeout: attributes.connectionDraining.timeoutSeconds,
    },
    AccessLog: log.enabled
      ? {
          Enabled: true,
          ...(log.s3BucketName ? { S3BucketName: log.s3BucketName } : {}),
          ...(log.s3BucketPrefix ? { S3BucketPrefix: log.s3BucketPrefix } : {}),
          ...(log.emitIntervalMinutes !== undefined ? { EmitInterval: log.emitIntervalMinutes } : {}),
        }
      : { Enabled: false },
  };
}

export function fromSdkPolicy(sdk: SdkPolicyDescription): ClassicPolicy | undefined {
  if (!sdk.PolicyName || !sdk.PolicyTypeName) return undefined;
  const attributes: Record<string, string> = {};
  for (const a of sdk.PolicyAttributeDescriptions ?? []) {
    if (a.AttributeName) attributes[a.AttributeName] = a.AttributeValue ?? '';
  }
  return { policyName: sdk.PolicyName, policyTypeName: sdk.PolicyTypeName, attributes };
}
