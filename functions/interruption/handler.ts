import { createAutoScalingPort, createEc2InstanceReadPort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS, settingsOf } from '../../shared/controllers.ts';
import { awsKubernetesAccessDeps, createDrainPort, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from './plan.ts';
import { interruptionReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  interruptionReconciler,
  ({ config, log, metrics }) => {
    // The drain port reaches the API server exactly as the Node port does (same auth mode, SDK clients and AWS
    // credentials); each keeps and refreshes its own token, as the service controller's two ports do.
    const access = awsKubernetesAccessDeps(config);
    // Its settings as shared/controllers.ts reads them (`npm start -- --real` reads them the same way).
    const { actionOverrides, ...settings } = settingsOf('interruption', config);
    return {
      clusterName: config.CLUSTER_NAME,
      kube: createKubernetesPort(config, access),
      drain: createDrainPort(config, access),
      autoscaling: createAutoScalingPort(config, metrics),
      ec2: createEc2InstanceReadPort(config, metrics),
      // Kinds INTERRUPTION_ACTIONS does not name keep their defaults.
      actions: { ...DEFAULT_INTERRUPTION_ACTIONS, ...actionOverrides },
      ...settings,
      clock: systemClock,
      log,
      metrics,
    };
  },
  CONTROLLERS.interruption.required,
);
