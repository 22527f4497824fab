import { ArnFormat, type Stack } from 'aws-cdk-lib';
import type { StageConfig } from './config.ts';
import { interruptionEnvironment } from './config-interruption.ts';
import type { ControlPlaneContext } from './context.ts';
import { ec2Describe } from './iam.ts';
import { autoscalingDescribe, lifecycleActionWrite } from './iam-autoscaling.ts';
import { type Reconciler, reconciler } from './reconciler.ts';

/**
 * The interruption controller (functions/interruption): its FIFO queue, DLQ and function, fed by the EC2 events
 * router with interruption notices (never by the relay or the resync: a notice exists only in its event). It
 * reaches Kubernetes like the other reconcilers (Nodes, Pods, evictions, Events: deploy/README-deploy.md's
 * ClusterRole), reads instances for the cluster tag of a hook whose instance is no Node, and keeps termination
 * hooks of the cluster's Auto Scaling groups alive and completes them.
 */
export function interruptionReconciler(
  stack: Stack,
  ctx: ControlPlaneContext,
  interruption: NonNullable<StageConfig['interruption']>,
): Reconciler {
  const groups = stack.formatArn({
    service: 'autoscaling',
    resource: 'autoScalingGroup',
    resourceName: '*:autoScalingGroupName/*',
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
  return reconciler(stack, ctx, 'interruption', {
    description: 'marks, cordons and drains Nodes whose instance is being interrupted; completes termination hooks',
    permissions: [
      ec2Describe('DescribeInstances'),
      autoscalingDescribe('DescribeLifecycleHooks'),
      lifecycleActionWrite({
        sid: 'LifecycleActions',
        clusterName: ctx.config.clusterName,
        actions: ['autoscaling:CompleteLifecycleAction', 'autoscaling:RecordLifecycleActionHeartbeat'],
        resources: [groups],
      }),
    ],
    environment: interruptionEnvironment(interruption),
  });
}
