import { createSqsPort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { requireSetting } from '../../shared/config/config.ts';
import { CONTROLLERS, ec2EventTarget } from '../../shared/controllers.ts';
import { awsKubernetesAccessDeps, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { sqsLambda } from '../../shared/queue/lambda-handler.ts';
import { NodeIndex } from './node-index.ts';
import { routeEc2Events } from './router.ts';

// Where state changes and interruption notices go: the controllers shared/controllers.ts names for them.
const LIFECYCLE_QUEUE = {
  setting: CONTROLLERS[ec2EventTarget('ec2-state-change')].queueUrlSetting,
  purpose: 'to route EC2 state changes',
};
const INTERRUPTION_QUEUE = CONTROLLERS[ec2EventTarget('ec2-interruption')].queueUrlSetting;

export const handler = sqsLambda(
  'ec2-events',
  ({ config, log, metrics }) => {
    const kube = createKubernetesPort(config, awsKubernetesAccessDeps(config));
    const sqs = createSqsPort(config, metrics);
    const interruptionQueueUrl = config[INTERRUPTION_QUEUE] as string | undefined;
    const deps = {
      index: new NodeIndex(kube, systemClock, config.NODE_INDEX_TTL_SECONDS * 1000),
      sqs,
      routes: {
        'state-change': requireSetting(config, LIFECYCLE_QUEUE.setting, LIFECYCLE_QUEUE.purpose) as string,
      },
      log,
      metrics,
      // Optional: the stack sets it only with the interruption controller (CCM_INTERRUPTION=true), which consumes it.
      ...(interruptionQueueUrl ? { interruption: { queueUrl: interruptionQueueUrl, sqs } } : {}),
    };
    return (event) => routeEc2Events(event.Records, deps);
  },
  [LIFECYCLE_QUEUE],
);
