import { Token } from 'aws-cdk-lib';
import type { App } from 'sst/constructs/App.js';
import { Stack } from 'sst/constructs/Stack.js';
import {
  CONTROLLERS,
  type ControllerName,
  ec2EventTarget,
  enabledControllers,
  feeds,
  type Switches,
} from '../shared/controllers.ts';
import { type StageConfig, StageConfigError } from './config.ts';
import type { CodeSource, ControlPlaneContext } from './context.ts';
import { Ec2Events } from './ec2-events.ts';
import { ec2Describe } from './iam.ts';
import { ingressReconciler } from './ingress.ts';
import { interruptionReconciler } from './interruption.ts';
import { ipamReconciler } from './ipam.ts';
import { Monitoring } from './monitoring.ts';
import { type Reconciler, reconciler } from './reconciler.ts';
import { RelayRole } from './relay.ts';
import { Resync } from './resync.ts';
import { routeReconciler } from './route.ts';
import { serviceReconciler } from './service.ts';
import { targetGroupBindingReconciler } from './target-group-binding.ts';

/** The switches of shared/controllers.ts as a stage sets them (stacks/config.ts). */
export function stageSwitches(config: StageConfig): Switches {
  return {
    clusterCidrs: config.routes !== undefined,
    vpcId: config.services !== undefined,
    interruption: config.interruption !== undefined,
    ipam: config.ipam !== undefined,
    ingress: config.ingress !== undefined,
    targetGroupBinding: config.targetGroupBinding !== undefined,
  };
}

/**
 * How the stack builds each controller of shared/controllers.ts (its queue, function and grants), and the
 * description of its queue URL output when not `<name> queue`. One entry per controller, or the typecheck fails.
 */
const CONTROLLER_STACKS: {
  [N in ControllerName]: { build(stack: Stack, ctx: ControlPlaneContext): Reconciler; output?: string };
} = {
  node: {
    build: (stack, ctx) =>
      reconciler(stack, ctx, 'node', {
        description: 'initializes Nodes from EC2 and keeps their addresses current',
        // Instances to initialize from, and zone IDs for topology.k8s.aws/zone-id (stacks/iam-usage.test.ts checks
        // this is exactly what its code calls).
        permissions: [ec2Describe('DescribeInstances', 'DescribeAvailabilityZones')],
      }),
  },
  'node-lifecycle': {
    build: (stack, ctx) =>
      reconciler(stack, ctx, 'node-lifecycle', {
        description: 'taints shut-down Nodes and deletes Nodes whose instance is gone',
        permissions: [ec2Describe('DescribeInstances')],
      }),
  },
  // The switches say these are on only when the stage has their part of the configuration.
  route: { build: (stack, ctx) => routeReconciler(stack, ctx, ctx.config.routes!) },
  service: { build: (stack, ctx) => serviceReconciler(stack, ctx, ctx.config.services!) },
  ipam: { build: (stack, ctx) => ipamReconciler(stack, ctx, ctx.config.ipam!) },
  ingress: { build: (stack, ctx) => ingressReconciler(stack, ctx, ctx.config.ingress!) },
  'target-group-binding': {
    build: (stack, ctx) => targetGroupBindingReconciler(stack, ctx, ctx.config.targetGroupBinding!),
  },
  interruption: {
    build: (stack, ctx) => interruptionReconciler(stack, ctx, ctx.config.interruption!),
    output: 'interruption queue (EC2 events router -> interruption controller)',
  },
};

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

  // The controllers of shared/controllers.ts whose switches the stage turns on, each with its queue and function.
  // Those the resync feeds come first: the resync is built next, from their queues (template order).
  const on = enabledControllers(stageSwitches(config));
  const build = (name: ControllerName) => CONTROLLER_STACKS[name].build(stack, ctx);
  const keyed = on.filter((name) => feeds(name, 'resync')).map(build);
  new Resync(
    stack,
    ctx,
    keyed.map((r) => ({ urlSetting: CONTROLLERS[r.name as ControllerName].queueUrlSetting, queue: r.queue })),
  );
  const reconcilers = [...keyed, ...on.filter((name) => !feeds(name, 'resync')).map(build)];
  const queueOf = (name: ControllerName) => reconcilers.find((r) => r.name === name)?.queue;
  const interruptionQueue = queueOf(ec2EventTarget('ec2-interruption'));
  const events = new Ec2Events(stack, ctx, {
    lifecycleQueue: queueOf(ec2EventTarget('ec2-state-change'))!,
    ...(interruptionQueue ? { interruptionQueue } : {}),
  });
  const relay = new RelayRole(
    stack,
    ctx,
    reconcilers.filter((r) => feeds(r.name as ControllerName, 'relay')).map((r) => r.queue),
  );
  const monitoring = new Monitoring(stack, ctx, [
    ...reconcilers.map((r) => ({
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
      reconcilers.map((r) => [
        `${r.node.id}QueueUrl`,
        {
          value: r.queue.queueUrl,
          description: CONTROLLER_STACKS[r.name as ControllerName].output ?? `${r.name} queue`,
        },
      ]),
    ),
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
