import type { Log } from '../../shared/observability/log.ts';

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

export interface LogLine {
  level: LogLevel;
  message: string;
  fields: Record<string, unknown>;
}

/**
 * A Log that keeps every line with its structured fields, for tests that must show a problem was reported
 * (the corpus tests in test/corpus/): they look lines up by level, message and fields, not by formatted text.
 */
export class RecordingLog implements Log {
  readonly lines: LogLine[] = [];
  debug(message: string, fields: Record<string, unknown> = {}) {
    this.lines.push({ level: 'DEBUG', message, fields });
  }
  info(message: string, fields: Record<string, unknown> = {}) {
    this.lines.push({ level: 'INFO', message, fields });
  }
  warn(message: string, fields: Record<string, unknown> = {}) {
    this.lines.push({ level: 'WARN', message, fields });
  }
  error(message: string, fields: Record<string, unknown> = {}) {
    this.lines.push({ level: 'ERROR', message, fields });
  }
  /** Lines at `level` or above whose fields include every pair of `where` (compared with ===). */
  find(level: LogLevel, where: Record<string, unknown> = {}): LogLine[] {
    const rank: Record<LogLevel, number> = { DEBUG: 0, INFO: 1, WARN: 2, ERROR: 3 };
    return this.lines.filter(
      (l) => rank[l.level] >= rank[level] && Object.entries(where).every(([k, v]) => l.fields[k] === v),
    );
  }
  reset() {
    this.lines.length = 0;
  }
}
