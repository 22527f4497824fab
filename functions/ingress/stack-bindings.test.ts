import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { type TargetGroupBinding, TGB_API_VERSION, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import { FULL_PASS_INTERVAL_MS } from './apply/quick.ts';
import { alternateTargetGroupName } from './apply/replacement.ts';
import { collectIngressGarbage } from './gc.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';

/**
 * The group's TargetGroupBindings, as the reference keeps them (functions/ingress/apply/stack-bindings.ts): one per
 * target group, named as it in its Service's namespace, labelled with the stack, made once the targets are in and
 * deleted with the target group or the group; none at all when stack bindings are off.
 */

let w: IngressWorld;
const SHOP: GroupId = { explicit: true, name: 'shop' };

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  w.kube.putService(makeService({ name: 'web' }));
  w.kube.putService(
    makeService({
      name: 'api',
      namespace: 'shop',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 9090, nodePort: 30090 }],
    }),
  );
});

/** Two members of the explicit group `shop`: `web` (default) by port number, `api` (shop) by port name. */
function putShop() {
  w.ingresses.putIngress(
    makeIngress({
      name: 'web',
      annotations: { 'group.name': 'shop' },
      rules: [rule('shop.example.com', path('/', 'Prefix', backend('web', 80)))],
    }),
  );
  w.ingresses.putIngress(
    makeIngress({
      name: 'api',
      namespace: 'shop',
      annotations: { 'group.name': 'shop' },
      rules: [rule('shop.example.com', path('/api', 'Prefix', backend('api', 'http')))],
    }),
  );
}

const targetGroups = () => [...w.elbv2.targetGroups.values()].map((g) => g.tg);
const groupOf = (service: string) => targetGroups().find((g) => g.name.includes(`-${service}-`))!;
const all = (): TargetGroupBinding[] => [...w.bindings.bindings.values()];
const warnings = (name: string, namespace = 'default') =>
  w.kube
    .eventsFor('Ingress', name, 'FailedDeployModel')
    .filter((e) => (e.involvedObject.namespace ?? 'default') === namespace)
    .map((e) => e.message);

/** The group serves: its members' status names the load balancer, and each target group has its Node target. */
function expectServing(...services: string[]) {
  const lb = w.loadBalancers()[0]!;
  expect(w.hostname('web')).toBe(lb.dnsName.toLowerCase());
  for (const service of services) expect(w.elbv2.targetsOf(groupOf(service).arn)).toHaveLength(1);
}

describe('an explicit group with stack bindings on', () => {
  it('keeps one binding per target group, as the reference writes it', async () => {
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);

    const web = groupOf('web');
    const api = groupOf('api');
    expect(
      all()
        .map((b) => `${b.metadata.namespace}/${b.metadata.name}`)
        .sort(),
    ).toEqual([`default/${web.name}`, `shop/${api.name}`].sort());
    const webBinding = w.bindings.bindings.get(`default/${web.name}`)!;
    expect(webBinding.apiVersion).toBe(TGB_API_VERSION);
    expect(webBinding.metadata.labels).toEqual({ 'ingress.k8s.aws/stack': 'shop' });
    expect(webBinding.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(webBinding.spec).toEqual({
      serviceRef: { name: 'web', port: 80 },
      targetGroupARN: web.arn,
      targetType: 'instance',
      ipAddressType: 'ipv4',
      vpcID: w.ingressDeps.vpcId,
    });
    // The port as the backend names it.
    expect(w.bindings.bindings.get(`shop/${api.name}`)!.spec.serviceRef).toEqual({ name: 'api', port: 'http' });
    expectServing('web', 'api');
  });

  it('writes nothing to them on a later pass, quick or full', async () => {
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);
    const before = JSON.stringify(all());
    w.bindings.resetCalls();

    await w.converge([SHOP], w.stackBindingDeps);
    w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
    await w.converge([SHOP], w.stackBindingDeps);

    // The hour passed: a full pass listed them, and wrote nothing.
    expect(w.bindings.callCount('listTargetGroupBindings')).toBeGreaterThan(0);
    expect(w.bindings.writeCount()).toBe(0);
    expect(JSON.stringify(all())).toBe(before);
  });

  it('turning them on makes a full pass, even when the group is in line', async () => {
    putShop();
    await w.converge([SHOP]);
    expect(w.bindings.calls.size).toBe(0);

    await w.converge([SHOP], w.stackBindingDeps);
    expect(all()).toHaveLength(2);
  });

  it("deletes a backend's binding with its target group", async () => {
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);
    const api = groupOf('api');

    w.ingresses.mutateIngress('shop', 'api', (i) => {
      i.spec!.rules = [rule('shop.example.com', path('/api', 'Prefix', backend('web', 80)))];
    });
    w.kube.putService(makeService({ name: 'web', namespace: 'shop' }));
    await w.converge([SHOP], w.stackBindingDeps);

    // Marked: its finalizer is the binding controller's to drop, once its Pods are let go.
    expect(w.bindings.bindings.get(`shop/${api.name}`)?.metadata.deletionTimestamp).toBeDefined();
    const live = all().filter((b) => !b.metadata.deletionTimestamp);
    expect(live.map((b) => `${b.metadata.namespace}/${b.spec.serviceRef.name}`).sort()).toEqual([
      'default/web',
      'shop/web',
    ]);
  });

  it('deletes every binding when the group goes, before its target groups', async () => {
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);
    const marked: number[] = [];
    w.elbv2.beforeCall = (operation) => {
      if (operation === 'DeleteTargetGroup') marked.push(all().filter((b) => b.metadata.deletionTimestamp).length);
    };

    w.ingresses.deleteIngress('default', 'web');
    w.ingresses.deleteIngress('shop', 'api');
    await w.converge([SHOP], w.stackBindingDeps);
    w.elbv2.beforeCall = undefined;

    expect(targetGroups()).toEqual([]);
    expect(marked.length).toBeGreaterThan(0);
    expect(marked.every((n) => n === 2)).toBe(true);
  });

  it('the collector deletes the bindings of a stack no Ingress names', async () => {
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);
    // The Ingresses went without their finalizers (force-deleted): only the collector finds the stack.
    for (const [namespace, name] of [
      ['default', 'web'],
      ['shop', 'api'],
    ] as const) {
      w.ingresses.mutateIngress(namespace, name, (i) => {
        i.metadata.finalizers = [];
      });
      w.ingresses.deleteIngress(namespace, name);
    }
    await collectIngressGarbage(w.stackBindingDeps);

    expect(all().every((b) => b.metadata.deletionTimestamp)).toBe(true);
    expect(all()).toHaveLength(2);
  });
});

describe('a load balancer replaced (its scheme changed)', () => {
  it("moves each binding to the successor's target group, which takes the alternate name", async () => {
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);
    const before = groupOf('web');
    w.ingresses.mutateIngress('default', 'web', (i) => {
      i.metadata.annotations!['alb.ingress.kubernetes.io/scheme'] = 'internet-facing';
    });
    w.ingresses.mutateIngress('shop', 'api', (i) => {
      i.metadata.annotations!['alb.ingress.kubernetes.io/scheme'] = 'internet-facing';
    });
    await w.converge([SHOP], w.stackBindingDeps);

    const after = groupOf('web');
    expect(w.loadBalancers()).toHaveLength(1);
    expect(after.name).toBe(alternateTargetGroupName(before.name));
    const live = all().filter((b) => !b.metadata.deletionTimestamp);
    expect(live.map((b) => b.metadata.name).sort()).toEqual(
      targetGroups()
        .map((g) => g.name)
        .sort(),
    );
    expect(w.bindings.bindings.get(`default/${after.name}`)!.spec.targetGroupARN).toBe(after.arn);
    expect(w.bindings.bindings.get(`default/${before.name}`)?.metadata.deletionTimestamp).toBeDefined();
  });
});

describe('an implicit group', () => {
  it("labels its bindings with the Ingress's namespace and name", async () => {
    w.ingresses.putIngress(
      makeIngress({
        name: 'api',
        namespace: 'shop',
        rules: [rule(undefined, path('/', 'Prefix', backend('api', 80)))],
      }),
    );
    await w.converge([{ explicit: false, namespace: 'shop', name: 'api' }], w.stackBindingDeps);

    const [binding] = all();
    expect(all()).toHaveLength(1);
    expect(binding!.metadata.namespace).toBe('shop');
    expect(binding!.metadata.name).toBe(groupOf('api').name);
    expect(binding!.metadata.labels).toEqual({
      'ingress.k8s.aws/stack-namespace': 'shop',
      'ingress.k8s.aws/stack-name': 'api',
    });
  });
});

describe('stack bindings off', () => {
  it('lists and writes no binding at all, through the whole life of a group', async () => {
    putShop();
    await w.converge([SHOP]);
    w.ingresses.deleteIngress('default', 'web');
    w.ingresses.deleteIngress('shop', 'api');
    await w.converge([SHOP]);

    expect(targetGroups()).toEqual([]);
    expect(w.bindings.calls.size).toBe(0);
  });
});

describe('what cannot be made is said, and the load balancer serves all the same', () => {
  it('a binding of the name that is not the stack’s', async () => {
    putShop();
    await w.converge([SHOP]);
    const web = groupOf('web');
    w.bindings.putBinding({
      metadata: { name: web.name, namespace: 'default' },
      spec: { serviceRef: { name: 'other', port: 80 }, targetGroupARN: web.arn },
    });

    await w.converge([SHOP], w.stackBindingDeps);

    expect(warnings('web').some((m) => m.includes(`TargetGroupBinding default/${web.name}`))).toBe(true);
    // Left as it was; the other target group's binding made.
    expect(w.bindings.bindings.get(`default/${web.name}`)!.spec.serviceRef.name).toBe('other');
    expect(w.bindings.bindings.get(`shop/${groupOf('api').name}`)).toBeDefined();
    expectServing('web', 'api');
  });

  it('the TargetGroupBinding CRD not installed', async () => {
    w.bindings.crdInstalled = false;
    putShop();
    await w.converge([SHOP], w.stackBindingDeps);

    expect(warnings('web').some((m) => m.includes('CRD is not installed'))).toBe(true);
    expect(all()).toEqual([]);
    expectServing('web', 'api');
  });
});
