import type { $Command, ServiceInputTypes, ServiceOutputTypes } from '@aws-sdk/client-acm';
import {
  deleteCertificate,
  describeCertificate,
  importCertificate,
  listCertificates,
  requestCertificate,
} from './operations.ts';
import { AcmState } from './state.ts';
import { acmFailure } from './wire.ts';

export type { CertificateStatus, FakeCertificate } from './state.ts';

/**
 * Each ACM operation the fake answers: those AcmAdapter sends (ListCertificates, DescribeCertificate), and those a
 * test or a seed makes certificates with (ImportCertificate, RequestCertificate, DeleteCertificate). Any other
 * command is refused.
 */
// biome-ignore lint/suspicious/noExplicitAny: each operation reads its own SDK input type.
const OPERATIONS: Record<AcmOperation, (acm: AcmState, input: any) => object> = {
  ListCertificates: listCertificates,
  DescribeCertificate: describeCertificate,
  ImportCertificate: importCertificate,
  RequestCertificate: requestCertificate,
  DeleteCertificate: deleteCertificate,
};

export type AcmOperation =
  | 'ListCertificates'
  | 'DescribeCertificate'
  | 'ImportCertificate'
  | 'RequestCertificate'
  | 'DeleteCertificate';

export const ACM_OPERATIONS = Object.keys(OPERATIONS) as readonly AcmOperation[];

/**
 * An in-memory AWS Certificate Manager account behind the ACM API, for `new AcmAdapter(fake)`: it answers the SDK
 * v3 commands (`send`) with ACM's semantics, so the adapter's paging and error handling run in every test that uses
 * it. Certificates imported from PEM (names, key type and validity read from the certificate itself), requested
 * (public ones PENDING_VALIDATION until `validate`, VALIDATION_TIMED_OUT after 72 hours; private ones ISSUED at
 * once) or put straight in (`putCertificate`); EXPIRED once the clock passes NotAfter; ListCertificates filtered by
 * status and key type (RSA_2048 alone by default) and paged with MaxItems/NextToken; ResourceNotFoundException,
 * InvalidArnException, ResourceInUseException for a certificate in use. Throttling, queued errors and call
 * counters per operation; errors are the SDK's exception classes, as it raises them for ACM's answers.
 */
export class FakeAcm extends AcmState {
  readonly calls = new Map<AcmOperation, number>();
  /** Runs as each call starts, after it is counted: lets a test act between a caller's read and its write. */
  beforeCall?: (operation: AcmOperation) => void;

  private readonly queuedErrors = new Map<AcmOperation, Error[]>();
  private readonly throttleRemaining = new Map<AcmOperation, number>();

  /** One ACM API call: the command's class names the operation, its `input` is the request. */
  async send<InputType extends ServiceInputTypes, OutputType extends ServiceOutputTypes>(
    command: $Command<InputType, OutputType, never, ServiceInputTypes, ServiceOutputTypes>,
  ): Promise<OutputType> {
    const operation = command.constructor.name.replace(/Command$/, '');
    if (!(operation in OPERATIONS)) throw new Error(`FakeAcm does not implement ${operation}`);
    const op = operation as AcmOperation;
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    this.beforeCall?.(op);
    const throttled = this.throttleRemaining.get(op) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(op, throttled - 1);
      // ACM answers a throttled request with HTTP 400 and ThrottlingException.
      // https://docs.aws.amazon.com/acm/latest/APIReference/CommonErrors.html
      throw acmFailure('ThrottlingException', 'Rate exceeded');
    }
    const queued = this.queuedErrors.get(op);
    if (queued && queued.length > 0) throw queued.shift()!;
    const output = OPERATIONS[op](this, structuredClone(command.input));
    return { ...structuredClone(output), $metadata: { httpStatusCode: 200 } } as OutputType;
  }

  /** The next calls of `operation` fail with these errors (SDK-shaped ones), in order. */
  queueError(operation: AcmOperation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  /** The next `times` calls of `operation` answer ThrottlingException. */
  throttle(operation: AcmOperation, times: number): void {
    this.throttleRemaining.set(operation, times);
  }

  callCount(operation?: AcmOperation): number {
    if (operation) return this.calls.get(operation) ?? 0;
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }

  resetCalls(): void {
    this.calls.clear();
  }
}
