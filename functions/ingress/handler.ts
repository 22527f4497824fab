import {
  createAcmPort,
  createEc2LoadBalancerNetworkPort,
  createElbv2Port,
  createWafv2Port,
} from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS, settingsOf } from '../../shared/controllers.ts';
import { ingressControllerKube } from '../../shared/k8s/ingress-port.ts';
import {
  awsKubernetesAccessDeps,
  createIngressesPort,
  createKubernetesPort,
  createLeaseReadPort,
  createServicesPort,
  createStackBindingsPort,
} from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { ingressReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  ingressReconciler,
  ({ config, log, metrics }) => {
    const access = awsKubernetesAccessDeps(config);
    const kube = ingressControllerKube(
      createIngressesPort(config, access),
      createServicesPort(config, access),
      createKubernetesPort(config, access),
      // No group is touched while the AWS Load Balancer Controller holds its leader Lease (docs/adr/0016).
      createLeaseReadPort(config, access),
    );
    return {
      clusterName: config.CLUSTER_NAME,
      // Its settings as shared/controllers.ts reads them (`npm start -- --real` reads them the same way).
      ...settingsOf('ingress', config),
      kube,
      // With STACK_TARGET_GROUP_BINDINGS: a TargetGroupBinding per target group (shared/k8s/stack-bindings.ts).
      ...(config.STACK_TARGET_GROUP_BINDINGS ? { stackBindings: createStackBindingsPort(config, access) } : {}),
      ec2: createEc2LoadBalancerNetworkPort(config, metrics),
      elbv2: createElbv2Port(config, metrics),
      acm: createAcmPort(config, metrics),
      wafv2: createWafv2Port(config, metrics),
      clock: systemClock,
      log,
      metrics,
    };
  },
  // Checked when the module loads: without a VPC the controller cannot find subnets or make security groups.
  CONTROLLERS.ingress.required,
);
