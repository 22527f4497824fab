import { createEc2LoadBalancerNetworkPort, createElbPort, createElbv2Port } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { requireSetting } from '../../shared/config/config.ts';
import { awsKubernetesAccessDeps, createKubernetesPort, createServicesPort } from '../../shared/k8s/lambda-access.ts';
import { serviceControllerKube } from '../../shared/k8s/service-port.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { serviceReconciler } from './reconciler.ts';

const VPC_PURPOSE = 'by the service controller (the VPC its load balancers, target groups and security groups go in)';

export const handler = workqueueHandler(
  serviceReconciler,
  ({ config, log, metrics }) => {
    const access = awsKubernetesAccessDeps(config);
    const nodes = createKubernetesPort(config, access);
    const services = createServicesPort(config, access);
    const kube = serviceControllerKube(services, nodes);
    return {
      clusterName: config.CLUSTER_NAME,
      vpcId: requireSetting(config, 'VPC_ID', VPC_PURPOSE),
      loadBalancerClass: config.LOAD_BALANCER_CLASS,
      provisioningRequeueSeconds: config.SERVICE_PROVISIONING_REQUEUE_SECONDS,
      cleanupRequeueSeconds: config.SERVICE_CLEANUP_REQUEUE_SECONDS,
      nodePortRange: config.SERVICE_NODE_PORT_RANGE,
      externalManagedTags: config.SERVICE_EXTERNAL_MANAGED_TAGS,
      kube,
      ec2: createEc2LoadBalancerNetworkPort(config, metrics),
      elbv2: createElbv2Port(config, metrics),
      elb: createElbPort(config, metrics),
      defaultLoadBalancerType: config.SERVICE_DEFAULT_LOAD_BALANCER_TYPE,
      resyncQuickCheck: true,
      clock: systemClock,
      log,
      metrics,
    };
  },
  // Checked when the module loads: without a VPC the controller cannot find subnets or make security groups.
  [{ setting: 'VPC_ID', purpose: VPC_PURPOSE }],
);
