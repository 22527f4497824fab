import { garbageCollectionMessage } from '../../functions/service/gc.ts';
import { type ClassicWorld, createClassicWorld, referenceClassic } from '../../functions/service/testing/clb.ts';
import { CLASSIC_WRITE_OPERATIONS } from '../../shared/aws/fakes/elb/fake-elb.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { NODE_LEAVE_HINT_SOURCE, NODE_SET_HINT_SOURCE } from '../../shared/queue/message.ts';
import { WEB_PORTS } from '../helpers/service-world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- service';

/**
 * (Part of `npm run bench -- service`.) AWS API volume of the service controller's Classic ELB backend, counted by the fakes behind the real
 * adapters: a create until converged, a quiet pass, and a resync of 200 Services on Classic ELBs with the
 * garbage collection.
 */
function world(nodes: number): ClassicWorld {
  const w = createClassicWorld();
  w.serviceDeps.defaultLoadBalancerType = 'classic';
  w.serviceDeps.cleanupRequeueSeconds = 60;
  // As the deployed handler: RESYNC passes of an unchanged Service are the quick check, a full pass hourly.
  w.serviceDeps.resyncQuickCheck = true;
  for (let i = 1; i <= nodes; i++) w.addNode(i);
  return w;
}

function counts(w: ClassicWorld) {
  const byOperation = [...w.elbFake.calls.entries(), ...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(
    ([, n]) => n > 0,
  );
  const classicWrites = new Set<string>(CLASSIC_WRITE_OPERATIONS);
  return {
    total: w.awsCalls(),
    writes: w.awsWrites(),
    detail: byOperation.map(([op, n]) => `${classicWrites.has(op) ? 'ELB ' : ''}${op} ${n}`).join(', '),
  };
}

const putWeb = (w: ClassicWorld, name: string) =>
  w.putService(name, {
    ports: WEB_PORTS,
  });

async function createOne() {
  const w = world(6);
  putWeb(w, 'web');
  await w.converge([w.serviceKey('web')]);
  const created = counts(w);
  w.resetCounters();
  await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: 'quiet' })]);
  const noop = counts(w);
  return { created, noop };
}

async function resync(services: number) {
  const w = world(20);
  for (let i = 0; i < services; i++) putWeb(w, `web-${i}`);
  w.elbFake.loadBalancerQuota = services + 10;
  await w.converge(
    Array.from({ length: services }, (_, i) => w.serviceKey(`web-${i}`)),
    w.serviceDeps,
    5000,
  );
  if (w.elbFake.loadBalancers.size !== services) throw new Error(`only ${w.elbFake.loadBalancers.size} Classic ELBs`);
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
  const round = counts(w);
  // A Node joins: the relay sends every LoadBalancer Service's key, hinted as a Node-set change.
  w.resetCounters();
  w.addNode(21);
  const names = Array.from({ length: services }, (_, i) => `web-${i}`);
  await w.converge(w.nodeSetKeys(names), w.serviceDeps, 5000);
  const nodeJoined = counts(w);
  // It leaves and stays (excluded): the listing shows the registered instances, so this costs the same.
  w.resetCounters();
  await w.kube.mutateNode('node-21', (n: Node) => {
    n.metadata.labels = { ...n.metadata.labels, [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' };
  });
  await w.converge(w.nodeSetKeys(names, '9002', NODE_LEAVE_HINT_SOURCE), w.serviceDeps, 5000);
  return { round, nodeJoined, nodeLeft: counts(w) };
}

/**
 * Services moved over from the reference controller: their Classic ELBs are named `a<uid>`, which the batch can
 * read ahead only from the uid the keys' hints name (the relay's and the resync's do).
 */
async function migratedJoin(services: number) {
  const w = world(20);
  w.elbFake.loadBalancerQuota = services + 10;
  // Each of the reference's load balancers has a rule of its own on the Nodes' group: such a cluster has had that
  // quota raised (to at most 1,000 rules over a network interface's groups).
  w.ec2.securityGroupRuleLimit = 1000;
  const names = Array.from({ length: services }, (_, i) => `web-${i}`);
  for (const [i, name] of names.entries()) {
    const uid = `${String(i).padStart(8, '0')}-9c4d-4e6f-8a7b-0c1d2e3f4a5b`;
    await referenceClassic(w, { service: { name, uid } });
  }
  await w.converge(
    names.map((name) => w.serviceKey(name)),
    w.serviceDeps,
    5000,
  );
  const joined = async (withUid: boolean, node: number, revision: string) => {
    w.resetCounters();
    const { instance } = w.addNode(node);
    await w.converge(w.nodeSetKeys(names, revision, NODE_SET_HINT_SOURCE, withUid), w.serviceDeps, 5000);
    const made = counts(w);
    for (const lb of await w.elb.listLoadBalancers()) {
      if (!lb.instanceIds.includes(instance.instanceId)) throw new Error(`the Node did not join ${lb.name}`);
    }
    return made;
  };
  return { withUid: await joined(true, 21, '9001'), withoutUid: await joined(false, 22, '9002') };
}

export async function run(): Promise<BenchResult[]> {
  const one = await createOne();
  const { round: all, nodeJoined, nodeLeft } = await resync(200);
  const migrated = await migratedJoin(200);
  return [
    {
      name: 'Classic ELB create (2 ports, 6 Nodes): AWS calls until converged',
      value: one.created.total,
      unit: 'calls',
      target: 'writes only what is missing',
      rerun: RERUN,
      note: `${one.created.writes} writes (${one.created.detail})`,
    },
    {
      name: 'Classic ELB no-op reconcile (2 ports): AWS calls',
      value: one.noop.total,
      unit: 'calls',
      target: '0 writes',
      rerun: RERUN,
      note: `${one.noop.writes} writes (${one.noop.detail})`,
    },
    {
      name: 'Classic ELB resync, 200 unchanged Services + garbage collection: AWS calls',
      value: all.total,
      unit: 'calls',
      target: '<= 3 per Service, 0 writes',
      rerun: RERUN,
      note: `${(all.total / 200).toFixed(1)} per Service incl. GC (before the quick check: 854, 4.3 per Service), ${all.writes} writes (${all.detail})`,
    },
    {
      name: 'a Node joins 200 Services on Classic ELBs: AWS calls',
      value: nodeJoined.total,
      unit: 'calls',
      target: 'registers the Node, nothing else written',
      rerun: RERUN,
      note: `${(nodeJoined.total / 200).toFixed(1)} per Service (before the batch read their tags and groups: 660), ${nodeJoined.writes} writes (${nodeJoined.detail})`,
    },
    {
      name: 'a Node leaves 200 Services on Classic ELBs and stays in the cluster: AWS calls',
      value: nodeLeft.total,
      unit: 'calls',
      target: 'deregisters the Node, nothing else written',
      rerun: RERUN,
      note: `${(nodeLeft.total / 200).toFixed(1)} per Service, ${nodeLeft.writes} writes (${nodeLeft.detail})`,
    },
    {
      name: "a Node joins 200 migrated Services (the reference's `a<uid>` Classic ELBs): AWS calls",
      value: migrated.withUid.total,
      unit: 'calls',
      target: 'registers the Node, nothing else written',
      rerun: RERUN,
      note: `${(migrated.withUid.total / 200).toFixed(1)} per Service; keys without the uid (a relay before it named them): ${migrated.withoutUid.total}; ${migrated.withUid.writes} writes (${migrated.withUid.detail})`,
    },
  ];
}
