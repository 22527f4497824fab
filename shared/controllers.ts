import { type Config, requireSetting } from './config/config.ts';
import { validatedCidr } from './net/cidr.ts';

/**
 * Every controller the control plane can run, one entry each: its name (the name of its function and queue), how
 * it is switched on, who feeds it, whether the resync does and so how often it is looked at again, its Lambda
 * handler, and the settings it reads. The stack (stacks/control-plane.ts), the local engine (bin/engine.ts, the
 * simulation and `npm start -- --real`) and the Lambda handlers take the set of controllers and their switches
 * from here, so a controller added here must be built in each of them: the maps keyed by ControllerName fail the
 * typecheck until it is, and shared/controllers.test.ts checks each place for every entry.
 *
 * Data and pure functions only: every Lambda bundle imports this file, so it imports nothing but the settings.
 */

/**
 * The switches that turn controllers on, each as the stage (`.env.<stage>`), `npm start -- --real` (a flag, or the
 * variable beside it) and a Lambda's environment spell it. A controller is on when every one of its switches is.
 */
export const SWITCHES = {
  clusterCidrs: { stage: 'CCM_CLUSTER_CIDRS', flag: '--cluster-cidrs', variable: 'CLUSTER_CIDRS' },
  vpcId: { stage: 'CCM_VPC_ID', flag: '--vpc-id', variable: 'VPC_ID' },
  // Real mode reads the stage's own variable: a shell that sourced .env.<stage> runs what the stage deploys.
  interruption: { stage: 'CCM_INTERRUPTION', flag: '--interruption', variable: 'CCM_INTERRUPTION' },
  ipam: { stage: 'CCM_IPAM', flag: '--ipam', variable: 'CCM_IPAM' },
  // Never on by itself: a cluster still running the AWS Load Balancer Controller must not get a second one.
  ingress: { stage: 'CCM_INGRESS', flag: '--ingress', variable: 'CCM_INGRESS' },
  // Never on by itself either, for the same reason: TargetGroupBindings are the reference controller's objects.
  targetGroupBinding: {
    stage: 'CCM_TARGET_GROUP_BINDING',
    flag: '--target-group-binding',
    variable: 'CCM_TARGET_GROUP_BINDING',
  },
} as const;

export type SwitchName = keyof typeof SWITCHES;
export type Switches = Readonly<Record<SwitchName, boolean>>;

/**
 * Who sends a controller work: the relay and the resync send keys of the objects it reconciles; the EC2 events
 * router sends Node keys of state changes (`ec2-state-change`) or interruption notices (`ec2-interruption`).
 */
export type Feed = 'relay' | 'resync' | 'ec2-state-change' | 'ec2-interruption';

/** The minutes between resync rounds the stage deploys when CCM_RESYNC_MINUTES leaves it (stacks/config.ts). */
export const DEPLOYED_RESYNC_MINUTES = 5;

interface Required {
  setting: keyof Config;
  purpose: string;
}

export interface ControllerEntry {
  /** One line: what it does (the exit summary of `npm start`, the README's real-mode list). */
  summary: string;
  /** Its Lambda handler module, from the repository root. */
  handler: string;
  /** The setting holding its queue's URL in the producers' environment (the relay's, the resync's, the router's). */
  queueUrlSetting: keyof Config;
  feeds: readonly Feed[];
  /** Its switches; none: always on. */
  switches: readonly SwitchName[];
  /** It writes to AWS: a dry run, which writes nothing, keeps it off. */
  writesAws: boolean;
  /** The settings its Lambda must have; a missing one stops the function at its cold start. */
  required: readonly Required[];
  /** Its own settings, as its Lambda handler reads them (real mode reads them the same way). */
  settings(config: Config): object;
}

const ROUTE_CIDRS: Required = {
  setting: 'CLUSTER_CIDRS',
  purpose: 'by the route controller (the --cluster-cidr blocks; only routes inside them are managed)',
};
const SERVICE_VPC: Required = {
  setting: 'VPC_ID',
  purpose: 'by the service controller (the VPC its load balancers, target groups and security groups go in)',
};

const INGRESS_VPC: Required = {
  setting: 'VPC_ID',
  purpose: 'by the Ingress controller (the VPC its load balancers, target groups and security groups go in)',
};

/**
 * The table. Its order is the order everything is built and listed in (the stack's resources, the summary): the
 * controllers the resync feeds first, as the stack builds them before the resync that needs their queues.
 */
export const CONTROLLERS = {
  node: {
    summary: 'initializes Nodes from EC2 and keeps their addresses current',
    handler: 'functions/node/handler.ts',
    queueUrlSetting: 'NODE_QUEUE_URL',
    feeds: ['relay', 'resync'],
    switches: [],
    writesAws: false,
    required: [],
    settings: () => ({}),
  },
  'node-lifecycle': {
    summary: 'taints shut-down Nodes and deletes Nodes whose instance is gone',
    handler: 'functions/node-lifecycle/handler.ts',
    queueUrlSetting: 'NODE_LIFECYCLE_QUEUE_URL',
    feeds: ['relay', 'resync', 'ec2-state-change'],
    switches: [],
    writesAws: false,
    required: [],
    settings: () => ({}),
  },
  route: {
    summary: 'one VPC route per Node pod CIDR',
    handler: 'functions/route/handler.ts',
    queueUrlSetting: 'ROUTE_QUEUE_URL',
    feeds: ['relay', 'resync'],
    switches: ['clusterCidrs'],
    writesAws: true,
    required: [ROUTE_CIDRS],
    settings: (config: Config) => ({
      clusterCidrs: requireSetting(config, 'CLUSTER_CIDRS', ROUTE_CIDRS.purpose).map((text) =>
        validatedCidr(text, 'CLUSTER_CIDRS'),
      ),
      routeTableId: config.ROUTE_TABLE_ID,
      routeTableLimit: config.ROUTE_TABLE_LIMIT,
    }),
  },
  service: {
    summary: 'Network Load Balancers and Classic ELBs for type: LoadBalancer Services',
    handler: 'functions/service/handler.ts',
    queueUrlSetting: 'SERVICE_QUEUE_URL',
    feeds: ['relay', 'resync'],
    switches: ['vpcId'],
    writesAws: true,
    required: [SERVICE_VPC],
    settings: (config: Config) => ({
      vpcId: requireSetting(config, 'VPC_ID', SERVICE_VPC.purpose),
      loadBalancerClass: config.LOAD_BALANCER_CLASS,
      provisioningRequeueSeconds: config.SERVICE_PROVISIONING_REQUEUE_SECONDS,
      cleanupRequeueSeconds: config.SERVICE_CLEANUP_REQUEUE_SECONDS,
      replacementGraceSeconds: config.SERVICE_REPLACEMENT_GRACE_SECONDS,
      nodePortRange: config.SERVICE_NODE_PORT_RANGE,
      externalManagedTags: config.SERVICE_EXTERNAL_MANAGED_TAGS,
      defaultLoadBalancerType: config.SERVICE_DEFAULT_LOAD_BALANCER_TYPE,
      // The Services the AWS Load Balancer Controller serves (`external`, `nlb-ip`, class service.k8s.aws/nlb).
      lbcServices: config.SERVICE_LBC_SERVICES,
      // Not a setting: how the deployed handler runs (a resync pass looks quickly first; functions/service/deps.ts).
      resyncQuickCheck: true,
    }),
  },
  ipam: {
    summary: 'Windows Pod addresses from the Nodes’ interfaces, from a warm pool',
    handler: 'functions/ipam/handler.ts',
    queueUrlSetting: 'IPAM_QUEUE_URL',
    feeds: ['relay', 'resync'],
    switches: ['ipam', 'vpcId'],
    writesAws: true,
    required: [],
    settings: (config: Config) => ({
      ...(config.VPC_ID ? { vpcId: config.VPC_ID } : {}),
      cooldownSeconds: config.IPAM_COOLDOWN_SECONDS,
    }),
  },
  ingress: {
    summary: 'Application Load Balancers for Ingresses, one per IngressGroup, as the AWS Load Balancer Controller',
    handler: 'functions/ingress/handler.ts',
    queueUrlSetting: 'INGRESS_QUEUE_URL',
    feeds: ['relay', 'resync'],
    switches: ['ingress', 'vpcId'],
    writesAws: true,
    required: [INGRESS_VPC],
    settings: (config: Config) => ({
      vpcId: requireSetting(config, 'VPC_ID', INGRESS_VPC.purpose),
      defaultSslPolicy: config.INGRESS_DEFAULT_SSL_POLICY,
      defaultTargetType: config.INGRESS_DEFAULT_TARGET_TYPE,
      defaultTags: config.INGRESS_DEFAULT_TAGS,
      externalManagedTags: config.SERVICE_EXTERNAL_MANAGED_TAGS,
      // The service controller's waits and grace: the same AWS resources take the same time.
      provisioningRequeueSeconds: config.SERVICE_PROVISIONING_REQUEUE_SECONDS,
      cleanupRequeueSeconds: config.SERVICE_CLEANUP_REQUEUE_SECONDS,
      replacementGraceSeconds: config.SERVICE_REPLACEMENT_GRACE_SECONDS,
      ...(config.SERVICE_NODE_PORT_RANGE ? { nodePortRange: config.SERVICE_NODE_PORT_RANGE } : {}),
    }),
  },
  'target-group-binding': {
    summary: 'registers Pods or Nodes in the target groups TargetGroupBindings name, with Pod readiness gates',
    handler: 'functions/target-group-binding/handler.ts',
    queueUrlSetting: 'TARGET_GROUP_BINDING_QUEUE_URL',
    feeds: ['relay', 'resync'],
    switches: ['targetGroupBinding'],
    writesAws: true,
    required: [],
    settings: (config: Config) => ({
      ...(config.VPC_ID ? { vpcId: config.VPC_ID } : {}),
      readinessRequeueSeconds: config.TGB_READINESS_REQUEUE_SECONDS,
      // Not a setting: deployed, the reference controller's leader Lease is always looked at first.
      checkLbcLease: true,
    }),
  },
  interruption: {
    summary: 'marks, cordons and drains Nodes whose instance is being interrupted',
    handler: 'functions/interruption/handler.ts',
    queueUrlSetting: 'INTERRUPTION_QUEUE_URL',
    // Never the relay or the resync: a notice exists only in its event.
    feeds: ['ec2-interruption'],
    switches: ['interruption'],
    // Termination lifecycle hooks are completed in Auto Scaling.
    writesAws: true,
    required: [],
    settings: (config: Config) => ({
      /** Kinds INTERRUPTION_ACTIONS names; the others keep the controller's defaults. */
      actionOverrides: config.INTERRUPTION_ACTIONS,
      outOfServiceTaint: config.INTERRUPTION_OUT_OF_SERVICE_TAINT,
      excludeFromLoadBalancers: config.INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS,
      drainRequeueSeconds: config.INTERRUPTION_DRAIN_REQUEUE_SECONDS,
    }),
  },
} as const satisfies Record<string, ControllerEntry>;

export type ControllerName = keyof typeof CONTROLLERS;

/** The controllers, in table order. */
export const CONTROLLER_NAMES = Object.keys(CONTROLLERS) as readonly ControllerName[];

/** One controller's settings, as its handler reads them from the configuration. */
export type ControllerSettings<N extends ControllerName> = ReturnType<(typeof CONTROLLERS)[N]['settings']>;

export function settingsOf<N extends ControllerName>(name: N, config: Config): ControllerSettings<N> {
  return CONTROLLERS[name].settings(config) as ControllerSettings<N>;
}

export function feeds(name: ControllerName, feed: Feed): boolean {
  return (CONTROLLERS[name].feeds as readonly Feed[]).includes(feed);
}

/** The controllers `feed` sends to, in table order. */
export function fedBy(feed: Feed): ControllerName[] {
  return CONTROLLER_NAMES.filter((name) => feeds(name, feed));
}

/** The one controller the EC2 events router sends `feed` to. */
export function ec2EventTarget(feed: 'ec2-state-change' | 'ec2-interruption'): ControllerName {
  const [target, ...more] = fedBy(feed);
  if (!target || more.length > 0) throw new Error(`controllers: exactly one controller must take ${feed}`);
  return target;
}

/** Whether a controller is on, and when it is not, the switches that are off. */
export interface ControllerState {
  name: ControllerName;
  on: boolean;
  /** The switches that are off (empty when on). */
  off: SwitchName[];
}

/** Every controller, on or off by its switches. */
export function controllerStates(switches: Switches): ControllerState[] {
  return CONTROLLER_NAMES.map((name) => {
    const off = (CONTROLLERS[name].switches as readonly SwitchName[]).filter((s) => !switches[s]);
    return { name, on: off.length === 0, off };
  });
}

export function enabledControllers(switches: Switches): ControllerName[] {
  return controllerStates(switches)
    .filter((s) => s.on)
    .map((s) => s.name);
}

/**
 * Seconds between resync rounds for a controller, as deployed: the resync function's schedule (CCM_RESYNC_MINUTES)
 * for the controllers it feeds; undefined for the others (nothing but their events ever sends them work).
 */
export function resyncSeconds(name: ControllerName, resyncMinutes = DEPLOYED_RESYNC_MINUTES): number | undefined {
  return feeds(name, 'resync') ? resyncMinutes * 60 : undefined;
}

/** `node-lifecycle` -> `nodeLifecycle`: a controller's field in the resync's queues (functions/resync ResyncQueues). */
function resyncField(name: ControllerName): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The resync's queues, by its field names, for every controller it feeds; `urlOf` gives each one's URL, if any. */
export function resyncQueues(urlOf: (name: ControllerName) => string | undefined): Record<string, string | undefined> {
  return Object.fromEntries(fedBy('resync').map((name) => [resyncField(name), urlOf(name)]));
}
