/**
 * One base class for everything the credential provider can fail on. kubelet only sees the exit code and one
 * line of stderr, so the class mainly documents whose fault it was: the request (kubelet config), the image
 * (a registry this plugin does not serve), AWS, or the token AWS returned. Messages say what was being done;
 * `cause` keeps the original error for anyone debugging in-process.
 */
export class CredentialProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** stdin did not hold a request we understand: malformed JSON, wrong apiVersion or kind, no image. */
export class InvalidRequestError extends CredentialProviderError {}

/** The image lives on a registry that is not ECR; the kubelet `matchImages` list is too wide. */
export class UnsupportedRegistryError extends CredentialProviderError {}

/** An AWS call failed after the SDK's own retries (access denied, throttling, network). */
export class AwsCallError extends CredentialProviderError {
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** AWS answered, but the authorization token is unusable (missing, not base64, no `user:password`). */
export class InvalidTokenError extends CredentialProviderError {}
