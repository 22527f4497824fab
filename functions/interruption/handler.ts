import { createAutoScalingPort, createEc2InstanceReadPort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { awsKubernetesAccessDeps, createDrainPort, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from './plan.ts';
import { interruptionReconciler } from './reconciler.ts';

export const handler = workqueueHandler(interruptionReconciler, ({ config, log, metrics }) => {
  // The drain port reaches the API server exactly as the Node port does (same auth mode, SDK clients and AWS
  // credentials); each keeps and refreshes its own token, as the service controller's two ports do.
  const access = awsKubernetesAccessDeps(config);
  return {
    clusterName: config.CLUSTER_NAME,
    kube: createKubernetesPort(config, access),
    drain: createDrainPort(config, access),
    autoscaling: createAutoScalingPort(config, metrics),
    ec2: createEc2InstanceReadPort(config, metrics),
    // Kinds INTERRUPTION_ACTIONS does not name keep their defaults.
    actions: { ...DEFAULT_INTERRUPTION_ACTIONS, ...config.INTERRUPTION_ACTIONS },
    outOfServiceTaint: config.INTERRUPTION_OUT_OF_SERVICE_TAINT,
    excludeFromLoadBalancers: config.INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS,
    drainRequeueSeconds: config.INTERRUPTION_DRAIN_REQUEUE_SECONDS,
    clock: systemClock,
    log,
    metrics,
  };
});
