import { createEc2InstanceReadPort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS } from '../../shared/controllers.ts';
import { awsKubernetesAccessDeps, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { nodeLifecycleReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  nodeLifecycleReconciler,
  ({ config, log, metrics }) => ({
    kube: createKubernetesPort(config, awsKubernetesAccessDeps(config)),
    ec2: createEc2InstanceReadPort(config, metrics),
    clock: systemClock,
    log,
    metrics,
  }),
  CONTROLLERS['node-lifecycle'].required,
);
