/**
 * AWS Certificate Manager as the Ingress controller needs it: the ISSUED certificates and the names each covers,
 * for discovering the certificates of an HTTPS listener from its hosts.
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_ListCertificates.html
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_DescribeCertificate.html
 */
export interface CertificateSummary {
  arn: string;
  domainName: string;
}

export interface CertificateDetail {
  arn: string;
  domainName: string;
  /** Every name the certificate covers (AWS lists the domain name among them). */
  subjectAlternativeNames: string[];
  status: string;
  /** `IMPORTED`, `AMAZON_ISSUED` or `PRIVATE`. */
  type: string;
  certificateAuthorityArn?: string;
}

export interface AcmPort {
  /** Every ISSUED certificate of every key type, all pages. */
  listIssuedCertificates(): Promise<CertificateSummary[]>;
  /** undefined when AWS does not know it (ResourceNotFoundException). */
  describeCertificate(arn: string): Promise<CertificateDetail | undefined>;
}

/**
 * Every key type ACM has. ListCertificates answers RSA_2048 certificates alone unless `Includes.keyTypes` names
 * others: https://docs.aws.amazon.com/acm/latest/APIReference/API_Filters.html
 */
export const ACM_KEY_TYPES = [
  'RSA_1024',
  'RSA_2048',
  'RSA_3072',
  'RSA_4096',
  'EC_prime256v1',
  'EC_secp384r1',
  'EC_secp521r1',
] as const;

/** ListCertificates' largest page (`MaxItems`, 1-1000). */
export const ACM_LIST_MAX_ITEMS = 1000;
