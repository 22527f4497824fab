import { garbageCollectionMessage } from '../../functions/service/gc.ts';
import { EC2_WRITE_OPERATIONS } from '../../shared/aws/ec2-fake.ts';
import { ELBV2_WRITE_OPERATIONS } from '../../shared/aws/elbv2-fake.ts';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../helpers/service-world.ts';
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
  // A Node joins: the relay sends every LoadBalancer Service's key, hinted as a Node change.
  w.resetCounters();
  w.addNode(21);
  await w.converge(w.nodeSetKeys(Array.from({ length: services }, (_, i) => `web-${i}`)), w.serviceDeps, 5000);
  const nodeJoined = counts(w);
  return { all, gc, nodeJoined };
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
    {
      name: 'a Node joins 200 Services with instance targets: AWS calls',
      value: big.nodeJoined.total,
      unit: 'calls',
      target: 'registers the Node, nothing else written',
      rerun: RERUN,
      note: `${(big.nodeJoined.total / 200).toFixed(1)} per Service, ${big.nodeJoined.writes} writes (${big.nodeJoined.detail})`,
    },
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
