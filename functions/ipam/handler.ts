import { createEc2InterfacePort } from '../../shared/aws/clients.ts';
import { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import { systemClock } from '../../shared/clock.ts';
import {
  awsKubernetesAccessDeps,
  createIpamKubernetesPort,
  createKubernetesPort,
} from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { ipamReconciler } from './reconciler.ts';

export const handler = workqueueHandler(ipamReconciler, ({ config, log, metrics }) => {
  // The Pod port reaches the API server exactly as the Node port does (same auth mode and AWS credentials).
  const access = awsKubernetesAccessDeps(config);
  const ec2 = createEc2InterfacePort(config, metrics);
  return {
    clusterName: config.CLUSTER_NAME,
    ...(config.VPC_ID ? { vpcId: config.VPC_ID } : {}),
    kube: createKubernetesPort(config, access),
    pods: createIpamKubernetesPort(config, access),
    ec2,
    facts: new Ec2Facts(ec2, systemClock),
    cooldownSeconds: config.IPAM_COOLDOWN_SECONDS,
    clock: systemClock,
    log,
    metrics,
  };
});
