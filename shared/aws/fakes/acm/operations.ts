import { createPrivateKey, X509Certificate } from 'node:crypto';
import type * as Sdk from '@aws-sdk/client-acm';
import { ACM_LIST_MAX_ITEMS } from '../../acm-port.ts';
import {
  type AcmState,
  AMAZON_ISSUED_VALIDITY_MS,
  CERTIFICATE_STATUSES,
  type CertificateStatus,
  type FakeCertificate,
  uniqueNames,
} from './state.ts';
import { acceptOnly, acmFailure, checkArn, required } from './wire.ts';

/** ACM's operations as the fake answers them, each reading its SDK input and answering its SDK output. */

const KEY_TYPES: ReadonlySet<string> = new Set([
  'RSA_1024',
  'RSA_2048',
  'RSA_3072',
  'RSA_4096',
  'EC_prime256v1',
  'EC_secp384r1',
  'EC_secp521r1',
]);

/**
 * ListCertificates: the certificates whose status is among `CertificateStatuses` (any, when absent) and whose key
 * type is among `Includes.keyTypes` (RSA_2048 alone when absent, as ACM filters by default), at most MaxItems
 * (1-1000) a page, with a NextToken while more are left. A NextToken not issued for this very request is
 * InvalidArgsException. https://docs.aws.amazon.com/acm/latest/APIReference/API_ListCertificates.html
 */
export function listCertificates(acm: AcmState, input: Sdk.ListCertificatesRequest): Sdk.ListCertificatesResponse {
  acceptOnly('ListCertificates', input, ['CertificateStatuses', 'Includes', 'MaxItems', 'NextToken']);
  acceptOnly('ListCertificates Includes', input.Includes ?? {}, ['keyTypes']);
  const statuses = input.CertificateStatuses ?? [];
  for (const s of statuses) {
    if (!CERTIFICATE_STATUSES.includes(s as CertificateStatus)) throw invalidValue('certificateStatuses', s);
  }
  const keyTypes = input.Includes?.keyTypes ?? ['RSA_2048'];
  for (const k of keyTypes) if (!KEY_TYPES.has(k)) throw invalidValue('includes.keyTypes', k);
  const size = input.MaxItems ?? ACM_LIST_MAX_ITEMS;
  if (!Number.isInteger(size) || size < 1 || size > ACM_LIST_MAX_ITEMS) {
    throw acmFailure(
      'ValidationException',
      `1 validation error detected: Value '${size}' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000`,
    );
  }
  const request = JSON.stringify([[...statuses].sort(), [...keyTypes].sort()]);
  const start = input.NextToken === undefined ? 0 : offsetOf(input.NextToken, request);
  const matching = [...acm.certificates.values()].filter(
    (c) => (statuses.length === 0 || statuses.includes(acm.statusOf(c))) && keyTypes.includes(c.keyAlgorithm as never),
  );
  const page = matching.slice(start, start + size);
  const next = start + size < matching.length ? tokenOf(start + size, request) : undefined;
  return {
    CertificateSummaryList: page.map((c) => summaryOf(acm, c)),
    ...(next ? { NextToken: next } : {}),
  };
}

function tokenOf(offset: number, request: string): string {
  return Buffer.from(JSON.stringify({ offset, request })).toString('base64');
}

function offsetOf(token: string, request: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { offset?: unknown; request?: unknown };
    if (typeof parsed.offset === 'number' && parsed.request === request) return parsed.offset;
  } catch {
    // not a token of ours: refused below
  }
  throw acmFailure('InvalidArgsException', `The NextToken ${token} is not valid for this request.`);
}

function invalidValue(field: string, value: string): Error {
  return acmFailure(
    'ValidationException',
    `1 validation error detected: Value '[${value}]' at '${field}' failed to satisfy constraint: Member must satisfy enum value set`,
  );
}

function summaryOf(acm: AcmState, c: FakeCertificate): Sdk.CertificateSummary {
  return {
    CertificateArn: c.arn,
    DomainName: c.domainName,
    SubjectAlternativeNameSummaries: c.subjectAlternativeNames.slice(0, 100),
    HasAdditionalSubjectAlternativeNames: c.subjectAlternativeNames.length > 100,
    Status: acm.statusOf(c),
    Type: c.type,
    KeyAlgorithm: c.keyAlgorithm as Sdk.KeyAlgorithm,
    InUse: c.inUseBy.length > 0,
    CreatedAt: new Date(c.createdAt),
    ...(c.notBefore !== undefined ? { NotBefore: new Date(c.notBefore) } : {}),
    ...(c.notAfter !== undefined ? { NotAfter: new Date(c.notAfter) } : {}),
  };
}

/** https://docs.aws.amazon.com/acm/latest/APIReference/API_DescribeCertificate.html */
export function describeCertificate(
  acm: AcmState,
  input: Sdk.DescribeCertificateRequest,
): Sdk.DescribeCertificateResponse {
  acceptOnly('DescribeCertificate', input, ['CertificateArn']);
  const c = acm.certificateOrThrow(checkArn(input.CertificateArn));
  const status = acm.statusOf(c);
  return {
    Certificate: {
      CertificateArn: c.arn,
      DomainName: c.domainName,
      SubjectAlternativeNames: [...c.subjectAlternativeNames],
      Subject: `CN=${c.domainName}`,
      Issuer: c.issuer,
      Status: status,
      Type: c.type,
      KeyAlgorithm: c.keyAlgorithm as Sdk.KeyAlgorithm,
      InUseBy: [...c.inUseBy],
      CreatedAt: new Date(c.createdAt),
      ...(c.importedAt !== undefined ? { ImportedAt: new Date(c.importedAt) } : {}),
      ...(c.issuedAt !== undefined ? { IssuedAt: new Date(c.issuedAt) } : {}),
      ...(c.notBefore !== undefined ? { NotBefore: new Date(c.notBefore) } : {}),
      ...(c.notAfter !== undefined ? { NotAfter: new Date(c.notAfter) } : {}),
      ...(c.certificateAuthorityArn ? { CertificateAuthorityArn: c.certificateAuthorityArn } : {}),
      ...(c.type === 'AMAZON_ISSUED'
        ? {
            DomainValidationOptions: c.subjectAlternativeNames.map((name) => ({
              DomainName: name,
              ValidationDomain: name,
              ValidationMethod: 'DNS' as const,
              ValidationStatus:
                status === 'PENDING_VALIDATION' ? ('PENDING_VALIDATION' as const) : ('SUCCESS' as const),
            })),
          }
        : {}),
      RenewalEligibility: c.type === 'IMPORTED' ? 'INELIGIBLE' : 'ELIGIBLE',
    },
  };
}

/**
 * ImportCertificate: a PEM certificate and its private key (a re-import keeps the ARN). The names come from the
 * certificate: the subject's common name first, then its DNS subject alternative names; the key type from its
 * public key. A certificate that is not PEM, has expired, or does not match the key is ValidationException.
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_ImportCertificate.html
 * https://docs.aws.amazon.com/acm/latest/userguide/import-certificate-prerequisites.html
 */
export function importCertificate(acm: AcmState, input: Sdk.ImportCertificateRequest): Sdk.ImportCertificateResponse {
  acceptOnly('ImportCertificate', input, ['Certificate', 'PrivateKey', 'CertificateChain', 'CertificateArn', 'Tags']);
  const pem = text(required(input.Certificate, 'certificate'));
  const keyPem = text(required(input.PrivateKey, 'privateKey'));
  const existing = input.CertificateArn ? acm.certificateOrThrow(checkArn(input.CertificateArn)) : undefined;
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(pem);
  } catch {
    throw acmFailure('ValidationException', 'The certificate is not PEM-encoded or is not valid.');
  }
  let matches = false;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    throw acmFailure('ValidationException', 'The private key is not supported.');
  }
  if (!matches)
    throw acmFailure('ValidationException', 'The private key does not match the public key in the certificate.');
  const notBefore = Date.parse(x509.validFrom);
  const notAfter = Date.parse(x509.validTo);
  const now = acm.clock.now();
  if (notAfter <= now) throw acmFailure('ValidationException', 'The certificate has expired, is not valid.');
  const commonName = /(?:^|\n)CN=([^\n]+)/.exec(x509.subject)?.[1];
  const sans = (x509.subjectAltName ?? '')
    .split(', ')
    .flatMap((entry) => (entry.startsWith('DNS:') ? [entry.slice(4)] : []));
  const domainName = commonName ?? sans[0];
  if (!domainName) throw acmFailure('ValidationException', 'The certificate names no domain.');
  const cert: FakeCertificate = {
    arn: existing?.arn ?? acm.newArn(),
    domainName,
    subjectAlternativeNames: uniqueNames([domainName, ...sans]),
    type: 'IMPORTED',
    status: 'ISSUED',
    keyAlgorithm: keyTypeOf(x509),
    issuer: /(?:^|\n)CN=([^\n]+)/.exec(x509.issuer)?.[1] ?? x509.issuer,
    createdAt: existing?.createdAt ?? now,
    importedAt: now,
    notBefore,
    notAfter,
    inUseBy: existing?.inUseBy ?? [],
    tags: { ...(existing?.tags ?? {}), ...tagsOf(input.Tags) },
  };
  acm.certificates.set(cert.arn, cert);
  return { CertificateArn: cert.arn };
}

function text(blob: Uint8Array | string): string {
  return typeof blob === 'string' ? blob : Buffer.from(blob).toString('utf8');
}

function keyTypeOf(x509: X509Certificate): string {
  const key = x509.publicKey;
  if (key.asymmetricKeyType === 'ec') return `EC_${key.asymmetricKeyDetails?.namedCurve ?? 'prime256v1'}`;
  return `RSA_${key.asymmetricKeyDetails?.modulusLength ?? 2048}`;
}

function tagsOf(tags: readonly Sdk.Tag[] | undefined): Record<string, string> {
  return Object.fromEntries((tags ?? []).map((t) => [t.Key ?? '', t.Value ?? '']));
}

/** ACM allows 100 names (the domain name and its alternatives) per requested certificate. */
const MAX_NAMES = 100;

/**
 * RequestCertificate: a public certificate waits in PENDING_VALIDATION until it is validated (`validate`, the
 * fake's stand-in for the DNS record) and times out after 72 hours; one from a private CA is issued at once. The
 * same IdempotencyToken within an hour answers the same certificate.
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_RequestCertificate.html
 */
export function requestCertificate(
  acm: AcmState,
  input: Sdk.RequestCertificateRequest,
): Sdk.RequestCertificateResponse {
  acceptOnly('RequestCertificate', input, [
    'DomainName',
    'SubjectAlternativeNames',
    'ValidationMethod',
    'IdempotencyToken',
    'CertificateAuthorityArn',
    'KeyAlgorithm',
    'Tags',
  ]);
  const domainName = required(input.DomainName, 'domainName');
  const now = acm.clock.now();
  const token = input.IdempotencyToken ? acm.idempotency.get(input.IdempotencyToken) : undefined;
  if (token && token.until > now && acm.certificates.has(token.arn)) return { CertificateArn: token.arn };
  const names = uniqueNames([domainName, ...(input.SubjectAlternativeNames ?? [])]);
  if (names.length > MAX_NAMES) {
    throw acmFailure('LimitExceededException', `A certificate can have at most ${MAX_NAMES} domain names.`);
  }
  const keyAlgorithm = input.KeyAlgorithm ?? 'RSA_2048';
  if (!KEY_TYPES.has(keyAlgorithm)) throw invalidValue('keyAlgorithm', keyAlgorithm);
  const privateCa = input.CertificateAuthorityArn;
  const cert: FakeCertificate = {
    arn: acm.newArn(),
    domainName,
    subjectAlternativeNames: names,
    type: privateCa ? 'PRIVATE' : 'AMAZON_ISSUED',
    status: privateCa ? 'ISSUED' : 'PENDING_VALIDATION',
    keyAlgorithm,
    issuer: privateCa ? privateCa : 'Amazon',
    createdAt: now,
    ...(privateCa
      ? { certificateAuthorityArn: privateCa, issuedAt: now, notBefore: now, notAfter: now + AMAZON_ISSUED_VALIDITY_MS }
      : {}),
    inUseBy: [],
    tags: tagsOf(input.Tags),
  };
  acm.certificates.set(cert.arn, cert);
  if (input.IdempotencyToken) acm.idempotency.set(input.IdempotencyToken, { arn: cert.arn, until: now + 3600_000 });
  return { CertificateArn: cert.arn };
}

/**
 * DeleteCertificate: ResourceInUseException while a load balancer (or another service) uses it.
 * https://docs.aws.amazon.com/acm/latest/APIReference/API_DeleteCertificate.html
 */
export function deleteCertificate(acm: AcmState, input: Sdk.DeleteCertificateRequest): object {
  acceptOnly('DeleteCertificate', input, ['CertificateArn']);
  const cert = acm.certificateOrThrow(checkArn(input.CertificateArn));
  if (cert.inUseBy.length > 0) {
    throw acmFailure('ResourceInUseException', `Certificate ${cert.arn} is in use by ${cert.inUseBy.join(', ')}.`);
  }
  acm.certificates.delete(cert.arn);
  return {};
}
