import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MiddlewareObj } from '@middy/core';
import type { Log } from './log.ts';
import type { Dimensions, MetricName, MetricsPort } from './metrics.ts';

export const METRICS_NAMESPACE = 'ServerlessCCM';

/** Built once per Lambda container by each handler. */
export function createPowertools(serviceName: string, logLevel = 'INFO') {
  const logger = new Logger({ serviceName, logLevel: logLevel as 'INFO' });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return { logger, metrics, log: powertoolsLog(logger), metricsPort: powertoolsMetrics(metrics, serviceName) };
}

/**
 * Keys Powertools' Logger owns (its `ReservedKeys`): a field of that name is dropped, with a warning line of its
 * own. A field a caller names so is kept as `field_<name>` instead, so nothing a reconciler logs is lost.
 */
const RESERVED_LOG_KEYS = new Set(['level', 'message', 'sampling_rate', 'service', 'timestamp']);

function keptFields(fields: Record<string, unknown>): Record<string, unknown> {
  if (!Object.keys(fields).some((key) => RESERVED_LOG_KEYS.has(key))) return fields;
  return Object.fromEntries(
    Object.entries(fields).map(([key, value]) => [RESERVED_LOG_KEYS.has(key) ? `field_${key}` : key, value]),
  );
}

/** Our Log over Powertools' Logger: fields become top-level keys of the JSON line. */
export function powertoolsLog(logger: Logger): Log {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) =>
    fields ? logger[level](message, keptFields(fields)) : logger[level](message);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export interface PowertoolsMetricsPort extends MetricsPort {
  /** Writes what the invocation gathered: one EMF document per dimension set. Called when an invocation ends. */
  publish(): void;
}

/**
 * Metrics without dimensions of their own go to the function's `Metrics`; each dimension set gets a `Metrics` of
 * its own (the set as its default dimensions, so they survive Powertools' flush at 100 values). Every value is
 * kept (EMF value arrays), so CloudWatch's sums, sample counts and percentiles are what one document per value gave,
 * in one document per dimension set and invocation. Writing one per value, as this did before, cost a log line per
 * AWS call and two per key reconciled: four times the CloudWatch Logs bytes of an idle resync round
 * (`npm run bench -- cost`, docs/cost.md). A document has one timestamp, so the values of a long invocation count in
 * the minute it ended; what an invocation killed by its timeout gathered is lost, as Powertools' own buffered
 * metrics are.
 */
export function powertoolsMetrics(metrics: Metrics, serviceName: string): PowertoolsMetricsPort {
  const bySet = new Map<string, Metrics>();
  const emit = (
    name: MetricName,
    unit: (typeof MetricUnit)[keyof typeof MetricUnit],
    value: number,
    dimensions?: Dimensions,
  ) => {
    if (!dimensions || Object.keys(dimensions).length === 0) {
      metrics.addMetric(name, unit, value);
      return;
    }
    const set = JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
    let target = bySet.get(set);
    if (!target) {
      target = new Metrics({ namespace: METRICS_NAMESPACE, serviceName, defaultDimensions: dimensions });
      bySet.set(set, target);
    }
    target.addMetric(name, unit, value);
  };
  return {
    count: (name, dimensions, value = 1) => emit(name, MetricUnit.Count, value, dimensions),
    timing: (name, ms, dimensions) => emit(name, MetricUnit.Milliseconds, ms, dimensions),
    publish() {
      // Only what holds values: Powertools warns on every empty flush (a log line per invocation, before).
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
      for (const target of bySet.values()) if (target.hasStoredMetrics()) target.publishStoredMetrics();
      bySet.clear();
    },
  };
}

/** A middy middleware that publishes the invocation's metrics when it ends, whether it returned or threw. */
export function publishMetrics(port: PowertoolsMetricsPort): MiddlewareObj {
  return {
    after: () => port.publish(),
    onError: () => port.publish(),
  };
}
