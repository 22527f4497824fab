/**
 * The logging surface reconcilers use. Powertools' Logger satisfies it (structured JSON, with the
 * reconciler, key and message ID appended as persistent keys); tests pass `silentLog`.
 */
export interface Log {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** Keeps log lines in memory: for the local runner's live view, not for test assertions. */
export class MemoryLog implements Log {
  readonly lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  debug(message: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'DEBUG', message, fields });
  }
  info(message: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'INFO', message, fields });
  }
  warn(message: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'WARN', message, fields });
  }
  error(message: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: 'ERROR', message, fields });
  }
}
