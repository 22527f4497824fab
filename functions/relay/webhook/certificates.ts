// @peculiar/x509 resolves its ASN.1 classes through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

/**
 * X.509 for the webhook's self-managed TLS: a CA, and a serving certificate it signs for the webhook
 * Service's DNS names. ECDSA P-256 (the API server, Go's TLS, accepts it; keys are small and quick to
 * make). The CA's key is used once and dropped: a rotation makes a new CA, so no CA key is ever stored.
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#contacting-the-webhook
 */

x509.cryptoProvider.set(globalThis.crypto);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** Certificates start an hour early: a clock a little behind ours must not see one as not yet valid. */
const BACKDATE_MS = 60 * 60 * 1000;

export interface IssuedCertificate {
  /** PEM of the new CA. */
  ca: string;
  /** PEM of the serving certificate. */
  cert: string;
  /** PEM (PKCS #8) of the serving certificate's key. */
  key: string;
}

export type CertificateIssuer = (request: {
  dnsNames: string[];
  now: number;
  lifetimeMs: number;
}) => Promise<IssuedCertificate>;

const serial = () =>
  Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');

/** A fresh CA and a serving certificate for `dnsNames`, both valid for `lifetimeMs` from `now`. */
export const issueCertificate: CertificateIssuer = async ({ dnsNames, now, lifetimeMs }) => {
  const notBefore = new Date(now - BACKDATE_MS);
  const notAfter = new Date(now + lifetimeMs);
  const caKeys = await globalThis.crypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    // A name of its own: during a rotation the bundle holds two CAs, and a verifier that looks the
    // issuer up by name must not find the other one.
    name: `CN=serverless-ccm-webhook-ca-${serial().slice(0, 12)}`,
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = await globalThis.crypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${dnsNames[0]}`,
    issuer: ca.subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(dnsNames.map((value) => ({ type: 'dns' as const, value }))),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  const pkcs8 = await globalThis.crypto.subtle.exportKey('pkcs8', keys.privateKey);
  return {
    ca: ca.toString('pem'),
    cert: cert.toString('pem'),
    key: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'),
  };
};

/** The certificates of a PEM bundle, in order. */
export function splitBundle(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((c) => `${c}\n`) ?? [];
}

export const joinBundle = (pems: readonly string[]): string => pems.map((p) => `${p.trim()}\n`).join('');

export interface CertificateFacts {
  notBefore: number;
  notAfter: number;
  dnsNames: string[];
}

/** Validity and DNS names of a PEM certificate; throws on anything that is not one. */
export function describeCertificate(pem: string): CertificateFacts {
  const cert = new x509.X509Certificate(pem);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return {
    notBefore: cert.notBefore.getTime(),
    notAfter: cert.notAfter.getTime(),
    dnsNames: san?.names.items.filter((n) => n.type === 'dns').map((n) => n.value) ?? [],
  };
}

/** The certificate of `bundle` that signed `pem`, when one did. */
export async function issuerIn(bundle: readonly string[], pem: string): Promise<string | undefined> {
  const cert = new x509.X509Certificate(pem);
  for (const candidate of bundle) {
    const ca = new x509.X509Certificate(candidate);
    if (ca.subject !== cert.issuer) continue;
    if (await cert.verify({ publicKey: ca.publicKey, signatureOnly: true })) return candidate;
  }
  return undefined;
}
