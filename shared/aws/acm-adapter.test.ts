import {
  ACMClient,
  DescribeCertificateCommand,
  InvalidArnException,
  ListCertificatesCommand,
  ResourceNotFoundException,
  ThrottlingException,
} from '@aws-sdk/client-acm';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { AcmAdapter } from './acm-adapter.ts';

const client = new ACMClient({ region: 'eu-west-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
const acm = mockClient(client);
const adapter = new AcmAdapter(client);

const arn = (n: number) => `arn:aws:acm:eu-west-1:111122223333:certificate/0000000${n}-1111-2222-3333-444444444444`;
const inputs = <T>(command: T) =>
  acm.commandCalls(command as Parameters<typeof acm.commandCalls>[0]).map((c) => c.args[0].input);
const ALL_KEY_TYPES = ['RSA_1024', 'RSA_2048', 'RSA_3072', 'RSA_4096', 'EC_prime256v1', 'EC_secp384r1', 'EC_secp521r1'];

beforeEach(() => {
  acm.reset();
});

describe('AcmAdapter.listIssuedCertificates', () => {
  it('asks for ISSUED certificates of every key type, 1000 a page, and follows NextToken to the end', async () => {
    acm
      .on(ListCertificatesCommand)
      .resolvesOnce({
        CertificateSummaryList: [{ CertificateArn: arn(1), DomainName: 'a.example.com' }],
        NextToken: 'page-2',
      })
      .resolvesOnce({
        CertificateSummaryList: [{ CertificateArn: arn(2), DomainName: '*.example.com' }, { DomainName: 'no-arn' }],
      });

    expect(await adapter.listIssuedCertificates()).toEqual([
      { arn: arn(1), domainName: 'a.example.com' },
      { arn: arn(2), domainName: '*.example.com' },
    ]);
    const base = { CertificateStatuses: ['ISSUED'], Includes: { keyTypes: ALL_KEY_TYPES }, MaxItems: 1000 };
    expect(inputs(ListCertificatesCommand)).toEqual([base, { ...base, NextToken: 'page-2' }]);
  });

  it('answers an empty list for an account without certificates', async () => {
    acm.on(ListCertificatesCommand).resolves({});
    expect(await adapter.listIssuedCertificates()).toEqual([]);
    expect(inputs(ListCertificatesCommand)).toHaveLength(1);
  });

  it('stops when a token comes back repeated, rather than asking forever', async () => {
    acm.on(ListCertificatesCommand).resolves({ CertificateSummaryList: [], NextToken: 'same' });
    expect(await adapter.listIssuedCertificates()).toEqual([]);
    expect(inputs(ListCertificatesCommand)).toHaveLength(2);
  });

  it('classifies failures: throttling is ThrottledError, anything else by its code, the SDK error kept as cause', async () => {
    const throttled = new ThrottlingException({ $metadata: { httpStatusCode: 400 }, message: 'Rate exceeded' });
    acm.on(ListCertificatesCommand).rejectsOnce(throttled).rejectsOnce(new Error('socket hang up'));
    const first = await adapter.listIssuedCertificates().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ThrottledError);
    expect((first as Error).message).toMatch(/^listing ACM certificates: ThrottlingException/);
    expect((first as Error).cause).toBe(throttled);
    expect(await adapter.listIssuedCertificates().catch((e: unknown) => e)).toBeInstanceOf(RetryableError);
  });
});

describe('AcmAdapter.describeCertificate', () => {
  it('asks for the one certificate and answers its names, status, type and authority', async () => {
    acm.on(DescribeCertificateCommand).resolves({
      Certificate: {
        CertificateArn: arn(1),
        DomainName: 'example.com',
        SubjectAlternativeNames: ['example.com', '*.example.com'],
        Status: 'ISSUED',
        Type: 'PRIVATE',
        CertificateAuthorityArn: 'arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/ca',
        KeyAlgorithm: 'EC_prime256v1',
      },
    });
    expect(await adapter.describeCertificate(arn(1))).toEqual({
      arn: arn(1),
      domainName: 'example.com',
      subjectAlternativeNames: ['example.com', '*.example.com'],
      status: 'ISSUED',
      type: 'PRIVATE',
      certificateAuthorityArn: 'arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/ca',
    });
    expect(inputs(DescribeCertificateCommand)).toEqual([{ CertificateArn: arn(1) }]);
  });

  it('leaves out the authority of a certificate that has none', async () => {
    acm.on(DescribeCertificateCommand).resolves({
      Certificate: { CertificateArn: arn(2), DomainName: 'a.example.com', Status: 'ISSUED', Type: 'IMPORTED' },
    });
    expect(await adapter.describeCertificate(arn(2))).toEqual({
      arn: arn(2),
      domainName: 'a.example.com',
      subjectAlternativeNames: [],
      status: 'ISSUED',
      type: 'IMPORTED',
    });
  });

  it('a certificate ACM does not know (ResourceNotFoundException) is undefined', async () => {
    acm
      .on(DescribeCertificateCommand)
      .rejects(new ResourceNotFoundException({ $metadata: { httpStatusCode: 400 }, message: 'not found' }));
    expect(await adapter.describeCertificate(arn(3))).toBeUndefined();
  });

  it('a malformed ARN is a terminal error naming the certificate', async () => {
    acm
      .on(DescribeCertificateCommand)
      .rejects(new InvalidArnException({ $metadata: { httpStatusCode: 400 }, message: 'bad arn' }));
    const err = await adapter.describeCertificate('arn:nope').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect((err as Error).message).toMatch(/^describing certificate arn:nope: InvalidArnException/);
  });
});
