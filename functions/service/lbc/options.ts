import { ANNOTATION_PREFIX, LISTENER_ATTRIBUTES_PREFIX } from '../../../shared/k8s/service-annotations.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../../shared/k8s/service-port.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { ANNOTATION, type ParsedAnnotations, parseAnnotations } from '../annotations.ts';
import { LBC_LOAD_BALANCER_CLASS, LBC_SERVICE_FINALIZER } from './names.ts';

/**
 * The Services the AWS Load Balancer Controller serves, and what they ask for, read with its defaults:
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/service/annotations/
 */

/** What only such a Service has on top of the annotations every Service reads. */
export interface LbcOptions {
  /** The Service's UID: the reference hashes it into every name. */
  uid: string;
  /**
   * Whether the cluster's backend group goes on the load balancer and its rules on the Nodes' groups: always
   * with the managed group; with the user's groups (`security-groups`) only when the annotation says "true".
   */
  manageBackendSecurityGroupRules: boolean;
  /** `listener-attributes.<protocol>-<port>`, by `<PROTOCOL>-<port>` (upper-case protocol). */
  listenerAttributes: Record<string, Record<string, string>>;
  /** The reference's annotations this controller does not carry out: each is told in a Warning naming it. */
  unsupported: string[];
}

/**
 * Whether the reference serves the Service: `spec.loadBalancerClass: service.k8s.aws/nlb`, or no class and the
 * type annotation `external` (or the older `nlb-ip`). A Service of any other class is left alone.
 */
export function isLbcService(service: Service): boolean {
  const serviceClass = service.spec?.loadBalancerClass;
  if (serviceClass !== undefined) return serviceClass === LBC_LOAD_BALANCER_CLASS;
  const type = service.metadata.annotations?.[ANNOTATION.type]?.trim().toLowerCase();
  return type === 'external' || type === 'nlb-ip';
}

/**
 * Whether a pass over the Service works the reference's way (its names, tags, finalizer and defaults): it carries the
 * reference's finalizer, or it is such a Service and no in-tree load balancer of ours is still to be removed first.
 */
export function servedAsLbc(service: Service, lbcServices: boolean | undefined): boolean {
  if (!lbcServices) return false;
  const finalizers = service.metadata.finalizers ?? [];
  if (finalizers.includes(LBC_SERVICE_FINALIZER)) return true;
  if (finalizers.includes(FINALIZER_LOAD_BALANCER_CLEANUP)) return false;
  return isLbcService(service);
}

/**
 * The Service's annotations with the reference's defaults: scheme `internal` unless `aws-load-balancer-scheme` (or the
 * deprecated `aws-load-balancer-internal`) says otherwise; target type from `aws-load-balancer-nlb-target-type`,
 * `ip` for the type `nlb-ip`, else `instance`.
 */
export function parseLbcAnnotations(service: Service): ParsedAnnotations {
  const annotations = service.metadata.annotations ?? {};
  const nlbIp = annotations[ANNOTATION.type]?.trim().toLowerCase() === 'nlb-ip';
  const parsed = parseAnnotations(annotations, { scheme: 'internal', targetType: nlbIp ? 'ip' : 'instance' });
  const { options, problems } = parsed;
  // The older type means IP targets whatever the target type annotation says.
  if (nlbIp) options.targetType = 'ip';
  const manage = annotations[ANNOTATION.manageBackendSecurityGroupRules]?.trim().toLowerCase();
  const listenerAttributes: Record<string, Record<string, string>> = {};
  const unsupported: string[] = [];
  for (const [key, value] of Object.entries(annotations)) {
    if (key.startsWith(LISTENER_ATTRIBUTES_PREFIX)) {
      const listener = parseListenerAttributes(key, value, problems);
      if (listener) listenerAttributes[listener.id] = listener.attributes;
    } else if (key.startsWith(ANNOTATION_PREFIX) && !KNOWN.has(key)) {
      unsupported.push(key);
    }
  }
  options.lbc = {
    uid: service.metadata.uid ?? '',
    manageBackendSecurityGroupRules: options.securityGroups ? manage === 'true' : true,
    listenerAttributes,
    unsupported: unsupported.sort(),
  };
  return { options, problems };
}

const KNOWN: ReadonlySet<string> = new Set(Object.values(ANNOTATION));

/** `listener-attributes.TCP-80: tcp.idle_timeout.seconds=400`. */
function parseListenerAttributes(
  key: string,
  value: string,
  problems: ParsedAnnotations['problems'],
): { id: string; attributes: Record<string, string> } | undefined {
  const suffix = key.slice(LISTENER_ATTRIBUTES_PREFIX.length);
  const match = /^(TCP|UDP|TCP_UDP|TLS)-(\d{1,5})$/i.exec(suffix);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) {
    problems.push({ annotation: key, message: 'must end with <protocol>-<port>, such as TCP-80' });
    return undefined;
  }
  const attributes: Record<string, string> = {};
  for (const entry of value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const at = entry.indexOf('=');
    if (at <= 0) {
      problems.push({ annotation: key, message: `"${entry}" is not key=value` });
      return undefined;
    }
    attributes[entry.slice(0, at).trim()] = entry.slice(at + 1).trim();
  }
  return { id: `${match[1]!.toUpperCase()}-${Number(match[2])}`, attributes };
}

/** The annotations of a Service, read the way its pass works (the reference's defaults, or the in-tree ones). */
export function serviceAnnotations(service: Service, lbc: boolean): ParsedAnnotations {
  return lbc ? parseLbcAnnotations(service) : parseAnnotations(service.metadata.annotations);
}
