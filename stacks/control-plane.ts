import { Token } from 'aws-cdk-lib';
import type { App } from 'sst/constructs/App.js';
import { Stack } from 'sst/constructs/Stack.js';
import { type StageConfig, StageConfigError } from './config.ts';
import type { CodeSource, ControlPlaneContext } from './context.ts';
import { Ec2Events } from './ec2-events.ts';
import { ec2Describe } from './iam.ts';
import { interruptionReconciler } from './interruption.ts';
import { ipamReconciler } from './ipam.ts';
import { Monitoring } from './monitoring.ts';
import { type Reconciler, reconciler } from './reconciler.ts';
import { RelayRole } from './relay.ts';
import { Resync } from './resync.ts';
import { routeReconciler } from './route.ts';
import { serviceReconciler } from './service.ts';

/** The one CloudFormation stack, `<stage>-serverless-ccm-control-plane`. */
export const STACK_ID = 'control-plane';

/**
 * SST v2 gives every stack a Lambda for SST's own custom resources (secrets, sourcemaps, sites),
 * built by a factory its Stack constructor calls. This stack uses none of them, so it would deploy
 * an idle 4.6 MB function with a role of its own. SST has no switch for it and types the factory
 * private, so the subclass replaces it on its prototype.
 */
class ControlPlaneStack extends Stack {}
Object.defineProperty(ControlPlaneStack.prototype, 'createCustomResourceHandler', { value: () => undefined });

/**
 * The whole control plane of one cluster, in one stack: deployed, rolled back and removed as a
 * unit, with no cross-stack exports to untangle. The files in stacks/ split it by concern.
 *
 * Used by `sst.config.ts` (sst deploy / remove) and by `stacks/synth.ts` (offline synth and tests),
 * so what the tests assert is what gets deployed.
 */
export function defineControlPlane(app: App, config: StageConfig, code: CodeSource): Stack {
  if (!Token.isUnresolved(app.region) && app.region !== config.region) {
    throw new StageConfigError([
      `CCM_REGION (got "${config.region}"): SST deploys this stage to ${app.region}; set CCM_REGION to it or pass --region ${config.region}`,
    ]);
  }
  const ctx: ControlPlaneContext = {
    stage: app.stage,
    config,
    code,
    name: (suffix) => app.logicalPrefixedName(suffix),
  };
  const stack = new ControlPlaneStack(app, STACK_ID, {
    description: `serverless-ccm control plane for cluster ${config.clusterName} (stage ${app.stage})`,
  });

  // The reconcilers. A new one is one entry here and its name in config.ts FUNCTION_DEFAULTS.
  const node = reconciler(stack, ctx, 'node', {
    description: 'initializes Nodes from EC2 and keeps their addresses current',
    // Instances to initialize from, and zone IDs for topology.k8s.aws/zone-id (stacks/iam-usage.test.ts checks
    // this is exactly what its code calls).
    permissions: [ec2Describe('DescribeInstances', 'DescribeAvailabilityZones')],
  });
  const lifecycle = reconciler(stack, ctx, 'node-lifecycle', {
    description: 'taints shut-down Nodes and deletes Nodes whose instance is gone',
    permissions: [ec2Describe('DescribeInstances')],
  });
  const reconcilers: Reconciler[] = [node, lifecycle];
  if (config.routes) reconcilers.push(routeReconciler(stack, ctx, config.routes));
  if (config.services) reconcilers.push(serviceReconciler(stack, ctx, config.services));
  if (config.ipam) reconcilers.push(ipamReconciler(stack, ctx, config.ipam));
  const byName = (name: string) => reconcilers.find((r) => r.name === name)?.queue;
  new Resync(stack, ctx, {
    node: node.queue,
    nodeLifecycle: lifecycle.queue,
    route: byName('route'),
    service: byName('service'),
    ipam: byName('ipam'),
  });

  // Not among `reconcilers`: the relay and the resync never send it keys, only the EC2 events router does.
  const interruption = config.interruption ? interruptionReconciler(stack, ctx, config.interruption) : undefined;
  const events = new Ec2Events(stack, ctx, {
    lifecycleQueue: lifecycle.queue,
    ...(interruption ? { interruptionQueue: interruption.queue } : {}),
  });
  const relay = new RelayRole(
    stack,
    ctx,
    reconcilers.map((r) => r.queue),
  );
  const monitoring = new Monitoring(stack, ctx, [
    ...[...reconcilers, ...(interruption ? [interruption] : [])].map((r) => ({
      label: r.name,
      queue: r.queue,
      deadLetterQueue: r.deadLetterQueue,
      ageAlarmSeconds: config.alarms.queueAgeSeconds,
    })),
    {
      label: 'ec2-events',
      queue: events.queue,
      deadLetterQueue: events.deadLetterQueue,
      ageAlarmSeconds: config.ec2Events.ageAlarmSeconds,
    },
  ]);

  // What the relay manifests need (deploy/README-deploy.md), and where to look.
  stack.addOutputs({
    ...Object.fromEntries(
      reconcilers.map((r) => [`${r.node.id}QueueUrl`, { value: r.queue.queueUrl, description: `${r.name} queue` }]),
    ),
    ...(interruption
      ? {
          InterruptionQueueUrl: {
            value: interruption.queue.queueUrl,
            description: 'interruption queue (EC2 events router -> interruption controller)',
          },
        }
      : {}),
    Ec2EventsQueueUrl: { value: events.queue.queueUrl, description: 'EC2 events queue (EventBridge -> router)' },
    RelayRoleArn: { value: relay.role.roleArn, description: `IAM role of the relay (${config.relay.identity})` },
    RelayServiceAccount: {
      value: `${config.relay.namespace}/${config.relay.serviceAccount}`,
      description: 'the only service account that can assume the relay role',
    },
    ...(monitoring.dashboard
      ? { Dashboard: { value: monitoring.dashboard.dashboardName, description: 'CloudWatch dashboard' } }
      : {}),
  });
  return stack;
}
