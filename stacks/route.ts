import type { Stack } from 'aws-cdk-lib';
import type { StageConfig } from './config.ts';
import type { ControlPlaneContext } from './context.ts';
import { ec2Describe, ownedResourceWrite } from './iam.ts';
import { type Reconciler, reconciler } from './reconciler.ts';

/**
 * The route controller: reads the route table and instances, writes routes and turns off
 * source/destination checks, only on a route table and instances tagged as this cluster's own.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
export function routeReconciler(
  stack: Stack,
  ctx: ControlPlaneContext,
  routes: NonNullable<StageConfig['routes']>,
): Reconciler {
  const { clusterName, region } = ctx.config;
  const arn = (type: string) => `arn:aws:ec2:${region}:${stack.account}:${type}/*`;
  return reconciler(stack, ctx, 'route', {
    description: 'one VPC route per Node pod CIDR, blackhole and orphan cleanup',
    permissions: [
      ec2Describe('DescribeRouteTables', 'DescribeInstances'),
      ownedResourceWrite({
        sid: 'Routes',
        clusterName,
        actions: ['ec2:CreateRoute', 'ec2:ReplaceRoute', 'ec2:DeleteRoute'],
        resources: [arn('route-table')],
      }),
      ownedResourceWrite({
        sid: 'SourceDestCheck',
        clusterName,
        actions: ['ec2:ModifyInstanceAttribute', 'ec2:ModifyNetworkInterfaceAttribute'],
        resources: [arn('instance'), arn('network-interface')],
      }),
    ],
    environment: {
      CLUSTER_CIDRS: routes.clusterCidrs.join(','),
      ...(routes.routeTableId ? { ROUTE_TABLE_ID: routes.routeTableId } : {}),
      ROUTE_TABLE_LIMIT: String(routes.routeTableLimit),
    },
  });
}
