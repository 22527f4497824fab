import { createEc2LoadBalancerNetworkPort, createElbPort, createElbv2Port } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS, settingsOf } from '../../shared/controllers.ts';
import {
  awsKubernetesAccessDeps,
  createKubernetesPort,
  createLeaseReadPort,
  createServicesPort,
  createStackBindingsPort,
} from '../../shared/k8s/lambda-access.ts';
import { serviceControllerKube } from '../../shared/k8s/service-port.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { serviceReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  serviceReconciler,
  ({ config, log, metrics }) => {
    const access = awsKubernetesAccessDeps(config);
    const nodes = createKubernetesPort(config, access);
    const services = createServicesPort(config, access);
    const lease = createLeaseReadPort(config, access);
    // The Lease read: the AWS Load Balancer Controller's Services wait while it holds its leader Lease (lbc/lease.ts).
    const kube = {
      ...serviceControllerKube(services, nodes),
      getLease: (namespace: string, name: string) => lease.getLease(namespace, name),
    };
    return {
      clusterName: config.CLUSTER_NAME,
      // Its settings as shared/controllers.ts reads them (`npm start -- --real` reads them the same way).
      ...settingsOf('service', config),
      kube,
      // With STACK_TARGET_GROUP_BINDINGS: a TargetGroupBinding per target group of a reference-way Service (lbc/).
      ...(config.STACK_TARGET_GROUP_BINDINGS ? { stackBindings: createStackBindingsPort(config, access) } : {}),
      ec2: createEc2LoadBalancerNetworkPort(config, metrics),
      elbv2: createElbv2Port(config, metrics),
      elb: createElbPort(config, metrics),
      clock: systemClock,
      log,
      metrics,
    };
  },
  // Checked when the module loads: without a VPC the controller cannot find subnets or make security groups.
  CONTROLLERS.service.required,
);
