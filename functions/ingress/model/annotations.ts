import { isValidElbName } from '../../../shared/aws/elbv2-port.ts';
import { INGRESS_ANNOTATION_PREFIX, type Ingress, type IngressClassParams } from '../../../shared/k8s/ingress-types.ts';
import { parseCidr } from '../../../shared/net/cidr.ts';
import { parseGoBool } from './member.ts';
import { parseStringMap } from './target-groups.ts';
import type { ModelLoadBalancer, ModelSettings, Problem } from './types.ts';

/**
 * The load-balancer-level settings of one member of an IngressGroup: its `alb.ingress.kubernetes.io/` annotations,
 * each overridden by its IngressClassParams field when that is set, as the AWS Load Balancer Controller reads them.
 * Every value remembers where it came from (`at`), so a conflict or a problem names the line to fix.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/ingress/annotations/
 */

const annotation = (suffix: string) => `${INGRESS_ANNOTATION_PREFIX}${suffix}`;

export const LB_ANNOTATION = {
  scheme: annotation('scheme'),
  ipAddressType: annotation('ip-address-type'),
  subnets: annotation('subnets'),
  securityGroups: annotation('security-groups'),
  manageBackendSecurityGroupRules: annotation('manage-backend-security-group-rules'),
  loadBalancerName: annotation('load-balancer-name'),
  loadBalancerAttributes: annotation('load-balancer-attributes'),
  tags: annotation('tags'),
  inboundCidrs: annotation('inbound-cidrs'),
  prefixLists: annotation('security-group-prefix-lists'),
  listenPorts: annotation('listen-ports'),
  sslRedirect: annotation('ssl-redirect'),
  certificateArn: annotation('certificate-arn'),
  sslPolicy: annotation('ssl-policy'),
  wafv2AclArn: annotation('wafv2-acl-arn'),
  wafv2AclName: annotation('wafv2-acl-name'),
} as const;

/** `listener-attributes.<Protocol>-<Port>`, e.g. `listener-attributes.HTTPS-443`. */
export const LISTENER_ATTRIBUTES_PREFIX = annotation('listener-attributes.');

/** Load-balancer-level annotations this controller does not do: a Warning each, never silently dropped. */
export const UNSUPPORTED_ANNOTATIONS = [
  'shield-advanced-protection',
  'waf-acl-id',
  'web-acl-id',
  'mutual-authentication',
  'customer-owned-ipv4-pool',
  'ipam-ipv4-pool-id',
  'minimum-load-balancer-capacity',
  'enable-frontend-nlb',
  'create-acm-cert',
  'acm-pca-arn',
].map(annotation);
/** Every `frontend-nlb-*` annotation configures the Network Load Balancer in front of the ALB, which we do not make. */
export const UNSUPPORTED_ANNOTATION_PREFIX = annotation('frontend-nlb-');

export type ListenProtocol = 'HTTP' | 'HTTPS';
export type Scheme = ModelLoadBalancer['scheme'];
export type SubnetsSetting = NonNullable<ModelLoadBalancer['subnets']>;

/** A value and where the user set it (an annotation, or an IngressClassParams field). */
export interface Sourced<T> {
  value: T;
  at: string;
}

export interface MemberLoadBalancerSettings {
  scheme?: Sourced<Scheme>;
  ipAddressType?: Sourced<'ipv4' | 'dualstack'>;
  loadBalancerName?: Sourced<string>;
  subnets?: Sourced<SubnetsSetting>;
  securityGroups?: Sourced<string[]>;
  manageBackendSecurityGroupRules?: Sourced<boolean>;
  /** Annotation values with the class's over them. */
  attributes: Record<string, Sourced<string>>;
  /** Annotation tags with the class's over them (the controller's default tags are applied group-wide). */
  tags: Record<string, Sourced<string>>;
  inboundCidrs?: Sourced<string[]>;
  prefixLists?: Sourced<string[]>;
  /** By port, ascending; the default when the annotation is absent. */
  listenPorts: Sourced<{ port: number; protocol: ListenProtocol }[]>;
  sslRedirect?: Sourced<number>;
  /** Certificates the user names (which turns discovery off and makes HTTPS the default listener). */
  certificates?: Sourced<string[]>;
  sslPolicy?: Sourced<string>;
  /** By `<Protocol>-<Port>`: annotation attributes with the class's over them. */
  listenerAttributes: Record<string, Record<string, Sourced<string>>>;
  wafv2AclArn?: Sourced<string>;
  wafv2AclName?: Sourced<string>;
}

export interface ParsedMemberSettings {
  settings: MemberLoadBalancerSettings;
  /** Values that cannot be used: the member is kept. */
  problems: Problem[];
  /** Settings that are ignored: a Warning each. */
  warnings: Problem[];
}

const split = (text: string) =>
  text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);

/** `k1=v1,k2=v2` as the member half reads it (target-groups.ts), so both halves agree on the format. */
function stringMap(text: string): Record<string, string> {
  const parsed = parseStringMap(text);
  if (!parsed) throw new Error('must be key=value pairs separated by commas');
  return parsed;
}

function parsePort(text: string): number | undefined {
  const value = text.trim();
  return /^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= 65535 ? Number(value) : undefined;
}

/** `[{"HTTP": 80}, {"HTTPS": 443}]`: only HTTP and HTTPS, ports 1-65535. */
export function parseListenPorts(text: string): { port: number; protocol: ListenProtocol }[] {
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch {
    throw new Error('must be JSON such as [{"HTTP": 80}, {"HTTPS": 443}]');
  }
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new Error('must be a non-empty JSON list such as [{"HTTP": 80}, {"HTTPS": 443}]');
  }
  const byPort = new Map<number, ListenProtocol>();
  for (const entry of entries) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new Error(`${JSON.stringify(entry)} is not an object such as {"HTTPS": 443}`);
    }
    for (const [protocol, port] of Object.entries(entry)) {
      if (protocol !== 'HTTP' && protocol !== 'HTTPS') throw new Error(`protocol "${protocol}" must be HTTP or HTTPS`);
      if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
        throw new Error(`port ${JSON.stringify(port)} must be a number from 1 to 65535`);
      }
      byPort.set(port, protocol);
    }
  }
  return [...byPort].sort(([a], [b]) => a - b).map(([port, protocol]) => ({ port, protocol }));
}

function checkCidrs(cidrs: string[]): void {
  for (const cidr of cidrs) {
    const parsed = parseCidr(cidr);
    if (!parsed.ok) throw new Error(parsed.error);
  }
}

/** Subnet IDs stay IDs; any `Name` tag among them makes the list one of references (IDs or names) to look up. */
function subnetsFromList(values: string[]): SubnetsSetting {
  return values.every((v) => /^subnet-[0-9a-f]+$/.test(v)) ? { ids: values } : { names: values };
}

const keyValues = (list: readonly { key: string; value: string }[] | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, kv.value]));

/**
 * The member's settings. A value that does not parse is a problem naming its annotation (the member is kept);
 * settings this controller does not do are warnings.
 */
export function parseMemberSettings(
  ingress: Ingress,
  params: IngressClassParams | undefined,
  controller: Pick<ModelSettings, 'externalManagedTags'>,
): ParsedMemberSettings {
  const annotations = ingress.metadata.annotations ?? {};
  const spec = params?.spec ?? {};
  const fromParams = (field: string) => `IngressClassParams ${params?.metadata.name}: spec.${field}`;
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const read = <T>(name: string, parse: (raw: string) => T): Sourced<T> | undefined => {
    const raw = annotations[name];
    if (raw === undefined) return undefined;
    try {
      return { value: parse(raw), at: name };
    } catch (error) {
      problems.push({ at: name, message: `"${raw}": ${(error as Error).message}` });
      return undefined;
    }
  };
  const list = (raw: string) => {
    const values = split(raw);
    if (values.length === 0) throw new Error('must list at least one value');
    return values;
  };

  const validScheme = (raw: string): Scheme => {
    if (raw !== 'internal' && raw !== 'internet-facing') throw new Error('must be internal or internet-facing');
    return raw;
  };
  let scheme: Sourced<Scheme> | undefined;
  if (spec.scheme) {
    // The CRD's schema refuses other values, but an object stored under an older CRD (or none) may have one.
    try {
      scheme = { value: validScheme(spec.scheme), at: fromParams('scheme') };
    } catch (err) {
      problems.push({ at: fromParams('scheme'), message: `${JSON.stringify(spec.scheme)} ${(err as Error).message}` });
    }
  } else scheme = read(LB_ANNOTATION.scheme, validScheme);

  const ipRaw: Sourced<string> | undefined = spec.ipAddressType
    ? { value: spec.ipAddressType, at: fromParams('ipAddressType') }
    : read(LB_ANNOTATION.ipAddressType, (raw) => {
        if (!['ipv4', 'dualstack', 'dualstack-without-public-ipv4'].includes(raw)) {
          throw new Error('must be ipv4, dualstack or dualstack-without-public-ipv4');
        }
        return raw;
      });
  let ipAddressType: Sourced<'ipv4' | 'dualstack'> | undefined;
  if (ipRaw?.value === 'dualstack-without-public-ipv4') {
    warnings.push({
      at: ipRaw.at,
      message: 'dualstack-without-public-ipv4 is not supported: the load balancer is dualstack (public IPv4 and IPv6)',
    });
    ipAddressType = { value: 'dualstack', at: ipRaw.at };
  } else if (ipRaw) ipAddressType = { value: ipRaw.value as 'ipv4' | 'dualstack', at: ipRaw.at };

  const loadBalancerName: Sourced<string> | undefined = spec.loadBalancerName
    ? { value: spec.loadBalancerName, at: fromParams('loadBalancerName') }
    : read(LB_ANNOTATION.loadBalancerName, (raw) => raw);
  if (loadBalancerName && !isValidElbName(loadBalancerName.value)) {
    problems.push({
      at: loadBalancerName.at,
      message: `"${loadBalancerName.value}": must be 1-32 letters, digits or hyphens, not beginning or ending with a hyphen or beginning with "internal-"`,
    });
  }

  let subnets: Sourced<SubnetsSetting> | undefined;
  if (spec.subnets) {
    const { ids, tags } = spec.subnets;
    if ((ids?.length ?? 0) > 0 === Object.keys(tags ?? {}).length > 0) {
      problems.push({ at: fromParams('subnets'), message: 'must set exactly one of ids and tags' });
    } else {
      subnets = { value: ids?.length ? { ids } : { tags: tags! }, at: fromParams('subnets') };
    }
  } else subnets = read(LB_ANNOTATION.subnets, (raw) => subnetsFromList(list(raw)));

  const attributes: Record<string, Sourced<string>> = {};
  const annotationAttributes = read(LB_ANNOTATION.loadBalancerAttributes, stringMap);
  for (const [k, v] of Object.entries(annotationAttributes?.value ?? {}))
    attributes[k] = { value: v, at: annotationAttributes!.at };
  for (const [k, v] of Object.entries(keyValues(spec.loadBalancerAttributes))) {
    attributes[k] = { value: v, at: fromParams('loadBalancerAttributes') };
  }

  const tags: Record<string, Sourced<string>> = {};
  const annotationTags = read(LB_ANNOTATION.tags, stringMap);
  for (const [k, v] of Object.entries(annotationTags?.value ?? {})) tags[k] = { value: v, at: annotationTags!.at };
  for (const [k, v] of Object.entries(keyValues(spec.tags))) tags[k] = { value: v, at: fromParams('tags') };
  for (const [key, tag] of Object.entries(tags)) {
    if (controller.externalManagedTags.includes(key)) {
      problems.push({ at: tag.at, message: `tag ${key} is managed outside the controller and cannot be set` });
    }
  }

  let inboundCidrs: Sourced<string[]> | undefined;
  if (spec.inboundCIDRs?.length) {
    inboundCidrs = { value: spec.inboundCIDRs, at: fromParams('inboundCIDRs') };
    try {
      checkCidrs(spec.inboundCIDRs);
    } catch (error) {
      problems.push({ at: inboundCidrs.at, message: (error as Error).message });
      inboundCidrs = undefined;
    }
  } else {
    inboundCidrs = read(LB_ANNOTATION.inboundCidrs, (raw) => {
      const cidrs = list(raw);
      checkCidrs(cidrs);
      return cidrs;
    });
  }

  if (spec.prefixListsIDs?.length && spec.PrefixListsIDs?.length) {
    problems.push({ at: fromParams('prefixListsIDs'), message: 'set prefixListsIDs or PrefixListsIDs, not both' });
  }
  const classPrefixLists = spec.prefixListsIDs?.length ? spec.prefixListsIDs : spec.PrefixListsIDs;
  const prefixLists: Sourced<string[]> | undefined = classPrefixLists?.length
    ? { value: classPrefixLists, at: fromParams(spec.prefixListsIDs?.length ? 'prefixListsIDs' : 'PrefixListsIDs') }
    : read(LB_ANNOTATION.prefixLists, list);
  // The managed security group's rules take CIDR blocks only (shared/aws/ec2-port.ts): said, never dropped silently.
  if (prefixLists) {
    warnings.push({
      at: prefixLists.at,
      message: 'is not supported: the managed security group admits the inbound CIDRs (default 0.0.0.0/0) instead',
    });
  }

  const certificates: Sourced<string[]> | undefined = spec.certificateArn?.length
    ? { value: spec.certificateArn, at: fromParams('certificateArn') }
    : read(LB_ANNOTATION.certificateArn, list);

  const defaultPorts = certificates
    ? [{ port: 443, protocol: 'HTTPS' as const }]
    : [{ port: 80, protocol: 'HTTP' as const }];
  const listenPorts = read(LB_ANNOTATION.listenPorts, parseListenPorts) ?? {
    value: defaultPorts,
    at: LB_ANNOTATION.listenPorts,
  };

  let sslRedirect: Sourced<number> | undefined;
  if (spec.sslRedirectPort) {
    const port = parsePort(spec.sslRedirectPort);
    if (port === undefined) {
      problems.push({ at: fromParams('sslRedirectPort'), message: `"${spec.sslRedirectPort}" is not a port number` });
    } else sslRedirect = { value: port, at: fromParams('sslRedirectPort') };
  } else {
    sslRedirect = read(LB_ANNOTATION.sslRedirect, (raw) => {
      const port = parsePort(raw);
      if (port === undefined) throw new Error('must be a port number from 1 to 65535');
      return port;
    });
  }

  const sslPolicy: Sourced<string> | undefined = spec.sslPolicy
    ? { value: spec.sslPolicy, at: fromParams('sslPolicy') }
    : read(LB_ANNOTATION.sslPolicy, (raw) => {
        if (!raw.trim()) throw new Error('must name a security policy');
        return raw.trim();
      });

  const listenerAttributes: Record<string, Record<string, Sourced<string>>> = {};
  const setListenerAttribute = (listener: string, name: string, value: Sourced<string>) => {
    listenerAttributes[listener] = { ...listenerAttributes[listener], [name]: value };
  };
  for (const name of Object.keys(annotations).filter((k) => k.startsWith(LISTENER_ATTRIBUTES_PREFIX))) {
    const listener = name.slice(LISTENER_ATTRIBUTES_PREFIX.length);
    if (!/^HTTPS?-\d+$/.test(listener)) {
      problems.push({ at: name, message: 'must end with <Protocol>-<Port>, such as listener-attributes.HTTPS-443' });
      continue;
    }
    const parsed = read(name, stringMap);
    for (const [k, v] of Object.entries(parsed?.value ?? {})) {
      setListenerAttribute(listener, k, { value: v, at: name });
    }
  }
  for (const [i, listener] of (spec.listeners ?? []).entries()) {
    for (const [k, v] of Object.entries(keyValues(listener.listenerAttributes))) {
      setListenerAttribute(`${listener.protocol}-${listener.port}`, k, {
        value: v,
        at: fromParams(`listeners[${i}].listenerAttributes`),
      });
    }
  }

  const manageBackendSecurityGroupRules = read(LB_ANNOTATION.manageBackendSecurityGroupRules, (raw) => {
    const value = parseGoBool(raw);
    if (value === undefined) throw new Error('must be "true" or "false"');
    return value;
  });
  const securityGroups = read(LB_ANNOTATION.securityGroups, list);
  // An empty value says nothing (`none` is how a web ACL is removed): a warning, and the association is left alone.
  const webAcl = (name: string) => {
    const value = read(name, (raw) => raw.trim());
    if (value?.value !== '') return value;
    warnings.push({ at: name, message: 'is empty and is ignored: write "none" to remove the web ACL' });
    return undefined;
  };
  const wafv2AclArn: Sourced<string> | undefined = spec.wafv2AclArn
    ? { value: spec.wafv2AclArn, at: fromParams('wafv2AclArn') }
    : webAcl(LB_ANNOTATION.wafv2AclArn);
  const wafv2AclName: Sourced<string> | undefined = spec.wafv2AclName
    ? { value: spec.wafv2AclName, at: fromParams('wafv2AclName') }
    : webAcl(LB_ANNOTATION.wafv2AclName);

  for (const name of Object.keys(annotations)) {
    if (UNSUPPORTED_ANNOTATIONS.includes(name) || name.startsWith(UNSUPPORTED_ANNOTATION_PREFIX)) {
      warnings.push({ at: name, message: 'is not supported by this controller and is ignored' });
    }
  }
  if (spec.minimumLoadBalancerCapacity) {
    warnings.push({ at: fromParams('minimumLoadBalancerCapacity'), message: 'is not supported and is ignored' });
  }
  if (spec.ipamConfiguration) {
    warnings.push({ at: fromParams('ipamConfiguration'), message: 'is not supported and is ignored' });
  }

  const settings: MemberLoadBalancerSettings = { attributes, tags, listenPorts, listenerAttributes };
  const optional = {
    scheme,
    ipAddressType,
    loadBalancerName,
    subnets,
    securityGroups,
    manageBackendSecurityGroupRules,
    inboundCidrs,
    prefixLists,
    sslRedirect,
    certificates,
    sslPolicy,
    wafv2AclArn,
    wafv2AclName,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) (settings as unknown as Record<string, unknown>)[key] = value;
  }
  return { settings, problems, warnings };
}
