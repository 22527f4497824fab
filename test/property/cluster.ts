import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { DLQS, dlqOf, QUEUES } from '../../bin/engine.ts';
import { NodeIndex } from '../../functions/ec2-events/node-index.ts';
import { type RouterDeps, routeEc2Events } from '../../functions/ec2-events/router.ts';
import type { IngressDeps } from '../../functions/ingress/deps.ts';
import { ingressReconciler } from '../../functions/ingress/reconciler.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from '../../functions/interruption/plan.ts';
import { type InterruptionDeps, interruptionReconciler } from '../../functions/interruption/reconciler.ts';
import type { IpamDeps } from '../../functions/ipam/deps.ts';
import { ipamReconciler } from '../../functions/ipam/reconciler.ts';
import { type NodeDeps, nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { ChangeRouter } from '../../functions/relay/change-router.ts';
import type { Reconciler as RelayReconciler } from '../../functions/relay/controllers/index.ts';
import type { KubeObject } from '../../functions/relay/kinds.ts';
import { resync } from '../../functions/resync/resync.ts';
import type { RouteDeps } from '../../functions/route/deps.ts';
import { routeReconciler } from '../../functions/route/reconciler.ts';
import type { ServiceDeps } from '../../functions/service/deps.ts';
import { serviceReconciler } from '../../functions/service/reconciler.ts';
import type { TgbDeps } from '../../functions/target-group-binding/deps.ts';
import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import { AcmAdapter } from '../../shared/aws/acm-adapter.ts';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import { ElbAdapter } from '../../shared/aws/elb-adapter.ts';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import { FakeAcm } from '../../shared/aws/fakes/acm/fake-acm.ts';
import { FakeEc2, makeRouteTable, makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElb } from '../../shared/aws/fakes/elb/fake-elb.ts';
import { FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { FakeSqs } from '../../shared/aws/fakes/sqs/fake-sqs.ts';
import type { Wafv2Port } from '../../shared/aws/wafv2-port.ts';
import { FakeClock } from '../../shared/clock.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import { FakeIngresses, fakeIngressControllerKube } from '../../shared/k8s/fakes/ingresses.ts';
import { FakeTargetGroupBindings, fakeTgbControllerKube } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { parseCidr } from '../../shared/net/cidr.ts';
import { type Log, silentLog } from '../../shared/observability/log.ts';
import { RecordingMetrics } from '../../shared/observability/metrics.ts';
import { type KeyMessage, messageGroupId } from '../../shared/queue/message.ts';
import { type Reconciler, type RunnerDeps, runBatch } from '../../shared/queue/runner.ts';
import type { FifoMessage } from '../../shared/queue/sqs-port.ts';
import { FUNCTION_DEFAULTS } from '../../stacks/config.ts';
import { dieWithCrash, type FaultPlayer, faultyClient } from './faults.ts';

/**
 * The whole controller in one process for the property test: every reconciler on its FIFO queue (FakeSqs, the
 * stack's receive counts and DLQs), the EC2 events router, the relay's change router fed by FakeKubernetes' watch,
 * the resync, and the stateful fakes behind the real SDK adapters. bin/engine.ts wires the same pieces for
 * `npm start`; this copy differs where a property test needs it to: AWS calls go through the fault tape, polls are
 * sequential and the runner's jitter fixed (a run is a pure function of its history and schedule), and a crashed
 * or timed-out invocation loses its answer as a Lambda would.
 */

export const CLUSTER = 'prop';
export const VPC = 'vpc-0a1b2c3d';
export const NODE_GROUP = 'sg-0000000000000node';
export const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'] as const;
/** The Windows Nodes' subnet, where the IP address manager takes Pod addresses from. */
export const WINDOWS_SUBNET = makeSubnet({ index: 1, zone: 'eu-west-1a' });
export const CLUSTER_CIDR = '10.244.0.0/16';

// The engine's queue names (bin/engine.ts), so the property's wiring and the local runner's never drift apart.
export { DLQS, QUEUES };

const RELAYED: Record<string, string> = {
  node: QUEUES.node,
  'node-lifecycle': QUEUES.lifecycle,
  route: QUEUES.route,
  service: QUEUES.service,
  ipam: QUEUES.ipam,
  ingress: QUEUES.ingress,
  'target-group-binding': QUEUES['target-group-binding'],
};

type Handler = (records: SQSRecord[]) => Promise<SQSBatchResponse>;

function clusterCidr() {
  const parsed = parseCidr(CLUSTER_CIDR);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.cidr;
}

/** The VPC: public and private subnets per zone, the cluster's route table, the Nodes' security group. */
function seedAccount(ec2: FakeEc2): void {
  ZONES.forEach((zone, i) => {
    ec2.putSubnet(makeSubnet({ index: 10 + i, zone, tags: { Name: `public-${zone}`, 'kubernetes.io/role/elb': '1' } }));
    ec2.putSubnet(
      makeSubnet({ index: 20 + i, zone, tags: { Name: `private-${zone}`, 'kubernetes.io/role/internal-elb': '1' } }),
    );
  });
  ec2.putSubnet(WINDOWS_SUBNET);
  ec2.putRouteTable({
    ...makeRouteTable({ clusterName: CLUSTER }),
    associations: ZONES.map((_, i) => ({ subnetId: makeSubnet({ index: 10 + i }).subnetId, main: false })),
  });
  ec2.putRouteTable({
    ...makeRouteTable({ routeTableId: 'rtb-0000000000000priv', clusterName: '' }),
    tags: {},
    routes: [
      { destination: '10.0.0.0/16', target: { gatewayId: 'local' }, origin: 'CreateRouteTable' },
      { destination: '0.0.0.0/0', target: { natGatewayId: 'nat-0a1b2c3d' }, origin: 'CreateRoute' },
    ],
    associations: [{ main: true }],
  });
  ec2.putSecurityGroup({
    groupId: NODE_GROUP,
    groupName: `${CLUSTER}-nodes`,
    vpcId: VPC,
    description: 'cluster nodes',
    tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' },
    ingress: [],
  });
}

export function createCluster(faults: FaultPlayer, options: { newResourceInvisibleMs?: number } = {}) {
  const clock = new FakeClock();
  const ec2 = new FakeEc2(clock);
  const elbv2 = new FakeElbv2(clock, ec2);
  const elb = new FakeElb(clock, ec2);
  const kube = new FakeKubernetes(clock);
  const metrics = new RecordingMetrics();
  const log = process.env.PROP_LOG ? replayLog : silentLog;
  seedAccount(ec2);
  const invisibleMs = options.newResourceInvisibleMs ?? 0;
  ec2.newSecurityGroupInvisibleMs = invisibleMs;
  ec2.newAddressInvisibleMs = invisibleMs;
  elbv2.newTargetGroupInvisibleMs = invisibleMs;

  // What the reconcilers reach: the real adapters over the fault tape; Kubernetes dies with a crashed invocation.
  // biome-ignore lint/suspicious/noExplicitAny: the adapters take an SDK client; the fakes answer its `send`.
  const client = (service: 'ec2' | 'elbv2' | 'elb', fake: { send(c: object): Promise<unknown> }): any =>
    faultyClient(service, fake, faults);
  const ec2Port = new Ec2Adapter(client('ec2', ec2));
  const elbv2Port = new Elbv2Adapter(client('elbv2', elbv2));
  const elbPort = new ElbAdapter(client('elb', elb));
  const kubePort = dieWithCrash(kube, faults);

  const sqs = new FakeSqs(clock);
  const receives = (name: keyof typeof FUNCTION_DEFAULTS) => FUNCTION_DEFAULTS[name].maxReceiveCount;
  sqs.createQueue(QUEUES.node, { maxReceiveCount: receives('node'), deadLetterQueue: dlqOf(QUEUES.node) });
  sqs.createQueue(QUEUES.lifecycle, {
    maxReceiveCount: receives('node-lifecycle'),
    deadLetterQueue: dlqOf(QUEUES.lifecycle),
  });
  sqs.createQueue(QUEUES.route, { maxReceiveCount: receives('route'), deadLetterQueue: dlqOf(QUEUES.route) });
  sqs.createQueue(QUEUES.service, { maxReceiveCount: receives('service'), deadLetterQueue: dlqOf(QUEUES.service) });
  sqs.createQueue(QUEUES.ec2Events, {
    fifo: false,
    maxReceiveCount: receives('ec2-events'),
    deadLetterQueue: dlqOf(QUEUES.ec2Events),
  });
  const interruptionDefaults = (FUNCTION_DEFAULTS as Partial<Record<string, { maxReceiveCount: number }>>).interruption;
  sqs.createQueue(QUEUES.interruption, {
    maxReceiveCount: interruptionDefaults?.maxReceiveCount ?? 100,
    deadLetterQueue: dlqOf(QUEUES.interruption),
  });
  sqs.createQueue(QUEUES.ipam, { maxReceiveCount: receives('ipam'), deadLetterQueue: dlqOf(QUEUES.ipam) });
  sqs.createQueue(QUEUES.ingress, { maxReceiveCount: receives('ingress'), deadLetterQueue: dlqOf(QUEUES.ingress) });
  sqs.createQueue(QUEUES['target-group-binding'], {
    maxReceiveCount: receives('target-group-binding'),
    deadLetterQueue: dlqOf(QUEUES['target-group-binding']),
  });

  const common = { kube: kubePort, ec2: ec2Port, clock, log, metrics };
  const nodeDeps: NodeDeps = {
    ...common,
    clusterName: CLUSTER,
    region: 'eu-west-1',
    ipFamilies: ['ipv4'],
    facts: new Ec2Facts(ec2Port, clock),
  };
  const routeDeps: RouteDeps = { ...common, clusterName: CLUSTER, clusterCidrs: [clusterCidr()], routeTableLimit: 50 };
  const serviceDeps: ServiceDeps = {
    kube: kubePort,
    ec2: ec2Port,
    elbv2: elbv2Port,
    elb: elbPort,
    clusterName: CLUSTER,
    vpcId: VPC,
    provisioningRequeueSeconds: 30,
    cleanupRequeueSeconds: 30,
    // As the deployed handler: resync rounds run the quick check, a full pass per Service hourly.
    resyncQuickCheck: true,
    clock,
    log,
    metrics,
  };
  const interruptionDeps: InterruptionDeps = {
    clusterName: CLUSTER,
    kube: kubePort,
    drain: kubePort,
    ec2: ec2Port,
    actions: DEFAULT_INTERRUPTION_ACTIONS,
    outOfServiceTaint: false,
    drainRequeueSeconds: 5,
    clock,
    log,
    metrics,
  };
  const ipamDeps: IpamDeps = {
    clusterName: CLUSTER,
    vpcId: VPC,
    kube: kubePort,
    pods: kubePort,
    ec2: ec2Port,
    facts: new Ec2Facts(ec2Port, clock),
    cooldownSeconds: 30,
    clock,
    log,
    metrics,
  };
  // Ingresses (test/property/ingress-ops.ts): the class alb of the reference's install, ACM and WAF unused.
  const ingresses = new FakeIngresses(clock);
  ingresses.putIngressClass({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'alb' },
    spec: { controller: 'ingress.k8s.aws/alb' },
  });
  const ingressKube = fakeIngressControllerKube(ingresses, kube);
  const wafv2: Wafv2Port = {
    webAclForResource: async () => undefined,
    findWebAclArn: async (name) => `arn:aws:wafv2:eu-west-1:000000000000:regional/webacl/${name}/0001`,
    associate: async () => undefined,
    disassociate: async () => undefined,
  };
  const ingressDeps: IngressDeps = {
    clusterName: CLUSTER,
    vpcId: VPC,
    defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
    defaultTargetType: 'instance',
    defaultTags: {},
    externalManagedTags: [],
    provisioningRequeueSeconds: 30,
    cleanupRequeueSeconds: 30,
    replacementGraceSeconds: 360,
    kube: dieWithCrash(ingressKube, faults),
    ec2: ec2Port,
    elbv2: elbv2Port,
    acm: new AcmAdapter(new FakeAcm(clock)),
    wafv2,
    clock,
    log,
    metrics,
  };
  // TargetGroupBindings (test/property/tgb-ops.ts), the reference's Lease checked as deployed (nobody holds it).
  const bindings = new FakeTargetGroupBindings(clock);
  const tgbKube = fakeTgbControllerKube(bindings, kube);
  const tgbDeps: TgbDeps = {
    clusterName: CLUSTER,
    vpcId: VPC,
    readinessRequeueSeconds: 10,
    checkLbcLease: true,
    kube: dieWithCrash(tgbKube, faults),
    ec2: ec2Port,
    elbv2: elbv2Port,
    clock,
    log,
    metrics,
  };
  // The runner's visibility changes die with the invocation too; its jitter is fixed.
  const runner: RunnerDeps = { log, metrics, queue: dieWithCrash(sqs, faults), clock, random: () => 0.5 };
  const reconcile =
    <D, B>(reconciler: Reconciler<D, B>, deps: D): Handler =>
    (records) =>
      runBatch(reconciler, records, deps, runner);

  // Messages the fault tape held back ('delay'), sent at the next tick behind the ones sent since.
  const held: { queue: string; group: string; send: () => void }[] = [];
  let duplicates = 0;
  /** One message towards a queue, through the fault tape. `duplicate` sends a copy that dedup lets through. */
  const deliver = (queue: string, group: string, what: string, send: () => void, copy: () => void, mayDrop = true) => {
    // One key keeps its order: once one of its messages is held, the later ones wait behind it.
    if (held.some((h) => h.queue === queue && h.group === group)) {
      held.push({ queue, group, send });
      return;
    }
    switch (faults.nextMessage(what)) {
      case 'drop':
        if (mayDrop) return;
        send();
        return;
      case 'duplicate':
        send();
        copy();
        return;
      case 'delay':
        held.push({ queue, group, send });
        return;
      default:
        send();
    }
  };
  const sendKey = (queue: string, message: KeyMessage) => {
    const url = sqs.urlOf(queue);
    deliver(
      queue,
      messageGroupId(message),
      `${queue} ${messageGroupId(message)}`,
      () => void sqs.sendKeys(url, [message]),
      () => void sqs.sendKeys(url, [{ ...message, hint: { eventType: 'RESYNC', eventId: `dup-${++duplicates}` } }]),
    );
  };

  const routerDeps: RouterDeps = {
    index: new NodeIndex(kubePort, clock, 60_000),
    sqs: {
      sendKeys: async (_url, messages) => {
        for (const m of messages) sendKey(QUEUES.lifecycle, m);
        return [];
      },
    },
    routes: { 'state-change': sqs.urlOf(QUEUES.lifecycle) },
    log,
    metrics,
    interruption: {
      queueUrl: sqs.urlOf(QUEUES.interruption),
      sqs: {
        // Notices go straight to their queue: EC2 sends a warning once, and nothing would bring a lost one back.
        sendFifo: async (url: string, messages: readonly FifoMessage[]) => sqs.sendFifo(url, messages),
      },
    },
  };

  const handlers: [string, Handler][] = [
    [QUEUES.ec2Events, (records) => routeEc2Events(records, routerDeps)],
    [QUEUES.node, reconcile(nodeReconciler, nodeDeps)],
    [QUEUES.lifecycle, reconcile(nodeLifecycleReconciler, common)],
    [QUEUES.route, reconcile(routeReconciler, routeDeps)],
    [QUEUES.service, reconcile(serviceReconciler, serviceDeps)],
    [QUEUES.interruption, reconcile(interruptionReconciler, interruptionDeps)],
    [QUEUES.ipam, reconcile(ipamReconciler, ipamDeps)],
    [QUEUES.ingress, reconcile(ingressReconciler, ingressDeps)],
    [QUEUES['target-group-binding'], reconcile(targetGroupBindingReconciler, tgbDeps)],
  ];

  // The relay: the deployed change router on FakeKubernetes' watch, its keys through the fault tape.
  let nodeSetPending = false;
  const router = new ChangeRouter({
    reconcilers: new Set(Object.keys(RELAYED) as RelayReconciler[]),
    allows: () => true,
    now: () => clock.now(),
    emit: ({ reconciler, message }) => sendKey(RELAYED[reconciler]!, message),
    nodeSetChanged: () => {
      if (nodeSetPending) return;
      nodeSetPending = true;
      queueMicrotask(() => {
        nodeSetPending = false;
        for (const { reconciler, message } of router.takeNodeSetRound()) sendKey(RELAYED[reconciler]!, message);
      });
    },
  });
  // The relay lists the Nodes before it watches (which lets a round of Node joins say so: change-router.ts).
  router.listed('Node', kube.nodes.values() as Iterable<unknown> as Iterable<KubeObject>, '0');
  kube.watch((change) => {
    const object = change.object as unknown as KubeObject;
    if (change.type === 'DELETED') router.remove(change.kind, object);
    else router.observe(change.kind, object);
  });
  ingresses.watch((change) => {
    if (change.kind === 'Namespace') return;
    const object = change.object as unknown as KubeObject;
    if (change.type === 'DELETED') router.remove(change.kind, object);
    else router.observe(change.kind, object);
  });
  bindings.watch((change) => {
    const object = change.object as unknown as KubeObject;
    if (change.type === 'DELETED') router.remove('TargetGroupBinding', object);
    else router.observe('TargetGroupBinding', object);
  });

  /** An EventBridge event onto the EC2 events queue; only state changes may be lost (a resync heals them). */
  let events = 0;
  const enqueueEc2Event = (event: { 'detail-type': string } & Record<string, unknown>) => {
    const body = JSON.stringify(event);
    const send = () => void sqs.send(QUEUES.ec2Events, body);
    const stateChange = event['detail-type'] === 'EC2 Instance State-change Notification';
    deliver(QUEUES.ec2Events, `event-${++events}`, `ec2-events ${event['detail-type']}`, send, send, stateChange);
  };

  /** One poll of one queue, as the event source mapping makes it; a crashed or lost invocation deletes nothing. */
  const poll = (queue: string, handler: Handler): Promise<number> => {
    faults.crashed = false;
    return sqs.pump(queue, handler, 10, () => {
      const lost = faults.crashed || faults.nextPoll(queue) === 'lose-response';
      faults.crashed = false;
      return lost;
    });
  };

  /** Held messages go out now. */
  const release = () => {
    for (const h of held.splice(0)) h.send();
  };

  /** One poll of every queue, in a fixed order. */
  const pumpOnce = async (): Promise<number> => {
    release();
    let handled = 0;
    for (const [queue, handler] of handlers) handled += await poll(queue, handler);
    // The relay's Node-set keys go out at the end of a turn.
    await Promise.resolve();
    return handled;
  };

  /**
   * How long until a poll can receive something, once a poll received nothing: until the earliest message in
   * flight or requeued becomes visible again. (FakeSqs.nextVisibleInMs answers 0 for a message that is visible but
   * waits behind its group's message in flight, which would move the clock a millisecond at a time.)
   */
  const stored = (queue: string) =>
    (sqs as unknown as { queues: Map<string, { messages: { visibleAt: number }[] }> }).queues.get(queue)!.messages;
  const nextVisibleInMs = (): number | undefined => {
    const now = clock.now();
    const messages = handlers.flatMap(([q]) => stored(q));
    if (messages.length === 0) return undefined;
    const later = messages.map((m) => m.visibleAt).filter((at) => at > now);
    return later.length > 0 ? Math.min(...later) - now : 0;
  };

  const resyncRound = (round: string) =>
    resync(round, {
      kube,
      // The node sweep, as the Lambda runs it: its DescribeInstances sees the schedule's faults like any other call.
      nodeSweep: { ec2: ec2Port, clusterName: CLUSTER, ipFamilies: ['ipv4'] },
      services: kube,
      ingresses: ingressKube,
      targetGroupBindings: tgbKube,
      sqs: { sendKeys: async (url, messages) => sqs.sendKeys(url, messages) },
      queues: {
        node: sqs.urlOf(QUEUES.node),
        nodeLifecycle: sqs.urlOf(QUEUES.lifecycle),
        route: sqs.urlOf(QUEUES.route),
        service: sqs.urlOf(QUEUES.service),
        ipam: sqs.urlOf(QUEUES.ipam),
        ingress: sqs.urlOf(QUEUES.ingress),
        targetGroupBinding: sqs.urlOf(QUEUES['target-group-binding']),
      },
      log,
      metrics,
    });

  return {
    clock,
    ec2,
    elbv2,
    elb,
    kube,
    ingresses,
    bindings,
    sqs,
    metrics,
    enqueueEc2Event,
    pumpOnce,
    nextVisibleInMs,
    resyncRound,
    release,
    held: () => held.length,
    dlqDepth: () => DLQS.reduce((n, q) => n + sqs.depth(q), 0),
    dlqBodies: () => DLQS.flatMap((q) => sqs.bodies(q).map((b) => `${q}: ${b}`)),
  };
}

export type Cluster = ReturnType<typeof createCluster>;

/** `PROP_LOG=1 npm run test:soak -- --seed=<n> --path <p>`: a replay prints the controllers' log lines on stderr. */
const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
  console.error(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
const replayLog: Log = { debug: line('DEBUG'), info: line('INFO'), warn: line('WARN'), error: line('ERROR') };
