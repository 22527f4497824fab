import { expect } from 'vitest';
import { CORDON_PATCH } from '../../shared/k8s/drain-port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { makeNode } from '../helpers/nodes.ts';
import { describeKube } from './contract.ts';

/**
 * Nodes through the Node port (`KubernetesPort`) and the cordon of the drain port: what the node, route and
 * interruption controllers read and write. https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/node-v1/
 */

const conflict = { statusCode: 409 };

describeKube('Nodes', (world, client, test) => {
  const port = () => client.kubernetes(world().server);

  test('reads a registered Node back, and answers undefined for a Node that does not exist', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name, { providerID: 'aws:///eu-west-1a/i-0abc' }));
    const node = await port().getNode(name);
    expect(node).toMatchObject({
      metadata: { name, uid: created.metadata.uid, resourceVersion: created.metadata.resourceVersion },
      spec: { providerID: 'aws:///eu-west-1a/i-0abc' },
      status: { conditions: [expect.objectContaining({ type: 'Ready', status: 'True' })] },
    });
    expect(await port().getNode(world().name('absent'))).toBeUndefined();
  });

  test('lists every Node', async () => {
    const names = [world().name('a'), world().name('b'), world().name('c')];
    for (const name of names) await world().seed.createNode(makeNode(name));
    const listed = (await port().listNodes()).map((n) => n.metadata.name).filter((n) => names.includes(n));
    expect(listed.sort()).toEqual(names);
  });

  test.differs(
    'k8s.node-not-ready-taint',
    'a new Node carries the not-ready taint the API server adds on create',
    async () => {
      const name = world().name('n1');
      await world().seed.createNode(makeNode(name, { taints: [] }));
      expect((await port().getNode(name))?.spec?.taints).toEqual([
        expect.objectContaining({ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }),
      ]);
    },
  );

  test('patches labels and taints guarded by resourceVersion; the taint list is replaced whole', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name));
    const taints = [{ key: 'example.com/dedicated', value: 'gpu', effect: 'NoExecute' as const }];
    const patched = await port().patchNode(
      name,
      { metadata: { labels: { 'topology.kubernetes.io/zone': 'eu-west-1a' } }, spec: { taints } },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(patched.metadata.labels).toMatchObject({ 'topology.kubernetes.io/zone': 'eu-west-1a' });
    expect(patched.spec?.taints).toEqual([expect.objectContaining(taints[0])]);
    expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    expect(await port().getNode(name)).toEqual(patched);
  });

  test('removes a label with null', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name, { labels: { 'example.com/gone': 'soon' } }));
    const patched = await port().patchNode(
      name,
      { metadata: { labels: { 'example.com/gone': null } } },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(patched.metadata.labels).not.toHaveProperty('example.com/gone');
    expect(patched.metadata.labels).toHaveProperty('kubernetes.io/hostname', name);
  });

  test('refuses a patch guarded by a stale resourceVersion (409) and writes nothing', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name));
    const moved = await world().seed.touchNode(name, { 'example.com/other-writer': 'yes' });
    await expect(
      port().patchNode(
        name,
        { metadata: { labels: { mine: 'x' } } },
        { resourceVersion: created.metadata.resourceVersion! },
      ),
    ).rejects.toMatchObject(conflict);
    await expect(
      port().patchNodeStatus(
        name,
        { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.9' }] } },
        { resourceVersion: created.metadata.resourceVersion! },
      ),
    ).rejects.toMatchObject(conflict);
    expect(await port().getNode(name)).toEqual(moved);
  });

  test('a patch of the Node ignores status; a patch of its status ignores the spec but writes metadata', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name, { addresses: [{ type: 'Hostname', address: name }] }));
    const main = await port().patchNode(
      name,
      {
        metadata: { labels: { 'example.com/main': 'yes' } },
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
      } as Parameters<ReturnType<typeof port>['patchNode']>[1],
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(main.metadata.labels).toHaveProperty('example.com/main', 'yes');
    expect(main.status?.addresses).toEqual([{ type: 'Hostname', address: name }]);
    const status = await port().patchNodeStatus(
      name,
      {
        metadata: { labels: { 'example.com/status': 'yes' } },
        spec: { providerID: 'aws:///eu-west-1a/i-0def' },
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.2' }] },
      },
      { resourceVersion: main.metadata.resourceVersion! },
    );
    expect(status.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.2' }]);
    // kube-apiserver's Node status strategy resets only the spec: labels sent to /status are written.
    expect(status.metadata.labels).toHaveProperty('example.com/status', 'yes');
    expect(status.spec?.providerID).toBeUndefined();
  });

  test('patches status conditions and capacity; a merge patch replaces the conditions whole', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name));
    const patched = await port().patchNodeStatus(
      name,
      {
        status: {
          conditions: [{ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated', message: 'routed' }],
          capacity: { 'vpc.amazonaws.com/PrivateIPv4Address': '14' },
        },
      },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(patched.status?.conditions).toEqual([
      expect.objectContaining({ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }),
    ]);
    expect(patched.status?.capacity).toEqual({ 'vpc.amazonaws.com/PrivateIPv4Address': '14' });
  });

  test('deletes a Node only when the uid precondition holds (409 otherwise)', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name));
    await expect(port().deleteNode(name, { uid: '00000000-0000-0000-0000-000000000000' })).rejects.toMatchObject(
      conflict,
    );
    expect(await port().getNode(name)).toBeDefined();
    await port().deleteNode(name, { uid: created.metadata.uid });
    expect(await port().getNode(name)).toBeUndefined();
  });

  test('answers 404 to deleting a Node that does not exist', async () => {
    await expect(port().deleteNode(world().name('absent'), {})).rejects.toMatchObject({ statusCode: 404 });
  });

  test('keeps a Node with a finalizer, marked for deletion, until the finalizer is removed', async () => {
    const name = world().name('n1');
    const node: Node = makeNode(name);
    node.metadata.finalizers = ['example.com/keep'];
    const created = await world().seed.createNode(node);
    await port().deleteNode(name, { uid: created.metadata.uid });
    const terminating = await port().getNode(name);
    expect(terminating?.metadata.deletionTimestamp).toEqual(expect.any(String));
    await expect(
      port().patchNode(
        name,
        { metadata: { finalizers: ['example.com/keep', 'example.com/late'] } },
        { resourceVersion: terminating!.metadata.resourceVersion! },
      ),
    ).rejects.toMatchObject({ statusCode: 422 });
    await port().patchNode(
      name,
      { metadata: { finalizers: null } },
      { resourceVersion: terminating!.metadata.resourceVersion! },
    );
    expect(await port().getNode(name)).toBeUndefined();
  });

  test('cordons a Node with a guarded patch (409 when stale)', async () => {
    const name = world().name('n1');
    const created = await world().seed.createNode(makeNode(name));
    const drain = client.drain(world().server);
    const cordoned = await drain.cordonNode(name, { resourceVersion: created.metadata.resourceVersion! });
    expect(cordoned.spec).toMatchObject(CORDON_PATCH.spec);
    await expect(drain.cordonNode(name, { resourceVersion: created.metadata.resourceVersion! })).rejects.toMatchObject(
      conflict,
    );
  });
});
