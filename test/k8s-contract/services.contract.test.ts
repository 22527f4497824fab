import { expect } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP, LABEL_SERVICE_NAME } from '../../shared/k8s/service-port.ts';
import type { EndpointSlice, Service } from '../../shared/k8s/types.ts';
import { describeKube } from './contract.ts';

/**
 * Services and EndpointSlices through the service controller's port (`ServicesPort`): the finalizer it guards
 * its load balancer with, the hostname it writes to status, and what a user's change of type does.
 * https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/
 */

const HOSTNAME = 'k8s-shop-web-0123456789.elb.eu-west-1.amazonaws.com';

function loadBalancer(namespace: string, name = 'web', extra: Partial<Service['spec']> = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: {
      type: 'LoadBalancer',
      selector: { app: name },
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      ...extra,
    },
  };
}

function slice(namespace: string, name: string, service: string, address: string): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { [LABEL_SERVICE_NAME]: service } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true }, nodeName: 'n1' }],
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

/** The object without `kind` and `apiVersion`, which list items lack on the API server (`k8s.list-items-untyped`). */
function untyped<T extends object>(object: T): Omit<T, 'kind' | 'apiVersion'> {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = object as T & { kind?: string; apiVersion?: string };
  return rest;
}

describeKube('Services', (world, client, test) => {
  const port = () => client.services(world().server);
  const ns = () => world().namespace;

  test('reads a Service back as stored, lists it among every namespace, and answers undefined for none', async () => {
    const created = await world().seed.createService(loadBalancer(ns()));
    expect(await port().getService(ns(), 'web')).toEqual(created);
    const listed = (await port().listServices()).filter((s) => s.metadata.namespace === ns());
    expect(listed.map(untyped)).toEqual([untyped(created)]);
    expect(await port().getService(ns(), 'absent')).toBeUndefined();
  });

  test('writes the load balancer hostname to status; a patch of the Service ignores status', async () => {
    const created = await world().seed.createService(loadBalancer(ns()));
    const ingress = [{ hostname: HOSTNAME }];
    const ignored = await port().patchService(
      ns(),
      'web',
      { metadata: { annotations: { 'example.com/seen': 'yes' } }, status: { loadBalancer: { ingress } } },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(ignored.metadata.annotations).toEqual({ 'example.com/seen': 'yes' });
    expect(ignored.status?.loadBalancer?.ingress).toBeUndefined();
    const written = await port().patchServiceStatus(
      ns(),
      'web',
      { status: { loadBalancer: { ingress } }, spec: { type: 'ClusterIP' } },
      { resourceVersion: ignored.metadata.resourceVersion! },
    );
    expect(written.status?.loadBalancer?.ingress).toEqual(ingress);
    expect(written.spec?.type).toBe('LoadBalancer');
    const cleared = await port().patchServiceStatus(
      ns(),
      'web',
      { status: { loadBalancer: { ingress: null } } },
      { resourceVersion: written.metadata.resourceVersion! },
    );
    expect(cleared.status?.loadBalancer?.ingress).toBeUndefined();
  });

  test('refuses a write guarded by a stale resourceVersion (409)', async () => {
    const created = await world().seed.createService(loadBalancer(ns()));
    const guard = { resourceVersion: created.metadata.resourceVersion! };
    await port().patchService(ns(), 'web', { metadata: { labels: { a: 'b' } } }, guard);
    await expect(port().patchService(ns(), 'web', { metadata: { labels: { c: 'd' } } }, guard)).rejects.toMatchObject({
      statusCode: 409,
    });
    await expect(
      port().patchServiceStatus(
        ns(),
        'web',
        { status: { loadBalancer: { ingress: [{ hostname: HOSTNAME }] } } },
        guard,
      ),
    ).rejects.toMatchObject({ statusCode: 409 });
  });

  test('keeps a Service with the cleanup finalizer, terminating, until the controller removes it', async () => {
    const created = await world().seed.createService(loadBalancer(ns()));
    const guarded = await port().patchService(
      ns(),
      'web',
      { metadata: { finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP] } },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(guarded.metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    await world().seed.deleteService(ns(), 'web');
    const terminating = await port().getService(ns(), 'web');
    expect(terminating?.metadata.deletionTimestamp).toEqual(expect.any(String));
    await expect(
      port().patchService(
        ns(),
        'web',
        { metadata: { finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP, 'example.com/late'] } },
        { resourceVersion: terminating!.metadata.resourceVersion! },
      ),
    ).rejects.toMatchObject({ statusCode: 422 });
    await port().patchService(
      ns(),
      'web',
      { metadata: { finalizers: null } },
      { resourceVersion: terminating!.metadata.resourceVersion! },
    );
    expect(await port().getService(ns(), 'web')).toBeUndefined();
  });

  test('a status patch carries metadata too: labels, annotations and finalizers are written, the spec is not', async () => {
    const created = await world().seed.createService(loadBalancer(ns()));
    const written = await port().patchServiceStatus(
      ns(),
      'web',
      {
        metadata: { annotations: { 'example.com/by-status': 'yes' }, finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP] },
        spec: { type: 'NodePort' },
        status: { loadBalancer: { ingress: [{ hostname: HOSTNAME }] } },
      },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(written.metadata.annotations).toEqual({ 'example.com/by-status': 'yes' });
    expect(written.metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(written.spec?.type).toBe('LoadBalancer');
  });

  test('refuses load balancer ingress on a Service not of type LoadBalancer (422); an ip gets ipMode VIP', async () => {
    const plain = await world().seed.createService(loadBalancer(ns(), 'plain', { type: 'ClusterIP' }));
    await expect(
      port().patchServiceStatus(
        ns(),
        'plain',
        { status: { loadBalancer: { ingress: [{ hostname: HOSTNAME }] } } },
        { resourceVersion: plain.metadata.resourceVersion! },
      ),
    ).rejects.toMatchObject({ statusCode: 422, message: expect.stringContaining('status.loadBalancer.ingress') });
    const lb = await world().seed.createService(loadBalancer(ns()));
    const written = await port().patchServiceStatus(
      ns(),
      'web',
      { status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } } },
      { resourceVersion: lb.metadata.resourceVersion! },
    );
    expect(written.status?.loadBalancer?.ingress).toEqual([{ ip: '192.0.2.10', ipMode: 'VIP' }]);
  });

  test.differs(
    'k8s.service-type-change',
    "a user's change of type away from LoadBalancer clears the status's load balancer and the node ports",
    async () => {
      const created = await world().seed.createService(
        loadBalancer(ns(), 'web', { ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }] }),
      );
      const written = await port().patchServiceStatus(
        ns(),
        'web',
        { status: { loadBalancer: { ingress: [{ hostname: HOSTNAME }] } } },
        { resourceVersion: created.metadata.resourceVersion! },
      );
      const changed = await port().patchService(
        ns(),
        'web',
        { spec: { type: 'ClusterIP' } },
        { resourceVersion: written.metadata.resourceVersion! },
      );
      expect(changed.spec?.type).toBe('ClusterIP');
      expect(changed.spec?.ports?.[0]?.nodePort).toBeUndefined();
      expect(changed.status?.loadBalancer?.ingress).toBeUndefined();
    },
  );

  test("lists a Service's EndpointSlices by its label, in its namespace only", async () => {
    await world().seed.createService(loadBalancer(ns()));
    const a = await world().seed.createEndpointSlice(slice(ns(), 'web-a', 'web', '10.1.0.1'));
    const b = await world().seed.createEndpointSlice(slice(ns(), 'web-b', 'web', '10.1.0.2'));
    await world().seed.createEndpointSlice(slice(ns(), 'api-a', 'api', '10.1.0.3'));
    const listed = await port().listEndpointSlices(ns(), 'web');
    expect(listed.map(untyped).sort((x, y) => (x.metadata.name < y.metadata.name ? -1 : 1))).toEqual(
      [a, b].map(untyped),
    );
    expect(await port().listEndpointSlices(ns(), 'absent')).toEqual([]);
  });

  test.differs('k8s.list-items-untyped', 'list items carry no kind or apiVersion', async () => {
    await world().seed.createService(loadBalancer(ns()));
    await world().seed.createEndpointSlice(slice(ns(), 'web-a', 'web', '10.1.0.1'));
    const [service] = (await port().listServices()).filter((s) => s.metadata.namespace === ns());
    const [endpoints] = await port().listEndpointSlices(ns(), 'web');
    for (const item of [service, endpoints]) {
      expect(item).toBeDefined();
      expect(item).not.toHaveProperty('kind');
      expect(item).not.toHaveProperty('apiVersion');
    }
  });
});
