import { readFileSync } from 'node:fs';
import {
  ACMClient,
  DeleteCertificateCommand,
  ImportCertificateCommand,
  ListCertificatesCommand,
  RequestCertificateCommand,
} from '@aws-sdk/client-acm';
import { describe, expect, it } from 'vitest';
import { AcmAdapter } from '../../shared/aws/acm-adapter.ts';
import type { AcmPort } from '../../shared/aws/acm-port.ts';
import { certificatesWithNames } from '../../shared/aws/certificate-cache.ts';
import { FakeAcm } from '../../shared/aws/fakes/acm/fake-acm.ts';
import {
  EC_CN_NOT_IN_SANS,
  EC_SHOP_EXAMPLE_ORG,
  importInput,
  type PemPair,
  RSA_EXAMPLE_COM,
} from '../../shared/aws/fakes/acm/testing.ts';
import { FakeClock } from '../../shared/clock.ts';
import { EMULATOR_AVAILABLE, type Emulator, startEmulator } from '../helpers/emulator.ts';
import type { BackendFactory } from './backends.ts';
import { describeContract } from './contract.ts';
import { differenceRow, hasTest } from './difference-rows.ts';

/**
 * The ACM behaviours the Ingress controller's certificate discovery relies on (shared/aws/certificate-cache.ts), run
 * on `AcmAdapter` over the AWS API emulator and over `FakeAcm`. Certificates are made with the same ACM commands on
 * both (the fake answers them too): imported ones are ISSUED at once everywhere; requested public ones wait for a
 * validation that never comes here (the emulator's MOTO_ACM_VALIDATION_WAIT is left at its 60 seconds). What the
 * emulator does not do like ACM is a row of docs/emulator-differences.md, and its test is expected to fail there
 * (`it.fails`; CONTRACT_SHOW_DIFFERENCES=1 runs it as a plain test). Time (expiry, the 72-hour validation timeout)
 * is the fake's own test, shared/aws/fakes/acm/fake-acm.test.ts: the emulator has no clock to move.
 */
const EMULATOR_DIFFERS = {
  paging: 'acm.list-paging',
  defaultKeyTypes: 'acm.default-key-types',
  commonName: 'acm.imported-names-common-name',
} as const;

interface AcmBackend {
  acm: AcmPort;
  /** The ACM API itself, to make certificates and to look where the port does not. */
  client: Pick<ACMClient, 'send'>;
}

function emulatorFactory(): BackendFactory<AcmBackend> {
  let emulator: Emulator | undefined;
  return {
    kind: 'emulator',
    available: EMULATOR_AVAILABLE,
    async start() {
      emulator = await startEmulator();
    },
    async fresh() {
      if (!emulator) throw new Error('emulator backend not started');
      await emulator.reset();
      const client = new ACMClient(emulator.clientConfig);
      return { acm: new AcmAdapter(client), client };
    },
    async stop() {
      await emulator?.stop();
      emulator = undefined;
    },
  };
}

function fakeFactory(): BackendFactory<AcmBackend> {
  return {
    kind: 'fake',
    available: true,
    async start() {},
    async fresh() {
      const fake = new FakeAcm(new FakeClock());
      return { acm: new AcmAdapter(fake), client: fake };
    },
    async stop() {},
  };
}

describeContract<AcmBackend>('ACM certificates', [emulatorFactory(), fakeFactory()], (backend, _test, kind) => {
  const differs = (key: string, name: string, fn: () => Promise<void>) => {
    const expectFailure = kind === 'emulator' && !process.env.CONTRACT_SHOW_DIFFERENCES;
    (expectFailure ? it.fails : it)(kind === 'emulator' ? `${name} [emulator differs: ${key}]` : name, fn, 30_000);
  };
  const imported = async (pair: PemPair) => {
    const output = await backend().client.send(new ImportCertificateCommand(importInput(pair)));
    return output.CertificateArn!;
  };
  const sorted = (names: readonly string[] | undefined) => [...(names ?? [])].sort();

  it('lists an imported certificate as ISSUED, and describes its names and type', async () => {
    const arn = await imported(RSA_EXAMPLE_COM);
    expect(await backend().acm.listIssuedCertificates()).toEqual([{ arn, domainName: 'example.com' }]);
    const detail = await backend().acm.describeCertificate(arn);
    expect(detail).toMatchObject({ arn, domainName: 'example.com', status: 'ISSUED', type: 'IMPORTED' });
    // The order of the names is not stable on every backend; discovery treats them as a set.
    expect(sorted(detail?.subjectAlternativeNames)).toEqual(['*.example.com', 'example.com']);
  });

  it('lists certificates of every key type, an EC one beside an RSA one', async () => {
    const rsa = await imported(RSA_EXAMPLE_COM);
    const ec = await imported(EC_SHOP_EXAMPLE_ORG);
    const listed = await backend().acm.listIssuedCertificates();
    expect(listed.map((c) => c.arn).sort()).toEqual([rsa, ec].sort());
  });

  it('does not list a requested certificate waiting for validation, and describes it as such', async () => {
    const { CertificateArn } = await backend().client.send(
      new RequestCertificateCommand({
        DomainName: 'app.example.com',
        SubjectAlternativeNames: ['www.app.example.com'],
        ValidationMethod: 'DNS',
      }),
    );
    expect(await backend().acm.listIssuedCertificates()).toEqual([]);
    const detail = await backend().acm.describeCertificate(CertificateArn!);
    expect(detail).toMatchObject({
      status: 'PENDING_VALIDATION',
      type: 'AMAZON_ISSUED',
      domainName: 'app.example.com',
    });
    expect(sorted(detail?.subjectAlternativeNames)).toEqual(['app.example.com', 'www.app.example.com']);
  });

  it('lists a certificate of a private authority as ISSUED, with its authority', async () => {
    const ca = 'arn:aws:acm-pca:eu-west-1:111122223333:certificate-authority/11111111-2222-3333-4444-555555555555';
    const { CertificateArn } = await backend().client.send(
      new RequestCertificateCommand({ DomainName: 'internal.example.com', CertificateAuthorityArn: ca }),
    );
    expect(await backend().acm.listIssuedCertificates()).toEqual([
      { arn: CertificateArn, domainName: 'internal.example.com' },
    ]);
    expect(await backend().acm.describeCertificate(CertificateArn!)).toMatchObject({
      type: 'PRIVATE',
      certificateAuthorityArn: ca,
    });
  });

  it('answers undefined for a certificate that does not exist, and for one deleted', async () => {
    const arn = await imported(RSA_EXAMPLE_COM);
    const unknown = arn.replace(/[0-9a-f]{12}$/, '000000000000');
    expect(await backend().acm.describeCertificate(unknown)).toBeUndefined();
    await backend().client.send(new DeleteCertificateCommand({ CertificateArn: arn }));
    expect(await backend().acm.describeCertificate(arn)).toBeUndefined();
    expect(await backend().acm.listIssuedCertificates()).toEqual([]);
  });

  it("discovery answers each ISSUED certificate with its names, from ACM's answers", async () => {
    const rsa = await imported(RSA_EXAMPLE_COM);
    const ec = await imported(EC_SHOP_EXAMPLE_ORG);
    await backend().client.send(new RequestCertificateCommand({ DomainName: 'pending.example.com' }));
    const found = await certificatesWithNames(backend().acm, new FakeClock());
    expect(
      found
        .map((c) => ({ arn: c.arn, type: c.type, names: sorted(c.subjectAlternativeNames) }))
        .sort((a, b) => a.arn.localeCompare(b.arn)),
    ).toEqual(
      [
        { arn: rsa, type: 'IMPORTED', names: ['*.example.com', 'example.com'] },
        { arn: ec, type: 'IMPORTED', names: ['shop.example.org', 'www.shop.example.org'] },
      ].sort((a, b) => a.arn.localeCompare(b.arn)),
    );
  });

  differs(EMULATOR_DIFFERS.paging, 'ListCertificates pages by MaxItems, with a NextToken to the rest', async () => {
    const arns = [await imported(RSA_EXAMPLE_COM), await imported(EC_SHOP_EXAMPLE_ORG)];
    const request = { Includes: { keyTypes: ['RSA_2048' as const, 'EC_prime256v1' as const] }, MaxItems: 1 };
    const first = await backend().client.send(new ListCertificatesCommand(request));
    expect(first.CertificateSummaryList).toHaveLength(1);
    expect(first.NextToken).toBeDefined();
    const second = await backend().client.send(new ListCertificatesCommand({ ...request, NextToken: first.NextToken }));
    const listed = [...(first.CertificateSummaryList ?? []), ...(second.CertificateSummaryList ?? [])];
    expect(listed.map((c) => c.CertificateArn).sort()).toEqual(arns.sort());
  });

  differs(
    EMULATOR_DIFFERS.defaultKeyTypes,
    'ListCertificates without key types lists RSA 2048 certificates alone',
    async () => {
      const rsa = await imported(RSA_EXAMPLE_COM);
      await imported(EC_SHOP_EXAMPLE_ORG);
      const listed = await backend().client.send(new ListCertificatesCommand({}));
      expect(listed.CertificateSummaryList?.map((c) => c.CertificateArn)).toEqual([rsa]);
    },
  );

  differs(
    EMULATOR_DIFFERS.commonName,
    "an imported certificate's names include its subject's common name",
    async () => {
      const arn = await imported(EC_CN_NOT_IN_SANS);
      const detail = await backend().acm.describeCertificate(arn);
      expect(sorted(detail?.subjectAlternativeNames)).toEqual(['api.example.net', 'legacy.example.net']);
    },
  );
});

describe('the rows of the differences table (docs) for this suite', () => {
  const source = readFileSync(import.meta.filename, 'utf8');
  it.each(Object.values(EMULATOR_DIFFERS))('%s has its row, naming tests of this file', (key) => {
    const row = differenceRow(key);
    expect(row?.file).toBe('acm.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
