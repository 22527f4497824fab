import { afterEach, describe, expect, it } from 'vitest';
import { startEc2EventsPoller } from '../bin/ec2-events-poller.ts';
import { RecordingSqs, reconcilerQueues } from '../functions/relay/testing/objects.ts';
import { relayFor, start as startRelay, stopStarted } from '../functions/relay/testing/relay.ts';
import { FakeSqs } from '../shared/aws/fakes/sqs/fake-sqs.ts';
import { systemClock } from '../shared/clock.ts';
import { IPV4_RESOURCE, POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../shared/k8s/ipam-names.ts';
import { TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import type { Pod } from '../shared/k8s/types.ts';
import { type Log, silentLog } from '../shared/observability/log.ts';
import { MetricName } from '../shared/observability/metrics.ts';
import { INTERRUPTION_TAINT_KEYS } from '../shared/queue/interruption.ts';
import {
  createLocalRealWorld,
  eventually,
  type LocalProcess,
  type LocalRealWorld,
  quiet,
  startLocalProcess,
  TEST_ELECTION,
} from './helpers/local-real.ts';
import { budget, podOnNode } from './helpers/pods.ts';

/**
 * `npm start -- --real` is event-driven: the relay's list/watch runs in the process and feeds the
 * in-process queues, so a change is reconciled within seconds; the resync (one hour here) is only
 * the safety net. Against the relay's HTTPS API stand-in and the fake AWS (test/helpers/local-real.ts).
 */

let world: LocalRealWorld | undefined;
const processes: LocalProcess[] = [];

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.stop()));
  await stopStarted();
  await world?.close();
  world = undefined;
});

async function setup(): Promise<LocalRealWorld> {
  world = await createLocalRealWorld();
  return world;
}

function start(w: LocalRealWorld, options: Parameters<typeof startLocalProcess>[1] = {}): LocalProcess {
  const p = startLocalProcess(w, options);
  processes.push(p);
  return p;
}

const initialized = (w: LocalRealWorld, name: string) => {
  const node = w.kube.nodes.get(name);
  return Boolean(node?.spec?.providerID) && !node?.spec?.taints?.some((t) => t.key === TAINT_UNINITIALIZED);
};

/** A Log that keeps its lines, to check what an operator is told. */
function recordingLog(): Log & { lines: string[] } {
  const lines: string[] = [];
  const keep = (message: string) => {
    lines.push(message);
  };
  return { lines, debug: () => {}, info: keep, warn: keep, error: keep };
}

describe('npm start -- --real: changes are reconciled as they happen', () => {
  it('a new uninitialized Node is initialized within seconds, long before the next resync', async () => {
    const w = await setup();
    const p = start(w, { resyncSeconds: 3_600 });
    await eventually(() => p.mode.state.leading && p.mode.relay.status().synced, 'the process to lead and list');
    expect(p.mode.state.rounds).toBe(1);

    const { instance, node } = w.launch(1);
    const registeredAt = Date.now();
    w.kube.putNode(node);
    await eventually(() => initialized(w, node.metadata.name), 'the Node to be initialized', 5_000);
    expect(Date.now() - registeredAt).toBeLessThan(5_000);
    expect(w.kube.nodes.get(node.metadata.name)!.spec?.providerID).toBe(`aws:///eu-west-1a/${instance.instanceId}`);
    // The relay's key did it: no second resync round ran, and the relay forwarded the Node.
    expect(p.mode.state.rounds).toBe(1);
    expect(p.mode.relayMetrics.changesForwarded.get({ kind: 'Node' })).toBeGreaterThan(0);
  });

  it('filters as the deployed relay does: a kubelet heartbeat sends no key and reconciles nothing', async () => {
    const w = await setup();
    const { node } = w.launch(2);
    w.kube.putNode(node);
    const p = start(w);
    await eventually(() => initialized(w, node.metadata.name), 'the Node to be initialized');
    await eventually(() => quiet(w, p), 'the relay and the queues to be quiet');
    const reconciles = p.metrics.total(MetricName.Reconciles);
    const filtered = p.mode.relayMetrics.changesFiltered.total({ kind: 'Node' });

    w.kube.mutateNode(node.metadata.name, (n) => {
      for (const c of n.status?.conditions ?? []) c.lastHeartbeatTime = new Date().toISOString();
    });
    await eventually(
      () => p.mode.relayMetrics.changesFiltered.total({ kind: 'Node' }) > filtered,
      'the relay to see and filter the heartbeat',
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(p.metrics.total(MetricName.Reconciles)).toBe(reconciles);
  });

  it('with --once: one resync and the relay list, every queue drained, then it returns by itself', async () => {
    const w = await setup();
    const { node } = w.launch(3);
    w.kube.putNode(node);
    const p = start(w, { once: true });
    await p.done;
    expect(initialized(w, node.metadata.name)).toBe(true);
    expect(p.mode.state.rounds).toBe(1);
    expect(p.mode.engine.depth()).toBe(0);
  });
});

describe('npm start -- --real: Services', () => {
  it('a new LoadBalancer Service gets its NLB within seconds, and a new Node becomes its target without a resync', async () => {
    const w = await setup();
    const first = w.launch(8);
    w.kube.putNode(first.node);
    const p = start(w, { services: true });
    await eventually(() => initialized(w, first.node.metadata.name) && quiet(w, p), 'the first Node and a quiet start');

    w.kube.putService({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { type: 'LoadBalancer', ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] },
    });
    const hostname = () => w.kube.services.get('shop/web')?.status?.loadBalancer?.ingress?.[0]?.hostname;
    await eventually(() => hostname() !== undefined, 'the Service to get its load balancer', 5_000);
    const lb = [...w.elbv2.loadBalancers.values()].find((l) => l.lb.dnsName === hostname());
    expect(lb?.lb.type).toBe('network');
    const targets = () =>
      [...w.elbv2.targetGroups.values()]
        .flatMap((tg) => [...tg.targets.values()])
        .map((t) => t.target.id)
        .sort();
    await eventually(() => targets().length === 1, 'the first Node to be a target');

    // A Node joins: the relay's node-set rule sends the Service's key; its instance is registered.
    const second = w.launch(9);
    w.kube.putNode(second.node);
    await eventually(() => targets().length === 2, 'the new Node to be a target', 5_000);
    expect(targets()).toEqual([first.instance.instanceId, second.instance.instanceId].sort());
    expect(p.mode.state.rounds).toBe(1);
  });
});

describe('npm start -- --real: never two actors', () => {
  it('a second process stands by while the first holds the Lease, and takes over when it stops', async () => {
    const w = await setup();
    const a = start(w, { identity: 'laptop-a_local_1' });
    await eventually(() => a.mode.state.leading, 'a to lead');
    const logB = recordingLog();
    const b = start(w, { identity: 'laptop-b_local_2', log: logB });
    await eventually(() => b.mode.state.holder === 'laptop-a_local_1', 'b to see the holder');

    const first = w.launch(4);
    w.kube.putNode(first.node);
    await eventually(() => initialized(w, first.node.metadata.name), 'a to initialize the Node');
    expect(a.metrics.total(MetricName.NodesInitialized)).toBe(1);
    expect(b.metrics.total(MetricName.NodesInitialized)).toBe(0);
    expect(b.mode.state.rounds).toBe(0);
    expect(logB.lines.filter((l) => l.startsWith('standing by'))).toEqual([
      'standing by: the Lease kube-system/serverless-ccm-relay is held by laptop-a_local_1; nothing is reconciled here until it is free',
    ]);

    // a stops and gives the Lease up: b takes over at its next attempt, well before the Lease would expire.
    await a.stop();
    await eventually(() => b.mode.state.leading, 'b to take over', TEST_ELECTION.leaseDurationMs);
    const second = w.launch(5);
    w.kube.putNode(second.node);
    await eventually(() => initialized(w, second.node.metadata.name), 'b to initialize the next Node');
    expect(b.metrics.total(MetricName.NodesInitialized)).toBeGreaterThanOrEqual(1);
  });

  it('stands by while the deployed relay holds the Lease: it neither resyncs nor reconciles', async () => {
    const w = await setup();
    const deployed = reconcilerQueues();
    const sqs = new RecordingSqs(deployed.sqs, 'deployed');
    const relay = startRelay(
      relayFor(
        w.api,
        sqs,
        { node: deployed.urls.node },
        { identity: 'relay-7d9f_abcd', token: 'deployed', election: TEST_ELECTION },
      ),
    );
    await eventually(() => relay.status().leader, 'the deployed relay to lead');
    const p = start(w);
    await eventually(() => p.mode.state.holder === 'relay-7d9f_abcd', 'the local process to see the deployed relay');

    const { node } = w.launch(6);
    w.kube.putNode(node);
    await eventually(() => deployed.sqs.depth('node.fifo') > 0, 'the deployed relay to forward the Node');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(initialized(w, node.metadata.name)).toBe(false);
    expect(p.mode.state.rounds).toBe(0);
    expect(p.metrics.total(MetricName.Reconciles)).toBe(0);
  });
});

describe('npm start -- --real: leader migration', () => {
  it('a controller the LeaderMigrationConfiguration gives another component gets no key, from the relay or the resync', async () => {
    const w = await setup();
    const { node } = w.launch(10);
    w.kube.putNode(node);
    const p = start(w, {
      migration: {
        config: {
          apiVersion: 'controllermanager.config.k8s.io/v1',
          kind: 'LeaderMigrationConfiguration',
          leaderName: 'cloud-provider-extraction-migration',
          controllerLeaders: [{ name: 'cloud-node', component: 'kube-controller-manager' }],
        },
        component: 'cloud-controller-manager',
        pollMs: 50,
      },
    });
    await eventually(() => p.mode.state.rounds === 1 && quiet(w, p), 'the first pass');
    expect(p.metrics.total(MetricName.Reconciles, { reconciler: 'node-lifecycle' })).toBeGreaterThan(0);
    expect(p.metrics.total(MetricName.Reconciles, { reconciler: 'node' })).toBe(0);
    expect(initialized(w, node.metadata.name)).toBe(false);
  });
});

describe('npm start -- --real: EC2 events', () => {
  it('without a queue, says once that EC2 changes are only seen at resync', async () => {
    const w = await setup();
    const log = recordingLog();
    const p = start(w, { log });
    await eventually(() => p.mode.state.rounds === 1, 'the first resync');
    expect(log.lines.filter((l) => l.includes('EC2 changes are seen at the next resync only'))).toHaveLength(1);
    expect(p.mode.state.ec2Events()).toBe('resync only (no --ec2-events-queue-url)');
  });

  it('an EventBridge event on the events queue reaches the lifecycle controller at once: a NotReady Node of a terminated instance goes', async () => {
    const w = await setup();
    const { instance, node } = w.launch(7);
    const providerID = `aws:///eu-west-1a/${instance.instanceId}`;
    w.kube.putNode({ ...node, spec: { providerID, taints: [] } });
    // The queue EventBridge's rules feed in AWS (npm run events:create), long-polled by bin/ec2-events-poller.ts.
    const aws = new FakeSqs(systemClock);
    const { url: queueUrl } = aws.createQueue('dev-ec2-events', { fifo: false });
    const p = start(w, {
      ec2Events: ({ deliver, signal }) =>
        startEc2EventsPoller({ queueUrl, sqs: aws, deliver, log: silentLog, signal, waitSeconds: 1 }),
    });
    await eventually(() => p.mode.state.rounds === 1 && quiet(w, p), 'the first pass');
    // The kubelet goes silent first, and the relay's key for that is worked (the instance still runs: nothing to do).
    const forwarded = p.mode.relayMetrics.changesForwarded.get({ kind: 'Node' });
    w.kube.mutateNode(node.metadata.name, (n) => {
      n.status!.conditions = [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown' }];
    });
    await eventually(
      () => p.mode.relayMetrics.changesForwarded.get({ kind: 'Node' }) > forwarded && quiet(w, p),
      'the readiness change to be reconciled',
    );
    expect(w.kube.nodes.has(node.metadata.name)).toBe(true);
    // Then the instance terminates: only the EC2 event tells.
    w.ec2.setState(instance.instanceId, 'terminated');
    aws.send(
      'dev-ec2-events',
      JSON.stringify({
        version: '0',
        id: 'e-1',
        'detail-type': 'EC2 Instance State-change Notification',
        source: 'aws.ec2',
        account: '111122223333',
        time: new Date().toISOString(),
        region: 'eu-west-1',
        resources: [`arn:aws:ec2:eu-west-1:111122223333:instance/${instance.instanceId}`],
        detail: { 'instance-id': instance.instanceId, state: 'terminated' },
      }),
    );
    await eventually(() => !w.kube.nodes.has(node.metadata.name), 'the Node to be deleted', 5_000);
    expect(p.mode.state.rounds).toBe(1);
    // Delivered, then deleted from the queue: nothing comes back.
    await eventually(() => aws.depth('dev-ec2-events') === 0, 'the event to be deleted from its queue');
    expect(p.mode.state.ec2Events()).toBe('polling: 1 delivered');
  });
});

/** An EventBridge event on the queue `npm run events:create` makes, long-polled as `--ec2-events-queue-url` does. */
function eventsQueue() {
  const aws = new FakeSqs(systemClock);
  const { url: queueUrl } = aws.createQueue('dev-ec2-events', { fifo: false });
  const source: NonNullable<Parameters<typeof startLocalProcess>[1]>['ec2Events'] = ({ deliver, signal }) =>
    startEc2EventsPoller({ queueUrl, sqs: aws, deliver, log: silentLog, signal, waitSeconds: 1 });
  const put = (event: Record<string, unknown>) =>
    aws.send('dev-ec2-events', JSON.stringify({ version: '0', source: 'aws.ec2', region: 'eu-west-1', ...event }));
  return { aws, source, put };
}

describe('npm start -- --real: the interruption controller (--interruption, the stage switch CCM_INTERRUPTION)', () => {
  it('a spot interruption warning on the EC2 events queue marks, cordons and drains its Node under a PodDisruptionBudget', async () => {
    const w = await setup();
    const spot = w.launch(30);
    const other = w.launch(31);
    w.kube.putNode(spot.node);
    w.kube.putNode(other.node);
    const events = eventsQueue();
    const p = start(w, {
      interruption: true,
      // The Lambdas' settings, read as real mode reads them: drain passes a second apart.
      settings: { INTERRUPTION_DRAIN_REQUEUE_SECONDS: '1' },
      ec2Events: events.source,
    });
    const spotName = spot.node.metadata.name;
    await eventually(
      () => initialized(w, spotName) && initialized(w, other.node.metadata.name) && quiet(w, p),
      'both Nodes initialized',
    );
    // Three replicas and a DaemonSet Pod on the spot Node; the budget lets one replica go at a time.
    const replica = (node: string, name: string, ready = true) =>
      podOnNode(node, name, {
        namespace: 'shop',
        labels: { app: 'checkout' },
        owner: { kind: 'ReplicaSet', name: 'checkout-7c9d' },
        gracePeriodSeconds: 0,
        ready,
      });
    for (const i of [0, 1, 2]) w.kube.putPod(replica(spotName, `checkout-${i}`));
    w.kube.putPod(
      podOnNode(spotName, 'node-agent-1', { namespace: 'shop', owner: { kind: 'DaemonSet', name: 'node-agent' } }),
    );
    w.kube.workloads.putBudget(budget('checkout', { app: 'checkout' }, { namespace: 'shop', minAvailable: 2 }));
    // The ReplicaSet: each replica evicted gets a replacement on the other Node, Ready a moment later.
    const healthy = () =>
      w.kube.workloads
        .list()
        .filter((pod) => pod.metadata.labels?.app === 'checkout' && !pod.metadata.deletionTimestamp)
        .filter((pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
    let lowest = healthy();
    const replaced = new Set<string>();
    const stopWatching = w.kube.watch((change) => {
      lowest = Math.min(lowest, healthy());
      const pod = change.object as Pod;
      if (change.kind !== 'Pod' || pod.spec?.nodeName !== spotName || pod.metadata.labels?.app !== 'checkout') return;
      if ((change.type === 'DELETED' || pod.metadata.deletionTimestamp) && !replaced.has(pod.metadata.name)) {
        replaced.add(pod.metadata.name);
        const name = `${pod.metadata.name}-r`;
        w.kube.putPod(replica(other.node.metadata.name, name, false));
        setTimeout(() => w.kube.putPod(replica(other.node.metadata.name, name, true)), 300);
      }
    });

    events.put({
      id: 'spot-1',
      'detail-type': 'EC2 Spot Instance Interruption Warning',
      account: '111122223333',
      time: new Date().toISOString(),
      resources: [`arn:aws:ec2:eu-west-1b:instance/${spot.instance.instanceId}`],
      detail: { 'instance-id': spot.instance.instanceId, 'instance-action': 'terminate' },
    });
    const onSpot = () => w.kube.workloads.listOnNode(spotName).filter((pod) => !pod.metadata.deletionTimestamp);
    await eventually(
      () => onSpot().every((pod) => pod.metadata.labels?.app !== 'checkout'),
      'the replicas to be evicted',
      20_000,
    );
    stopWatching();
    const node = w.kube.nodes.get(spotName)!;
    expect(node.spec?.unschedulable).toBe(true);
    expect(node.spec?.taints?.map((t) => t.key)).toContain(INTERRUPTION_TAINT_KEYS['spot-interruption']);
    expect(node.metadata.labels?.['aws-node-termination-handler/action']).toBeDefined();
    // The DaemonSet Pod stays, as kubectl drain leaves it; the budget held all along, and made the drain wait.
    expect(onSpot().map((pod) => pod.metadata.name)).toEqual(['node-agent-1']);
    expect(lowest).toBeGreaterThanOrEqual(2);
    expect(p.metrics.total(MetricName.PodsEvicted)).toBe(3);
    expect(p.metrics.total(MetricName.PdbWaits)).toBeGreaterThan(0);
    expect(p.metrics.total(MetricName.Interruptions, { kind: 'spot-interruption' })).toBe(1);
    expect(p.mode.state.rounds).toBe(1);
    expect(p.mode.state.ec2Events()).toBe('polling: 1 delivered');
  });
});

describe('npm start -- --real: the Windows IP address manager (--ipam, the stage switch CCM_IPAM, with --vpc-id)', () => {
  it('a Windows Node advertises its addresses, and a Pod bound to it gets one from the warm pool', async () => {
    const w = await setup();
    const p = start(w, { ipam: true });
    w.kube.putConfigMap({ metadata: { ...VPC_CNI_CONFIGMAP }, data: { 'enable-windows-ipam': 'true' } });
    const { instance, node } = w.launchWindows(40);
    const name = node.metadata.name;
    w.kube.putNode(node);
    const capacity = () => w.kube.nodes.get(name)?.status?.capacity?.[IPV4_RESOURCE];
    await eventually(() => initialized(w, name) && capacity() !== undefined, 'the Node to advertise its addresses');
    // m5.xlarge: 15 IPv4 addresses per interface, less the primary.
    expect(capacity()).toBe('14');

    const pod = (podName: string): Pod => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: podName, namespace: 'win', creationTimestamp: new Date().toISOString() },
      spec: {
        nodeName: name,
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [
          {
            name: 'iis',
            image: 'mcr.microsoft.com/windows/servercore/iis',
            resources: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } },
          },
        ],
      },
      status: { phase: 'Pending' },
    });
    const addressOf = (podName: string) =>
      w.kube.workloads.get('win', podName)?.metadata.annotations?.[POD_IP_ANNOTATION];
    w.kube.putPod(pod('iis-0'));
    await eventually(() => addressOf('iis-0') !== undefined, 'the first Pod to get an address');
    const secondary = () =>
      w.ec2.instances
        .get(instance.instanceId)!
        .networkInterfaces[0]!.privateIpAddresses.filter((a) => !a.primary)
        .map((a) => a.address);
    const first = addressOf('iis-0')!.split('/')[0]!;
    expect(addressOf('iis-0')).toMatch(/^10\.0\.10\.\d+\/24$/);
    expect(secondary()).toContain(first);
    // The warm pool: addresses assigned beyond the one in use. The next Pod gets one of those, already on the
    // interface when it was created (EC2 is asked afterwards only to top the pool up again).
    const pool = secondary().filter((address) => address !== first);
    expect(pool.length).toBeGreaterThan(0);
    w.kube.putPod(pod('iis-1'));
    await eventually(() => addressOf('iis-1') !== undefined, 'the second Pod to get an address');
    const second = addressOf('iis-1')!.split('/')[0]!;
    expect(pool).toContain(second);
    expect(w.kube.eventsFor('Pod', 'iis-1', 'ResourceAllocated')).toHaveLength(1);
    // The relay's watch of the Pods sent their Node's key: no resync ran meanwhile.
    expect(p.mode.relayMetrics.changesForwarded.total({ kind: 'Pod' })).toBeGreaterThan(0);
    expect(p.mode.state.rounds).toBe(1);
  });
});
