import { createSqsPort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { requireSetting } from '../../shared/config/config.ts';
import { awsKubernetesAccessDeps, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { sqsLambda } from '../../shared/queue/lambda-handler.ts';
import { NodeIndex } from './node-index.ts';
import { routeEc2Events } from './router.ts';

const LIFECYCLE_QUEUE = { setting: 'NODE_LIFECYCLE_QUEUE_URL', purpose: 'to route EC2 state changes' } as const;

export const handler = sqsLambda(
  'ec2-events',
  ({ config, log, metrics }) => {
    const kube = createKubernetesPort(config, awsKubernetesAccessDeps(config));
    const sqs = createSqsPort(config, metrics);
    const deps = {
      index: new NodeIndex(kube, systemClock, config.NODE_INDEX_TTL_SECONDS * 1000),
      sqs,
      routes: {
        'state-change': requireSetting(config, LIFECYCLE_QUEUE.setting, LIFECYCLE_QUEUE.purpose),
      },
      log,
      metrics,
      // Optional: the stack sets it only with the interruption controller (CCM_INTERRUPTION=true), which consumes it.
      ...(config.INTERRUPTION_QUEUE_URL ? { interruption: { queueUrl: config.INTERRUPTION_QUEUE_URL, sqs } } : {}),
    };
    return (event) => routeEc2Events(event.Records, deps);
  },
  [LIFECYCLE_QUEUE],
);
