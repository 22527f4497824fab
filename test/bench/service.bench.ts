import { ChangeRouter } from '../../functions/relay/change-router.ts';
import type { KubeObject } from '../../functions/relay/kinds.ts';
import { garbageCollectionMessage } from '../../functions/service/gc.ts';
import { EC2_WRITE_OPERATIONS, makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { ELBV2_WRITE_OPERATIONS } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import {
  LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS,
  TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
} from '../../shared/k8s/service-port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import {
  NODE_JOIN_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
} from '../../shared/queue/message.ts';
import { makeNode } from '../helpers/nodes.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld, WEB_PORTS } from '../helpers/service-world.ts';
import { run as runClassic } from './service-classic.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- service';

/**
 * AWS API volume of the service controller: the commands the real adapters send to the fake EC2 and ELBv2 APIs
 * (their own pages, chunks and fallbacks, e.g. DescribeTargetGroups asked name by name when one name of a call is
 * unknown). Timing is realistic where it changes the count: a Network Load Balancer provisions for 3 minutes and
 * is looked at again every SERVICE_PROVISIONING_REQUEUE_SECONDS (60); a deleted one's network interfaces hold
 * its security group for 2 minutes, retried every SERVICE_CLEANUP_REQUEUE_SECONDS (60).
 */
function world(nodes: number): ServiceWorld {
  const w = createServiceWorld();
  w.serviceDeps.provisioningRequeueSeconds = 60;
  w.serviceDeps.cleanupRequeueSeconds = 60;
  w.elbv2.provisioningDescribes = Number.POSITIVE_INFINITY;
  w.elbv2.provisioningMs = 180_000;
  w.elbv2.eniDrainMs = 120_000;
  for (let i = 1; i <= nodes; i++) w.addNode(i);
  return w;
}

function counts(w: ServiceWorld) {
  const byOperation = [...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0);
  const writes = new Set<string>([...ELBV2_WRITE_OPERATIONS, ...EC2_WRITE_OPERATIONS]);
  const reads = byOperation.filter(([op]) => !writes.has(op));
  return {
    total: w.awsCalls(),
    writes: w.awsWrites(),
    reads: reads.reduce((n, [, c]) => n + c, 0),
    detail: byOperation.map(([op, n]) => `${op} ${n}`).join(', '),
  };
}

function putWeb(w: ServiceWorld, name: string) {
  w.putService(name, {
    ports: WEB_PORTS,
  });
}

async function createOne() {
  const w = world(6);
  putWeb(w, 'web');
  const passes = await w.converge([w.serviceKey('web')]);
  const created = counts(w);
  w.resetCounters();
  await w.converge([w.serviceKey('web')]);
  const noop = counts(w);
  w.resetCounters();
  w.kube.deleteService('default', 'web');
  const deletePasses = await w.converge([w.serviceKey('web')]);
  const deleted = counts(w);
  if (w.elbv2.loadBalancers.size !== 0 || w.kube.services.size !== 0) throw new Error('delete did not finish');
  return { passes, created, noop, deletePasses, deleted };
}

async function resync(services: number) {
  const w = world(20);
  // As deployed (functions/service/handler.ts): a resync pass looks quickly first, a full pass hourly per Service.
  w.serviceDeps.resyncQuickCheck = true;
  for (let i = 0; i < services; i++) putWeb(w, `web-${i}`);
  await w.converge(
    Array.from({ length: services }, (_, i) => w.serviceKey(`web-${i}`)),
    w.serviceDeps,
    5000,
  );
  if (w.elbv2.loadBalancers.size !== services) throw new Error(`only ${w.elbv2.loadBalancers.size} load balancers`);
  w.resetCounters();
  await w.converge(
    [
      ...Array.from({ length: services }, (_, i) =>
        w.serviceKey(`web-${i}`, 'default', { eventType: 'RESYNC', eventId: 'r1' }),
      ),
      garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'r1' }),
    ],
    w.serviceDeps,
    5000,
  );
  const all = counts(w);
  w.resetCounters();
  await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'r2' })]);
  const gc = counts(w);
  const names = Array.from({ length: services }, (_, i) => `web-${i}`);
  const rounds = await nodeSetRounds(w, names);
  w.resetCounters();
  const life = await nodeLife(w);
  return { all, gc, ...rounds, life: { ...counts(w), rounds: life } };
}

/** The relay's rounds of every LoadBalancer Service's key, each kind once: what each costs. */
async function nodeSetRounds(w: ServiceWorld, names: string[]) {
  // A Node joins: a round of joins only.
  w.resetCounters();
  w.addNode(21);
  await w.converge(w.nodeSetKeys(names, '9001', NODE_JOIN_HINT_SOURCE), w.serviceDeps, 5000);
  const nodeJoined = counts(w);
  // A Node joins and another is deleted outright while a target, in one round: the registered targets are read.
  w.resetCounters();
  w.addNode(22);
  await w.kube.deleteNode('node-21', {});
  await w.converge(w.nodeSetKeys(names, '9002'), w.serviceDeps, 5000);
  const nodeSetChanged = counts(w);
  // A Node replaced: one joins, another leaves and stays (excluded, as when the cluster autoscaler marks it).
  const exclude = (name: string) =>
    w.kube.mutateNode(name, (n: Node) => {
      n.metadata.labels = { ...n.metadata.labels, [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' };
    });
  w.resetCounters();
  w.addNode(23);
  await exclude('node-22');
  await w.converge(w.nodeSetKeys(names, '9003', NODE_JOIN_LEAVE_HINT_SOURCE), w.serviceDeps, 5000);
  const nodeReplaced = counts(w);
  // A Node leaves and stays: a round of leaves only.
  w.resetCounters();
  await exclude('node-23');
  await w.converge(w.nodeSetKeys(names, '9004', NODE_LEAVE_HINT_SOURCE), w.serviceDeps, 5000);
  const nodeLeft = counts(w);
  // A Node deleted outright while a target: an ordinary round.
  w.resetCounters();
  await w.kube.deleteNode('node-20', {});
  await w.converge(w.nodeSetKeys(names, '9005'), w.serviceDeps, 5000);
  return { nodeJoined, nodeSetChanged, nodeReplaced, nodeLeft, nodeDeleted: counts(w) };
}

/**
 * A Node's whole life, as the relay's change router sees it and the service controller then works it: registered
 * by kubelet (no instance yet), initialized (instance, zone), Ready, labelled by another agent, marked by the
 * cluster autoscaler, deleted two minutes later. Each change the router forwards as a Node-set change is one round of every
 * LoadBalancer Service's key (the relay's debounce merges changes a second apart; these are further apart).
 * Returns the rounds.
 */
async function nodeLife(w: ServiceWorld): Promise<number> {
  let signalled = false;
  const router = new ChangeRouter({
    reconcilers: new Set(['service']),
    allows: () => true,
    now: () => w.clock.now(),
    emit: () => {},
    nodeSetChanged: () => {
      signalled = true;
    },
  });
  for (const service of w.kube.services.values()) router.observe('Service', service as unknown as KubeObject);
  // As the relay starts: a full list of the Nodes, then watch events.
  router.listed('Node', w.kube.nodes.values() as Iterable<unknown> as Iterable<KubeObject>, '0');
  router.takeNodeSetRound(); // what the listing found was sent as the relay started
  const unwatch = w.kube.watch((change) => {
    if (change.kind !== 'Node') return;
    const object = change.object as unknown as KubeObject;
    if (change.type === 'DELETED') router.remove('Node', object);
    else router.observe('Node', object);
  });
  let rounds = 0;
  const step = async (change: () => unknown) => {
    signalled = false;
    await change();
    if (!signalled) return;
    rounds++;
    await w.converge(
      router.takeNodeSetRound().map((k) => k.message),
      w.serviceDeps,
      5000,
    );
  };
  const name = 'node-life';
  const base = makeInstance({ index: 40, availabilityZone: 'eu-west-1a' });
  const instance = {
    ...base,
    networkInterfaces: base.networkInterfaces.map((e) => ({ ...e, securityGroupIds: [NODE_GROUP] })),
  };
  w.ec2.putInstance(instance);
  await step(() => w.kube.putNode(makeNode(name, { ready: false })));
  await step(() =>
    w.kube.mutateNode(name, (n: Node) => {
      n.spec = { providerID: `aws:///eu-west-1a/${instance.instanceId}`, taints: [] };
      n.metadata.labels = { ...n.metadata.labels, 'topology.kubernetes.io/zone': 'eu-west-1a' };
    }),
  );
  await step(() => w.kube.mutateNode(name, (n: Node) => (n.status!.conditions![0]!.status = 'True')));
  await step(() =>
    w.kube.mutateNode(
      name,
      (n: Node) => (n.metadata.labels!['feature.node.kubernetes.io/cpu-model.vendor_id'] = 'Intel'),
    ),
  );
  await step(() =>
    w.kube.mutateNode(name, (n: Node) => {
      n.spec!.taints = [{ key: TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER, value: '1796000000', effect: 'NoSchedule' }];
    }),
  );
  // Deleted once drained, minutes after the mark (a deletion within LEFT_RECENTLY_MS would be a round of its own).
  w.clock.advance(2 * 60_000);
  await step(() => w.kube.deleteNode(name, {}));
  unwatch();
  return rounds;
}

export async function run(): Promise<BenchResult[]> {
  const one = await createOne();
  const big = await resync(200);
  return [...(await runClassic()), ...oneService(one), ...manyServices(big)];
}

function oneService(one: Awaited<ReturnType<typeof createOne>>): BenchResult[] {
  return [
    {
      name: 'service create (2 ports, 6 Nodes): AWS calls until converged',
      value: one.created.total,
      unit: 'calls',
      target: 'writes only what is missing; requeue, never sleep, while provisioning',
      rerun: RERUN,
      note: `${one.created.writes} writes, ${one.created.reads} reads over ${one.passes} passes (${one.created.detail})`,
    },
    {
      name: 'service no-op reconcile (2 ports): AWS calls',
      value: one.noop.total,
      unit: 'calls',
      target: '0 writes',
      rerun: RERUN,
      note: `${one.noop.writes} writes (${one.noop.detail})`,
    },
    {
      name: 'service delete: AWS calls until the finalizer is removed',
      value: one.deleted.total,
      unit: 'calls',
      target: 'nothing left behind',
      rerun: RERUN,
      note: `${one.deleted.writes} writes over ${one.deletePasses} passes, security group retried while ENIs drain (${one.deleted.detail})`,
    },
  ];
}

function manyServices(big: Awaited<ReturnType<typeof resync>>): BenchResult[] {
  return [
    {
      name: 'service resync, 200 unchanged Services + garbage collection: AWS calls',
      value: big.all.total,
      unit: 'calls',
      target: '<= 3 per Service (<= 600), 0 writes; was 2,473 (12.4 per Service) before the quick check',
      rerun: RERUN,
      note: `${(big.all.total / 200).toFixed(1)} per Service incl. GC, ${big.all.writes} writes (${big.all.detail})`,
    },
    ...nodeSetFigures(big),
    {
      name: 'service garbage collection over 200 load balancers: AWS calls',
      value: big.gc.total,
      unit: 'calls',
      target: 'lists + DescribeTags per 20 ARNs, 0 writes',
      rerun: RERUN,
      note: `${big.gc.writes} writes (${big.gc.detail})`,
    },
  ];
}

/** The relay's Node-set rounds at 200 Services, and a Node's whole life. */
function nodeSetFigures(big: Awaited<ReturnType<typeof resync>>): BenchResult[] {
  return [
    {
      name: 'a Node joins 200 Services with instance targets (a round of joins only): AWS calls',
      value: big.nodeJoined.total,
      unit: 'calls',
      target: 'registers the Node, nothing else written',
      rerun: RERUN,
      note: `${(big.nodeJoined.total / 200).toFixed(1)} per Service, ${big.nodeJoined.writes} writes (${big.nodeJoined.detail})`,
    },
    {
      name: 'a Node leaves 200 Services and stays in the cluster (a round of leaves only): AWS calls',
      value: big.nodeLeft.total,
      unit: 'calls',
      target: 'deregisters the Node, nothing else written',
      rerun: RERUN,
      note: `${(big.nodeLeft.total / 200).toFixed(1)} per Service (before rounds of leaves, when the registered targets were read: 920), ${big.nodeLeft.writes} writes (${big.nodeLeft.detail})`,
    },
    {
      name: 'a Node replaced at 200 Services (one joins, another leaves and stays, in one round): AWS calls',
      value: big.nodeReplaced.total,
      unit: 'calls',
      target: 'registers the one, deregisters the other, nothing else written',
      rerun: RERUN,
      note: `${(big.nodeReplaced.total / 200).toFixed(1)} per Service, ${big.nodeReplaced.writes} writes (${big.nodeReplaced.detail})`,
    },
    {
      name: 'a Node deleted outright while a target of 200 Services (an ordinary round): AWS calls',
      value: big.nodeDeleted.total,
      unit: 'calls',
      target: 'deregisters the Node, nothing else written',
      rerun: RERUN,
      note: `${(big.nodeDeleted.total / 200).toFixed(1)} per Service, ${big.nodeDeleted.writes} writes: the registered targets are read (${big.nodeDeleted.detail})`,
    },
    {
      name: 'a Node joins and another is deleted outright at 200 Services, in one round: AWS calls',
      value: big.nodeSetChanged.total,
      unit: 'calls',
      target: 'registers the one, deregisters the other, nothing else written',
      rerun: RERUN,
      note: `${(big.nodeSetChanged.total / 200).toFixed(1)} per Service, ${big.nodeSetChanged.writes} writes: the registered targets are read (${big.nodeSetChanged.detail})`,
    },
    {
      name: "a Node's life (registered, initialized, Ready, labelled, scaled down, deleted) at 200 Services: AWS calls",
      value: big.life.total,
      unit: 'calls',
      target: 'one round of Service keys when it becomes a target, one when it stops being one',
      rerun: RERUN,
      note: `${big.life.rounds} rounds of every LoadBalancer Service's key from the relay's change router, ${big.life.writes} writes (${big.life.detail})`,
    },
  ];
}
