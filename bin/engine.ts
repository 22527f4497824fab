import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { NodeIndex } from '../functions/ec2-events/node-index.ts';
import { type RouterDeps, routeEc2Events } from '../functions/ec2-events/router.ts';
import type { IngressDeps } from '../functions/ingress/deps.ts';
import { ingressReconciler } from '../functions/ingress/reconciler.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from '../functions/interruption/plan.ts';
import { type InterruptionDeps, interruptionReconciler } from '../functions/interruption/reconciler.ts';
import type { IpamDeps } from '../functions/ipam/deps.ts';
import { ipamReconciler } from '../functions/ipam/reconciler.ts';
import { type NodeDeps, nodeReconciler } from '../functions/node/reconciler.ts';
import { type LifecycleDeps, nodeLifecycleReconciler } from '../functions/node-lifecycle/reconciler.ts';
import type { Reconciler as RelayReconciler } from '../functions/relay/controllers/index.ts';
import { resync } from '../functions/resync/resync.ts';
import type { RouteDeps } from '../functions/route/deps.ts';
import { routeReconciler } from '../functions/route/reconciler.ts';
import type { ServiceDeps } from '../functions/service/deps.ts';
import { serviceReconciler } from '../functions/service/reconciler.ts';
import { DEFAULT_READINESS_REQUEUE_SECONDS, type TgbDeps } from '../functions/target-group-binding/deps.ts';
import { targetGroupBindingReconciler } from '../functions/target-group-binding/reconciler.ts';
import type { AcmPort } from '../shared/aws/acm-port.ts';
import type { AutoScalingPort } from '../shared/aws/autoscaling-port.ts';
import { Ec2Facts } from '../shared/aws/ec2-facts.ts';
import type { Ec2Port } from '../shared/aws/ec2-port.ts';
import type { ElbPort } from '../shared/aws/elb-port.ts';
import type { Elbv2Port } from '../shared/aws/elbv2-port.ts';
import { FakeSqs } from '../shared/aws/fakes/sqs/fake-sqs.ts';
import type { Wafv2Port } from '../shared/aws/wafv2-port.ts';
import type { Clock } from '../shared/clock.ts';
import {
  CONTROLLER_NAMES,
  CONTROLLERS,
  type ControllerName,
  ec2EventTarget,
  feeds,
  resyncQueues,
} from '../shared/controllers.ts';
import type { DrainPort } from '../shared/k8s/drain-port.ts';
import type { IngressControllerKube } from '../shared/k8s/ingress-port.ts';
import type { IpamKubernetesPort } from '../shared/k8s/ipam-port.ts';
import type { KubernetesPort } from '../shared/k8s/port.ts';
import type { ServiceControllerKube } from '../shared/k8s/service-port.ts';
import type { TgbControllerKube } from '../shared/k8s/tgb-port.ts';
import type { Cidr } from '../shared/net/cidr.ts';
import type { Log } from '../shared/observability/log.ts';
import type { RecordingMetrics } from '../shared/observability/metrics.ts';
import { type Reconciler, type RunnerDeps, runBatch } from '../shared/queue/runner.ts';

import type { SqsPort } from '../shared/queue/sqs-port.ts';
import { FUNCTION_DEFAULTS, type FunctionName } from '../stacks/config.ts';

/** Per controller, what the engine needs beyond its common options to run it (absent: it does not run). */
/** What the engine gives every reconciler itself (EngineOptions). */
type EngineGiven = 'kube' | 'ec2' | 'clock' | 'log' | 'metrics' | 'clusterName';

/**
 * Per controller, what the engine needs beyond its common options to run it (absent: it does not run): its ports,
 * and its settings, any of which may be left to the default its Lambda has. A setting its deps gain reaches it
 * from shared/controllers.ts (real mode) without a change here.
 */
export interface ControllerOptions {
  node: Record<string, never>;
  'node-lifecycle': Record<string, never>;
  route: { clusterCidrs: Cidr[]; routeTableId?: string; routeTableLimit: number };
  /** Service load balancers; `kube` must then serve Services and EndpointSlices too. */
  service: {
    vpcId: string;
    elbv2: Elbv2Port;
    /** Classic ELBs (Services on one, or the default type classic). */
    elb?: ElbPort;
    kube: ServiceControllerKube;
  } & Partial<Omit<ServiceDeps, EngineGiven | 'vpcId' | 'elbv2' | 'elb'>>;
  /**
   * Windows IP address management (functions/ipam): the relay sends Pod and VPC CNI ConfigMap changes to its queue
   * as the Node's key; whether it hands out addresses is the ConfigMap's `enable-windows-ipam`.
   */
  ipam: {
    /** Pods on a Node and the VPC CNI ConfigMap; `kube` serves the Nodes. */
    pods: IpamKubernetesPort;
  } & Partial<Omit<IpamDeps, EngineGiven | 'pods' | 'facts'>>;
  /**
   * Application Load Balancers for Ingresses (functions/ingress): the relay sends IngressGroup keys. `kube` serves
   * Ingresses, IngressClasses and IngressClassParams besides Services, EndpointSlices, Nodes and Events.
   */
  ingress: {
    vpcId: string;
    kube: IngressControllerKube;
    elbv2: Elbv2Port;
    acm: AcmPort;
    wafv2: Wafv2Port;
  } & Partial<Omit<IngressDeps, EngineGiven | 'vpcId' | 'elbv2' | 'acm' | 'wafv2'>>;
  /**
   * TargetGroupBindings (functions/target-group-binding): the relay sends binding keys. `kube` serves bindings, the
   * Services, EndpointSlices, Pods, Namespaces and Nodes behind them, the reference's Lease and Events.
   */
  'target-group-binding': {
    kube: TgbControllerKube;
    elbv2: Elbv2Port;
  } & Partial<Omit<TgbDeps, EngineGiven | 'kube' | 'elbv2'>>;
  /**
   * The interruption controller: with it, the EC2 events router sends interruption notices to the interruption
   * queue (as INTERRUPTION_QUEUE_URL makes it do in AWS) and the interruption reconciler drains their Nodes.
   */
  interruption: {
    /** Pods and evictions; `kube` must then serve them. */
    drain: DrainPort;
    /** Termination lifecycle hooks; without it they are left to time out. */
    autoscaling?: AutoScalingPort;
    /** INTERRUPTION_ACTIONS: the kinds it names; the others keep their defaults. */
    actionOverrides?: Partial<InterruptionDeps['actions']>;
  } & Partial<Omit<InterruptionDeps, EngineGiven | 'drain' | 'autoscaling' | 'actions'>>;
}

/** `options` without its undefined fields, so that they leave a default in place when spread over it. */
function defined<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export interface EngineOptions {
  clusterName: string;
  region: string;
  ipFamilies: ('ipv4' | 'ipv6')[];
  clock: Clock;
  ec2: Ec2Port;
  kube: KubernetesPort;
  log: Log;
  metrics: RecordingMetrics;
  /** How long the EC2 events router trusts its instance -> Node map (NODE_INDEX_TTL_SECONDS); default 60 s. */
  nodeIndexTtlMs?: number;
  /**
   * The controllers to run besides those always on (shared/controllers.ts: no switch), with what each needs; a
   * controller with a switch runs only when given here.
   */
  controllers?: { [N in ControllerName]?: ControllerOptions[N] };
}

/** The standard queue EventBridge's rules feed, and the router's function. */
export const EC2_EVENTS_QUEUE = 'ec2-events';

/** Each controller's in-process queue: its name, as the stack names it (without the stage prefix). */
export const CONTROLLER_QUEUES = Object.fromEntries(CONTROLLER_NAMES.map((name) => [name, `${name}.fifo`])) as Readonly<
  Record<ControllerName, string>
>;

/** The dead-letter queue of an in-process queue, named as the stack names it. */
export function dlqOf(queue: string): string {
  return queue.endsWith('.fifo') ? `${queue.slice(0, -'.fifo'.length)}-dlq.fifo` : `${queue}-dlq`;
}

/** The in-process queues under short names, for wiring of one's own on them (test/property/cluster.ts). */
export const QUEUES = {
  ...CONTROLLER_QUEUES,
  lifecycle: CONTROLLER_QUEUES['node-lifecycle'],
  ec2Events: EC2_EVENTS_QUEUE,
} as const;

/** Every in-process queue: the controllers', then the EC2 events queue. */
export const ALL_QUEUES: readonly string[] = [...Object.values(CONTROLLER_QUEUES), EC2_EVENTS_QUEUE];
export const DLQS: readonly string[] = ALL_QUEUES.map(dlqOf);

/** The reconcilers the relay can feed, under the relay's names (those of the controller table). */
export type EngineReconciler = ControllerName & RelayReconciler;

type Handler = (records: SQSRecord[]) => Promise<SQSBatchResponse>;

/** Receives before a message moves to its DLQ, as the stack sets them (stacks/config.ts FUNCTION_DEFAULTS). */
const receives = (name: FunctionName) => FUNCTION_DEFAULTS[name].maxReceiveCount;

/**
 * The queues as the stack makes them: the same receives before a message moves to its DLQ, so a Service waiting
 * on a provisioning NLB is dead-lettered locally when it would be in AWS. Visibility timeouts stay at the fake's
 * 30 s: the in-process event source never loses an invocation, so they only matter after a handler threw, and
 * six times a Lambda timeout would leave a local run idle for minutes.
 */
function createQueues(clock: Clock, region: string): FakeSqs {
  const sqs = new FakeSqs(clock, region);
  for (const name of CONTROLLER_NAMES) {
    const queue = CONTROLLER_QUEUES[name];
    sqs.createQueue(queue, { maxReceiveCount: receives(name), deadLetterQueue: dlqOf(queue) });
  }
  sqs.createQueue(EC2_EVENTS_QUEUE, {
    fifo: false,
    maxReceiveCount: receives('ec2-events'),
    deadLetterQueue: dlqOf(EC2_EVENTS_QUEUE),
  });
  return sqs;
}

/** What building one controller's handler may use. */
interface Build {
  o: EngineOptions;
  reconcile: <D, B>(reconciler: Reconciler<D, B>, deps: D) => Handler;
  common: { kube: KubernetesPort; ec2: Ec2Port; clock: Clock; log: Log; metrics: RecordingMetrics };
}

/**
 * Each controller's handler, with exactly the deps its Lambda handler gives it (functions/<name>/handler.ts);
 * one entry per controller of shared/controllers.ts, or the typecheck fails.
 */
const HANDLERS: { [N in ControllerName]: (b: Build, options: ControllerOptions[N]) => Handler } = {
  node: ({ o, reconcile, common }) =>
    reconcile(nodeReconciler, {
      ...common,
      clusterName: o.clusterName,
      region: o.region,
      ipFamilies: o.ipFamilies,
      facts: new Ec2Facts(o.ec2, o.clock),
    } satisfies NodeDeps),
  'node-lifecycle': ({ reconcile, common }) => reconcile(nodeLifecycleReconciler, common satisfies LifecycleDeps),
  route: ({ o, reconcile, common }, route) =>
    reconcile(routeReconciler, { ...common, clusterName: o.clusterName, ...route } satisfies RouteDeps),
  service: ({ o, reconcile }, service) => reconcile(serviceReconciler, serviceDeps(o, service)),
  ipam: ({ o, reconcile }, { pods, ...settings }) =>
    reconcile(ipamReconciler, {
      // IPAM_COOLDOWN_SECONDS's default, as deployed.
      cooldownSeconds: 30,
      ...defined(settings),
      clusterName: o.clusterName,
      kube: o.kube,
      pods,
      ec2: o.ec2,
      facts: new Ec2Facts(o.ec2, o.clock),
      clock: o.clock,
      log: o.log,
      metrics: o.metrics,
    } satisfies IpamDeps),
  ingress: ({ o, reconcile }, ingress) => reconcile(ingressReconciler, ingressDeps(o, ingress)),
  'target-group-binding': ({ o, reconcile }, { kube, elbv2, ...settings }) =>
    reconcile(targetGroupBindingReconciler, {
      // The defaults of its settings, as deployed (shared/controllers.ts).
      readinessRequeueSeconds: DEFAULT_READINESS_REQUEUE_SECONDS,
      checkLbcLease: true,
      ...defined(settings),
      clusterName: o.clusterName,
      kube,
      ec2: o.ec2,
      elbv2,
      clock: o.clock,
      log: o.log,
      metrics: o.metrics,
    } satisfies TgbDeps),
  interruption: ({ o, reconcile }, { drain, autoscaling, actionOverrides, ...settings }) =>
    reconcile(interruptionReconciler, {
      // The defaults of INTERRUPTION_OUT_OF_SERVICE_TAINT, _EXCLUDE_FROM_LOAD_BALANCERS, _DRAIN_REQUEUE_SECONDS.
      outOfServiceTaint: false,
      excludeFromLoadBalancers: true,
      drainRequeueSeconds: 5,
      ...defined(settings),
      clusterName: o.clusterName,
      kube: o.kube,
      drain,
      ...(autoscaling ? { autoscaling } : {}),
      ec2: o.ec2,
      // Kinds INTERRUPTION_ACTIONS does not name keep their defaults, as in the Lambda.
      actions: { ...DEFAULT_INTERRUPTION_ACTIONS, ...actionOverrides },
      clock: o.clock,
      log: o.log,
      metrics: o.metrics,
    } satisfies InterruptionDeps),
};

/** The service controller's deps, as its Lambda handler sets them (functions/service/handler.ts). */
function serviceDeps(
  o: EngineOptions,
  { kube, elbv2, elb, vpcId, ...settings }: ControllerOptions['service'],
): ServiceDeps {
  return {
    // Short waits for a simulated load balancer; real mode gives the Lambdas' settings.
    provisioningRequeueSeconds: 30,
    cleanupRequeueSeconds: 30,
    ...defined(settings),
    vpcId,
    kube,
    ec2: o.ec2,
    elbv2,
    ...(elb ? { elb } : {}),
    clusterName: o.clusterName,
    clock: o.clock,
    log: o.log,
    metrics: o.metrics,
  };
}

/** The Ingress controller's deps, as its Lambda handler sets them (functions/ingress/handler.ts). */
function ingressDeps(
  o: EngineOptions,
  { kube, elbv2, acm, wafv2, vpcId, ...settings }: ControllerOptions['ingress'],
): IngressDeps {
  return {
    // The defaults of its settings (shared/config/settings.ts), but short waits for a simulated load balancer, as
    // the service controller's; real mode gives the Lambda's settings.
    defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
    defaultTargetType: 'instance',
    defaultTags: {},
    externalManagedTags: [],
    provisioningRequeueSeconds: 30,
    cleanupRequeueSeconds: 30,
    replacementGraceSeconds: 360,
    ...defined(settings),
    vpcId,
    kube,
    ec2: o.ec2,
    elbv2,
    acm,
    wafv2,
    clusterName: o.clusterName,
    clock: o.clock,
    log: o.log,
    metrics: o.metrics,
  };
}

/** The options of each controller that runs: those without a switch always, the others when given. */
function running(o: EngineOptions): { [N in ControllerName]?: ControllerOptions[N] } {
  const given = o.controllers ?? {};
  return Object.fromEntries(
    CONTROLLER_NAMES.flatMap((name) => {
      const options = given[name] ?? (CONTROLLERS[name].switches.length === 0 ? {} : undefined);
      return options === undefined ? [] : [[name, options]];
    }),
  );
}

/**
 * The EC2 events router as its Lambda is wired (functions/ec2-events/handler.ts): state changes to the controller
 * shared/controllers.ts names for them, interruption notices to the interruption controller when it runs.
 */
function routerDeps(o: EngineOptions, sqs: FakeSqs, on: ReadonlySet<ControllerName>, wake: () => void): RouterDeps {
  const deps: RouterDeps = {
    index: new NodeIndex(o.kube, o.clock, o.nodeIndexTtlMs),
    sqs,
    routes: { 'state-change': sqs.urlOf(CONTROLLER_QUEUES[ec2EventTarget('ec2-state-change')]) },
    log: o.log,
    metrics: o.metrics,
  };
  const interruption = ec2EventTarget('ec2-interruption');
  if (on.has(interruption)) {
    // A notice wakes an idle loop as a key does: a spot warning leaves two minutes.
    const sendFifo: FakeSqs['sendFifo'] = async (url, messages) => {
      const failed = await sqs.sendFifo(url, messages);
      wake();
      return failed;
    };
    deps.interruption = { queueUrl: sqs.urlOf(CONTROLLER_QUEUES[interruption]), sqs: { sendFifo } };
  }
  return deps;
}

/** One handler per queue, as the stack gives each queue its function; controllers that are off get none. */
function createHandlers(o: EngineOptions, sqs: FakeSqs, wake: () => void): Map<string, Handler> {
  const runner: RunnerDeps = { log: o.log, metrics: o.metrics, queue: sqs, clock: o.clock };
  const build: Build = {
    o,
    reconcile: (reconciler, deps) => (records) => runBatch(reconciler, records, deps, runner),
    common: { kube: o.kube, ec2: o.ec2, clock: o.clock, log: o.log, metrics: o.metrics },
  };
  const on = running(o);
  const names = Object.keys(on) as ControllerName[];
  const router = routerDeps(o, sqs, new Set(names), wake);
  const handlers = new Map<string, Handler>([[EC2_EVENTS_QUEUE, (records) => routeEc2Events(records, router)]]);
  for (const name of names) {
    const make = HANDLERS[name] as (b: Build, options: unknown) => Handler;
    handlers.set(CONTROLLER_QUEUES[name], make(build, on[name]));
  }
  return handlers;
}

/** Resolves waiters early when work arrives, so an idle loop reacts to a key at once instead of at its next poll. */
function createWake() {
  const waiters = new Set<() => void>();
  return {
    notify(): void {
      for (const wake of [...waiters]) wake();
    },
    /** Wait `ms`, or less if `notify` comes first. */
    idle(ms: number): Promise<void> {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, ms));
        waiters.add(done);
      });
    },
  };
}

/**
 * One round of functions/resync on these queues: every Node key, the route table key, every LoadBalancer
 * Service (and every Service still holding the cleanup finalizer), every Windows Node key and the IPAM and
 * Service garbage-collection keys, every IngressGroup key, every TargetGroupBinding key, each to the queue of a controller that runs, that the resync feeds and that
 * `allows` (default all). Throws ResyncError when keys were refused, after sending the rest.
 */
function resyncer(o: EngineOptions, keys: SqsPort, queueUrls: Partial<Record<ControllerName, string>>) {
  const { service: services, ingress, 'target-group-binding': bindings } = running(o);
  return (round: string, allows: (r: ControllerName) => boolean = () => true) =>
    resync(round, {
      kube: o.kube,
      // As the Lambda does: only the Nodes a sweep of the cluster's instances finds out of step.
      nodeSweep: { ec2: o.ec2, clusterName: o.clusterName, ipFamilies: o.ipFamilies },
      ...(services ? { services: services.kube } : {}),
      ...(ingress ? { ingresses: ingress.kube } : {}),
      ...(bindings ? { targetGroupBindings: bindings.kube } : {}),
      sqs: keys,
      queues: resyncQueues((r) => (allows(r) ? queueUrls[r] : undefined)),
      log: o.log,
      metrics: o.metrics,
    });
}

/** The Lambda event source mappings: polls of the queues that have a function. */
function eventSourceMappings(sqs: FakeSqs, handlers: Map<string, Handler>) {
  return {
    /** One poll of every queue (or those `allows`); returns how many records were handled. */
    async pumpOnce(allows: (queue: string) => boolean = () => true): Promise<number> {
      const polls = [...handlers].filter(([queue]) => allows(queue));
      const handled = await Promise.all(polls.map(([queue, handler]) => sqs.pump(queue, handler)));
      return handled.reduce((a, b) => a + b, 0);
    },
    nextVisibleInMs(): number | undefined {
      const waits = [...handlers.keys()].map((q) => sqs.nextVisibleInMs(q)).filter((x): x is number => x !== undefined);
      return waits.length > 0 ? Math.min(...waits) : undefined;
    },
    /** Messages waiting or in flight on the queues that have a function. */
    depth: () => [...handlers.keys()].reduce((n, q) => n + sqs.depth(q), 0),
    dlqDepth: () => DLQS.reduce((n, q) => n + sqs.depth(q), 0),
  };
}

/**
 * Every reconciler in one process, on an in-process SQS that keeps the FIFO workqueue semantics
 * (shared/aws/fakes/sqs/fake-sqs.ts plays both the queues and the Lambda event source mappings). The same
 * wiring serves the embedded simulation (fake clock, fakes) and a real cluster and account. Keys come
 * from producers outside: the relay (`keys`, `queueUrls`), EC2 events (`enqueueEc2Event`) and `resync`.
 */
export function createEngine(o: EngineOptions) {
  const sqs = createQueues(o.clock, o.region);
  const wake = createWake();
  const handlers = createHandlers(o, sqs, wake.notify);
  /** The controllers that run, in the order of shared/controllers.ts. */
  const reconcilers = CONTROLLER_NAMES.filter((name) => handlers.has(CONTROLLER_QUEUES[name]));
  const queueUrlOf = Object.fromEntries(reconcilers.map((r) => [r, sqs.urlOf(CONTROLLER_QUEUES[r])])) as Partial<
    Record<ControllerName, string>
  >;
  /** The queue URL of each controller that runs and that the relay feeds: what the relay is configured with. */
  const queueUrls = Object.fromEntries(
    reconcilers.filter((r) => feeds(r, 'relay')).map((r) => [r, queueUrlOf[r]]),
  ) as Partial<Record<EngineReconciler, string>>;

  /** The in-process SQS as producers see it: every accepted key wakes an idle loop. */
  const keys: SqsPort = {
    sendKeys: async (queueUrl, messages) => {
      const failed = await sqs.sendKeys(queueUrl, messages);
      wake.notify();
      return failed;
    },
    changeVisibility: (queueArn, entries) => sqs.changeVisibility(queueArn, entries),
  };

  /**
   * The EC2 events hook: one raw EventBridge event (what the EventBridge rule puts on the ec2-events
   * queue in AWS) onto the in-process EC2 events queue, where the router of functions/ec2-events turns
   * it into a Node key. Unparseable bodies are acknowledged and counted there, as in AWS.
   */
  async function enqueueEc2Event(body: string): Promise<void> {
    sqs.send(EC2_EVENTS_QUEUE, body);
    wake.notify();
  }

  return {
    sqs,
    keys,
    queueUrls,
    reconcilers,
    enqueueEc2Event,
    resync: resyncer(o, keys, queueUrlOf),
    ...eventSourceMappings(sqs, handlers),
    idle: wake.idle,
    /** Ends an `idle` early (a stop was asked for). */
    wake: wake.notify,
  };
}

export type Engine = ReturnType<typeof createEngine>;
