/**
 * One base class per retry meaning. The workqueue runner decides what happens to a message
 * from the class alone: retryable -> visibility backoff and a later retry (then the DLQ),
 * throttled -> the same with a longer backoff, terminal -> acknowledged, counted and reported.
 * Messages say what was being done; `cause` keeps the original error.
 */
export class ControllerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Worth trying again: a transient AWS or Kubernetes failure, a conflict, an instance not visible yet. */
export class RetryableError extends ControllerError {}

/** AWS or Kubernetes asked us to slow down; retried with a longer backoff. */
export class ThrottledError extends RetryableError {}

/** Retrying cannot help (bad input, permission denied, invalid annotation): acknowledge and report. */
export class TerminalError extends ControllerError {}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
