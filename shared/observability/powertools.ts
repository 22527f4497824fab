import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Dimensions, MetricName, MetricsPort } from './metrics.ts';

export const METRICS_NAMESPACE = 'ServerlessCCM';

/** Built once per Lambda container by each handler. */
export function createPowertools(serviceName: string, logLevel = 'INFO') {
  const logger = new Logger({ serviceName, logLevel: logLevel as 'INFO' });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return { logger, metrics, metricsPort: powertoolsMetrics(metrics) };
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
