import { createHash } from 'node:crypto';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';

/**
 * The names and tracking tags the AWS Load Balancer Controller gives the resources of a Service it serves, byte for
 * byte, so that a cluster moving from it finds the Network Load Balancer, target groups and security group it
 * already has (a name is unique per account and region: a different one would mean a second resource). Each name
 * is `k8s-`, the namespace and the name (ASCII letters and digits only, 8 characters each), and the first 10 hex
 * digits of a SHA-256 over the identity the resource stands for, the fields written one after the other.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/service/nlb/
 */

/** The finalizer the reference puts on the Services it serves (instead of the in-tree cleanup finalizer). */
export const LBC_SERVICE_FINALIZER = 'service.k8s.aws/resources';
/** `spec.loadBalancerClass` of the Services the reference serves. */
export const LBC_LOAD_BALANCER_CLASS = 'service.k8s.aws/nlb';

/** The reference's tracking tags. */
export const LBC_TAG = {
  cluster: 'elbv2.k8s.aws/cluster',
  stack: 'service.k8s.aws/stack',
  resource: 'service.k8s.aws/resource',
} as const;

/** Values of the `service.k8s.aws/resource` tag. */
export const LBC_RESOURCE = {
  loadBalancer: 'LoadBalancer',
  managedSecurityGroup: 'ManagedLBSecurityGroup',
  listener: (port: number) => String(port),
  targetGroup: (namespace: string, name: string, port: number) => `${namespace}/${name}:${port}`,
} as const;

/** Who a Service's resources are for, as the reference hashes it. */
export interface LbcIdentity {
  clusterName: string;
  namespace: string;
  name: string;
  /** The Service's UID: a Service deleted and made again gets new resources. */
  uid: string;
}

function alphanumeric(part: string): string {
  return part.replace(/[^0-9A-Za-z]/g, '');
}

function hash10(...fields: readonly string[]): string {
  const hash = createHash('sha256');
  for (const field of fields) hash.update(field, 'utf8');
  return hash.digest('hex').slice(0, 10);
}

function named(id: LbcIdentity, hash: string): string {
  return `k8s-${alphanumeric(id.namespace).slice(0, 8)}-${alphanumeric(id.name).slice(0, 8)}-${hash}`;
}

/** The Network Load Balancer: hashed over the cluster, the UID and the scheme (a new scheme, a new load balancer). */
export function lbcLoadBalancerName(id: LbcIdentity, scheme: 'internet-facing' | 'internal'): string {
  return named(id, hash10(id.clusterName, id.uid, scheme));
}

/** The managed frontend security group: hashed over the cluster, the name, the namespace and the UID. */
export function lbcSecurityGroupName(id: LbcIdentity): string {
  return named(id, hash10(id.clusterName, id.name, id.namespace, id.uid));
}

/** What names a target group: everything AWS cannot change on it, and the health check's protocol and interval. */
export interface LbcTargetGroupInput {
  /** The target group's port: the node port (instance) or the numeric target port (ip; 1 when it is named). */
  port: number;
  /** The Service port (listener port). */
  servicePort: number;
  targetType: string;
  protocol: string;
  healthCheckProtocol: string;
  healthCheckIntervalSeconds: number;
}

export function lbcTargetGroupName(id: LbcIdentity, group: LbcTargetGroupInput): string {
  return named(
    id,
    hash10(
      id.clusterName,
      id.uid,
      String(group.port),
      String(group.servicePort),
      group.targetType,
      group.protocol,
      group.healthCheckProtocol,
      String(group.healthCheckIntervalSeconds),
    ),
  );
}

/**
 * The tags every resource of the Service's stack carries: the reference's tracking tags (so its tooling, and the
 * reference itself if it comes back, still reads them) and ours (the cluster's `owned` and the owner tag our
 * ownership checks, IAM conditions and garbage collector read).
 */
export function lbcStackTags(clusterName: string, serviceKey: string): Record<string, string> {
  return {
    [clusterTagKey(clusterName)]: 'owned',
    [LABEL_SERVICE_NAME]: serviceKey,
    [LBC_TAG.cluster]: clusterName,
    [LBC_TAG.stack]: serviceKey,
  };
}

/** Whether the tags say the reference made the resource for this cluster and Service. */
export function isLbcStackResource(
  tags: Readonly<Record<string, string>> | undefined,
  clusterName: string,
  serviceKey: string,
): boolean {
  return tags?.[LBC_TAG.cluster] === clusterName && tags[LBC_TAG.stack] === serviceKey;
}

/** The tags our ownership checks need on a resource the reference made for the Service: none when present. */
export function lbcAdoptionTags(
  tags: Readonly<Record<string, string>>,
  clusterName: string,
  serviceKey: string,
): Record<string, string> {
  const wanted = { [clusterTagKey(clusterName)]: 'owned', [LABEL_SERVICE_NAME]: serviceKey };
  return Object.fromEntries(Object.entries(wanted).filter(([k, v]) => tags[k] !== v));
}
