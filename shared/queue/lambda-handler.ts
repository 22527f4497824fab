import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createSqsPort } from '../aws/clients.ts';
import { systemClock } from '../clock.ts';
import { type Config, loadConfig, requireSetting } from '../config/config.ts';
import type { Log } from '../observability/log.ts';
import type { MetricsPort } from '../observability/metrics.ts';
import { createPowertools, publishMetrics } from '../observability/powertools.ts';
import { type Reconciler, runBatch } from './runner.ts';

export interface LambdaContext {
  config: Config;
  log: Log;
  metrics: MetricsPort;
}

type BatchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

/**
 * An SQS-triggered Lambda. Configuration is validated when the module loads, so a broken setting
 * fails the container's start with a message naming it; `init` runs once per container, on the
 * first event, to build the clients. Powertools' logger middleware adds the Lambda context to every
 * log line; `publishMetrics` writes the invocation's EMF metrics when it ends.
 */
export function sqsLambda(
  name: string,
  init: (context: LambdaContext) => BatchHandler,
  required: readonly { setting: keyof Config; purpose: string }[] = [],
) {
  const config = loadConfig();
  for (const { setting, purpose } of required) requireSetting(config, setting, purpose);
  const { logger, log, metricsPort } = createPowertools(name, config.LOG_LEVEL);
  logger.appendKeys({ component: name });
  let handle: BatchHandler | undefined;
  return middy(async function handleSqsBatch(event: SQSEvent): Promise<SQSBatchResponse> {
    handle ??= init({ config, log, metrics: metricsPort });
    return handle(event);
  })
    .use(injectLambdaContext(logger))
    .use(publishMetrics(metricsPort));
}

/** A reconciler as an SQS FIFO Lambda handler: the workqueue runner over the real clients. */
export function workqueueHandler<TDeps, TBatch>(
  reconciler: Reconciler<TDeps, TBatch>,
  buildDeps: (context: LambdaContext) => TDeps,
  required: readonly { setting: keyof Config; purpose: string }[] = [],
) {
  return sqsLambda(
    reconciler.name,
    (context) => {
      const deps = buildDeps(context);
      const runner = {
        log: context.log,
        metrics: context.metrics,
        queue: createSqsPort(context.config, context.metrics),
        clock: systemClock,
      };
      return (event) => runBatch(reconciler, event.Records, deps, runner);
    },
    required,
  );
}
