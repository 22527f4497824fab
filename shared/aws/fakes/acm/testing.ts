import { ImportCertificateCommand } from '@aws-sdk/client-acm';
import { FakeClock } from '../../../clock.ts';
import { AcmAdapter } from '../../acm-adapter.ts';
import { FakeAcm } from './fake-acm.ts';

/**
 * What the FakeAcm tests and the ACM contract suite share: self-signed certificates to import (made once, valid
 * from 2020 to 2120 so that neither the fake's clock nor a real one ever finds them expired or not yet valid), and
 * a fake account reached through the real AcmAdapter.
 */

export interface PemPair {
  certificate: string;
  privateKey: string;
  /** What the certificate says: its subject's common name and its DNS subject alternative names. */
  commonName: string;
  dnsNames: string[];
}

/** RSA 2048, `CN=example.com`, names example.com and *.example.com. */
export const RSA_EXAMPLE_COM: PemPair = {
  commonName: 'example.com',
  dnsNames: ['example.com', '*.example.com'],
  certificate: `-----BEGIN CERTIFICATE-----
MIIC5TCCAc2gAwIBAgIUUJ1+97gTdTzm3BTS53mQiISwZ1kwDQYJKoZIhvcNAQEL
BQAwFjEUMBIGA1UEAwwLZXhhbXBsZS5jb20wIBcNMjAwMTAxMDAwMDAwWhgPMjEy
MDAxMDEwMDAwMDBaMBYxFDASBgNVBAMMC2V4YW1wbGUuY29tMIIBIjANBgkqhkiG
9w0BAQEFAAOCAQ8AMIIBCgKCAQEAv9xLvB/ZFby0IL3BZA9Ds66WsWdf4XAeTKbt
wmf4/z944M/HPB0yCjGfOAeI/qeQdhdF+qtaodfI/RcS09HXrnxkHx20PRQDPHzp
KYrLXRpMN4FKfNvunAwfkXxAaUUkxvn73AqJn9DAijiM6qhLaETJ6FIMZD8DBtCs
SgXyafSyvWZ3J2XPO1Tpkti14nvGqMG0PwWC/rPXkHO/1b3wmfxV+iMguBdbwXkN
fk3exO1FaguPpi7lCi4UMu1irjk3X08tx/5dEPvJcGy0kVdYCCWOLmfBXEFomELo
xNHy+qfhu+gm7xcAdQI+H2sI9L77LL5THVt+RqR5QnEr/EPSjQIDAQABoykwJzAl
BgNVHREEHjAcggtleGFtcGxlLmNvbYINKi5leGFtcGxlLmNvbTANBgkqhkiG9w0B
AQsFAAOCAQEAUF9b75fjQmmaiWg16kN1ctKoyYkNd8hPKwml2UlPvnEe04vMqJr6
RSd4Lryi2UXZMR2P4ITdp1ftebGrAMyHfHL3+DJRD73F/AFIKl3OL3F4TgQH2J62
NO6xvm+aQ+lknDptoxd3FsEYnryeikVaIYqQM3Sdw703samoK30kIX+xwuee8efF
5n6LUWxQtpb4ikeGdTrIDPihhWzjJEqnZJhF8d2D5qkZctqP76tOK3Ws8M5DFZ8W
CmXDKUxDvEbsQAk6el045sMMOwvfIveEyd5qAFXoLrxhMgAM6CUJqNLzxdaDdwvI
REwHBiu10zedHSNxguPlcr+5DmSUN/P9pg==
-----END CERTIFICATE-----`,
  privateKey: `-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC/3Eu8H9kVvLQg
vcFkD0OzrpaxZ1/hcB5Mpu3CZ/j/P3jgz8c8HTIKMZ84B4j+p5B2F0X6q1qh18j9
FxLT0deufGQfHbQ9FAM8fOkpistdGkw3gUp82+6cDB+RfEBpRSTG+fvcComf0MCK
OIzqqEtoRMnoUgxkPwMG0KxKBfJp9LK9ZncnZc87VOmS2LXie8aowbQ/BYL+s9eQ
c7/VvfCZ/FX6IyC4F1vBeQ1+Td7E7UVqC4+mLuUKLhQy7WKuOTdfTy3H/l0Q+8lw
bLSRV1gIJY4uZ8FcQWiYQujE0fL6p+G76CbvFwB1Aj4fawj0vvssvlMdW35GpHlC
cSv8Q9KNAgMBAAECggEAJR3SnvnQTua7OCxNifR0BgJMD9TuVRgSHIUcsQPZRVP7
qA46PnRtdlBkO3wlshIrndThyl01AuNSdDfvAgByB8Tzv5tI/5nsCFsn5kv+DKxm
O0StattHXXPw9X3CnjrsovvAkDCPsFW7seG/zTOypuDL6MBaulgAV2SuOAHPhFSn
LMw6AXyrPjlHOfB1Wj15Z0kDpRzN70xTunmhaCBDetuU+W0+K5L7P14tJ7ihkZEI
u/2RYOUeQWf9xoVUqNy9rou9riHb8/XtsHYwtl09hPVt5CimjPeho8+Oes5h9Km5
acktfFKuiWXnZMexxLL84ULYnGd9bQwXIHQFIpEsFwKBgQDiWFQ+XYzp6u0t3ZSM
rvxfEWhOi2WmybcpHXvAI7EUTcolFsLfR17hwUmmY627NB2Z/eq2s48RaiKFG+Np
boc4JfbA9UKUu6EaoRsyIDhQ7/ZSx6CtZWuS6bTJKLGM+O0XPBCizsdnYzWQAUAy
fEfvhbvIEVFt9Y1JKIHpAMPiYwKBgQDY/1j6Nc78srz5LVzPH0TleyINp0IRpvlJ
6KDfyZmx+8qmyYGPUCsooaEPp+5dnNp8fIH7amlTifNTRZ51oCSNsMpuyMnQZL4f
rva0QOy2YmZmEI7zdp1Tf01+g3HtVygthONQCrPVCYMV8yMad9gQmrqVKHJq7RS4
k2zFcGISTwKBgCh82lzpiQpSvqhkqWzc5EHxMDJUlxNVo9DT+E3vVH6oR4+I2cTs
1FkXpSABVpNVCDKCjBiwV9gqnxAmY/B5F/EAQXpUpNtMEM5doSq/PrOjqPE3ylMa
ADsgWPlesRvhby+ny+YDjQG+aldfEee1+Xwr9OIdzu4XbXV3rH1MaL23AoGAUJTa
ZOgwelShqmK3EU9KVXGZXrqa5VU9Q734Z8JEqfyX78Hqs96QeGE1H0w8T1UdKZdO
6Z9Fh7k1u9mhk4qpqFhbhDJaB2Ix3DAr+xoVDVGTNxm1DCIjIEuo6m9DkmCIUgcE
Jsgiqd0DadZFVeHlQZ1D5noDq0NpK3XLsbIfKS8CgYEAo3SSLQBP7EwhXwXYVJXz
h8eXYoIZy39BTtWsNPb/meVpJb5R2czc/3kI6QBdVVlvFAmzcVlJWSFkNAnTCzzA
XL9/9CpaYU5yb+DMyJuGcXMntUD+05K/IYTS9gg9HANoQ9Y16sOwS57WrlGRJ9HI
ADprjh441bN6MH8v2BUaYGk=
-----END PRIVATE KEY-----`,
};

/** EC P-256, `CN=shop.example.org`, names shop.example.org and www.shop.example.org. */
export const EC_SHOP_EXAMPLE_ORG: PemPair = {
  commonName: 'shop.example.org',
  dnsNames: ['shop.example.org', 'www.shop.example.org'],
  certificate: `-----BEGIN CERTIFICATE-----
MIIBcDCCARWgAwIBAgIUMe/4gRneXuVDmHzvaByuMnyb9/QwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQc2hvcC5leGFtcGxlLm9yZzAgFw0yMDAxMDEwMDAwMDBaGA8y
MTIwMDEwMTAwMDAwMFowGzEZMBcGA1UEAwwQc2hvcC5leGFtcGxlLm9yZzBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABC1b7VgM8a834s6TfXDW4yK19uibpNwopimL
1UroQtYqu+vb7bJntUJOuHITHfUTw3HCRK4gXUZlvCLWU+St2xejNTAzMDEGA1Ud
EQQqMCiCEHNob3AuZXhhbXBsZS5vcmeCFHd3dy5zaG9wLmV4YW1wbGUub3JnMAoG
CCqGSM49BAMCA0kAMEYCIQD397Z/PJA3X2ZHLbU6wJMaol6S0KzfxAgzJUWpiXOn
6wIhAPZUehqG5blekKQ9t0yuRfwGNfdHs3cAG6TbRm75cwGN
-----END CERTIFICATE-----`,
  privateKey: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAnfCFbvEd75EJpS
7yx78Kddwi/Ege+IUfdA0NTLmMChRANCAAQtW+1YDPGvN+LOk31w1uMitfbom6Tc
KKYpi9VK6ELWKrvr2+2yZ7VCTrhyEx31E8NxwkSuIF1GZbwi1lPkrdsX
-----END PRIVATE KEY-----`,
};

/** EC P-384, `CN=legacy.example.net`, whose subject alternative names leave that name out: api.example.net only. */
export const EC_CN_NOT_IN_SANS: PemPair = {
  commonName: 'legacy.example.net',
  dnsNames: ['api.example.net'],
  certificate: `-----BEGIN CERTIFICATE-----
MIIBmTCCAR+gAwIBAgIUZCQ/E+GDv84i8b+epViv6F4+MGIwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSbGVnYWN5LmV4YW1wbGUubmV0MCAXDTIwMDEwMTAwMDAwMFoY
DzIxMjAwMTAxMDAwMDAwWjAdMRswGQYDVQQDDBJsZWdhY3kuZXhhbXBsZS5uZXQw
djAQBgcqhkjOPQIBBgUrgQQAIgNiAAQMqM0tcw11cluVatdiMqJ86vdqBPNx7GU1
bFdssreQbXSGbKFjaXvja8lHS/A3XfiiF6RqfgOeZQ6DjbL2fn+BD05khoL9SHgm
zQveuRaXs8FJA8vKQ/jPwEAg/JvnalqjHjAcMBoGA1UdEQQTMBGCD2FwaS5leGFt
cGxlLm5ldDAKBggqhkjOPQQDAgNoADBlAjEA73BjT3hVybewhooodvQZpOs5t32N
t4aARnmtEU+EXUWVWeR1tTTMRNtEPGPPzFE3AjAU1rQm+3cRZfEQyLMBpZO8fjOJ
Op7E/GFmbHfotXclo+4//L0xrmB4XTv0j2/7Ypo=
-----END CERTIFICATE-----`,
  privateKey: `-----BEGIN PRIVATE KEY-----
MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDRipExDnzuZSOA5rgh
5xaZnHXhHavd/rnUpFmMPcNJ9cJ4GKyRWxAXWrRxKgYtHyKhZANiAAQMqM0tcw11
cluVatdiMqJ86vdqBPNx7GU1bFdssreQbXSGbKFjaXvja8lHS/A3XfiiF6RqfgOe
ZQ6DjbL2fn+BD05khoL9SHgmzQveuRaXs8FJA8vKQ/jPwEAg/Jvnalo=
-----END PRIVATE KEY-----`,
};

/** ImportCertificate's request for a pair (the API takes the PEM text as bytes). */
export function importInput(pair: PemPair) {
  return {
    Certificate: Buffer.from(pair.certificate),
    PrivateKey: Buffer.from(pair.privateKey),
  };
}

export function acmWorld() {
  const clock = new FakeClock();
  const fake = new FakeAcm(clock);
  const acm = new AcmAdapter(fake);
  const importPem = async (pair: PemPair): Promise<string> => {
    const output = await fake.send(new ImportCertificateCommand(importInput(pair)));
    return output.CertificateArn!;
  };
  return { clock, fake, acm, importPem };
}
