import { expect } from 'vitest';
import { type Lease, microTime } from '../../functions/relay/lease.ts';
import { EVENT_COMPONENT } from '../../shared/k8s/event-recorder.ts';
import { makeNode } from '../helpers/nodes.ts';
import { describeKube } from './contract.ts';

/**
 * The relay's leader election Lease (`LeasePort`: get, create, replace guarded by resourceVersion) and the Events
 * every controller records through the Node port, aggregated by count as client-go's recorder does.
 * https://kubernetes.io/docs/concepts/architecture/leases/
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/
 */

describeKube('Leases', (world, client, test) => {
  const leases = () => client.leases(world().leaseServer);
  const lease = (holder: string, renewTime = microTime(Date.now())): Lease => ({
    metadata: { name: 'serverless-ccm-relay', namespace: world().namespace },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: renewTime, renewTime, leaseTransitions: 0 },
  });

  test('creates a Lease once (409 AlreadyExists after), reads it back with its MicroTimes as written', async () => {
    expect(await leases().get(world().namespace, 'serverless-ccm-relay')).toBeUndefined();
    const wanted = lease('relay-a');
    const created = await leases().create(wanted);
    expect(created.metadata.resourceVersion).toEqual(expect.any(String));
    expect(created.spec).toEqual(wanted.spec);
    expect(await leases().get(world().namespace, 'serverless-ccm-relay')).toMatchObject({ spec: wanted.spec });
    await expect(leases().create(lease('relay-b'))).rejects.toMatchObject({ statusCode: 409 });
  });

  test('replaces a Lease guarded by its resourceVersion: the loser of a race gets 409 Conflict', async () => {
    const created = await leases().create(lease('relay-a'));
    const renewed = await leases().update({
      ...created,
      spec: { ...created.spec, renewTime: microTime(Date.now() + 2_000) },
    });
    expect(Number(renewed.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    await expect(
      leases().update({ ...created, spec: { ...created.spec, holderIdentity: 'relay-b', leaseTransitions: 1 } }),
    ).rejects.toMatchObject({ statusCode: 409 });
    expect((await leases().get(world().namespace, 'serverless-ccm-relay'))?.spec?.holderIdentity).toBe('relay-a');
  });

  test('refuses a renewTime without six fractional digits (what Date.toISOString gives)', async () => {
    await expect(leases().create(lease('relay-a', new Date().toISOString()))).rejects.toMatchObject({
      statusCode: expect.any(Number),
    });
    expect(await leases().get(world().namespace, 'serverless-ccm-relay')).toBeUndefined();
  });

  test.differs(
    'k8s.lease-update-creates',
    'a replace of a Lease that does not exist creates it (Leases allow create on update)',
    async () => {
      const absent = lease('relay-a');
      const written = await leases().update({ ...absent, metadata: { ...absent.metadata, resourceVersion: '1' } });
      expect(written.spec?.holderIdentity).toBe('relay-a');
      expect((await leases().get(world().namespace, 'serverless-ccm-relay'))?.spec?.holderIdentity).toBe('relay-a');
    },
  );
});

describeKube('Events', (world, client, test) => {
  const kube = () => client.kubernetes(world().server);
  const ns = () => world().namespace;
  const about = { apiVersion: 'v1', kind: 'Pod', name: 'web-0', uid: 'c0ffee00-0000-4000-8000-000000000001' };

  test("records an Event in its object's namespace, and counts a repeat on the same Event", async () => {
    const event = {
      involvedObject: { ...about, namespace: ns() },
      type: 'Normal' as const,
      reason: 'ResourceAllocated',
      message: 'Allocated vpc.amazonaws.com/PrivateIPv4Address 10.0.0.7/19 to the Pod',
    };
    await kube().recordEvent(event);
    const [first, ...others] = await world().read.events(ns());
    expect(others).toEqual([]);
    expect(first).toMatchObject({
      involvedObject: event.involvedObject,
      type: 'Normal',
      reason: 'ResourceAllocated',
      message: event.message,
      count: 1,
      source: { component: EVENT_COMPONENT },
    });
    await kube().recordEvent(event);
    await client.kubernetes(world().server).recordEvent(event);
    const stored = await world().read.events(ns());
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ count: 3, firstTimestamp: first!.firstTimestamp });
  });

  test('records Events about a Node in the default namespace; another reason is another Event', async () => {
    const name = world().name('n1');
    const node = await world().seed.createNode(makeNode(name));
    const involvedObject = { apiVersion: 'v1', kind: 'Node', name, uid: node.metadata.uid };
    await kube().recordEvent({ involvedObject, type: 'Normal', reason: 'Cordoned', message: 'Cordoned for spot' });
    await kube().recordEvent({ involvedObject, type: 'Warning', reason: 'DrainTimedOut', message: 'Pods left' });
    const mine = (await world().read.events('default')).filter((e) => e.involvedObject?.name === name);
    expect(mine.map((e) => [e.reason, e.type, e.count]).sort()).toEqual([
      ['Cordoned', 'Normal', 1],
      ['DrainTimedOut', 'Warning', 1],
    ]);
  });
});
