import type { Clock } from '../clock.ts';
import type { AcmPort } from './acm-port.ts';

/**
 * Certificate discovery's view of ACM: every ISSUED certificate with the names it covers. Listing and describing
 * every certificate on each pass would cost one call per certificate per Ingress group, so, as the reference
 * controller does, the list is kept for a minute and each certificate's names for as long as they can be trusted:
 * 5 minutes for an imported certificate (a re-import may change them), 10 hours for one ACM issued (public or
 * private: its names never change). The cache lives in module scope, keyed by the port, so a warm Lambda container
 * (which builds its ports once) reuses it across invocations, and tests with their own fakes never share one.
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_ListCertificates.html
 */

export const CERTIFICATE_LIST_TTL_MS = 60_000;
export const IMPORTED_NAMES_TTL_MS = 5 * 60_000;
export const ISSUED_NAMES_TTL_MS = 10 * 3600_000;
/** DescribeCertificate calls in flight at once: ACM allows 10 a second per account. */
const DESCRIBE_CONCURRENCY = 5;

export interface CertificateWithNames {
  arn: string;
  domainName: string;
  /** Every name the certificate covers, its domain name among them. */
  subjectAlternativeNames: string[];
  /** `IMPORTED`, `AMAZON_ISSUED` or `PRIVATE`. */
  type: string;
  certificateAuthorityArn?: string;
}

interface Cache {
  list?: { arns: string[]; until: number };
  names: Map<string, { certificate: CertificateWithNames; until: number }>;
  /** The load under way: concurrent callers wait for it instead of listing again. */
  loading?: Promise<CertificateWithNames[]>;
}

const caches = new WeakMap<AcmPort, Cache>();

/** Every ISSUED certificate of the account and region, with its names, from the cache where it is fresh. */
export function certificatesWithNames(acm: AcmPort, clock: Clock): Promise<CertificateWithNames[]> {
  let cache = caches.get(acm);
  if (!cache) {
    cache = { names: new Map() };
    caches.set(acm, cache);
  }
  const current = cache;
  current.loading ??= load(acm, clock, current).finally(() => {
    current.loading = undefined;
  });
  return current.loading;
}

async function load(acm: AcmPort, clock: Clock, cache: Cache): Promise<CertificateWithNames[]> {
  if (!cache.list || cache.list.until <= clock.now()) {
    const arns = (await acm.listIssuedCertificates()).map((c) => c.arn);
    cache.list = { arns, until: clock.now() + CERTIFICATE_LIST_TTL_MS };
    const listed = new Set(arns);
    for (const arn of cache.names.keys()) if (!listed.has(arn)) cache.names.delete(arn);
  }
  const arns = cache.list.arns;
  const found = new Map<string, CertificateWithNames>();
  const stale = arns.filter((arn) => {
    const entry = cache.names.get(arn);
    if (entry && entry.until > clock.now()) found.set(arn, entry.certificate);
    return !found.has(arn);
  });
  let next = 0;
  const worker = async () => {
    while (next < stale.length) {
      const arn = stale[next++]!;
      const detail = await acm.describeCertificate(arn);
      // Deleted since it was listed: it is no longer there to attach.
      if (!detail) continue;
      const certificate: CertificateWithNames = {
        arn: detail.arn,
        domainName: detail.domainName,
        subjectAlternativeNames: [...detail.subjectAlternativeNames],
        type: detail.type,
        ...(detail.certificateAuthorityArn ? { certificateAuthorityArn: detail.certificateAuthorityArn } : {}),
      };
      found.set(arn, certificate);
      const ttl = namesTtl(detail.type);
      if (ttl > 0) cache.names.set(arn, { certificate, until: clock.now() + ttl });
    }
  };
  await Promise.all(Array.from({ length: Math.min(DESCRIBE_CONCURRENCY, stale.length) }, worker));
  return arns.flatMap((arn) => {
    const certificate = found.get(arn);
    return certificate ? [{ ...certificate, subjectAlternativeNames: [...certificate.subjectAlternativeNames] }] : [];
  });
}

/** How long a certificate's names hold, by its type; a type ACM may add later is not cached at all. */
function namesTtl(type: string): number {
  if (type === 'IMPORTED') return IMPORTED_NAMES_TTL_MS;
  if (type === 'AMAZON_ISSUED' || type === 'PRIVATE') return ISSUED_NAMES_TTL_MS;
  return 0;
}
