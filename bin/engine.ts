import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { NodeIndex } from '../functions/ec2-events/node-index.ts';
import { routeEc2Events } from '../functions/ec2-events/router.ts';
import { type NodeDeps, nodeReconciler } from '../functions/node/reconciler.ts';
import { type LifecycleDeps, nodeLifecycleReconciler } from '../functions/node-lifecycle/reconciler.ts';
import { nodeFingerprint, type Reconciler as RelayReconciler } from '../functions/relay/forwarding.ts';
import { type RouteDeps, routeReconciler } from '../functions/route/reconciler.ts';
import type { ServiceDeps } from '../functions/service/deps.ts';
import { serviceReconciler } from '../functions/service/reconciler.ts';
import { Ec2Facts } from '../shared/aws/ec2-facts.ts';
import type { Ec2Port } from '../shared/aws/ec2-port.ts';
import type { ElbPort } from '../shared/aws/elb-port.ts';
import type { Elbv2Port } from '../shared/aws/elbv2-port.ts';
import type { Clock } from '../shared/clock.ts';
import type { KubernetesPort } from '../shared/k8s/port.ts';
import type { ServiceControllerKube } from '../shared/k8s/service-port.ts';
import type { Node } from '../shared/k8s/types.ts';
import type { Cidr } from '../shared/net/cidr.ts';
import type { Log } from '../shared/observability/log.ts';
import type { RecordingMetrics } from '../shared/observability/metrics.ts';
import { FakeSqs } from '../shared/queue/fake-sqs.ts';
import type { KeyHint, KeyMessage } from '../shared/queue/message.ts';
import { routeTableMessage } from '../shared/queue/route-table-key.ts';
import { type Reconciler, type RunnerDeps, runBatch } from '../shared/queue/runner.ts';
import { garbageCollectionMessage } from '../shared/queue/service-gc-key.ts';

export interface EngineOptions {
  clusterName: string;
  region: string;
  ipFamilies: ('ipv4' | 'ipv6')[];
  clock: Clock;
  ec2: Ec2Port;
  kube: KubernetesPort;
  log: Log;
  metrics: RecordingMetrics;
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
}

export const QUEUES = {
  node: 'node.fifo',
  lifecycle: 'node-lifecycle.fifo',
  route: 'route.fifo',
  service: 'service.fifo',
  ec2Events: 'ec2-events',
} as const;
export const DLQS = [
  'node-dlq.fifo',
  'node-lifecycle-dlq.fifo',
  'route-dlq.fifo',
  'service-dlq.fifo',
  'ec2-events-dlq',
];

type Handler = (records: SQSRecord[]) => Promise<SQSBatchResponse>;

/**
 * Every reconciler in one process, on an in-process SQS that keeps the FIFO workqueue semantics
 * (shared/queue/fake-sqs.ts plays both the queues and the Lambda event source mappings). The same
 * wiring serves the embedded simulation (fake clock, fakes) and a real cluster and account.
 */
export function createEngine(o: EngineOptions) {
  const sqs = new FakeSqs(o.clock, o.region);
  sqs.createQueue(QUEUES.node, { maxReceiveCount: 10, deadLetterQueue: DLQS[0], visibilityTimeoutSeconds: 60 });
  sqs.createQueue(QUEUES.lifecycle, { maxReceiveCount: 10, deadLetterQueue: DLQS[1] });
  sqs.createQueue(QUEUES.route, { maxReceiveCount: 10, deadLetterQueue: DLQS[2] });
  sqs.createQueue(QUEUES.service, { maxReceiveCount: 50, deadLetterQueue: DLQS[3] });
  sqs.createQueue(QUEUES.ec2Events, { fifo: false, maxReceiveCount: 5, deadLetterQueue: DLQS[4] });

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
  const routerDeps = {
    index: new NodeIndex(o.kube, o.clock),
    sqs,
    routes: { 'state-change': sqs.urlOf(QUEUES.lifecycle) },
    log: o.log,
    metrics: o.metrics,
  };
  const reconcile =
    <D, B>(reconciler: Reconciler<D, B>, deps: D): Handler =>
    (records) =>
      runBatch(reconciler, records, deps, runner);
  const handlers: [string, Handler][] = [
    [QUEUES.ec2Events, (records) => routeEc2Events(records, routerDeps)],
    [QUEUES.node, reconcile(nodeReconciler, nodeDeps)],
    [QUEUES.lifecycle, reconcile(nodeLifecycleReconciler, lifecycleDeps)],
  ];
  if (o.routes) {
    const routeDeps: RouteDeps = { ...common, clusterName: o.clusterName, ...o.routes };
    handlers.push([QUEUES.route, reconcile(routeReconciler, routeDeps)]);
  }
  const services = o.services;
  if (services) {
    const serviceDeps: ServiceDeps = {
      ...common,
      kube: services.kube,
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
    };
    handlers.push([QUEUES.service, reconcile(serviceReconciler, serviceDeps)]);
  }

  /** A Service key (its spec, its EndpointSlices or the Node set changed). */
  async function enqueueService(namespace: string, name: string, hint: KeyHint): Promise<void> {
    if (services) await sqs.sendKeys(sqs.urlOf(QUEUES.service), [{ kind: 'Service', namespace, name, hint }]);
  }

  /** Instance targets follow the Node set: every LoadBalancer Service looks again. */
  async function enqueueLoadBalancerServices(hint: KeyHint): Promise<void> {
    if (!services) return;
    for (const svc of await services.kube.listServices()) {
      if (svc.spec?.type === 'LoadBalancer')
        await enqueueService(svc.metadata.namespace ?? 'default', svc.metadata.name, hint);
    }
  }

  /** Node keys for every reconciler that reads Nodes (the relay's forwarding rules, for Nodes). */
  async function enqueueNode(name: string, hint: KeyHint): Promise<void> {
    const key: KeyMessage = { kind: 'Node', name, hint };
    await sqs.sendKeys(sqs.urlOf(QUEUES.node), [key]);
    await sqs.sendKeys(sqs.urlOf(QUEUES.lifecycle), [key]);
    // The route table is one key for the whole cluster (docs/adr/0003); the hint keeps changes apart.
    if (o.routes) await sqs.sendKeys(sqs.urlOf(QUEUES.route), [routeTableMessage(hint)]);
    await enqueueLoadBalancerServices(hint);
  }

  // Relay stand-in: forward a Node only when a field one of these reconcilers reads changed (the
  // relay's forwarding rules decide which: functions/relay/forwarding.ts).
  const nodeReaders: RelayReconciler[] = [
    'node',
    'node-lifecycle',
    ...(o.routes ? (['route'] as const) : []),
    ...(o.services ? (['service'] as const) : []),
  ];
  const fingerprints = new Map<string, string>();
  async function nodeChanged(name: string, node: Node | undefined): Promise<void> {
    const fp = node ? nodeFingerprint(node, nodeReaders) : 'deleted';
    if (fingerprints.get(name) === fp) return;
    fingerprints.set(name, fp);
    await enqueueNode(name, {
      resourceVersion: node?.metadata.resourceVersion ?? `deleted-${o.clock.now()}`,
      eventType: node ? 'MODIFIED' : 'DELETED',
    });
  }

  /**
   * The level-triggered safety net, as functions/resync does it: every Node key again, the route table key,
   * every LoadBalancer Service and the service garbage-collection key (one hint per round, so SQS
   * deduplication keeps one copy of each however many Nodes asked for it).
   */
  async function resync(round: number): Promise<number> {
    const hint: KeyHint = { eventType: 'RESYNC', eventId: `resync-${round}` };
    const nodes = await o.kube.listNodes();
    for (const node of nodes) await enqueueNode(node.metadata.name, hint);
    if (o.routes) await sqs.sendKeys(sqs.urlOf(QUEUES.route), [routeTableMessage(hint)]);
    if (services) {
      await enqueueLoadBalancerServices(hint);
      await sqs.sendKeys(sqs.urlOf(QUEUES.service), [garbageCollectionMessage(hint)]);
    }
    return nodes.length;
  }

  /** One poll of every queue; returns how many records were handled. */
  async function pumpOnce(): Promise<number> {
    const handled = await Promise.all(handlers.map(([queue, handler]) => sqs.pump(queue, handler)));
    return handled.reduce((a, b) => a + b, 0);
  }

  function nextVisibleInMs(): number | undefined {
    const waits = handlers.map(([q]) => sqs.nextVisibleInMs(q)).filter((x): x is number => x !== undefined);
    return waits.length > 0 ? Math.min(...waits) : undefined;
  }

  const depth = () => handlers.reduce((n, [q]) => n + sqs.depth(q), 0);
  const dlqDepth = () => DLQS.reduce((n, q) => n + sqs.depth(q), 0);

  return { sqs, enqueueNode, enqueueService, nodeChanged, resync, pumpOnce, nextVisibleInMs, depth, dlqDepth };
}

export type Engine = ReturnType<typeof createEngine>;
