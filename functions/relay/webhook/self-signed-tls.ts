import type { Clock } from '../../../shared/clock.ts';
import { isConflict } from '../../../shared/k8s/errors.ts';
import type { Log } from '../../../shared/observability/log.ts';
import {
  type CertificateIssuer,
  describeCertificate,
  issueCertificate,
  issuerIn,
  joinBundle,
  splitBundle,
} from './certificates.ts';
import {
  CA_BUNDLE,
  NEXT_CERT,
  NEXT_KEY,
  NEXT_SINCE_ANNOTATION,
  TLS_CERT,
  TLS_KEY,
  type TlsSecret,
  type WebhookTlsStore,
} from './tls-store.ts';

/**
 * The webhook's TLS without cert-manager. Every replica runs `reconcile()` now and then (it is also how a
 * standby picks up a rotated certificate); they agree through the Secret, whose writes are optimistic
 * (a replica that loses a race reads again). One pass:
 * 1. no Secret: issue a CA and a serving certificate and create it (another replica's create wins a race);
 * 2. the serving certificate has less than `renewFraction` of its lifetime left (or does not name the
 *    Service): issue a new CA and certificate; the new CA joins `ca.crt` beside the one that signed the
 *    serving certificate, the new certificate waits in `next.crt`;
 * 3. `ca.crt` is written into the caBundle of every webhook;
 * 4. `promoteAfterMs` after step 2 (the API servers have seen the new caBundle), `next.crt` becomes
 *    `tls.crt`. Until every replica reloads, some still serve the old certificate: its CA is still in
 *    the bundle, and it is still valid, so no admission call fails during a rotation.
 */

export interface SelfSignedTlsOptions {
  /** The serving certificate's names: `<service>.<namespace>.svc` and `.svc.cluster.local`. */
  dnsNames: string[];
  lifetimeMs: number;
  /** Renew when less than this fraction of the lifetime remains. */
  renewFraction: number;
  /** How long the new CA sits in the caBundles before the serving certificate switches to it. */
  promoteAfterMs: number;
}

export const DEFAULT_SELF_SIGNED_OPTIONS = {
  lifetimeMs: 365 * 24 * 60 * 60 * 1000,
  renewFraction: 1 / 3,
  promoteAfterMs: 5 * 60 * 1000,
} as const;

export interface ServingCertificate {
  cert: string;
  key: string;
  caBundle: string;
}

export interface SelfSignedTlsDeps {
  store: WebhookTlsStore;
  clock: Clock;
  log: Log;
  issue?: CertificateIssuer;
}

/** Rounds of read-and-write a pass makes before it gives up until the next pass (others keep writing first). */
const ATTEMPTS = 5;

export class SelfSignedTlsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SelfSignedTlsError';
  }
}

export class SelfSignedTls {
  private readonly issue: CertificateIssuer;

  constructor(
    private readonly options: SelfSignedTlsOptions,
    private readonly deps: SelfSignedTlsDeps,
  ) {
    this.issue = deps.issue ?? issueCertificate;
  }

  async reconcile(): Promise<ServingCertificate> {
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      try {
        return await this.pass();
      } catch (err) {
        if (!isConflict(err) || attempt === ATTEMPTS) {
          throw new SelfSignedTlsError(`managing the webhook certificate: ${errorText(err)}`, { cause: err });
        }
      }
    }
    throw new SelfSignedTlsError('managing the webhook certificate: unreachable');
  }

  private async pass(): Promise<ServingCertificate> {
    const { store, clock, log } = this.deps;
    let secret = await store.getSecret();
    if (!secret) {
      const issued = await this.issueNow();
      secret = await store.createSecret({
        annotations: {},
        data: { [TLS_CERT]: issued.cert, [TLS_KEY]: issued.key, [CA_BUNDLE]: issued.ca },
      });
      log.info('created the webhook certificate', { validUntil: new Date(describeCertificate(issued.cert).notAfter) });
    }

    if (!secret.data[NEXT_CERT] && this.due(secret)) {
      const issued = await this.issueNow();
      const current = secret.data[TLS_CERT];
      const keep =
        current && isCertificate(current)
          ? await issuerIn(splitBundle(secret.data[CA_BUNDLE] ?? ''), current)
          : undefined;
      secret = await store.updateSecret({
        ...secret,
        annotations: { ...secret.annotations, [NEXT_SINCE_ANNOTATION]: new Date(clock.now()).toISOString() },
        data: {
          ...secret.data,
          [CA_BUNDLE]: joinBundle([...(keep ? [keep] : []), issued.ca]),
          [NEXT_CERT]: issued.cert,
          [NEXT_KEY]: issued.key,
        },
      });
      log.info('rotating the webhook certificate: new CA added to the bundle');
    }

    const bundle = secret.data[CA_BUNDLE] ?? '';
    const written = await store.caBundles();
    if (written.some((w) => w.caBundle !== bundle)) {
      await store.setCaBundles(bundle);
      log.info('wrote the webhook CA bundle', { webhooks: written.map((w) => w.webhook) });
    }

    if (secret.data[NEXT_CERT] && this.promotable(secret)) {
      const { [NEXT_CERT]: next, [NEXT_KEY]: nextKey, ...data } = secret.data;
      const { [NEXT_SINCE_ANNOTATION]: _since, ...annotations } = secret.annotations;
      secret = await store.updateSecret({
        ...secret,
        annotations,
        data: { ...data, [TLS_CERT]: next!, [TLS_KEY]: nextKey! },
      });
      log.info('rotated the webhook certificate', { validUntil: new Date(describeCertificate(next!).notAfter) });
    }
    return { cert: secret.data[TLS_CERT] ?? '', key: secret.data[TLS_KEY] ?? '', caBundle: bundle };
  }

  private issueNow() {
    return this.issue({
      dnsNames: this.options.dnsNames,
      now: this.deps.clock.now(),
      lifetimeMs: this.options.lifetimeMs,
    });
  }

  /** Whether the serving certificate must be replaced: unreadable, close to expiry, or for other names. */
  private due(secret: TlsSecret): boolean {
    const pem = secret.data[TLS_CERT];
    if (!pem || !secret.data[TLS_KEY] || !isCertificate(pem)) return true;
    const { notBefore, notAfter, dnsNames } = describeCertificate(pem);
    const remaining = notAfter - this.deps.clock.now();
    if (remaining < (notAfter - notBefore) * this.options.renewFraction) return true;
    return this.options.dnsNames.some((name) => !dnsNames.includes(name));
  }

  /** The wait is over, or there is nothing to protect: the serving certificate is expired or unreadable. */
  private promotable(secret: TlsSecret): boolean {
    const now = this.deps.clock.now();
    const since = Date.parse(secret.annotations[NEXT_SINCE_ANNOTATION] ?? '');
    if (Number.isNaN(since) || now - since >= this.options.promoteAfterMs) return true;
    const pem = secret.data[TLS_CERT];
    return !pem || !isCertificate(pem) || describeCertificate(pem).notAfter <= now;
  }
}

function isCertificate(pem: string): boolean {
  try {
    describeCertificate(pem);
    return true;
  } catch {
    return false;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
