import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { NodeIndex } from '../functions/ec2-events/node-index.ts';
import { type RouterDeps, routeEc2Events } from '../functions/ec2-events/router.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from '../functions/interruption/plan.ts';
import { type InterruptionDeps, interruptionReconciler } from '../functions/interruption/reconciler.ts';
import type { IpamDeps } from '../functions/ipam/deps.ts';
import { ipamReconciler } from '../functions/ipam/reconciler.ts';
import { type NodeDeps, nodeReconciler } from '../functions/node/reconciler.ts';
import { type LifecycleDeps, nodeLifecycleReconciler } from '../functions/node-lifecycle/reconciler.ts';
import type { Reconciler as RelayReconciler } from '../functions/relay/forwarding.ts';
import { type ResyncQueues, resync } from '../functions/resync/resync.ts';
import type { RouteDeps } from '../functions/route/deps.ts';
import { routeReconciler } from '../functions/route/reconciler.ts';
import type { ServiceDeps } from '../functions/service/deps.ts';
import { serviceReconciler } from '../functions/service/reconciler.ts';
import type { AutoScalingPort } from '../shared/aws/autoscaling-port.ts';
import { Ec2Facts } from '../shared/aws/ec2-facts.ts';
import type { Ec2Port } from '../shared/aws/ec2-port.ts';
import type { ElbPort } from '../shared/aws/elb-port.ts';
import type { Elbv2Port } from '../shared/aws/elbv2-port.ts';
import { FakeSqs } from '../shared/aws/fakes/sqs/fake-sqs.ts';
import type { Clock } from '../shared/clock.ts';
import type { DrainPort } from '../shared/k8s/drain-port.ts';
import type { IpamKubernetesPort } from '../shared/k8s/ipam-port.ts';
import type { KubernetesPort } from '../shared/k8s/port.ts';
import type { ServiceControllerKube } from '../shared/k8s/service-port.ts';
import type { Cidr } from '../shared/net/cidr.ts';
import type { Log } from '../shared/observability/log.ts';
import type { RecordingMetrics } from '../shared/observability/metrics.ts';
import { type Reconciler, type RunnerDeps, runBatch } from '../shared/queue/runner.ts';
import type { SqsPort } from '../shared/queue/sqs-port.ts';
import { FUNCTION_DEFAULTS } from '../stacks/config.ts';

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
  /** Route controller settings; without cluster CIDRs the route controller does not run. */
  routes?: { clusterCidrs: Cidr[]; routeTableId?: string; routeTableLimit: number };
  /** Service load balancers; `kube` must then serve Services and EndpointSlices too. */
  services?: {
    vpcId: string;
    elbv2: Elbv2Port;
    /** Classic ELBs (Services on one, or the default type classic). */
    elb?: ElbPort;
    kube: ServiceControllerKube;
    provisioningRequeueSeconds?: number;
    cleanupRequeueSeconds?: number;
  } & Pick<ServiceDeps, 'loadBalancerClass' | 'nodePortRange' | 'externalManagedTags' | 'defaultLoadBalancerType'>;
  /**
   * The interruption controller: with it, the EC2 events router sends interruption notices to the interruption
   * queue (as INTERRUPTION_QUEUE_URL makes it do in AWS) and the interruption reconciler drains their Nodes.
   */
  interruption?: {
    /** Pods and evictions; `kube` must then serve them. */
    drain: DrainPort;
    /** Termination lifecycle hooks; without it they are left to time out. */
    autoscaling?: AutoScalingPort;
    /** INTERRUPTION_DRAIN_REQUEUE_SECONDS; default 5, as deployed. */
    drainRequeueSeconds?: number;
  } & Partial<Pick<InterruptionDeps, 'actions' | 'outOfServiceTaint'>>;
  /**
   * Windows IP address management (functions/ipam): the relay sends Pod and VPC CNI ConfigMap changes to its queue
   * as the Node's key; whether it hands out addresses is the ConfigMap's `enable-windows-ipam`.
   */
  ipam?: {
    /** Pods on a Node and the VPC CNI ConfigMap; `kube` serves the Nodes. */
    pods: IpamKubernetesPort;
    /** The garbage collector only looks at network interfaces in this VPC. */
    vpcId?: string;
    /** IPAM_COOLDOWN_SECONDS; default 30, as deployed. */
    cooldownSeconds?: number;
  };
}

export const QUEUES = {
  node: 'node.fifo',
  lifecycle: 'node-lifecycle.fifo',
  route: 'route.fifo',
  service: 'service.fifo',
  ec2Events: 'ec2-events',
  interruption: 'interruption.fifo',
  ipam: 'ipam.fifo',
} as const;
export const DLQS = [
  'node-dlq.fifo',
  'node-lifecycle-dlq.fifo',
  'route-dlq.fifo',
  'service-dlq.fifo',
  'ec2-events-dlq',
  'interruption-dlq.fifo',
  'ipam-dlq.fifo',
];
/**
 * Receives before an interruption notice is dead-lettered, should FUNCTION_DEFAULTS have no `interruption` entry;
 * it has one (1000, stacks/config.ts), which the local queue takes as the stack does. A drain requeues every few
 * seconds for up to its deadline (a spot notice: 24 passes of 5 s), and every requeue is a receive.
 */
const INTERRUPTION_MAX_RECEIVES = 100;

/** The queue each reconciler reads, under the relay's names for the reconcilers. */
export const RECONCILER_QUEUES = {
  node: QUEUES.node,
  'node-lifecycle': QUEUES.lifecycle,
  route: QUEUES.route,
  service: QUEUES.service,
  ipam: QUEUES.ipam,
} as const satisfies Partial<Record<RelayReconciler, string>>;
export type EngineReconciler = keyof typeof RECONCILER_QUEUES;

type Handler = (records: SQSRecord[]) => Promise<SQSBatchResponse>;

/**
 * The queues as the stack makes them (stacks/config.ts FUNCTION_DEFAULTS): the same receives before a
 * message moves to its DLQ, so a Service waiting on a provisioning NLB is dead-lettered locally when it
 * would be in AWS. Visibility timeouts stay short: the in-process event source never loses an
 * invocation, so they only matter after a handler threw, and six times a Lambda timeout would leave a
 * local run idle for minutes.
 */
function createQueues(clock: Clock, region: string): FakeSqs {
  const sqs = new FakeSqs(clock, region);
  const receives = (name: keyof typeof FUNCTION_DEFAULTS) => FUNCTION_DEFAULTS[name].maxReceiveCount;
  sqs.createQueue(QUEUES.node, {
    maxReceiveCount: receives('node'),
    deadLetterQueue: DLQS[0],
    visibilityTimeoutSeconds: 60,
  });
  sqs.createQueue(QUEUES.lifecycle, { maxReceiveCount: receives('node-lifecycle'), deadLetterQueue: DLQS[1] });
  sqs.createQueue(QUEUES.route, { maxReceiveCount: receives('route'), deadLetterQueue: DLQS[2] });
  sqs.createQueue(QUEUES.service, { maxReceiveCount: receives('service'), deadLetterQueue: DLQS[3] });
  sqs.createQueue(QUEUES.ec2Events, {
    fifo: false,
    maxReceiveCount: receives('ec2-events'),
    deadLetterQueue: DLQS[4],
  });
  const interruption = (FUNCTION_DEFAULTS as Partial<Record<string, { maxReceiveCount: number }>>).interruption;
  sqs.createQueue(QUEUES.interruption, {
    maxReceiveCount: interruption?.maxReceiveCount ?? INTERRUPTION_MAX_RECEIVES,
    deadLetterQueue: DLQS[5],
  });
  sqs.createQueue(QUEUES.ipam, { maxReceiveCount: receives('ipam'), deadLetterQueue: DLQS[6] });
  return sqs;
}

/** The service controller's deps, exactly the fields its Lambda handler sets (functions/service/handler.ts). */
function serviceDeps(o: EngineOptions, services: NonNullable<EngineOptions['services']>): ServiceDeps {
  return {
    kube: services.kube,
    ec2: o.ec2,
    elbv2: services.elbv2,
    ...(services.elb ? { elb: services.elb } : {}),
    ...(services.defaultLoadBalancerType ? { defaultLoadBalancerType: services.defaultLoadBalancerType } : {}),
    clusterName: o.clusterName,
    vpcId: services.vpcId,
    provisioningRequeueSeconds: services.provisioningRequeueSeconds ?? 30,
    cleanupRequeueSeconds: services.cleanupRequeueSeconds ?? 30,
    ...(services.loadBalancerClass ? { loadBalancerClass: services.loadBalancerClass } : {}),
    ...(services.nodePortRange ? { nodePortRange: services.nodePortRange } : {}),
    ...(services.externalManagedTags ? { externalManagedTags: services.externalManagedTags } : {}),
    clock: o.clock,
    log: o.log,
    metrics: o.metrics,
  };
}

/** The interruption controller's deps, as its Lambda sets them; the notices' queue for the router. */
function interruptionDeps(
  o: EngineOptions,
  interruption: NonNullable<EngineOptions['interruption']>,
): InterruptionDeps {
  return {
    clusterName: o.clusterName,
    kube: o.kube,
    drain: interruption.drain,
    ...(interruption.autoscaling ? { autoscaling: interruption.autoscaling } : {}),
    ec2: o.ec2,
    actions: interruption.actions ?? DEFAULT_INTERRUPTION_ACTIONS,
    outOfServiceTaint: interruption.outOfServiceTaint ?? false,
    drainRequeueSeconds: interruption.drainRequeueSeconds ?? 5,
    clock: o.clock,
    log: o.log,
    metrics: o.metrics,
  };
}

/** The IP address manager's deps, exactly the fields its Lambda handler sets (functions/ipam/handler.ts). */
function ipamDeps(o: EngineOptions, ipam: NonNullable<EngineOptions['ipam']>): IpamDeps {
  return {
    clusterName: o.clusterName,
    ...(ipam.vpcId ? { vpcId: ipam.vpcId } : {}),
    kube: o.kube,
    pods: ipam.pods,
    ec2: o.ec2,
    facts: new Ec2Facts(o.ec2, o.clock),
    cooldownSeconds: ipam.cooldownSeconds ?? 30,
    clock: o.clock,
    log: o.log,
    metrics: o.metrics,
  };
}

/** One handler per queue, as the stack gives each queue its function; controllers that are off get none. */
function createHandlers(o: EngineOptions, sqs: FakeSqs, wake: () => void): Map<string, Handler> {
  const common = { kube: o.kube, ec2: o.ec2, clock: o.clock, log: o.log, metrics: o.metrics };
  const nodeDeps: NodeDeps = {
    ...common,
    clusterName: o.clusterName,
    region: o.region,
    ipFamilies: o.ipFamilies,
    facts: new Ec2Facts(o.ec2, o.clock),
  };
  const lifecycleDeps: LifecycleDeps = common;
  const runner: RunnerDeps = { log: o.log, metrics: o.metrics, queue: sqs, clock: o.clock };
  const routerDeps: RouterDeps = {
    index: new NodeIndex(o.kube, o.clock, o.nodeIndexTtlMs),
    sqs,
    routes: { 'state-change': sqs.urlOf(QUEUES.lifecycle) },
    log: o.log,
    metrics: o.metrics,
  };
  if (o.interruption) {
    // A notice wakes an idle loop as a key does: a spot warning leaves two minutes.
    const sendFifo: FakeSqs['sendFifo'] = async (url, messages) => {
      const failed = await sqs.sendFifo(url, messages);
      wake();
      return failed;
    };
    routerDeps.interruption = { queueUrl: sqs.urlOf(QUEUES.interruption), sqs: { sendFifo } };
  }
  const reconcile =
    <D, B>(reconciler: Reconciler<D, B>, deps: D): Handler =>
    (records) =>
      runBatch(reconciler, records, deps, runner);
  const handlers = new Map<string, Handler>([
    [QUEUES.ec2Events, (records) => routeEc2Events(records, routerDeps)],
    [QUEUES.node, reconcile(nodeReconciler, nodeDeps)],
    [QUEUES.lifecycle, reconcile(nodeLifecycleReconciler, lifecycleDeps)],
  ]);
  if (o.routes) {
    const routeDeps: RouteDeps = { ...common, clusterName: o.clusterName, ...o.routes };
    handlers.set(QUEUES.route, reconcile(routeReconciler, routeDeps));
  }
  if (o.services) handlers.set(QUEUES.service, reconcile(serviceReconciler, serviceDeps(o, o.services)));
  if (o.interruption) {
    handlers.set(QUEUES.interruption, reconcile(interruptionReconciler, interruptionDeps(o, o.interruption)));
  }
  if (o.ipam) handlers.set(QUEUES.ipam, reconcile(ipamReconciler, ipamDeps(o, o.ipam)));
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
 * Service garbage-collection keys, each to
 * the queue of a reconciler that runs and that `allows` (default all). Throws ResyncError when keys were
 * refused, after sending the rest.
 */
function resyncer(o: EngineOptions, keys: SqsPort, queueUrls: Partial<Record<EngineReconciler, string>>) {
  return (round: string, allows: (r: EngineReconciler) => boolean = () => true) => {
    const url = (r: EngineReconciler) => (allows(r) ? queueUrls[r] : undefined);
    const queues: ResyncQueues = {
      node: url('node'),
      nodeLifecycle: url('node-lifecycle'),
      route: url('route'),
      service: url('service'),
      ipam: url('ipam'),
    };
    return resync(round, {
      kube: o.kube,
      // As the Lambda does: only the Nodes a sweep of the cluster's instances finds out of step.
      nodeSweep: { ec2: o.ec2, clusterName: o.clusterName, ipFamilies: o.ipFamilies },
      ...(o.services ? { services: o.services.kube } : {}),
      sqs: keys,
      queues,
      log: o.log,
      metrics: o.metrics,
    });
  };
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
  const reconcilers = (Object.keys(RECONCILER_QUEUES) as EngineReconciler[]).filter((r) =>
    handlers.has(RECONCILER_QUEUES[r]),
  );
  /** The queue URL of each reconciler that runs: what the relay is configured with. */
  const queueUrls: Partial<Record<EngineReconciler, string>> = Object.fromEntries(
    reconcilers.map((r) => [r, sqs.urlOf(RECONCILER_QUEUES[r])]),
  );

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
    sqs.send(QUEUES.ec2Events, body);
    wake.notify();
  }

  return {
    sqs,
    keys,
    queueUrls,
    reconcilers,
    enqueueEc2Event,
    resync: resyncer(o, keys, queueUrls),
    ...eventSourceMappings(sqs, handlers),
    idle: wake.idle,
    /** Ends an `idle` early (a stop was asked for). */
    wake: wake.notify,
  };
}

export type Engine = ReturnType<typeof createEngine>;
