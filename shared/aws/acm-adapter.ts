import {
  type ACMClient,
  DescribeCertificateCommand,
  ListCertificatesCommand,
  type CertificateSummary as SdkCertificateSummary,
} from '@aws-sdk/client-acm';
import {
  ACM_KEY_TYPES,
  ACM_LIST_MAX_ITEMS,
  type AcmPort,
  type CertificateDetail,
  type CertificateSummary,
} from './acm-port.ts';
import { awsErrorCode, toControllerError } from './errors.ts';
import { allPages } from './paging.ts';

/**
 * AcmPort over the AWS SDK: a pure translation (no caching: shared/aws/certificate-cache.ts caches). ACM speaks
 * JSON: the SDK names each error after its `__type` (`ResourceNotFoundException`).
 * https://docs.aws.amazon.com/acm/latest/APIReference/CommonErrors.html
 */
export class AcmAdapter implements AcmPort {
  constructor(private readonly client: Pick<ACMClient, 'send'>) {}

  /**
   * Every page of ListCertificates, ISSUED ones of every key type (by default ACM lists RSA_2048 ones alone).
   * https://docs.aws.amazon.com/acm/latest/APIReference/API_ListCertificates.html
   */
  async listIssuedCertificates(): Promise<CertificateSummary[]> {
    try {
      const pages = await allPages(
        (NextToken) =>
          this.client.send(
            new ListCertificatesCommand({
              CertificateStatuses: ['ISSUED'],
              Includes: { keyTypes: [...ACM_KEY_TYPES] },
              MaxItems: ACM_LIST_MAX_ITEMS,
              ...(NextToken ? { NextToken } : {}),
            }),
          ),
        (page) => page.NextToken,
      );
      return pages.flatMap((page) => (page.CertificateSummaryList ?? []).flatMap((c) => toSummary(c) ?? []));
    } catch (err) {
      throw toControllerError('listing ACM certificates', err);
    }
  }

  /** https://docs.aws.amazon.com/acm/latest/APIReference/API_DescribeCertificate.html */
  async describeCertificate(arn: string): Promise<CertificateDetail | undefined> {
    try {
      const output = await this.client.send(new DescribeCertificateCommand({ CertificateArn: arn }));
      const c = output.Certificate;
      if (!c?.CertificateArn) return undefined;
      return {
        arn: c.CertificateArn,
        domainName: c.DomainName ?? '',
        subjectAlternativeNames: [...(c.SubjectAlternativeNames ?? [])],
        status: c.Status ?? '',
        type: c.Type ?? '',
        ...(c.CertificateAuthorityArn ? { certificateAuthorityArn: c.CertificateAuthorityArn } : {}),
      };
    } catch (err) {
      if (awsErrorCode(err) === 'ResourceNotFoundException') return undefined;
      throw toControllerError(`describing certificate ${arn}`, err);
    }
  }
}

function toSummary(c: SdkCertificateSummary): CertificateSummary | undefined {
  if (!c.CertificateArn) return undefined;
  return { arn: c.CertificateArn, domainName: c.DomainName ?? '' };
}
