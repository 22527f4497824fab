import { afterEach, describe, expect, it } from 'vitest';
import { startEc2EventsPoller } from '../bin/ec2-events-poller.ts';
import { RecordingSqs, reconcilerQueues } from '../functions/relay/testing/objects.ts';
import { relayFor, start as startRelay, stopStarted } from '../functions/relay/testing/relay.ts';
import { FakeSqs } from '../shared/aws/fakes/sqs/fake-sqs.ts';
import { systemClock } from '../shared/clock.ts';
import { TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { type Log, silentLog } from '../shared/observability/log.ts';
import { MetricName } from '../shared/observability/metrics.ts';
import {
  createLocalRealWorld,
  eventually,
  type LocalProcess,
  type LocalRealWorld,
  quiet,
  startLocalProcess,
  TEST_ELECTION,
} from './helpers/local-real.ts';

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
