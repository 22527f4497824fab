import { createEc2RoutePort } from '../../shared/aws/clients.ts';
import { systemClock } from '../../shared/clock.ts';
import { requireSetting } from '../../shared/config/config.ts';
import { awsKubernetesAccessDeps, createKubernetesPort } from '../../shared/k8s/lambda-access.ts';
import { validatedCidr } from '../../shared/net/cidr.ts';
import { workqueueHandler } from '../../shared/queue/lambda-handler.ts';
import { routeReconciler } from './reconciler.ts';

const CIDRS_PURPOSE = 'by the route controller (the --cluster-cidr blocks; only routes inside them are managed)';

export const handler = workqueueHandler(
  routeReconciler,
  ({ config, log, metrics }) => ({
    clusterName: config.CLUSTER_NAME,
    routeTableId: config.ROUTE_TABLE_ID,
    clusterCidrs: requireSetting(config, 'CLUSTER_CIDRS', CIDRS_PURPOSE).map((text) =>
      validatedCidr(text, 'CLUSTER_CIDRS'),
    ),
    routeTableLimit: config.ROUTE_TABLE_LIMIT,
    kube: createKubernetesPort(config, awsKubernetesAccessDeps(config)),
    ec2: createEc2RoutePort(config, metrics),
    clock: systemClock,
    log,
    metrics,
  }),
  // Checked when the module loads, like every other setting: without cluster CIDRs the controller cannot
  // tell its routes from anybody else's, so it must not start.
  [{ setting: 'CLUSTER_CIDRS', purpose: CIDRS_PURPOSE }],
);
