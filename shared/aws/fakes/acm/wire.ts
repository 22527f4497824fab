import {
  ACMServiceException,
  InvalidArgsException,
  InvalidArnException,
  LimitExceededException,
  ResourceInUseException,
  ResourceNotFoundException,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-acm';

/**
 * What every ACM call of the fake shares: errors as SDK v3 raises them for ACM's JSON answers, and request checks.
 * https://docs.aws.amazon.com/acm/latest/APIReference/CommonErrors.html
 */

type ModeledException = new (opts: { message: string; $metadata: { httpStatusCode: number } }) => ACMServiceException;

/** The SDK's class for each error code the fake answers (ACM's JSON `__type` is the class name). */
const MODELED: Readonly<Record<string, ModeledException>> = {
  InvalidArgsException,
  InvalidArnException,
  LimitExceededException,
  ResourceInUseException,
  ResourceNotFoundException,
  ThrottlingException,
  ValidationException,
};

/** An ACM error as the SDK raises it: the modeled class when there is one, `$fault` and the HTTP status. */
export function acmFailure(code: string, message: string, httpStatusCode = 400): ACMServiceException {
  const $metadata = { httpStatusCode };
  const Modeled = MODELED[code];
  if (Modeled) return new Modeled({ message, $metadata });
  return new ACMServiceException({
    name: code,
    $fault: httpStatusCode >= 500 ? 'server' : 'client',
    message,
    $metadata,
  });
}

/**
 * The fake refuses request fields it does not model, loudly and not as an ACM error: silently ignoring a field an
 * adapter starts sending would answer something ACM never would.
 */
export function acceptOnly(operation: string, input: object, fields: readonly string[]): void {
  for (const [field, value] of Object.entries(input)) {
    if (value !== undefined && !fields.includes(field))
      throw new Error(`FakeAcm does not model ${operation} with ${field}`);
  }
}

/** A member the API requires: ValidationException when missing, as ACM answers it. */
export function required<T>(value: T | undefined, field: string): T {
  if (value === undefined || value === null || value === '') {
    throw acmFailure(
      'ValidationException',
      `1 validation error detected: Value null at '${field}' failed to satisfy constraint: Member must not be null`,
    );
  }
  return value;
}

/** `arn:<partition>:acm:<region>:<account>:certificate/<id>`; anything else is InvalidArnException. */
const CERTIFICATE_ARN = /^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[A-Za-z0-9-]+$/;

export function checkArn(arn: string | undefined, field = 'certificateArn'): string {
  const value = required(arn, field);
  if (!CERTIFICATE_ARN.test(value)) throw acmFailure('InvalidArnException', `The ARN ${value} is not valid.`);
  return value;
}
