import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Log } from './log.ts';
import type { Dimensions, MetricName, MetricsPort } from './metrics.ts';

export const METRICS_NAMESPACE = 'ServerlessCCM';

/** Built once per Lambda container by each handler. */
export function createPowertools(serviceName: string, logLevel = 'INFO') {
  const logger = new Logger({ serviceName, logLevel: logLevel as 'INFO' });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return { logger, metrics, log: powertoolsLog(logger), metricsPort: powertoolsMetrics(metrics) };
}

/** Our Log over Powertools' Logger: fields become top-level keys of the JSON line. */
export function powertoolsLog(logger: Logger): Log {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) =>
    fields ? logger[level](message, fields) : logger[level](message);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * Metrics with per-call dimensions go out as single EMF documents (Powertools `singleMetric`),
 * so a dimension never leaks onto unrelated metrics of the same invocation.
 */
export function powertoolsMetrics(metrics: Metrics): MetricsPort {
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
    const single = metrics.singleMetric();
    for (const [k, v] of Object.entries(dimensions)) single.addDimension(k, v);
    single.addMetric(name, unit, value);
  };
  return {
    count: (name, dimensions, value = 1) => emit(name, MetricUnit.Count, value, dimensions),
    timing: (name, ms, dimensions) => emit(name, MetricUnit.Milliseconds, ms, dimensions),
  };
}
