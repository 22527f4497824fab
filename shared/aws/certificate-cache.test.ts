import { DeleteCertificateCommand, RequestCertificateCommand } from '@aws-sdk/client-acm';
import { beforeEach, describe, expect, it } from 'vitest';
import { ThrottledError } from '../errors.ts';
import {
  CERTIFICATE_LIST_TTL_MS,
  certificatesWithNames,
  IMPORTED_NAMES_TTL_MS,
  ISSUED_NAMES_TTL_MS,
} from './certificate-cache.ts';
import { acmWorld, RSA_EXAMPLE_COM } from './fakes/acm/testing.ts';

/** The cache over FakeAcm and its clock: what it answers, and how many ACM calls that costs. */
let w: ReturnType<typeof acmWorld>;
beforeEach(() => {
  w = acmWorld();
});

const discover = () => certificatesWithNames(w.acm, w.clock);
const calls = () => ({ list: w.fake.callCount('ListCertificates'), describe: w.fake.callCount('DescribeCertificate') });

async function seeded() {
  const imported = await w.importPem(RSA_EXAMPLE_COM);
  const { CertificateArn } = await w.fake.send(
    new RequestCertificateCommand({ DomainName: 'app.example.org', SubjectAlternativeNames: ['www.app.example.org'] }),
  );
  w.fake.validate(CertificateArn!);
  w.fake.resetCalls();
  return { imported, issued: CertificateArn! };
}

describe('certificatesWithNames', () => {
  it('answers every ISSUED certificate with its names and type, and nothing pending validation', async () => {
    const { imported, issued } = await seeded();
    await w.fake.send(new RequestCertificateCommand({ DomainName: 'pending.example.org' }));
    expect(await discover()).toEqual([
      {
        arn: imported,
        domainName: 'example.com',
        subjectAlternativeNames: ['example.com', '*.example.com'],
        type: 'IMPORTED',
      },
      {
        arn: issued,
        domainName: 'app.example.org',
        subjectAlternativeNames: ['app.example.org', 'www.app.example.org'],
        type: 'AMAZON_ISSUED',
      },
    ]);
    expect(calls()).toEqual({ list: 1, describe: 2 });
  });

  it('keeps the list a minute: no ACM call within it, and a new certificate shows only after it', async () => {
    await seeded();
    await discover();
    w.fake.putCertificate({ domainName: 'new.example.com' });
    w.clock.advance(CERTIFICATE_LIST_TTL_MS - 1);
    expect(await discover()).toHaveLength(2);
    expect(calls()).toEqual({ list: 1, describe: 2 });
    w.clock.advance(1);
    expect((await discover()).map((c) => c.domainName)).toContain('new.example.com');
    // The list again, and only the new certificate described.
    expect(calls()).toEqual({ list: 2, describe: 3 });
  });

  it("keeps an imported certificate's names 5 minutes and an ACM-issued one's 10 hours", async () => {
    const { imported, issued } = await seeded();
    await discover();
    w.clock.advance(IMPORTED_NAMES_TTL_MS);
    await discover();
    expect(calls()).toEqual({ list: 2, describe: 3 });
    w.clock.advance(ISSUED_NAMES_TTL_MS - IMPORTED_NAMES_TTL_MS);
    w.fake.resetCalls();
    const again = await discover();
    expect(again.map((c) => c.arn)).toEqual([imported, issued]);
    expect(calls()).toEqual({ list: 1, describe: 2 });
  });

  it('drops a certificate no longer ISSUED (expired, deleted) once the list is refreshed', async () => {
    const { imported, issued } = await seeded();
    await discover();
    w.fake.setStatus(issued, 'REVOKED');
    await w.fake.send(new DeleteCertificateCommand({ CertificateArn: imported }));
    w.clock.advance(CERTIFICATE_LIST_TTL_MS);
    expect(await discover()).toEqual([]);
  });

  it('skips a certificate deleted between the list and its description', async () => {
    const { imported, issued } = await seeded();
    w.fake.beforeCall = (op) => {
      if (op === 'DescribeCertificate' && w.fake.certificates.has(issued)) w.fake.certificates.delete(issued);
    };
    expect((await discover()).map((c) => c.arn)).toEqual([imported]);
  });

  it('callers at the same time share one load', async () => {
    await seeded();
    const [a, b] = await Promise.all([discover(), discover()]);
    expect(a).toEqual(b);
    expect(calls()).toEqual({ list: 1, describe: 2 });
  });

  it('a failed load is not kept: the next call asks again', async () => {
    await seeded();
    w.fake.throttle('ListCertificates', 1);
    await expect(discover()).rejects.toBeInstanceOf(ThrottledError);
    expect(await discover()).toHaveLength(2);
    expect(calls()).toEqual({ list: 2, describe: 2 });
  });

  it('each port has its own cache, and a caller cannot change what the cache holds', async () => {
    await seeded();
    const first = await discover();
    first[0]!.subjectAlternativeNames.push('evil.example.com');
    const other = acmWorld();
    expect(await certificatesWithNames(other.acm, other.clock)).toEqual([]);
    expect((await discover())[0]!.subjectAlternativeNames).toEqual(['example.com', '*.example.com']);
  });
});
