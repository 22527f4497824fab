import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { IngressesPort } from '../../shared/k8s/ingress-port.ts';
import {
  EXPLICIT_GROUP_FINALIZER_PREFIX,
  IMPLICIT_GROUP_FINALIZER,
  type Ingress,
  type IngressClassParams,
} from '../../shared/k8s/ingress-types.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { AdminApi } from './backends.ts';
import { BACKEND_LABELS } from './contract.ts';
import { fakeIngressWorld, INGRESS_CLIENTS, type IngressWorld, installCrd, realIngressWorld } from './ingress-lab.ts';
import { useKubeLab } from './lab.ts';

/**
 * The IngressesPort through both clients, on a real API server (the run's lab, with deploy/crds/ installed) and on
 * FakeIngresses: the same scenarios on each, so the fake the Ingress controller's tests run on answers as the API
 * server does. The CRD-absent case on the real server is in ingress-crd.test.ts (its own API server).
 * https://kubernetes.io/docs/reference/kubernetes-api/service-resources/ingress-v1/
 */

const HOSTNAME = 'k8s-shop-web-0123456789.eu-west-1.elb.amazonaws.com';

function ingress(name: string, extra: Partial<Ingress['metadata']> = {}): Ingress {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, annotations: { 'alb.ingress.kubernetes.io/scheme': 'internet-facing' }, ...extra },
    spec: {
      ingressClassName: 'alb',
      tls: [{ hosts: ['shop.example.com'] }],
      rules: [
        {
          host: 'shop.example.com',
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
              { path: '/api', pathType: 'Exact', backend: { service: { name: 'api', port: { name: 'http' } } } },
            ],
          },
        },
      ],
    },
  };
}

/** A list item lacks `kind` and `apiVersion` on the API server. */
function untyped<T extends object>(object: T): Omit<T, 'kind' | 'apiVersion'> {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = object as T & { kind?: string; apiVersion?: string };
  return rest;
}

for (const kind of ['fake', 'real'] as const) {
  describe(`IngressesPort (${BACKEND_LABELS[kind]})`, () => {
    if (kind === 'real' && !KUBE_LAB_AVAILABLE) {
      it.skip(KUBE_LAB_SKIPPED_MESSAGE);
      return;
    }
    const lab = kind === 'real' ? useKubeLab() : undefined;
    if (lab) {
      beforeAll(async () => {
        const access = lab();
        await installCrd(new AdminApi({ url: access.url, caData: access.caData, token: access.token }));
      }, 30_000);
    }

    describe.each(INGRESS_CLIENTS)('through the $name', (client) => {
      let world: IngressWorld;
      let port: IngressesPort;
      beforeEach(async () => {
        world = lab ? await realIngressWorld(lab()) : await fakeIngressWorld();
        port = client.port(world.server);
      });
      afterEach(async () => {
        await world.close();
      });
      const ns = () => world.namespace;

      it('reads an Ingress as stored, lists it among the Ingresses of every namespace, and answers undefined for none', async () => {
        const other = `${ns()}-b`;
        await world.seed.namespace({ metadata: { name: other } });
        const mine = await world.seed.ingress({
          ...ingress('web'),
          metadata: { ...ingress('web').metadata, namespace: ns() },
        });
        const theirs = await world.seed.ingress({
          ...ingress('web'),
          metadata: { ...ingress('web').metadata, namespace: other },
        });
        expect(mine.metadata).toMatchObject({ generation: 1, uid: expect.any(String) });
        expect(mine.status).toEqual({ loadBalancer: {} });
        expect(await port.getIngress(ns(), 'web')).toEqual(mine);
        const listed = (await port.listIngresses()).filter((i) => [ns(), other].includes(i.metadata.namespace!));
        expect(listed.sort((a, b) => a.metadata.namespace!.localeCompare(b.metadata.namespace!))).toEqual(
          [mine, theirs].map(untyped),
        );
        expect(await port.getIngress(ns(), 'absent')).toBeUndefined();
      });

      it('lists IngressClasses with their parameters reference and default-class annotation', async () => {
        const name = world.name('alb');
        const created = await world.seed.ingressClass({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'IngressClass',
          metadata: { name, annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
          spec: {
            controller: 'ingress.k8s.aws/alb',
            parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: world.name('cfg') },
          },
        });
        const listed = (await port.listIngressClasses()).filter((c) => c.metadata.name === name);
        expect(listed).toEqual([untyped(created)]);
      });

      it('reads IngressClassParams by name; one that does not exist is undefined', async () => {
        const params: IngressClassParams = {
          apiVersion: 'elbv2.k8s.aws/v1beta1',
          kind: 'IngressClassParams',
          metadata: { name: world.name('cfg') },
          spec: {
            namespaceSelector: { matchLabels: { team: 'shop' } },
            group: { name: 'shop' },
            scheme: 'internal',
            subnets: { tags: { 'kubernetes.io/role/internal-elb': ['1'] } },
            tags: [{ key: 'team', value: 'shop' }],
          },
        };
        const created = await world.seed.params(params);
        expect(created.spec).toEqual(params.spec);
        expect(await port.getIngressClassParams(world.name('cfg'))).toEqual(created);
        expect(await port.getIngressClassParams(world.name('none'))).toBeUndefined();
      });

      it('reads a Namespace with its labels, the name label the API server adds among them', async () => {
        const name = `${ns()}-labelled`;
        await world.seed.namespace({ metadata: { name, labels: { team: 'shop' } } });
        expect((await port.getNamespace(name))?.metadata.labels).toEqual({
          team: 'shop',
          'kubernetes.io/metadata.name': name,
        });
        expect(await port.getNamespace(`${ns()}-none`)).toBeUndefined();
      });

      it('moves the generation with the spec only; metadata and status writes move the resourceVersion alone', async () => {
        const created = await world.seed.ingress(ingress('web'));
        const labelled = await world.seed.labelIngress(ns(), 'web', { touched: 'yes' });
        const status = await port.setIngressStatus(ns(), 'web', [{ hostname: HOSTNAME }]);
        const finalized = await port.setIngressFinalizers(ns(), 'web', [IMPLICIT_GROUP_FINALIZER], {
          resourceVersion: status.metadata.resourceVersion!,
        });
        const versions = [created, labelled, status, finalized].map((i) => Number(i.metadata.resourceVersion));
        expect([...versions].sort((a, b) => a - b)).toEqual(versions);
        expect(new Set(versions).size).toBe(4);
        expect([labelled, status, finalized].map((i) => i.metadata.generation)).toEqual([1, 1, 1]);
        const edited = await world.seed.patchIngressSpec(ns(), 'web', { ingressClassName: 'other' });
        expect(edited.metadata.generation).toBe(2);
        expect(edited.metadata.uid).toBe(created.metadata.uid);
        expect(edited.status).toEqual(status.status);
        expect(await port.getIngress(ns(), 'web')).toEqual(edited);
      });

      it('writes finalizers guarded by resourceVersion: a write after another writer changed the Ingress is 409', async () => {
        const created = await world.seed.ingress(ingress('web'));
        const guard = { resourceVersion: created.metadata.resourceVersion! };
        const group = `${EXPLICIT_GROUP_FINALIZER_PREFIX}shop`;
        const written = await port.setIngressFinalizers(ns(), 'web', [group], guard);
        expect(written.metadata.finalizers).toEqual([group]);
        expect(written.metadata.generation).toBe(1);
        await world.seed.labelIngress(ns(), 'web', { touched: 'yes' });
        const current = { resourceVersion: written.metadata.resourceVersion! };
        await expect(port.setIngressFinalizers(ns(), 'web', [], current)).rejects.toMatchObject({
          statusCode: 409,
          reason: 'Conflict',
        });
        expect((await port.getIngress(ns(), 'web'))?.metadata.finalizers).toEqual([group]);
        await expect(port.setIngressFinalizers(ns(), 'absent', [group], guard)).rejects.toMatchObject({
          statusCode: 404,
        });
      });

      it('writes status.loadBalancer through the status subresource, unguarded; an empty list clears it', async () => {
        await world.seed.ingress(ingress('web'));
        const labelled = await world.seed.labelIngress(ns(), 'web', { touched: 'yes' });
        const entries = [{ hostname: HOSTNAME, ports: [{ port: 443, protocol: 'TCP' as const }] }];
        const written = await port.setIngressStatus(ns(), 'web', entries);
        expect(written.status).toEqual({ loadBalancer: { ingress: entries } });
        expect(written.metadata).toMatchObject({ labels: { touched: 'yes' }, generation: 1 });
        expect(written.spec).toEqual(labelled.spec);
        expect(await port.getIngress(ns(), 'web')).toEqual(written);
        const cleared = await port.setIngressStatus(ns(), 'web', []);
        expect(cleared.status).toEqual({ loadBalancer: {} });
        await expect(port.setIngressStatus(ns(), 'absent', entries)).rejects.toMatchObject({ statusCode: 404 });
      });

      it('refuses a status whose ip is not an IP address or whose hostname is not a DNS name (422); ports are not checked', async () => {
        await world.seed.ingress(ingress('web'));
        for (const bad of [{ ip: 'not-an-ip' }, { hostname: 'Not_A_Host' }, { hostname: '10.0.0.1' }]) {
          await expect(port.setIngressStatus(ns(), 'web', [bad]), JSON.stringify(bad)).rejects.toMatchObject({
            statusCode: 422,
          });
        }
        const written = await port.setIngressStatus(ns(), 'web', [
          {
            ip: '10.0.0.1',
            hostname: HOSTNAME,
            ports: [{ port: 80 } as never, { port: 0, protocol: 'TCP', error: 'x' }],
          },
        ]);
        expect(written.status?.loadBalancer?.ingress).toEqual([
          {
            ip: '10.0.0.1',
            hostname: HOSTNAME,
            ports: [
              { port: 80, protocol: '' },
              { port: 0, protocol: 'TCP', error: 'x' },
            ],
          },
        ]);
      });

      it('keeps a deleted Ingress with finalizers, terminating; no finalizer can be added; the last one removed, it is gone', async () => {
        const created = await world.seed.ingress(ingress('web'));
        const guarded = await port.setIngressFinalizers(ns(), 'web', [IMPLICIT_GROUP_FINALIZER], {
          resourceVersion: created.metadata.resourceVersion!,
        });
        await world.seed.deleteIngress(ns(), 'web');
        const terminating = (await port.getIngress(ns(), 'web'))!;
        expect(terminating.metadata).toMatchObject({
          deletionTimestamp: expect.any(String),
          deletionGracePeriodSeconds: 0,
          generation: guarded.metadata.generation! + 1,
          finalizers: [IMPLICIT_GROUP_FINALIZER],
        });
        const guard = { resourceVersion: terminating.metadata.resourceVersion! };
        await expect(
          port.setIngressFinalizers(ns(), 'web', [IMPLICIT_GROUP_FINALIZER, 'example.com/late'], guard),
        ).rejects.toMatchObject({ statusCode: 422 });
        const status = await port.setIngressStatus(ns(), 'web', [{ hostname: HOSTNAME }]);
        expect(status.metadata.deletionTimestamp).toBe(terminating.metadata.deletionTimestamp);
        const last = await port.setIngressFinalizers(ns(), 'web', [], {
          resourceVersion: status.metadata.resourceVersion!,
        });
        expect(last.metadata.finalizers).toBeUndefined();
        expect(await port.getIngress(ns(), 'web')).toBeUndefined();
        expect((await port.listIngresses()).filter((i) => i.metadata.namespace === ns())).toEqual([]);
      });
    });
  });
}
