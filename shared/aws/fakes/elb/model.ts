import type { LoadBalancerDescription, Listener as SdkListener } from '@aws-sdk/client-elastic-load-balancing';
import type { Instance, SecurityGroup, Subnet } from '../../ec2-port.ts';
import { CLASSIC_HEALTH_CHECK_RANGES } from '../../elb-defaults.ts';
import { classicExceptionName } from '../../elb-errors.ts';
import type {
  ClassicAttributes,
  ClassicHealthCheck,
  ClassicListener,
  ClassicPolicy,
  ClassicProtocol,
} from '../../elb-port.ts';
import { AwsServiceError } from '../../errors.ts';

/** The state of one Classic load balancer in `FakeElb`, and the rules the API checks, as pure functions. */

/**
 * What FakeElb reads from a linked EC2 fake (FakeEc2 has all of it): subnets, instances and security groups to
 * check requests against, route tables to find an internet gateway, and the hooks that keep a load balancer's
 * security groups in use while its network interfaces exist.
 */
export interface ElbEc2Link {
  readonly subnets: ReadonlyMap<string, Subnet>;
  readonly instances: ReadonlyMap<string, Instance>;
  readonly securityGroups: ReadonlyMap<string, SecurityGroup>;
  readonly routeTables: ReadonlyMap<string, { vpcId?: string; routes: { target: { gatewayId?: string } }[] }>;
  visibleSecurityGroup(groupId: string): SecurityGroup | undefined;
  holdSecurityGroups(holder: string, groupIds: readonly string[]): void;
  releaseSecurityGroups(holder: string, afterMs?: number): void;
}

/** Operations that change the account: a reconcile that finds everything in place makes none of them. */
export const CLASSIC_WRITE_OPERATIONS: readonly string[] = [
  'CreateLoadBalancer',
  'DeleteLoadBalancer',
  'CreateLoadBalancerListeners',
  'DeleteLoadBalancerListeners',
  'AttachLoadBalancerToSubnets',
  'DetachLoadBalancerFromSubnets',
  'ApplySecurityGroupsToLoadBalancer',
  'ConfigureHealthCheck',
  'ModifyLoadBalancerAttributes',
  'RegisterInstancesWithLoadBalancer',
  'DeregisterInstancesFromLoadBalancer',
  'AddTags',
  'RemoveTags',
  'CreateLoadBalancerPolicy',
  'SetLoadBalancerPoliciesForBackendServer',
  'SetLoadBalancerPoliciesOfListener',
  'DeleteLoadBalancerPolicy',
];

export interface RegisteredInstance {
  /** DescribeInstanceHealth answers still showing OutOfService (registration in progress). */
  outOfServiceDescribesLeft: number;
  /** Set by a test (`setInstanceHealth`): the state health checks would have reached. */
  forced?: 'InService' | 'OutOfService';
}

export interface FakeClassicLoadBalancer {
  name: string;
  dnsName: string;
  scheme: 'internet-facing' | 'internal';
  vpcId?: string;
  subnets: string[];
  securityGroups: string[];
  /** By load balancer port, with the policies of each listener. */
  listeners: Map<number, { listener: ClassicListener; policyNames: string[] }>;
  /** Policy names by instance port. */
  backendPolicies: Map<number, string[]>;
  policies: Map<string, ClassicPolicy>;
  healthCheck: ClassicHealthCheck;
  instances: Map<string, RegisteredInstance>;
  attributes: ClassicAttributes;
  tags: Record<string, string>;
  createdTime: Date;
  /** The key its security groups are held under in the linked EC2 fake: one per creation, never reused. */
  holder: string;
}

/** Error codes the SDK models (the others, Throttling and ValidationError, keep their code as name). */
const MODELLED = new Set([
  'LoadBalancerNotFound',
  'CertificateNotFound',
  'DependencyThrottle',
  'DuplicateLoadBalancerName',
  'DuplicateListener',
  'DuplicatePolicyName',
  'DuplicateTagKeys',
  'InvalidConfigurationRequest',
  'InvalidInstance',
  'InvalidScheme',
  'InvalidSecurityGroup',
  'InvalidSubnet',
  'ListenerNotFound',
  'LoadBalancerAttributeNotFound',
  'OperationNotPermitted',
  'PolicyNotFound',
  'PolicyTypeNotFound',
  'SubnetNotFound',
  'TooManyLoadBalancers',
  'TooManyPolicies',
  'TooManyTags',
  'UnsupportedProtocol',
]);

/**
 * An error as the SDK throws it: the class name it models (`AccessPointNotFoundException` for LoadBalancerNotFound),
 * the wire code in `Code`, the HTTP status the API documents (409 for InvalidConfigurationRequest, else 400).
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/CommonErrors.html
 */
export function classicFailure(code: string, message: string): AwsServiceError {
  const name = MODELLED.has(code) ? classicExceptionName(code) : code;
  const status = code === 'InvalidConfigurationRequest' ? 409 : 400;
  return Object.assign(new AwsServiceError(name, message, status), { Code: code });
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'SSL', 'HTTP', 'HTTPS']);
const HTTP_LAYER: ReadonlySet<string> = new Set(['HTTP', 'HTTPS']);

/**
 * A listener as AWS keeps it (protocols upper case; the back-end protocol defaults to HTTP behind HTTP/HTTPS and
 * to TCP behind TCP/SSL), checked: ports 1-65535, a certificate for SSL/HTTPS front ends, front and back end on
 * the same layer ("If the front-end protocol is HTTP or HTTPS, InstanceProtocol must be at the same protocol layer").
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_Listener.html
 */
export function checkListener(sdk: SdkListener): ClassicListener {
  const protocol = (sdk.Protocol ?? '').toUpperCase();
  if (!PROTOCOLS.has(protocol))
    throw classicFailure('UnsupportedProtocol', `Protocol ${sdk.Protocol} is not supported`);
  const instanceProtocol = (sdk.InstanceProtocol ?? (HTTP_LAYER.has(protocol) ? 'HTTP' : 'TCP')).toUpperCase();
  if (!PROTOCOLS.has(instanceProtocol)) {
    throw classicFailure('UnsupportedProtocol', `InstanceProtocol ${sdk.InstanceProtocol} is not supported`);
  }
  for (const port of [sdk.LoadBalancerPort, sdk.InstancePort]) {
    if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
      throw classicFailure('ValidationError', `Port ${port} is not valid: ports go from 1 to 65535`);
    }
  }
  if ((protocol === 'SSL' || protocol === 'HTTPS') && !sdk.SSLCertificateId) {
    throw classicFailure('ValidationError', `A ${protocol} listener needs an SSLCertificateId`);
  }
  if (HTTP_LAYER.has(protocol) !== HTTP_LAYER.has(instanceProtocol)) {
    throw classicFailure(
      'InvalidConfigurationRequest',
      `Listener ${sdk.LoadBalancerPort}: front end ${protocol} and back end ${instanceProtocol} are not on the same protocol layer`,
    );
  }
  const listener: ClassicListener = {
    loadBalancerPort: sdk.LoadBalancerPort as number,
    protocol: protocol as ClassicProtocol,
    instancePort: sdk.InstancePort as number,
    instanceProtocol: instanceProtocol as ClassicProtocol,
  };
  if (sdk.SSLCertificateId && (protocol === 'SSL' || protocol === 'HTTPS')) {
    listener.sslCertificateId = sdk.SSLCertificateId;
  }
  return listener;
}

export function sameListener(a: ClassicListener, b: ClassicListener): boolean {
  return (
    a.loadBalancerPort === b.loadBalancerPort &&
    a.protocol === b.protocol &&
    a.instancePort === b.instancePort &&
    a.instanceProtocol === b.instanceProtocol &&
    (a.sslCertificateId ?? '') === (b.sslCertificateId ?? '')
  );
}

/**
 * A listener on a port already in use must be the same one (nothing to do), else DuplicateListener.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancerListeners.html
 */
export function addListeners(lb: FakeClassicLoadBalancer, sdk: readonly SdkListener[]): void {
  const listeners: ClassicListener[] = sdk.map(checkListener);
  const planned = new Map([...lb.listeners].map(([port, l]) => [port, l.listener]));
  for (const listener of listeners) {
    const current = planned.get(listener.loadBalancerPort);
    if (current && !sameListener(current, listener)) {
      throw classicFailure(
        'DuplicateListener',
        `A listener already exists for ${lb.name} on port ${listener.loadBalancerPort} with other settings`,
      );
    }
    planned.set(listener.loadBalancerPort, listener);
  }
  for (const listener of listeners) {
    if (!lb.listeners.has(listener.loadBalancerPort)) {
      lb.listeners.set(listener.loadBalancerPort, { listener, policyNames: [] });
    }
  }
}

/** `TCP:<port>`, `SSL:<port>`, `HTTP:<port>/<path>` or `HTTPS:<port>/<path>`, with AWS's ranges. */
export function checkHealthCheck(hc: ClassicHealthCheck): void {
  const target = /^(TCP|SSL):(\d+)$/.exec(hc.target) ?? /^(HTTPS?):(\d+)\/.*$/.exec(hc.target);
  const port = Number(target?.[2]);
  if (!target || port < 1 || port > 65535) {
    throw classicFailure('ValidationError', `Health check target '${hc.target}' is not valid`);
  }
  for (const [field, range] of Object.entries(CLASSIC_HEALTH_CHECK_RANGES)) {
    const value = hc[field as keyof typeof CLASSIC_HEALTH_CHECK_RANGES];
    if (!Number.isInteger(value) || value < range.min || value > range.max) {
      throw classicFailure('ValidationError', `Health check ${field} must be between ${range.min} and ${range.max}`);
    }
  }
  if (hc.timeoutSeconds >= hc.intervalSeconds) {
    throw classicFailure('ValidationError', 'Health check timeout must be smaller than the interval');
  }
}

/** Load balancer names: 1-32 letters, digits and hyphens, not starting or ending with a hyphen. */
export function checkName(name: string | undefined): string {
  if (!name || !/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$/.test(name)) {
    throw classicFailure('ValidationError', `Load balancer name '${name}' is not valid`);
  }
  return name;
}

/** A load balancer as DescribeLoadBalancers answers it. */
export function describe(lb: FakeClassicLoadBalancer, zoneOf: (subnetId: string) => string | undefined) {
  const description: LoadBalancerDescription = {
    LoadBalancerName: lb.name,
    DNSName: lb.dnsName,
    ListenerDescriptions: [...lb.listeners.values()]
      .sort((a, b) => a.listener.loadBalancerPort - b.listener.loadBalancerPort)
      .map(({ listener, policyNames }) => ({
        Listener: {
          Protocol: listener.protocol,
          LoadBalancerPort: listener.loadBalancerPort,
          InstanceProtocol: listener.instanceProtocol,
          InstancePort: listener.instancePort,
          ...(listener.sslCertificateId ? { SSLCertificateId: listener.sslCertificateId } : {}),
        },
        PolicyNames: [...policyNames],
      })),
    Policies: {
      AppCookieStickinessPolicies: [],
      LBCookieStickinessPolicies: [],
      OtherPolicies: [...lb.policies.keys()],
    },
    BackendServerDescriptions: [...lb.backendPolicies].map(([InstancePort, names]) => ({
      InstancePort,
      PolicyNames: [...names],
    })),
    AvailabilityZones: lb.subnets.flatMap((s) => zoneOf(s) ?? []),
    Subnets: [...lb.subnets],
    Instances: [...lb.instances.keys()].map((InstanceId) => ({ InstanceId })),
    HealthCheck: {
      Target: lb.healthCheck.target,
      Interval: lb.healthCheck.intervalSeconds,
      Timeout: lb.healthCheck.timeoutSeconds,
      HealthyThreshold: lb.healthCheck.healthyThreshold,
      UnhealthyThreshold: lb.healthCheck.unhealthyThreshold,
    },
    SecurityGroups: [...lb.securityGroups],
    CreatedTime: new Date(lb.createdTime),
    Scheme: lb.scheme,
  };
  if (lb.vpcId) description.VPCId = lb.vpcId;
  return description;
}

/** AWS refuses a request naming one tag key twice, and more than 50 tags on a load balancer. */
export function checkTags(tags: readonly { Key?: string }[]): void {
  const keys = tags.map((t) => t.Key ?? '');
  if (new Set(keys).size !== keys.length)
    throw classicFailure('DuplicateTagKeys', 'A tag key was specified more than once');
  if (keys.some((k) => k === '' || k.length > 128))
    throw classicFailure('ValidationError', 'Tag keys are 1-128 characters');
}
