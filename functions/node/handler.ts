import { createEc2InstanceReadPort } from '../../shared/aws/clients.ts';
import { ZoneIds } from '../../shared/aws/ec2-facts.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS } from '../../shared/controllers.ts';
import { awsKubernetesAccessDeps, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { nodeReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  nodeReconciler,
  ({ config, log, metrics }) => {
    const ec2 = createEc2InstanceReadPort(config, metrics);
    return {
      clusterName: config.CLUSTER_NAME,
      region: config.AWS_REGION,
      ipFamilies: config.NODE_IP_FAMILIES,
      kube: createKubernetesPort(config, awsKubernetesAccessDeps(config)),
      ec2,
      facts: new ZoneIds(ec2, systemClock),
      clock: systemClock,
      log,
      metrics,
    };
  },
  CONTROLLERS.node.required,
);
