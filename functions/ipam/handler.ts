import { createEc2InterfacePort } from '../../shared/aws/clients.ts';
import { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS, settingsOf } from '../../shared/controllers.ts';
import {
  awsKubernetesAccessDeps,
  createIpamKubernetesPort,
  createKubernetesPort,
} from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { ipamReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  ipamReconciler,
  ({ config, log, metrics }) => {
    // The Pod port reaches the API server exactly as the Node port does (same auth mode and AWS credentials).
    const access = awsKubernetesAccessDeps(config);
    const ec2 = createEc2InterfacePort(config, metrics);
    return {
      clusterName: config.CLUSTER_NAME,
      // Its settings as shared/controllers.ts reads them (`npm start -- --real` reads them the same way).
      ...settingsOf('ipam', config),
      kube: createKubernetesPort(config, access),
      pods: createIpamKubernetesPort(config, access),
      ec2,
      facts: new Ec2Facts(ec2, systemClock),
      clock: systemClock,
      log,
      metrics,
    };
  },
  CONTROLLERS.ipam.required,
);
