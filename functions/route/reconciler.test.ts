import { beforeEach, describe, expect, it } from 'vitest';
import type { Instance } from '../../shared/aws/ec2-port.ts';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import { type FakeRoute, makeInstance, makeRouteTable } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import type { Node, NodeCondition } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { fifoRecord, nodeKey } from '../../test/helpers/records.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { routeReconciler } from './reconciler.ts';

const TABLE = 'rtb-0123456789abcdef0';

let w: World;
beforeEach(() => {
  w = createWorld();
});

/** One Lambda invocation with the route table key (a Node change or a resync). */
const pass = (message: KeyMessage = routeTableMessage({ eventType: 'RESYNC', eventId: 'r' })) =>
  w.invoke(routeReconciler, w.routeDeps, [fifoRecord(message)]);

/** A running instance and its initialized Node holding `podCidrs` (default 10.244.<index>.0/24). */
function worker(
  index: number,
  options: { podCidrs?: string[]; instance?: Partial<Instance>; conditions?: NodeCondition[] } = {},
) {
  const instance = w.ec2.putInstance(makeInstance({ index, ...options.instance }));
  const name = `node-${index}`;
  const node: Node = makeNode(name, { providerID: `aws:///eu-west-1a/${instance.instanceId}`, initialized: true });
  const podCidrs = options.podCidrs ?? [`10.244.${index}.0/24`];
  node.spec = { ...node.spec, podCIDR: podCidrs[0], podCIDRs: podCidrs };
  if (options.conditions) node.status!.conditions = [...node.status!.conditions!, ...options.conditions];
  w.kube.putNode(node);
  return { instance, name };
}

function withTable(extraRoutes: FakeRoute[] = [], overrides: Parameters<typeof makeRouteTable>[0] = {}) {
  return w.ec2.putRouteTable(makeRouteTable({ extraRoutes, ...overrides }));
}

const routeTo = (destination: string) => w.ec2.routesOf(TABLE).find((r) => r.destination === destination);
const networkCondition = (name: string) =>
  w.kube.nodes.get(name)!.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');

function resetCounters() {
  w.ec2.resetCalls();
  w.kube.resetCalls();
  w.kube.events.length = 0;
  w.metrics.reset();
}

describe('route creation', () => {
  it('creates a route per Node to its instance, turns the check off and sets NetworkUnavailable=False', async () => {
    withTable();
    const a = worker(1);
    const b = worker(2);

    expect(await pass()).toEqual({ batchItemFailures: [] });

    for (const { instance, name } of [a, b]) {
      const index = name.split('-')[1];
      expect(routeTo(`10.244.${index}.0/24`)).toMatchObject({
        target: {
          instanceId: instance.instanceId,
          networkInterfaceId: instance.networkInterfaces[0]!.networkInterfaceId,
        },
        state: 'active',
        origin: 'CreateRoute',
      });
      expect(w.ec2.instances.get(instance.instanceId)!.sourceDestCheck).toBe(false);
      expect(networkCondition(name)).toMatchObject({
        status: 'False',
        reason: 'RouteCreated',
        message: 'RouteController created a route',
      });
      // kubelet's own conditions survive the status patch.
      expect(w.kube.nodes.get(name)!.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(w.kube.eventsFor('Node', name, 'CreatedRoute')[0]?.message).toBe(
        `Created route 10.244.${index}.0/24 -> ${instance.instanceId} in ${TABLE}`,
      );
    }
    expect(w.ec2.callCount('CreateRoute')).toBe(2);
    expect(w.ec2.callCount('ModifyInstanceAttribute')).toBe(2);
    expect(w.metrics.total(MetricName.RoutesCreated)).toBe(2);
    expect(w.metrics.total(MetricName.SourceDestChecksDisabled)).toBe(2);
  });

  it('a pass that finds everything in place makes no write call, to EC2 or Kubernetes', async () => {
    withTable();
    for (let i = 1; i <= 5; i++) worker(i, { podCidrs: [`10.244.${i}.0/24`, `fd00:10:244:${i}::/64`] });
    await pass();
    resetCounters();

    expect(await pass()).toEqual({ batchItemFailures: [] });

    expect(w.ec2.writeCallCount()).toBe(0);
    expect(w.kube.writeCount()).toBe(0);
    expect(w.kube.events).toEqual([]);
    expect(w.ec2.callCount('DescribeRouteTables')).toBe(1);
    expect(w.ec2.callCount('DescribeInstances')).toBe(1);
    expect(w.kube.callCount('listNodes')).toBe(1);
  });

  it('replaces a route that points at another instance', async () => {
    const other = w.ec2.putInstance(makeInstance({ index: 90 }));
    withTable([{ destination: '10.244.1.0/24', target: { instanceId: other.instanceId }, origin: 'CreateRoute' }]);
    const { instance, name } = worker(1);

    await pass();

    expect(w.ec2.callCount('ReplaceRoute')).toBe(1);
    expect(w.ec2.callCount('CreateRoute')).toBe(0);
    expect(routeTo('10.244.1.0/24')?.target.instanceId).toBe(instance.instanceId);
    expect(w.kube.eventsFor('Node', name, 'ReplacedRoute')[0]?.message).toContain(`(was ${other.instanceId})`);
    expect(w.metrics.total(MetricName.RoutesReplaced)).toBe(1);
  });

  it('turns the check off only when it is on', async () => {
    withTable();
    worker(1, { instance: { sourceDestCheck: false } });
    await pass();
    expect(w.ec2.callCount('ModifyInstanceAttribute')).toBe(0);
    expect(routeTo('10.244.1.0/24')).toBeDefined();
  });

  it('routes a multi-interface instance to its primary interface and turns that interface check off', async () => {
    withTable();
    const base = makeInstance({ index: 1 });
    const secondary = { ...base.networkInterfaces[0]!, networkInterfaceId: 'eni-0000000000000beef', deviceIndex: 1 };
    const { instance } = worker(1, {
      instance: { networkInterfaces: [secondary, { ...base.networkInterfaces[0]!, sourceDestCheck: true }] },
    });
    const primary = base.networkInterfaces[0]!.networkInterfaceId;

    expect(await pass()).toEqual({ batchItemFailures: [] });

    // By instance ID EC2 would answer "There are multiple interfaces attached".
    expect(routeTo('10.244.1.0/24')?.target).toEqual({ instanceId: instance.instanceId, networkInterfaceId: primary });
    expect(w.ec2.callCount('ModifyInstanceAttribute')).toBe(0);
    expect(w.ec2.callCount('ModifyNetworkInterfaceAttribute')).toBe(1);
    expect(w.ec2.instances.get(instance.instanceId)!.sourceDestCheck).toBe(false);

    resetCounters();
    await pass();
    expect(w.ec2.writeCallCount()).toBe(0);
  });

  it('routes IPv6 pod CIDRs (dual-stack Nodes get one route per family)', async () => {
    withTable();
    const { name } = worker(1, { podCidrs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] });

    await pass();

    expect(w.ec2.routesOf(TABLE).filter((r) => r.origin === 'CreateRoute' && r.target.instanceId)).toMatchObject([
      { destination: '10.244.1.0/24', destinationType: 'ipv4' },
      { destination: 'fd00:10:244:1::/64', destinationType: 'ipv6' },
    ]);
    expect(networkCondition(name)?.status).toBe('False');
  });

  it('leaves a NetworkUnavailable=False written by someone else (a CNI) alone', async () => {
    withTable();
    const { name } = worker(1, { conditions: [{ type: 'NetworkUnavailable', status: 'False', reason: 'CalicoIsUp' }] });
    await pass();
    expect(routeTo('10.244.1.0/24')).toBeDefined();
    expect(networkCondition(name)?.reason).toBe('CalicoIsUp');
    expect(w.kube.callCount('patchNodeStatus')).toBe(0);
  });

  it('re-reads the Node and retries the condition on a 409', async () => {
    withTable();
    const { name } = worker(1);
    w.kube.queueError('patchNodeStatus', new KubernetesApiError(409, 'Conflict', 'the object has been modified'));
    expect(await pass()).toEqual({ batchItemFailures: [] });
    expect(networkCondition(name)?.status).toBe('False');
    expect(w.kube.callCount('patchNodeStatus')).toBe(2);
  });
});

describe('cleanup', () => {
  it('deletes blackhole routes inside the cluster CIDR', async () => {
    const gone = w.ec2.putInstance(makeInstance({ index: 80 }));
    withTable([{ destination: '10.244.80.0/24', target: { instanceId: gone.instanceId }, origin: 'CreateRoute' }]);
    w.ec2.setState(gone.instanceId, 'terminated');
    expect(routeTo('10.244.80.0/24')?.state).toBe('blackhole');

    await pass();

    expect(routeTo('10.244.80.0/24')).toBeUndefined();
    expect(w.metrics.total(MetricName.RoutesDeleted, { reason: 'blackhole' })).toBe(1);
  });

  it('deletes the blackhole of a Node whose instance terminated, and does not recreate it', async () => {
    withTable();
    const { instance, name } = worker(1);
    await pass();
    w.ec2.setState(instance.instanceId, 'terminated');

    await pass();

    expect(routeTo('10.244.1.0/24')).toBeUndefined();
    expect(w.ec2.callCount('CreateRoute')).toBe(1); // the first pass only
    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toMatch(/is terminated; no route/);
  });

  it('replaces the blackhole left for a pod CIDR that now belongs to a Node on a new instance', async () => {
    const gone = w.ec2.putInstance(makeInstance({ index: 81 }));
    withTable([{ destination: '10.244.1.0/24', target: { instanceId: gone.instanceId }, origin: 'CreateRoute' }]);
    w.ec2.setState(gone.instanceId, 'terminated');
    const { instance } = worker(1);

    await pass();

    expect(w.ec2.callCount('DeleteRoute')).toBe(0);
    expect(w.ec2.callCount('ReplaceRoute')).toBe(1);
    expect(routeTo('10.244.1.0/24')).toMatchObject({ state: 'active', target: { instanceId: instance.instanceId } });
  });

  it('deletes the routes of a Node once it is deleted', async () => {
    withTable();
    worker(1, { podCidrs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] });
    worker(2);
    await pass();
    await w.kube.deleteNode('node-1', {});

    await pass();

    expect(routeTo('10.244.1.0/24')).toBeUndefined();
    expect(routeTo('fd00:10:244:1::/64')).toBeUndefined();
    expect(routeTo('10.244.2.0/24')).toBeDefined();
    expect(w.metrics.total(MetricName.RoutesDeleted, { reason: 'orphan' })).toBe(2);
  });

  it('keeps the routes of a terminating Node and never routes one', async () => {
    withTable();
    worker(1);
    await pass();
    w.kube.mutateNode('node-1', (n) => {
      n.metadata.deletionTimestamp = '2026-11-02T08:00:00Z';
      n.metadata.finalizers = ['example.com/hold'];
    });
    const late = worker(2);
    w.kube.mutateNode(late.name, (n) => {
      n.metadata.deletionTimestamp = '2026-11-02T08:00:00Z';
      n.metadata.finalizers = ['example.com/hold'];
    });
    resetCounters();

    await pass();

    expect(routeTo('10.244.1.0/24')).toBeDefined();
    expect(routeTo('10.244.2.0/24')).toBeUndefined();
    expect(w.ec2.writeCallCount()).toBe(0);
  });

  it('never touches routes outside the cluster CIDR or to gateways inside it', async () => {
    const stranger = w.ec2.putInstance(makeInstance({ index: 70 }));
    const foreign: FakeRoute[] = [
      { destination: '192.168.0.0/24', target: { instanceId: stranger.instanceId }, origin: 'CreateRoute' },
      { destination: '172.16.0.0/16', target: { natGatewayId: 'nat-0a1b' }, origin: 'CreateRoute', state: 'blackhole' },
      { destination: '10.244.200.0/24', target: { transitGatewayId: 'tgw-0a1b' }, origin: 'CreateRoute' },
      { destination: '10.244.201.0/24', target: { gatewayId: 'vgw-0a1b' }, origin: 'EnableVgwRoutePropagation' },
      { destination: 'pl-0a1b2c3d', target: { gatewayId: 'vpce-0a1b' }, origin: 'CreateRoute' },
    ];
    withTable(foreign);
    w.ec2.setState(stranger.instanceId, 'terminated'); // 192.168.0.0/24 is now a blackhole too, but not ours
    const before = structuredClone(w.ec2.routeTables.get(TABLE)!.routes);

    await pass();

    expect(w.ec2.writeCallCount()).toBe(0);
    expect(w.ec2.routeTables.get(TABLE)!.routes).toEqual(before);
  });

  it('treats a route someone else deleted first as deleted (InvalidRoute.NotFound)', async () => {
    const other = w.ec2.putInstance(makeInstance({ index: 60 }));
    withTable([{ destination: '10.244.60.0/24', target: { instanceId: other.instanceId }, origin: 'CreateRoute' }]);
    w.ec2.beforeCall = (operation) => {
      if (operation === 'DeleteRoute') w.ec2.routeTables.get(TABLE)!.routes.pop();
    };

    expect(await pass()).toEqual({ batchItemFailures: [] });
    expect(routeTo('10.244.60.0/24')).toBeUndefined();
  });
});

describe('the route table', () => {
  it('fails clearly when no table is tagged: Event on waiting Nodes, key acknowledged, no write', async () => {
    w.ec2.putRouteTable(makeRouteTable({ clusterName: 'someone-else' }));
    const { name } = worker(1);

    expect(await pass()).toEqual({ batchItemFailures: [] });

    expect(w.ec2.writeCallCount()).toBe(0);
    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toBe(
      'no route table is tagged kubernetes.io/cluster/test-cluster (or KubernetesCluster=test-cluster): ' +
        'tag the table pod routes belong in, or set ROUTE_TABLE_ID',
    );
    expect(w.metrics.total(MetricName.TerminalErrors, { reconciler: 'route' })).toBe(1);
    expect(w.metrics.total(MetricName.RouteFailures, { reason: 'NoRouteTable' })).toBe(1);
  });

  it('refuses to choose between two tagged tables', async () => {
    withTable();
    w.ec2.putRouteTable(makeRouteTable({ routeTableId: 'rtb-0123456789abcdef1' }));
    const { name } = worker(1);

    await pass();

    expect(w.ec2.writeCallCount()).toBe(0);
    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toMatch(
      /2 route tables are tagged .*\(rtb-0123456789abcdef0, rtb-0123456789abcdef1\).*set ROUTE_TABLE_ID/,
    );
  });

  it('uses ROUTE_TABLE_ID when set, whatever the tags say', async () => {
    withTable();
    const chosen = 'rtb-0000000000000000c';
    w.ec2.putRouteTable(makeRouteTable({ routeTableId: chosen, clusterName: '' }));
    worker(1);

    await w.invoke(routeReconciler, { ...w.routeDeps, routeTableId: chosen }, [fifoRecord(routeTableMessage())]);

    expect(w.ec2.routesOf(chosen).some((r) => r.destination === '10.244.1.0/24')).toBe(true);
    expect(routeTo('10.244.1.0/24')).toBeUndefined();
  });

  it('says so when ROUTE_TABLE_ID does not exist', async () => {
    const { name } = worker(1);
    await w.invoke(routeReconciler, { ...w.routeDeps, routeTableId: 'rtb-00000000' }, [
      fifoRecord(routeTableMessage()),
    ]);
    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toBe(
      'route table rtb-00000000 (ROUTE_TABLE_ID) does not exist',
    );
  });

  it('finds a table by the legacy KubernetesCluster tag', async () => {
    w.ec2.putRouteTable(makeRouteTable({ clusterName: '', tags: { KubernetesCluster: 'test-cluster' } }));
    worker(1);
    await pass();
    expect(routeTo('10.244.1.0/24')).toBeDefined();
    expect(w.ec2.callCount('DescribeRouteTables')).toBe(2);
  });

  it('warns with an Event and a metric before the route limit is hit', async () => {
    withTable(); // local + default route
    const deps = { ...w.routeDeps, routeTableLimit: 6 }; // warns at 5 routes
    const a = worker(1);
    await w.invoke(routeReconciler, deps, [fifoRecord(routeTableMessage())]);
    expect(w.metrics.total(MetricName.RouteTableRoutes)).toBe(3);
    expect(w.metrics.total(MetricName.RouteTableNearLimit)).toBe(0);

    const b = worker(2);
    const c = worker(3);
    await w.invoke(routeReconciler, deps, [fifoRecord(routeTableMessage())]);

    expect(w.metrics.total(MetricName.RouteTableNearLimit, { routeTable: TABLE })).toBe(1);
    for (const { name } of [b, c]) {
      expect(w.kube.eventsFor('Node', name, 'RouteTableNearLimit')[0]?.message).toBe(
        `route table ${TABLE} holds 5 of 6 routes (ROUTE_TABLE_LIMIT); Nodes beyond the limit get no route: ` +
          'raise the "Routes per route table" quota, then ROUTE_TABLE_LIMIT',
      );
    }
    expect(w.kube.eventsFor('Node', a.name, 'RouteTableNearLimit')).toEqual([]);
  });

  it('gives a Node no route, with an Event, when the table is full, and sends nothing EC2 would refuse', async () => {
    withTable();
    const deps = { ...w.routeDeps, routeTableLimit: 3 };
    worker(1);
    const { name } = worker(2);

    expect(await w.invoke(routeReconciler, deps, [fifoRecord(routeTableMessage())])).toEqual({
      batchItemFailures: [],
    });

    expect(w.ec2.callCount('CreateRoute')).toBe(1);
    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toMatch(
      /route table rtb-0123456789abcdef0 is full \(3 routes, ROUTE_TABLE_LIMIT\); no route for 10\.244\.2\.0\/24/,
    );
    expect(networkCondition(name)).toBeUndefined();
  });

  it('explains RouteLimitExceeded when the account quota is below ROUTE_TABLE_LIMIT', async () => {
    withTable();
    w.ec2.routeLimit = 2;
    const { name } = worker(1);

    await pass();

    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toMatch(
      /RouteLimitExceeded.*ROUTE_TABLE_LIMIT=50 is above the account's quota/,
    );
    expect(networkCondition(name)).toMatchObject({ status: 'True', reason: 'NoRouteCreated' });
    expect(w.metrics.total(MetricName.TerminalErrors, { reconciler: 'route' })).toBe(1);
  });
});

describe('failures and retries', () => {
  it('reports FailedToCreateRoute, sets NetworkUnavailable=True, retries, and converges', async () => {
    withTable();
    const { name } = worker(1);
    const other = worker(2);
    w.ec2.queueError('CreateRoute', new AwsServiceError('InternalError', 'An internal error has occurred', 500));

    await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'MODIFIED', resourceVersion: '1' })]);
    await w.drain('route.fifo', routeReconciler, w.routeDeps);

    const failed = [name, other.name].find((n) => w.kube.eventsFor('Node', n, 'FailedToCreateRoute').length > 0)!;
    expect(w.kube.eventsFor('Node', failed, 'FailedToCreateRoute')[0]?.message).toMatch(
      /Could not create route for pod CIDRs of node node-\d \(creating route 10\.244\.\d\.0\/24\): .*InternalError/,
    );
    expect(w.metrics.total(MetricName.ReconcileErrors, { reconciler: 'route' })).toBe(1);
    expect(w.metrics.total(MetricName.RouteFailures, { reason: 'InternalError' })).toBe(1);
    for (const n of [name, other.name])
      expect(networkCondition(n)).toMatchObject({ status: 'False', reason: 'RouteCreated' });
    expect(w.ec2.callCount('CreateRoute')).toBe(3);
    expect(w.sqs.depth('route-dlq.fifo')).toBe(0);
  });

  it('retries a failed condition write without reporting the route as missing', async () => {
    withTable();
    const { name } = worker(1);
    w.kube.queueError('patchNodeStatus', new KubernetesApiError(500, 'InternalError', 'etcd timeout'));

    await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'ADDED', resourceVersion: '1' })]);
    await w.drain('route.fifo', routeReconciler, w.routeDeps);

    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')).toEqual([]);
    expect(networkCondition(name)).toMatchObject({ status: 'False', reason: 'RouteCreated' });
    expect(w.ec2.callCount('CreateRoute')).toBe(1);
    expect(w.metrics.total(MetricName.ReconcileErrors, { reconciler: 'route' })).toBe(1);
  });

  it('stops the pass when throttled and retries with backoff, without blaming the Node', async () => {
    withTable();
    for (let i = 1; i <= 12; i++) worker(i);
    w.ec2.throttle('CreateRoute', 2);

    await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'RESYNC', eventId: 'r1' })]);
    await w.drain('route.fifo', routeReconciler, w.routeDeps);

    for (let i = 1; i <= 12; i++) expect(routeTo(`10.244.${i}.0/24`)?.state).toBe('active');
    expect(w.kube.events.filter((e) => e.reason === 'FailedToCreateRoute')).toEqual([]);
    // Both throttles land in the first pass's first wave of writes: it starts no more, the next pass finishes.
    expect(w.metrics.total(MetricName.ReconcileErrors, { reconciler: 'route', errorClass: 'throttled' })).toBe(1);
    expect(w.ec2.callCount('CreateRoute')).toBeLessThan(12 + 5);
    expect(w.sqs.depth('route-dlq.fifo')).toBe(0);
  });

  it('retries while a new Node instance is not visible in EC2 yet', async () => {
    withTable();
    const instance = w.ec2.putInstance(makeInstance({ index: 1 }), { invisibleForCalls: 1 });
    const node = makeNode('node-1', { providerID: `aws:///eu-west-1a/${instance.instanceId}`, initialized: true });
    node.spec = { ...node.spec, podCIDR: '10.244.1.0/24' };
    w.kube.putNode(node);

    await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'ADDED', resourceVersion: '1' })]);
    await w.drain('route.fifo', routeReconciler, w.routeDeps);

    expect(routeTo('10.244.1.0/24')?.target.instanceId).toBe(instance.instanceId);
    expect(w.kube.eventsFor('Node', 'node-1', 'FailedToCreateRoute')[0]?.message).toMatch(/not found in EC2 \(yet\)/);
    expect(w.metrics.total(MetricName.ReconcileErrors, { reconciler: 'route' })).toBe(1);
  });

  it('re-reads and replaces when another writer creates the route first (RouteAlreadyExists)', async () => {
    const other = w.ec2.putInstance(makeInstance({ index: 50 }));
    withTable();
    const { instance } = worker(1);
    w.ec2.beforeCall = (operation) => {
      if (operation !== 'CreateRoute' || routeTo('10.244.1.0/24')) return;
      w.ec2.routeTables.get(TABLE)!.routes.push({
        destination: '10.244.1.0/24',
        target: { instanceId: other.instanceId },
        origin: 'CreateRoute',
      });
    };

    expect(await pass()).toEqual({ batchItemFailures: [] });

    expect(w.ec2.callCount('ReplaceRoute')).toBe(1);
    expect(routeTo('10.244.1.0/24')?.target.instanceId).toBe(instance.instanceId);
  });

  it('accepts a route another writer created with the same target', async () => {
    withTable();
    const { instance, name } = worker(1);
    w.ec2.beforeCall = (operation) => {
      if (operation !== 'CreateRoute' || routeTo('10.244.1.0/24')) return;
      w.ec2.routeTables.get(TABLE)!.routes.push({
        destination: '10.244.1.0/24',
        target: { instanceId: instance.instanceId },
        origin: 'CreateRoute',
      });
    };

    await pass();

    expect(w.ec2.callCount('ReplaceRoute')).toBe(0);
    expect(networkCondition(name)?.status).toBe('False');
  });

  it('refuses (and acknowledges) a key other than the route table key', async () => {
    withTable();
    worker(1);
    expect(await pass(nodeKey('node-1', '5'))).toEqual({ batchItemFailures: [] });
    expect(w.ec2.callCount()).toBe(0);
    expect(w.metrics.total(MetricName.TerminalErrors, { reconciler: 'route' })).toBe(1);
  });

  it('tells the Node about a pod CIDR outside the cluster CIDR and routes nothing for it', async () => {
    withTable();
    const { name } = worker(1, { podCidrs: ['10.99.1.0/24'] });
    expect(await pass()).toEqual({ batchItemFailures: [] });
    expect(w.ec2.writeCallCount()).toBe(0);
    expect(w.kube.eventsFor('Node', name, 'FailedToCreateRoute')[0]?.message).toMatch(
      /pod CIDR 10\.99\.1\.0\/24 is outside the cluster CIDRs \(10\.244\.0\.0\/16, fd00:10:244::\/56\)/,
    );
  });

  it('ignores Nodes without a pod CIDR or an instance yet', async () => {
    withTable();
    const pending = makeNode('no-cidr', { providerID: 'aws:///eu-west-1a/i-00000000000000001', initialized: true });
    w.kube.putNode(pending);
    const uninitialized = makeNode('no-provider');
    uninitialized.spec = { ...uninitialized.spec, podCIDR: '10.244.3.0/24' };
    w.kube.putNode(uninitialized);

    expect(await pass()).toEqual({ batchItemFailures: [] });
    expect(w.ec2.writeCallCount()).toBe(0);
    expect(w.ec2.callCount('DescribeInstances')).toBe(0);
    expect(w.kube.events).toEqual([]);
  });
});

describe('the workqueue with one route table key', () => {
  it('coalesces a burst of Node changes into one pass per batch', async () => {
    withTable();
    for (let i = 1; i <= 10; i++) worker(i);
    await w.enqueue(
      'route.fifo',
      Array.from({ length: 10 }, (_, i) =>
        routeTableMessage({ eventType: 'ADDED', uid: `u${i}`, resourceVersion: `${i}` }),
      ),
    );

    const polls = await w.drain('route.fifo', routeReconciler, w.routeDeps);

    expect(polls).toBe(1);
    expect(w.ec2.callCount('DescribeRouteTables')).toBe(1);
    expect(w.ec2.callCount('CreateRoute')).toBe(10);
    expect(w.metrics.total(MetricName.CoalescedMessages, { reconciler: 'route' })).toBe(9);
  });
});
