import { Token } from 'aws-cdk-lib';
import type { App } from 'sst/constructs/App.js';
import { Stack } from 'sst/constructs/Stack.js';
import { type StageConfig, StageConfigError } from './config.ts';
import type { CodeSource, ControlPlaneContext } from './context.ts';
import { Ec2Events } from './ec2-events.ts';
import {
  clusterResourceWrite,
  createSecurityGroupInVpc,
  ec2Describe,
  elbv2Describe,
  listenerTagBackfill,
  ownedResourceCreate,
  ownedResourceWrite,
  ownedTagRemoval,
  tagOnCreate,
} from './iam.ts';
import { classicLoadBalancerStatements } from './iam-classic-elb.ts';
import { interruptionReconciler } from './interruption.ts';
import { ipamReconciler } from './ipam.ts';
import { Monitoring } from './monitoring.ts';
import { type Reconciler, reconciler } from './reconciler.ts';
import { RelayRole } from './relay.ts';
import { Resync } from './resync.ts';

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

/**
 * The route controller: reads the route table and instances, writes routes and turns off
 * source/destination checks, only on a route table and instances tagged as this cluster's own.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
function routeReconciler(stack: Stack, ctx: ControlPlaneContext, routes: NonNullable<StageConfig['routes']>) {
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

/**
 * The Service load-balancer controller (docs/adr/0005-service-load-balancers.md): Network Load Balancers,
 * their listeners and target groups, and security groups, in the one VPC configured. It creates only what
 * the request tags `kubernetes.io/cluster/<cluster>=owned`, and changes or deletes only what carries that
 * tag, with two exceptions the tags cannot express (stacks/iam.ts): rules on the Nodes' security groups,
 * which may be `shared` with the cluster, and tagging listeners that earlier versions created untagged.
 * It removes tags only from what is owned, and never the ownership tags themselves (`ownedTagRemoval`).
 *
 * Exactly the calls functions/service makes through shared/aws/ec2-adapter.ts and elbv2-adapter.ts.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 */
function serviceReconciler(stack: Stack, ctx: ControlPlaneContext, services: NonNullable<StageConfig['services']>) {
  const { clusterName, region } = ctx.config;
  const arn = (service: 'ec2' | 'elasticloadbalancing', resource: string, resourceName: string) =>
    stack.formatArn({ service, region, resource, resourceName });
  const vpc = arn('ec2', 'vpc', services.vpcId);
  const securityGroups = arn('ec2', 'security-group', '*');
  const loadBalancers = arn('elasticloadbalancing', 'loadbalancer', 'net/*/*');
  const targetGroups = arn('elasticloadbalancing', 'targetgroup', '*/*');
  const listeners = arn('elasticloadbalancing', 'listener', 'net/*/*/*');
  // Classic load balancers are named, not typed: loadbalancer/<name>.
  const classicLoadBalancers = arn('elasticloadbalancing', 'loadbalancer', '*');
  return reconciler(stack, ctx, 'service', {
    description: 'Network Load Balancers and Classic ELBs for type: LoadBalancer Services, and their cleanup',
    permissions: [
      ec2Describe(
        'DescribeInstances',
        'DescribeAvailabilityZones',
        'DescribeSubnets',
        'DescribeRouteTables',
        'DescribeSecurityGroups',
      ),
      elbv2Describe(
        'DescribeLoadBalancers',
        'DescribeLoadBalancerAttributes',
        'DescribeListeners',
        'DescribeListenerCertificates',
        'DescribeListenerAttributes',
        'DescribeTargetGroups',
        'DescribeTargetGroupAttributes',
        'DescribeTargetHealth',
        'DescribeTags',
      ),
      // A managed or backend security group: born tagged owned (tags are in the create call), in our VPC.
      ownedResourceCreate({
        sid: 'SecurityGroupCreate',
        clusterName,
        actions: ['ec2:CreateSecurityGroup'],
        resources: [securityGroups],
      }),
      createSecurityGroupInVpc([vpc], 'SecurityGroupCreateInVpc'),
      tagOnCreate({
        sid: 'SecurityGroupTagOnCreate',
        clusterName,
        createActions: ['ec2:CreateSecurityGroup'],
        resources: [securityGroups],
      }),
      // Deleting our groups, and adding tags a group of ours is missing.
      ownedResourceWrite({
        sid: 'SecurityGroupWrites',
        clusterName,
        actions: ['ec2:DeleteSecurityGroup', 'ec2:CreateTags'],
        resources: [securityGroups],
      }),
      // Removing tags a Service no longer asks for from our groups; never the ownership or role tags.
      ownedTagRemoval({
        sid: 'SecurityGroupTagRemoval',
        clusterName,
        actions: ['ec2:DeleteTags'],
        resources: [securityGroups],
      }),
      // Rules on our groups and on the Nodes' cluster-tagged groups, which are often only shared with us.
      clusterResourceWrite({
        sid: 'SecurityGroupRules',
        clusterName,
        actions: ['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'],
        resources: [securityGroups],
        vpcArn: vpc,
      }),
      ownedResourceCreate({
        sid: 'LoadBalancerCreate',
        clusterName,
        actions: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
        resources: [loadBalancers, targetGroups],
      }),
      tagOnCreate({
        sid: 'LoadBalancerTagOnCreate',
        clusterName,
        createActions: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
        resources: [loadBalancers, targetGroups],
      }),
      ownedResourceWrite({
        sid: 'LoadBalancerWrites',
        clusterName,
        actions: [
          'elasticloadbalancing:DeleteLoadBalancer',
          'elasticloadbalancing:SetSecurityGroups',
          'elasticloadbalancing:SetSubnets',
          'elasticloadbalancing:SetIpAddressType',
          'elasticloadbalancing:ModifyLoadBalancerAttributes',
          // A listener is authorized on its load balancer when created (the listener does not exist yet).
          'elasticloadbalancing:CreateListener',
          'elasticloadbalancing:AddTags',
        ],
        resources: [loadBalancers],
      }),
      ownedResourceWrite({
        sid: 'TargetGroupWrites',
        clusterName,
        actions: [
          'elasticloadbalancing:ModifyTargetGroup',
          'elasticloadbalancing:ModifyTargetGroupAttributes',
          'elasticloadbalancing:DeleteTargetGroup',
          'elasticloadbalancing:RegisterTargets',
          'elasticloadbalancing:DeregisterTargets',
          'elasticloadbalancing:AddTags',
        ],
        resources: [targetGroups],
      }),
      // Listeners are born tagged owned, in the CreateListener call (authorized on the load balancer above).
      tagOnCreate({
        sid: 'ListenerTagOnCreate',
        clusterName,
        createActions: ['elasticloadbalancing:CreateListener'],
        resources: [listeners],
      }),
      // aws:ResourceTag here is the listener's own tags. The certificate and attribute calls are authorized on
      // the listener too (the service authorization reference lists listener/net for each, no certificate type).
      ownedResourceWrite({
        sid: 'ListenerWrites',
        clusterName,
        actions: [
          'elasticloadbalancing:ModifyListener',
          'elasticloadbalancing:ModifyListenerAttributes',
          'elasticloadbalancing:AddListenerCertificates',
          'elasticloadbalancing:RemoveListenerCertificates',
          'elasticloadbalancing:DeleteListener',
          'elasticloadbalancing:AddTags',
        ],
        resources: [listeners],
      }),
      // The one exception: tagging listeners earlier versions made untagged (listenerTagBackfill says why).
      listenerTagBackfill({ sid: 'ListenerTagBackfill', clusterName, resources: [listeners] }),
      // Removing tags a Service no longer asks for (additional-resource-tags), each resource's own owned tag
      // deciding; never the ownership tags themselves.
      ownedTagRemoval({
        sid: 'LoadBalancerTagRemoval',
        clusterName,
        actions: ['elasticloadbalancing:RemoveTags'],
        resources: [loadBalancers, targetGroups, listeners],
      }),
      ...classicLoadBalancerStatements({ clusterName, loadBalancers: classicLoadBalancers }),
    ],
    environment: {
      VPC_ID: services.vpcId,
      ...(services.loadBalancerClass ? { LOAD_BALANCER_CLASS: services.loadBalancerClass } : {}),
      ...(services.nodePortRange ? { SERVICE_NODE_PORT_RANGE: services.nodePortRange } : {}),
      ...(services.externalManagedTags
        ? { SERVICE_EXTERNAL_MANAGED_TAGS: services.externalManagedTags.join(',') }
        : {}),
      SERVICE_DEFAULT_LOAD_BALANCER_TYPE: services.defaultLoadBalancerType,
      SERVICE_PROVISIONING_REQUEUE_SECONDS: String(services.provisioningRequeueSeconds),
      SERVICE_CLEANUP_REQUEUE_SECONDS: String(services.cleanupRequeueSeconds),
    },
  });
}
