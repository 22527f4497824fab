import {
  WAFAssociatedItemException,
  WAFDuplicateItemException,
  WAFInternalErrorException,
  WAFInvalidParameterException,
  WAFLimitsExceededException,
  WAFNonexistentItemException,
  WAFOptimisticLockException,
  WAFUnavailableEntityException,
  WAFV2ServiceException,
} from '@aws-sdk/client-wafv2';

/**
 * What every WAFv2 call of the fake shares: errors as SDK v3 raises them for WAF's JSON answers, and request checks.
 * https://docs.aws.amazon.com/waf/latest/APIReference/CommonErrors.html
 */

type ModeledException = new (opts: { message: string; $metadata: { httpStatusCode: number } }) => WAFV2ServiceException;

/** The SDK's class for each error code the fake answers (WAF's JSON `__type` is the class name). */
const MODELED: Readonly<Record<string, ModeledException>> = {
  WAFAssociatedItemException,
  WAFDuplicateItemException,
  WAFInternalErrorException,
  WAFInvalidParameterException,
  WAFLimitsExceededException,
  WAFNonexistentItemException,
  WAFOptimisticLockException,
  WAFUnavailableEntityException,
};

export function wafFailure(code: string, message: string, httpStatusCode = 400): WAFV2ServiceException {
  const $metadata = { httpStatusCode };
  const Modeled = MODELED[code];
  if (Modeled) return new Modeled({ message, $metadata });
  return new WAFV2ServiceException({
    name: code,
    $fault: httpStatusCode >= 500 ? 'server' : 'client',
    message,
    $metadata,
  });
}

/** WAF's own wording for a resource it does not have. */
export const nonexistent = () =>
  wafFailure(
    'WAFNonexistentItemException',
    "AWS WAF couldn't perform the operation because your resource doesn't exist.",
  );

export function invalidParameter(field: string, reason: string): Error {
  return wafFailure('WAFInvalidParameterException', `Error reason: ${reason}, field: ${field}, parameter: ${field}`);
}

/**
 * The fake refuses request fields it does not model, loudly and not as a WAF error: silently ignoring a field an
 * adapter starts sending would answer something WAF never would.
 */
export function acceptOnly(operation: string, input: object, fields: readonly string[]): void {
  for (const [field, value] of Object.entries(input)) {
    if (value !== undefined && !fields.includes(field)) {
      throw new Error(`FakeWafv2 does not model ${operation} with ${field}`);
    }
  }
}

/** A member the API requires: WAFInvalidParameterException when missing, as WAF answers it. */
export function required<T>(value: T | undefined, field: string): T {
  if (value === undefined || value === null || value === '')
    throw invalidParameter(field, 'EXACTLY_ONE_CONDITION_REQUIRED');
  return value;
}

/**
 * The resources a regional web ACL protects, by ARN: Application Load Balancers, API Gateway REST stages, AppSync
 * APIs, Cognito user pools, App Runner services, Verified Access instances.
 * https://docs.aws.amazon.com/waf/latest/developerguide/waf-chapter.html
 */
const REGIONAL_RESOURCES: readonly RegExp[] = [
  /^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:loadbalancer\/app\/[^/]+\/[^/]+$/,
  /^arn:aws[a-z-]*:apigateway:[a-z0-9-]+::\/restapis\/[^/]+\/stages\/[^/]+$/,
  /^arn:aws[a-z-]*:appsync:[a-z0-9-]+:\d{12}:apis\/[^/]+$/,
  /^arn:aws[a-z-]*:cognito-idp:[a-z0-9-]+:\d{12}:userpool\/[^/]+$/,
  /^arn:aws[a-z-]*:apprunner:[a-z0-9-]+:\d{12}:service\/[^/]+\/[^/]+$/,
  /^arn:aws[a-z-]*:ec2:[a-z0-9-]+:\d{12}:verified-access-instance\/[^/]+$/,
];

export const isLoadBalancerArn = (arn: string) => REGIONAL_RESOURCES[0]!.test(arn);

/** A resource ARN a regional web ACL can protect; any other (a Network Load Balancer's) is WAFInvalidParameterException. */
export function checkResourceArn(arn: string | undefined): string {
  const value = required(arn, 'RESOURCE_ARN');
  if (!REGIONAL_RESOURCES.some((pattern) => pattern.test(value)))
    throw invalidParameter('RESOURCE_ARN', 'ILLEGAL_ARGUMENT');
  return value;
}
