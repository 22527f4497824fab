import { createEc2RoutePort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { CONTROLLERS, settingsOf } from '../../shared/controllers.ts';
import { awsKubernetesAccessDeps, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { routeReconciler } from './reconciler.ts';

export const handler = workqueueHandler(
  routeReconciler,
  ({ config, log, metrics }) => ({
    clusterName: config.CLUSTER_NAME,
    // Its settings as shared/controllers.ts reads them (`npm start -- --real` reads them the same way).
    ...settingsOf('route', config),
    kube: createKubernetesPort(config, awsKubernetesAccessDeps(config)),
    ec2: createEc2RoutePort(config, metrics),
    clock: systemClock,
    log,
    metrics,
  }),
  // Checked when the module loads, like every other setting: without cluster CIDRs the controller cannot
  // tell its routes from anybody else's, so it must not start.
  CONTROLLERS.route.required,
);
