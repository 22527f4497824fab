/**
 * Stateful fakes of the plugin's AWS ports for tests: they record every call, answer with a configurable
 * token or credentials, and throw queued errors first. `reset()` puts them back to their defaults.
 */
import type {
  AssumeRoleWithWebIdentityInput,
  AuthorizationToken,
  AwsCredentials,
  EcrEndpoint,
  EcrPort,
  EcrPublicPort,
  StsPort,
} from '../ports.ts';

/** What ECR hands out: base64 of `AWS:<password>`. */
export function encodeLogin(password: string, username = 'AWS'): string {
  return Buffer.from(`${username}:${password}`).toString('base64');
}

abstract class FakePort {
  private errors: unknown[] = [];

  /** The next call throws `err` instead of answering; queue several for several calls. */
  failNext(err: unknown): void {
    this.errors.push(err);
  }

  protected takeQueuedError(): void {
    const err = this.errors.shift();
    if (err !== undefined) throw err;
  }

  protected resetErrors(): void {
    this.errors = [];
  }
}

export class FakeEcr extends FakePort implements EcrPort {
  calls: { endpoint: EcrEndpoint; credentials?: AwsCredentials }[] = [];
  answer: AuthorizationToken | undefined;

  constructor(private readonly initial: AuthorizationToken | undefined) {
    super();
    this.answer = initial;
  }

  async getAuthorizationToken(endpoint: EcrEndpoint, credentials?: AwsCredentials) {
    this.calls.push({ endpoint, ...(credentials ? { credentials } : {}) });
    this.takeQueuedError();
    return this.answer;
  }

  reset(): void {
    this.calls = [];
    this.answer = this.initial;
    this.resetErrors();
  }
}

export class FakeEcrPublic extends FakePort implements EcrPublicPort {
  calls: { credentials?: AwsCredentials }[] = [];
  answer: AuthorizationToken | undefined;

  constructor(private readonly initial: AuthorizationToken | undefined) {
    super();
    this.answer = initial;
  }

  async getAuthorizationToken(credentials?: AwsCredentials) {
    this.calls.push(credentials ? { credentials } : {});
    this.takeQueuedError();
    return this.answer;
  }

  reset(): void {
    this.calls = [];
    this.answer = this.initial;
    this.resetErrors();
  }
}

export class FakeSts extends FakePort implements StsPort {
  calls: AssumeRoleWithWebIdentityInput[] = [];
  answer: AwsCredentials;

  constructor(private readonly initial: AwsCredentials) {
    super();
    this.answer = initial;
  }

  async assumeRoleWithWebIdentity(input: AssumeRoleWithWebIdentityInput) {
    this.calls.push(input);
    this.takeQueuedError();
    return this.answer;
  }

  reset(): void {
    this.calls = [];
    this.answer = this.initial;
    this.resetErrors();
  }
}
