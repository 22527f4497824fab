import type { Ingress } from '../../../shared/k8s/ingress-types.ts';
import { LB_ANNOTATION, type MemberLoadBalancerSettings } from './annotations.ts';
import type { ModelReads, Problem } from './types.ts';

/**
 * The certificates a member brings to its HTTPS listeners. Given ones (`certificate-arn` or the class's
 * `certificateArn`) are used as they are. Otherwise, when the member has an HTTPS port, they are discovered from
 * ACM by its hosts: a certificate covers a host when one of its names is the host, or a wildcard one level above
 * it (`*.example.com` covers `a.example.com`, not `example.com` nor `a.b.example.com`); every host must be covered,
 * and every certificate that covers one is attached (the listener serves the right one by SNI).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/https-listener-certificates.html
 */

/** Whether a certificate name (a SAN) covers a host. */
export function coversHost(name: string, host: string): boolean {
  const n = name.toLowerCase();
  const h = host.toLowerCase();
  if (n === h) return true;
  if (!n.startsWith('*.')) return false;
  const labels = h.split('.');
  return labels.length === n.split('.').length && labels.slice(1).join('.') === n.slice(2);
}

/** spec.rules[].host and spec.tls[].hosts, deduplicated and sorted. */
export function hostsOf(ingress: Ingress, extra: readonly string[] = []): string[] {
  const hosts = [
    ...(ingress.spec?.rules ?? []).map((r) => r.host),
    ...(ingress.spec?.tls ?? []).flatMap((t) => t.hosts ?? []),
    ...extra,
  ].filter((h): h is string => Boolean(h));
  return [...new Set(hosts)].sort();
}

/** Discovered certificates for some hosts: sorted ARNs of every certificate covering one; a problem per host none covers. */
export function discover(
  hosts: readonly string[],
  certificates: readonly { arn: string; names: string[] }[],
): { arns: string[]; problems: Problem[] } {
  const arns = new Set<string>();
  const problems: Problem[] = [];
  for (const host of hosts) {
    const covering = certificates.filter((c) => c.names.some((n) => coversHost(n, host)));
    if (covering.length === 0) {
      problems.push({ at: LB_ANNOTATION.certificateArn, message: `no certificate found for host: ${host}` });
    }
    for (const c of covering) arns.add(c.arn);
  }
  return { arns: [...arns].sort(), problems };
}

/** Reads ACM once per group build, and only when a member needs discovery. */
export class CertificateDiscovery {
  private listed?: Promise<{ arn: string; names: string[] }[]>;

  constructor(private readonly reads: Pick<ModelReads, 'certificates'>) {}

  /** The member's certificates for its HTTPS listeners; none when it has no HTTPS port. */
  async forMember(
    ingress: Ingress,
    settings: MemberLoadBalancerSettings,
    hosts: readonly string[] = [],
  ): Promise<{ arns: string[]; problems: Problem[] }> {
    if (settings.certificates) return { arns: [...new Set(settings.certificates.value)], problems: [] };
    if (!settings.listenPorts.value.some((p) => p.protocol === 'HTTPS')) return { arns: [], problems: [] };
    const wanted = hostsOf(ingress, hosts);
    if (wanted.length === 0) return { arns: [], problems: [] };
    this.listed ??= this.reads.certificates();
    return discover(wanted, await this.listed);
  }
}
