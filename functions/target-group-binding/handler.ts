import { createEc2LoadBalancerNetworkPort, createElbv2Port } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS, settingsOf } from '../../shared/controllers.ts';
import { awsKubernetesAccessDeps, createTgbControllerKube } from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { targetGroupBindingReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  targetGroupBindingReconciler,
  ({ config, log, metrics }) => ({
    clusterName: config.CLUSTER_NAME,
    // Its settings as shared/controllers.ts reads them (`npm start -- --real` reads them the same way).
    ...settingsOf('target-group-binding', config),
    kube: createTgbControllerKube(config, awsKubernetesAccessDeps(config)),
    ec2: createEc2LoadBalancerNetworkPort(config, metrics),
    elbv2: createElbv2Port(config, metrics),
    clock: systemClock,
    log,
    metrics,
  }),
  CONTROLLERS['target-group-binding'].required,
);
