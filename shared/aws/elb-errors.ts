import { elbv2ErrorCode } from './elbv2-adapter.ts';
import { toControllerErrorByCode } from './errors.ts';

/**
 * Classic Load Balancer errors. The API speaks the query protocol and answers wire codes (`LoadBalancerNotFound`);
 * the SDK keeps the wire code in `Code` and names the exception class after the model's shape, which for several
 * errors is the API's old name: `LoadBalancerNotFound` is thrown as `AccessPointNotFoundException` (checked against
 * @aws-sdk/client-elastic-load-balancing 3.1075.0 answering a real error document). The table maps each class name
 * whose wire code differs; the others are the wire code plus `Exception`.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/CommonErrors.html
 */
export const CLASSIC_EXCEPTION_OF_CODE: Readonly<Record<string, string>> = {
  LoadBalancerNotFound: 'AccessPointNotFoundException',
  DuplicateLoadBalancerName: 'DuplicateAccessPointNameException',
  InvalidInstance: 'InvalidEndPointException',
  TooManyLoadBalancers: 'TooManyAccessPointsException',
};

const CODE_OF_EXCEPTION: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(CLASSIC_EXCEPTION_OF_CODE).map(([code, exception]) => [exception.replace(/Exception$/, ''), code]),
);

/** The SDK class name AWS's wire code arrives as (`LoadBalancerNotFound` -> `AccessPointNotFoundException`). */
export function classicExceptionName(code: string): string {
  return CLASSIC_EXCEPTION_OF_CODE[code] ?? `${code}Exception`;
}

/**
 * The wire code of a Classic ELB failure, whichever form the error carries: `Code` as the SDK keeps it, or only
 * the class name (an error built from the SDK's exception class, without `Code`).
 */
export function classicErrorCode(err: unknown): string | undefined {
  // ELBv2's normalisation strips `Exception`; Classic's renamed classes then map back to their wire codes.
  const code = elbv2ErrorCode(err);
  return code === undefined ? undefined : (CODE_OF_EXCEPTION[code] ?? code);
}

/** The controller error for a Classic ELB failure, classified by its wire code; the SDK error stays the cause. */
export function classicError(doing: string, err: unknown): Error {
  return toControllerErrorByCode(doing, err, classicErrorCode(err));
}
