import { createHash } from 'node:crypto';
import { ELB_NAME_MAX } from '../../shared/aws/elbv2-port.ts';
import type { OwnerIdentity } from '../../shared/load-balancers/model.ts';
import type { LoadBalancerOptions } from './annotations.ts';
import { lbcLoadBalancerName } from './lbc/names.ts';

/**
 * Names of the AWS resources of a Service (docs/adr/0005-service-load-balancers.md).
 *
 * Users asked for readable names (the reference's `a<uid>` says nothing), so a name starts with
 * `<cluster>-<namespace>-<service>`, shortened to fit. A readable prefix alone cannot be unique: namespaces
 * and names contain hyphens (`a-b`/`c` and `a`/`b-c` read the same) and long ones are cut. So every name
 * ends with a hash of the exact identity it stands for, and the prefix gives way to it. Names are
 * deterministic: a crash between creating a resource and recording anything about it loses nothing, because
 * the next pass computes the same name and finds it. And a resource found by name is used only when its tags
 * say it belongs to this cluster and Service, so even a hash collision, or two Services given the same
 * `aws-load-balancer-name`, can never make two Services share a load balancer.
 */

/** 8 base-36 characters: 41 bits, which leaves 23 characters of a 32-character name readable. */
export const HASH_LENGTH = 8;
const HASH_SPACE = 36n ** BigInt(HASH_LENGTH);

export function shortHash(...parts: readonly (string | number)[]): string {
  // NUL cannot occur in any part (Kubernetes names, AWS names, numbers), so the joined input is unambiguous.
  const digest = createHash('sha256').update(parts.join('\0')).digest();
  const value = digest.readBigUInt64BE(0) % HASH_SPACE;
  return value.toString(36).padStart(HASH_LENGTH, '0');
}

/**
 * `parts` lowercased, anything but letters and digits turned into hyphens (runs collapsed, none at either
 * end), joined with hyphens and shortened to `max` characters by trimming the longest part first, so that
 * each part keeps a readable piece (`production-cluster`, `payments`, `api` -> `product-payments-api`).
 * Never begins with `internal` (ELB reserves `internal-`). May be empty.
 */
export function readablePrefix(parts: readonly string[], max: number): string {
  const cleaned = parts
    .map((p) =>
      p
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-+|-+$/g, ''),
    )
    .filter(Boolean);
  const shortened = shorten(cleaned, max);
  return shortened.startsWith('internal') ? shorten(['k8s', ...cleaned], max).replace(/^internal/, 'k8s') : shortened;
}

/** Trim the longest part by one character until the joined parts fit. */
function shorten(input: readonly string[], max: number): string {
  const parts = [...input];
  const length = () => parts.reduce((n, p) => n + p.length, 0) + Math.max(0, parts.length - 1);
  while (parts.length > 0 && length() > Math.max(0, max)) {
    let longest = 0;
    for (let i = 1; i < parts.length; i++) if (parts[i]!.length > parts[longest]!.length) longest = i;
    const part = parts[longest]!;
    if (part.length <= 1) parts.splice(longest, 1);
    else parts[longest] = part.slice(0, -1).replace(/-+$/, '');
  }
  return parts.join('-');
}

function withHash(prefixParts: readonly string[], suffix: string, hash: string): string {
  const tail = suffix ? `${suffix}-${hash}` : hash;
  const prefix = readablePrefix(prefixParts, ELB_NAME_MAX - tail.length - 1);
  return prefix ? `${prefix}-${tail}` : tail;
}

/** A Service's identity: its cluster, namespace and name (the resource modules' owner identity). */
export type ServiceIdentity = OwnerIdentity;

/** The load balancer's name: `aws-load-balancer-name` when set, else `<cluster>-<namespace>-<service>-<hash>`. */
export function loadBalancerName(id: ServiceIdentity, override?: string): string {
  if (override) return override;
  return withHash([id.clusterName, id.namespace, id.name], '', shortHash('lb', id.clusterName, id.namespace, id.name));
}

/**
 * The second name a Service's load balancer can have. A load balancer that must be replaced (its scheme
 * changes, every zone moves, it failed) keeps serving while its successor is built beside it, and two load
 * balancers cannot share a name: the successor takes the other of the two names, and the next replacement
 * goes back to the first.
 */
export function successorLoadBalancerName(id: ServiceIdentity): string {
  return withHash(
    [id.clusterName, id.namespace, id.name],
    'b',
    shortHash('lb', id.clusterName, id.namespace, id.name, 'successor'),
  );
}

/**
 * The name the reference cloud controller gives a Service's load balancer: `a` and the Service UID without
 * dashes, cut to 32 characters. A load balancer of that name the Service's status points at is adopted as it is.
 */
export function referenceLoadBalancerName(uid: string | undefined): string | undefined {
  return uid ? `a${uid.replace(/-/g, '')}`.slice(0, ELB_NAME_MAX) : undefined;
}

/** The names a Service's load balancer may have: the annotation's alone, or our two (and the reference's, when adopted). */
export function acceptableNames(identity: ServiceIdentity, uid: string | undefined, override?: string): string[] {
  if (override) return [override];
  const names = [loadBalancerName(identity), successorLoadBalancerName(identity)];
  const reference = referenceLoadBalancerName(uid);
  return reference ? [...names, reference] : names;
}

/** What of a Service's options its load balancer's names follow. */
export type NamingOptions = Pick<LoadBalancerOptions, 'name' | 'scheme' | 'lbc'>;

/**
 * The name a Service asks for: `aws-load-balancer-name`, else ours, else (a Service the AWS Load Balancer Controller
 * serves) the reference's `k8s-<namespace>-<name>-<hash>`, which changes with the scheme.
 */
export function preferredLoadBalancerName(id: ServiceIdentity, options: NamingOptions): string {
  if (options.lbc && !options.name) return lbcLoadBalancerName({ ...id, uid: options.lbc.uid }, options.scheme);
  return loadBalancerName(id, options.name);
}

/** The names its load balancer may have (acceptableNames; the reference's and our successor's for its Services). */
export function acceptableNamesFor(id: ServiceIdentity, uid: string | undefined, options: NamingOptions): string[] {
  if (!options.lbc) return acceptableNames(id, uid, options.name);
  if (options.name) return [options.name];
  return [preferredLoadBalancerName(id, options), successorLoadBalancerName(id)];
}

/**
 * Tag on a load balancer built to replace another: the name of the one it replaces, while it is built beside it
 * and, once it serves, until the replaced one is deleted at the end of its grace (REPLACED_AT_TAG).
 */
export const REPLACES_TAG = 'serverless-ccm/replaces';

/**
 * Tag on a replaced Network Load Balancer: when the status moved to its successor (ISO 8601). It keeps serving
 * clients that still resolve its name for SERVICE_REPLACEMENT_GRACE_SECONDS from then; a tag, so that neither a
 * crash nor another Lambda instance starts the grace again.
 */
export const REPLACED_AT_TAG = 'serverless-ccm/replaced-at';

/**
 * What makes a target group: everything AWS cannot change on an existing one (protocol, target type) and the
 * load balancer it serves (a Network Load Balancer target group can belong to one load balancer only).
 * Changing any of these gives a new name, hence a new target group the listener moves to: replacement
 * instead of an impossible in-place change.
 */
export interface TargetGroupIdentity {
  loadBalancerName: string;
  listenerPort: number;
  protocol: string;
  targetType: string;
  /** The targets' address family; AWS cannot change it in place. `ipv4` (the default) leaves names as they were. */
  ipAddressType?: 'ipv4' | 'ipv6';
}

/** `<cluster>-<namespace>-<service>-<listener port>-<hash>`. */
export function targetGroupName(id: ServiceIdentity, group: TargetGroupIdentity): string {
  const hash = shortHash(
    'tg',
    id.clusterName,
    id.namespace,
    id.name,
    group.loadBalancerName,
    group.listenerPort,
    group.protocol,
    group.targetType,
    ...(group.ipAddressType === 'ipv6' ? ['ipv6'] : []),
  );
  return withHash([id.clusterName, id.namespace, id.name], String(group.listenerPort), hash);
}

/** The managed security group of a load balancer (unique per VPC, as the load balancer name is per region). */
export function securityGroupName(loadBalancer: string): string {
  return `k8s-elb-${loadBalancer}`;
}

/**
 * The load balancer name in a Network Load Balancer DNS name (`<name>-<id>.elb.<region>.amazonaws.com`),
 * to find the load balancer a Service's status points at when its name has changed since.
 */
export function loadBalancerNameFromHostname(hostname: string | undefined): string | undefined {
  const match = hostname
    ? /^([a-z0-9-]+)-[0-9a-f]{16}\.elb\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?$/i.exec(hostname)
    : null;
  return match?.[1];
}
