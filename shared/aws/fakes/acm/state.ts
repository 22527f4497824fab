import type { Clock } from '../../../clock.ts';
import { acmFailure } from './wire.ts';

/** A certificate as ACM keeps it. Times are epoch milliseconds of the fake's clock. */
export interface FakeCertificate {
  arn: string;
  domainName: string;
  /** The domain name first, then the other names, each once (as DescribeCertificate lists them). */
  subjectAlternativeNames: string[];
  type: 'IMPORTED' | 'AMAZON_ISSUED' | 'PRIVATE';
  /** The status set by ACM's workflow; `statusOf` adds what time does (EXPIRED, VALIDATION_TIMED_OUT). */
  status: CertificateStatus;
  /** `RSA_2048`, `EC_prime256v1`, ... (the ListCertificates key type). */
  keyAlgorithm: string;
  certificateAuthorityArn?: string;
  issuer: string;
  createdAt: number;
  importedAt?: number;
  issuedAt?: number;
  notBefore?: number;
  notAfter?: number;
  /** ARNs of the load balancers (and other services) that use it: it cannot be deleted meanwhile. */
  inUseBy: string[];
  tags: Record<string, string>;
}

export type CertificateStatus =
  | 'PENDING_VALIDATION'
  | 'ISSUED'
  | 'INACTIVE'
  | 'EXPIRED'
  | 'VALIDATION_TIMED_OUT'
  | 'REVOKED'
  | 'FAILED';

export const CERTIFICATE_STATUSES: readonly CertificateStatus[] = [
  'PENDING_VALIDATION',
  'ISSUED',
  'INACTIVE',
  'EXPIRED',
  'VALIDATION_TIMED_OUT',
  'REVOKED',
  'FAILED',
];

/**
 * ACM tries to validate a requested certificate for 72 hours, then times out (`Status`):
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_CertificateDetail.html
 */
export const VALIDATION_TIMEOUT_MS = 72 * 3600_000;
/**
 * How long the fake's issued certificates are valid: 395 days, ACM's long-standing term for public certificates (the
 * controller never reads it; tests that care about expiry set NotAfter themselves).
 */
export const AMAZON_ISSUED_VALIDITY_MS = 395 * 86_400_000;

/** The account's certificates, and what the fake's operations share. */
export class AcmState {
  readonly certificates = new Map<string, FakeCertificate>();
  region = 'eu-west-1';
  account = '111122223333';
  /** RequestCertificate's IdempotencyToken -> the ARN it made and until when the token holds (one hour). */
  readonly idempotency = new Map<string, { arn: string; until: number }>();
  private counter = 0;

  constructor(readonly clock: Clock) {}

  newArn(): string {
    const n = (++this.counter).toString(16).padStart(12, '0');
    return `arn:aws:acm:${this.region}:${this.account}:certificate/00000000-0000-4000-8000-${n}`;
  }

  /** The status ACM would answer now: an issued certificate past its NotAfter is EXPIRED, a stale request timed out. */
  statusOf(cert: FakeCertificate): CertificateStatus {
    const now = this.clock.now();
    if (cert.status === 'ISSUED' && cert.notAfter !== undefined && cert.notAfter <= now) return 'EXPIRED';
    if (cert.status === 'PENDING_VALIDATION' && now - cert.createdAt >= VALIDATION_TIMEOUT_MS) {
      return 'VALIDATION_TIMED_OUT';
    }
    return cert.status;
  }

  certificateOrThrow(arn: string): FakeCertificate {
    const cert = this.certificates.get(arn);
    if (!cert) throw acmFailure('ResourceNotFoundException', `Could not find certificate ${arn}.`);
    return cert;
  }

  // ---- test controls -------------------------------------------------------------------------------

  /** A certificate put straight into the account (no PEM): the fields not given are an imported RSA one's. */
  putCertificate(input: Partial<FakeCertificate> & { domainName: string }): FakeCertificate {
    const now = this.clock.now();
    const cert: FakeCertificate = {
      arn: input.arn ?? this.newArn(),
      type: 'IMPORTED',
      status: 'ISSUED',
      keyAlgorithm: 'RSA_2048',
      issuer: input.domainName,
      createdAt: now,
      notBefore: now,
      notAfter: now + AMAZON_ISSUED_VALIDITY_MS,
      inUseBy: [],
      tags: {},
      ...input,
      subjectAlternativeNames: uniqueNames([input.domainName, ...(input.subjectAlternativeNames ?? [])]),
    };
    this.certificates.set(cert.arn, cert);
    return cert;
  }

  /** What DNS or email validation would do: the requested certificate is ISSUED, valid 395 days from now. */
  validate(arn: string): void {
    const cert = this.certificateOrThrow(arn);
    if (cert.type !== 'AMAZON_ISSUED' || this.statusOf(cert) !== 'PENDING_VALIDATION') {
      throw new Error(`FakeAcm: ${arn} is not waiting for validation`);
    }
    const now = this.clock.now();
    Object.assign(cert, { status: 'ISSUED', issuedAt: now, notBefore: now, notAfter: now + AMAZON_ISSUED_VALIDITY_MS });
  }

  /** Any other change of status (REVOKED, INACTIVE, FAILED, ...). */
  setStatus(arn: string, status: CertificateStatus): void {
    this.certificateOrThrow(arn).status = status;
  }

  /** The resources using the certificate (ACM fills InUseBy as load balancers take it). */
  setInUse(arn: string, users: readonly string[]): void {
    this.certificateOrThrow(arn).inUseBy = [...users];
  }
}

/** Each name once, the first occurrence first. */
export function uniqueNames(names: readonly string[]): string[] {
  return [...new Set(names)];
}
