import { createHash } from 'node:crypto';
import type { GroupId } from '../../../shared/ingress/membership.ts';

/**
 * The names the AWS Load Balancer Controller gives an IngressGroup's resources, byte for byte, so that a cluster
 * moving from it to this controller finds the load balancer, security group and target groups it already has
 * (they are matched by tags, but a name is unique per account and region, so a different name would mean a second
 * resource). Each name is `k8s-`, readable parts, and the first 10 hex digits of a SHA-256 over the identity
 * the resource stands for: the fields are written into the hash one after the other, with no separator.
 *
 * A readable part keeps only ASCII letters and digits (everything else is dropped, not replaced) and is cut to a
 * fixed length: 17 characters for an explicit group's name, 8 each for a namespace and a name. Names of
 * Kubernetes objects are ASCII, so cutting characters is cutting bytes.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 */

/** Keeps ASCII letters and digits only. */
export function sanitizeNamePart(part: string): string {
  return part.replace(/[^0-9A-Za-z]/g, '');
}

/** The first 10 hex digits of SHA-256 over the fields, written one after the other. */
export function nameHash(...fields: readonly string[]): string {
  const hash = createHash('sha256');
  for (const field of fields) hash.update(field, 'utf8');
  return hash.digest('hex').slice(0, 10);
}

/** The group as the reference writes it into hashes: its name, or `namespace/name` for an implicit group. */
export function groupIdString(group: GroupId): string {
  return group.explicit ? group.name : `${group.namespace}/${group.name}`;
}

function groupPrefix(group: GroupId): string {
  if (group.explicit) return `k8s-${sanitizeNamePart(group.name).slice(0, 17)}`;
  return `k8s-${sanitizeNamePart(group.namespace).slice(0, 8)}-${sanitizeNamePart(group.name).slice(0, 8)}`;
}

/**
 * The Application Load Balancer of a group: `k8s-<group>-<hash>` (explicit) or `k8s-<namespace>-<name>-<hash>`
 * (implicit), hashed over the cluster, the group and the scheme (a new scheme gives a new load balancer).
 */
export function loadBalancerName(clusterName: string, group: GroupId, scheme: 'internet-facing' | 'internal'): string {
  return `${groupPrefix(group)}-${nameHash(clusterName, groupIdString(group), scheme)}`;
}

/** The managed frontend security group of a group: the load balancer's pattern, hashed without the scheme. */
export function securityGroupName(clusterName: string, group: GroupId): string {
  return `${groupPrefix(group)}-${nameHash(clusterName, groupIdString(group))}`;
}

/** What names a target group of an Ingress: everything AWS cannot change on an existing one, and whose it is. */
export interface TargetGroupNameInput {
  clusterName: string;
  group: GroupId;
  ingress: { namespace: string; name: string };
  service: { namespace: string; name: string; uid?: string };
  /** The backend's service port as the Ingress gives it: a number, or a port name. */
  servicePort: number | string;
  /** The target group's port (node port, target port, or 1). */
  port: number;
  targetType: string;
  protocol: string;
  protocolVersion: string;
}

/** `k8s-<service namespace>-<service name>-<hash>`. */
export function targetGroupName(input: TargetGroupNameInput): string {
  const hash = nameHash(
    input.clusterName,
    groupIdString(input.group),
    input.ingress.namespace,
    input.ingress.name,
    input.service.uid ?? '',
    String(input.servicePort),
    String(input.port),
    input.targetType,
    input.protocol,
    input.protocolVersion,
  );
  const namespace = sanitizeNamePart(input.service.namespace).slice(0, 8);
  const name = sanitizeNamePart(input.service.name).slice(0, 8);
  return `k8s-${namespace}-${name}-${hash}`;
}

/** The `ingress.k8s.aws/resource` tag of a target group: `<ingress namespace>/<ingress name>-<service>:<port>`. */
export function targetGroupResourceId(
  ingress: { namespace: string; name: string },
  serviceName: string,
  servicePort: number | string,
): string {
  return `${ingress.namespace}/${ingress.name}-${serviceName}:${servicePort}`;
}
