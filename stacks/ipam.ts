import type { Stack } from 'aws-cdk-lib';
import type { StageConfig } from './config.ts';
import { ipamEnvironment } from './config-ipam.ts';
import type { ControlPlaneContext } from './context.ts';
import { ec2Describe, ownedResourceWrite, ownedTagRemoval } from './iam.ts';
import { addressWriteInVpc } from './iam-ipam.ts';
import { type Reconciler, reconciler } from './reconciler.ts';

/**
 * The Windows IP address manager (functions/ipam): its FIFO queue, DLQ and function, fed by the relay (Windows
 * Nodes and the Pods bound to them) and the resync (every Windows Node, and the garbage-collection key). It reaches
 * Kubernetes like the other reconcilers (Pods, the VPC CNI's ConfigMap, Nodes, Events: deploy/README-deploy.md's
 * ClusterRole), and in EC2, only in the cluster's VPC:
 * - reads instances, instance types (how many addresses an interface holds), subnets and network interfaces;
 * - assigns and unassigns secondary private addresses on network interfaces (`addressWriteInVpc` says why these
 *   need no ownership tag);
 * - deletes network interfaces and tags one it has seen available once, only when the interface is this cluster's
 *   own and in its VPC; removes that mark when it is attached again (functions/ipam/gc.ts), only from the
 *   cluster's own interfaces, never their ownership tags.
 * AWS's reference lists `ec2:Vpc` for the `network-interface` resource of AssignPrivateIpAddresses,
 * UnassignPrivateIpAddresses, DeleteNetworkInterface and CreateTags, not of DeleteTags.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
export function ipamReconciler(
  stack: Stack,
  ctx: ControlPlaneContext,
  ipam: NonNullable<StageConfig['ipam']>,
): Reconciler {
  const arn = (resource: string, resourceName: string) =>
    stack.formatArn({ service: 'ec2', region: ctx.config.region, resource, resourceName });
  const vpc = arn('vpc', ipam.vpcId);
  const interfaces = arn('network-interface', '*');
  return reconciler(stack, ctx, 'ipam', {
    description: 'secondary private IPv4 addresses for the Pods of Windows Nodes, and their garbage collection',
    permissions: [
      ec2Describe('DescribeInstances', 'DescribeInstanceTypes', 'DescribeSubnets', 'DescribeNetworkInterfaces'),
      addressWriteInVpc({
        sid: 'PodAddresses',
        actions: ['ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
        resources: [interfaces],
        vpcArn: vpc,
      }),
      ownedResourceWrite({
        sid: 'NetworkInterfaceCleanup',
        clusterName: ctx.config.clusterName,
        actions: ['ec2:DeleteNetworkInterface', 'ec2:CreateTags'],
        resources: [interfaces],
        vpcArn: vpc,
      }),
      // DeleteTags has no `ec2:Vpc` (AWS's reference lists only tag keys for it), so only the owned tag limits it.
      ownedTagRemoval({
        sid: 'NetworkInterfaceTagRemoval',
        clusterName: ctx.config.clusterName,
        actions: ['ec2:DeleteTags'],
        resources: [interfaces],
      }),
    ],
    environment: ipamEnvironment(ipam),
  });
}
