import { certificatesWithNames } from '../../../shared/aws/certificate-cache.ts';
import type { IngressDeps } from '../deps.ts';

/**
 * The certificates discovery may attach: every ISSUED certificate of the account and region with the names it
 * covers, from the cache a warm function keeps (the list for a minute, each certificate's names for longer).
 */
export async function discoverableCertificates(
  deps: Pick<IngressDeps, 'acm' | 'clock'>,
): Promise<{ arn: string; names: string[] }[]> {
  const certificates = await certificatesWithNames(deps.acm, deps.clock);
  return certificates.map((c) => ({ arn: c.arn, names: c.subjectAlternativeNames }));
}
