import { readFileSync } from 'node:fs';
import {
  DeleteCertificateCommand,
  DescribeCertificateCommand,
  GetCertificateCommand,
  ImportCertificateCommand,
  InvalidArgsException,
  InvalidArnException,
  ListCertificatesCommand,
  RequestCertificateCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  ValidationException,
} from '@aws-sdk/client-acm';
import { beforeEach, describe, expect, it } from 'vitest';
import { ThrottledError } from '../../../errors.ts';
import { ACM_OPERATIONS } from './fake-acm.ts';
import { VALIDATION_TIMEOUT_MS } from './state.ts';
import { acmWorld, EC_CN_NOT_IN_SANS, EC_SHOP_EXAMPLE_ORG, importInput, RSA_EXAMPLE_COM } from './testing.ts';

/** The fake ACM API behind the real adapter, and through raw SDK commands where the adapter does not reach. */
let w: ReturnType<typeof acmWorld>;
beforeEach(() => {
  w = acmWorld();
});

const rawDescribe = async (arn: string) =>
  (await w.fake.send(new DescribeCertificateCommand({ CertificateArn: arn }))).Certificate!;
const failure = async (promise: Promise<unknown>) => promise.then(() => undefined).catch((e: unknown) => e);

describe('FakeAcm imported certificates', () => {
  it('are ISSUED at once, named by the certificate itself, with the key type of its public key', async () => {
    const rsa = await w.importPem(RSA_EXAMPLE_COM);
    const ec = await w.importPem(EC_SHOP_EXAMPLE_ORG);

    expect(await w.acm.listIssuedCertificates()).toEqual([
      { arn: rsa, domainName: 'example.com' },
      { arn: ec, domainName: 'shop.example.org' },
    ]);
    expect(await w.acm.describeCertificate(ec)).toEqual({
      arn: ec,
      domainName: 'shop.example.org',
      subjectAlternativeNames: ['shop.example.org', 'www.shop.example.org'],
      status: 'ISSUED',
      type: 'IMPORTED',
    });
    expect(await rawDescribe(rsa)).toMatchObject({
      KeyAlgorithm: 'RSA_2048',
      NotBefore: new Date('2020-01-01T00:00:00Z'),
      NotAfter: new Date('2120-01-01T00:00:00Z'),
    });
    expect((await rawDescribe(ec)).KeyAlgorithm).toBe('EC_prime256v1');
  });

  it("lists the subject's common name among the names, first, when the certificate's alternatives leave it out", async () => {
    const arn = await w.importPem(EC_CN_NOT_IN_SANS);
    expect((await w.acm.describeCertificate(arn))?.subjectAlternativeNames).toEqual([
      'legacy.example.net',
      'api.example.net',
    ]);
  });

  it('refuses a certificate that is not PEM, or whose private key is not its own (ValidationException)', async () => {
    const notPem = { ...importInput(RSA_EXAMPLE_COM), Certificate: Buffer.from('not a certificate') };
    const otherKey = { ...importInput(RSA_EXAMPLE_COM), PrivateKey: Buffer.from(EC_SHOP_EXAMPLE_ORG.privateKey) };
    expect(await failure(w.fake.send(new ImportCertificateCommand(notPem)))).toBeInstanceOf(ValidationException);
    expect(await failure(w.fake.send(new ImportCertificateCommand(otherKey)))).toBeInstanceOf(ValidationException);
    expect(w.fake.certificates.size).toBe(0);
  });

  it('refuses a certificate past its NotAfter by the clock (ValidationException)', async () => {
    w.clock.set(Date.parse('2120-01-01T00:00:00Z'));
    expect(await failure(w.importPem(RSA_EXAMPLE_COM))).toBeInstanceOf(ValidationException);
    w.clock.set(Date.parse('2119-12-31T23:59:59Z'));
    const arn = await w.importPem(RSA_EXAMPLE_COM);
    w.clock.advance(1000);
    expect((await w.acm.describeCertificate(arn))?.status).toBe('EXPIRED');
  });

  it('a re-import keeps the ARN and takes the new names; a re-import of an unknown ARN is ResourceNotFound', async () => {
    const arn = await w.importPem(RSA_EXAMPLE_COM);
    await w.fake.send(new ImportCertificateCommand({ ...importInput(EC_SHOP_EXAMPLE_ORG), CertificateArn: arn }));
    expect((await w.acm.describeCertificate(arn))?.domainName).toBe('shop.example.org');
    expect(w.fake.certificates.size).toBe(1);
    const unknown = arn.replace(/.$/, 'f');
    expect(
      await failure(
        w.fake.send(new ImportCertificateCommand({ ...importInput(RSA_EXAMPLE_COM), CertificateArn: unknown })),
      ),
    ).toBeInstanceOf(ResourceNotFoundException);
  });

  it('is EXPIRED once the clock passes NotAfter, and no longer listed as ISSUED', async () => {
    const cert = w.fake.putCertificate({ domainName: 'old.example.com', notAfter: w.clock.now() + 1000 });
    expect(await w.acm.listIssuedCertificates()).toHaveLength(1);
    w.clock.advance(1000);
    expect(await w.acm.listIssuedCertificates()).toEqual([]);
    expect((await w.acm.describeCertificate(cert.arn))?.status).toBe('EXPIRED');
  });
});

describe('FakeAcm requested certificates', () => {
  it('a public one waits in PENDING_VALIDATION (not listed as ISSUED) until validated', async () => {
    const { CertificateArn } = await w.fake.send(
      new RequestCertificateCommand({ DomainName: 'app.example.com', SubjectAlternativeNames: ['*.app.example.com'] }),
    );
    const arn = CertificateArn!;
    expect(await w.acm.listIssuedCertificates()).toEqual([]);
    expect(await w.acm.describeCertificate(arn)).toMatchObject({
      status: 'PENDING_VALIDATION',
      type: 'AMAZON_ISSUED',
      subjectAlternativeNames: ['app.example.com', '*.app.example.com'],
    });
    w.fake.validate(arn);
    expect(await w.acm.listIssuedCertificates()).toEqual([{ arn, domainName: 'app.example.com' }]);
  });

  it('times out 72 hours after the request when never validated', async () => {
    const { CertificateArn } = await w.fake.send(new RequestCertificateCommand({ DomainName: 'late.example.com' }));
    w.clock.advance(VALIDATION_TIMEOUT_MS);
    expect((await w.acm.describeCertificate(CertificateArn!))?.status).toBe('VALIDATION_TIMED_OUT');
  });

  it('a private one is ISSUED at once, with its authority; the same idempotency token answers the same certificate', async () => {
    const ca = 'arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/ca-1';
    const request = { DomainName: 'internal.example.com', CertificateAuthorityArn: ca, IdempotencyToken: 'once' };
    const first = await w.fake.send(new RequestCertificateCommand(request));
    const again = await w.fake.send(new RequestCertificateCommand(request));
    expect(again.CertificateArn).toBe(first.CertificateArn);
    expect(await w.acm.describeCertificate(first.CertificateArn!)).toMatchObject({
      status: 'ISSUED',
      type: 'PRIVATE',
      certificateAuthorityArn: ca,
    });
  });
});

describe('FakeAcm ListCertificates', () => {
  it('lists RSA_2048 certificates alone unless other key types are asked for', async () => {
    await w.importPem(RSA_EXAMPLE_COM);
    await w.importPem(EC_SHOP_EXAMPLE_ORG);
    const plain = await w.fake.send(new ListCertificatesCommand({}));
    expect(plain.CertificateSummaryList?.map((c) => c.DomainName)).toEqual(['example.com']);
    const ec = await w.fake.send(new ListCertificatesCommand({ Includes: { keyTypes: ['EC_prime256v1'] } }));
    expect(ec.CertificateSummaryList?.map((c) => c.DomainName)).toEqual(['shop.example.org']);
  });

  it('pages by MaxItems with a NextToken that holds only for the same request', async () => {
    for (let i = 0; i < 5; i++) w.fake.putCertificate({ domainName: `n${i}.example.com` });
    const names: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await w.fake.send(new ListCertificatesCommand({ MaxItems: 2, NextToken: token }));
      names.push(...(page.CertificateSummaryList ?? []).map((c) => c.DomainName!));
      token = page.NextToken;
      pages++;
    } while (token);
    expect(pages).toBe(3);
    expect(names).toEqual(['n0', 'n1', 'n2', 'n3', 'n4'].map((n) => `${n}.example.com`));

    const first = await w.fake.send(new ListCertificatesCommand({ MaxItems: 2 }));
    const otherRequest = new ListCertificatesCommand({
      MaxItems: 2,
      NextToken: first.NextToken,
      CertificateStatuses: ['ISSUED'],
    });
    expect(await failure(w.fake.send(otherRequest))).toBeInstanceOf(InvalidArgsException);
    expect(await failure(w.fake.send(new ListCertificatesCommand({ MaxItems: 1001 })))).toBeInstanceOf(
      ValidationException,
    );
  });

  it('the adapter reads every page: 1,200 certificates in two calls', async () => {
    for (let i = 0; i < 1200; i++) w.fake.putCertificate({ domainName: `n${i}.example.com` });
    expect(await w.acm.listIssuedCertificates()).toHaveLength(1200);
    expect(w.fake.callCount('ListCertificates')).toBe(2);
  });
});

describe('FakeAcm errors and controls', () => {
  it('an unknown certificate is ResourceNotFoundException (undefined through the adapter), a malformed ARN InvalidArnException', async () => {
    const unknown = 'arn:aws:acm:eu-west-1:111122223333:certificate/00000000-0000-0000-0000-000000000000';
    expect(await failure(rawDescribe(unknown))).toBeInstanceOf(ResourceNotFoundException);
    expect(await w.acm.describeCertificate(unknown)).toBeUndefined();
    expect(await failure(rawDescribe('not-an-arn'))).toBeInstanceOf(InvalidArnException);
  });

  it('a certificate in use cannot be deleted (ResourceInUseException); once free it goes', async () => {
    const arn = await w.importPem(RSA_EXAMPLE_COM);
    w.fake.setInUse(arn, ['arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/app/web/1']);
    const remove = () => w.fake.send(new DeleteCertificateCommand({ CertificateArn: arn }));
    expect(await failure(remove())).toBeInstanceOf(ResourceInUseException);
    w.fake.setInUse(arn, []);
    await remove();
    expect(await w.acm.describeCertificate(arn)).toBeUndefined();
  });

  it('throttles, queues errors and counts calls per operation', async () => {
    w.fake.throttle('ListCertificates', 1);
    expect(await failure(w.acm.listIssuedCertificates())).toBeInstanceOf(ThrottledError);
    expect(await w.acm.listIssuedCertificates()).toEqual([]);
    w.fake.queueError('DescribeCertificate', new Error('boom'));
    expect(await failure(w.acm.describeCertificate('arn:aws:acm:eu-west-1:111122223333:certificate/x'))).toBeInstanceOf(
      Error,
    );
    expect(w.fake.callCount('ListCertificates')).toBe(2);
    expect(w.fake.callCount()).toBe(3);
  });

  it('answers every command AcmAdapter sends', () => {
    const adapter = readFileSync(new URL('../../acm-adapter.ts', import.meta.url), 'utf8');
    const sent = [...adapter.matchAll(/new (\w+)Command\(/g)].map((m) => m[1]);
    expect(sent.length).toBeGreaterThan(0);
    for (const command of sent) expect(ACM_OPERATIONS).toContain(command);
  });

  it('refuses commands and fields it does not model, loudly', async () => {
    await expect(w.fake.send(new GetCertificateCommand({ CertificateArn: 'x' }) as never)).rejects.toThrow(
      'FakeAcm does not implement GetCertificate',
    );
    await expect(w.fake.send(new ListCertificatesCommand({ SortBy: 'CREATED_AT' }))).rejects.toThrow(
      'FakeAcm does not model ListCertificates with SortBy',
    );
  });
});
