import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { ScheduledEvent } from 'aws-lambda';
import { createEc2InstanceReadPort, createSqsPort } from '../../shared/aws/clients.ts';
import { ConfigError, loadConfig } from '../../shared/config/config.ts';
import { CONTROLLERS, fedBy, resyncQueues } from '../../shared/controllers.ts';
import {
  awsKubernetesAccessDeps,
  createIngressesPort,
  createKubernetesPort,
  createServicesPort,
  createTargetGroupBindingsPort,
} from '../../shared/k8s/lambda-access.ts';
import { createPowertools, publishMetrics } from '../../shared/observability/powertools.ts';
import { type ResyncDeps, resync } from './resync.ts';

const config = loadConfig();
// The queues of the controllers the resync feeds (shared/controllers.ts), those the stack gave it.
const queues = resyncQueues((name) => config[CONTROLLERS[name].queueUrlSetting] as string | undefined);
if (!Object.values(queues).some(Boolean)) {
  const settings = fedBy('resync').map((name) => CONTROLLERS[name].queueUrlSetting);
  throw new ConfigError([`${settings.join(', ')}: the resync needs at least one queue to feed`]);
}
const { logger, log, metricsPort } = createPowertools('resync', config.LOG_LEVEL);
let deps: ResyncDeps | undefined;

/** Started by an EventBridge schedule; the event's ID names the round (deduplication across retries). */
export const handler = middy(async function resyncAllKeys(event: ScheduledEvent): Promise<{ sent: number }> {
  if (!deps) {
    const access = awsKubernetesAccessDeps(config);
    deps = {
      kube: createKubernetesPort(config, access),
      ...(queues.service ? { services: createServicesPort(config, access) } : {}),
      ...(queues.ingress ? { ingresses: createIngressesPort(config, access) } : {}),
      ...(queues.targetGroupBinding ? { targetGroupBindings: createTargetGroupBindingsPort(config, access) } : {}),
      sqs: createSqsPort(config, metricsPort),
      queues,
      nodeSweep: {
        ec2: createEc2InstanceReadPort(config, metricsPort),
        clusterName: config.CLUSTER_NAME,
        ipFamilies: config.NODE_IP_FAMILIES,
      },
      log,
      metrics: metricsPort,
    };
  }
  return resync(event.id, deps);
})
  .use(injectLambdaContext(logger))
  .use(publishMetrics(metricsPort));
