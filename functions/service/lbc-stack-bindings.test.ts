import { beforeEach, describe, expect, it } from 'vitest';
import { TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { createServiceWorld, type ServiceWorld, VPC, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { ANNOTATION } from './annotations.ts';
import { garbageCollectionMessage } from './gc.ts';
import { STACK_BINDING_WARNING } from './lbc/stack-bindings.ts';
import { serviceTesting } from './testing/service.ts';
import { putIpService, putWebPod, putWebSlice, stackWorld } from './testing/stack.ts';

/**
 * The reference's Services keep a TargetGroupBinding per target group of their Network Load Balancer, as the reference
 * does (functions/service/lbc/stack-bindings.ts): made with the target groups, kept in line, deleted before the target
 * groups go (the load balancer deleted, the Service moved to the in-tree way, the garbage collection). In-tree
 * Services never get one, and without stack bindings none is made.
 */

let w: ServiceWorld;
let stack: ReturnType<typeof stackWorld>;
beforeEach(() => {
  w = createServiceWorld();
  stack = stackWorld(w);
  w.addNode(1);
  for (const [pod, ip] of [
    ['web-1', '10.0.20.11'],
    ['web-2', '10.0.20.12'],
  ] as const)
    putWebPod(w, pod, ip);
  putWebSlice(w, [
    { pod: 'web-1', ip: '10.0.20.11' },
    { pod: 'web-2', ip: '10.0.20.12' },
  ]);
});
const { service, hostname, eventsOf, onlyLb, targetsOf } = serviceTesting(() => w);
const labels = { 'service.k8s.aws/stack-namespace': 'default', 'service.k8s.aws/stack-name': 'web' };
/** The target group behind each listener port. */
const groupsByPort = () =>
  new Map(
    w.elbv2.listenersOf(onlyLb().arn).map((l) => {
      const group = [...w.elbv2.targetGroups.values()].find((g) => g.tg.arn === l.targetGroupArn)!.tg;
      return [l.port, group] as const;
    }),
  );
/** Whether each binding's target group still existed when the binding was marked for deletion, by binding name. */
function deletionWatch() {
  const seen = new Map<string, boolean>();
  stack.bindings.watch(({ object }) => {
    const name = object.metadata.name;
    if (object.metadata.deletionTimestamp && !seen.has(name))
      seen.set(name, w.elbv2.targetGroupNamed(name) !== undefined);
  });
  return seen;
}
const deleting = () => stack.list().filter((b) => b.metadata.deletionTimestamp !== undefined);
const collect = (deps = stack.deps) =>
  w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: `gc-${++gcRuns}` })], deps);
let gcRuns = 0;

describe('an external Service with ip targets', () => {
  it('gets one binding per target group, as the reference writes it; a second pass writes nothing to them', async () => {
    putIpService(w, WEB_PORTS);
    await stack.converge();

    const groups = groupsByPort();
    expect(groups.size).toBe(2);
    expect(stack.list()).toEqual(
      [...groups]
        .map(([port, group]) => ({
          apiVersion: 'elbv2.k8s.aws/v1beta1',
          kind: 'TargetGroupBinding',
          metadata: expect.objectContaining({
            name: group.name,
            namespace: 'default',
            labels,
            finalizers: [TGB_FINALIZER],
          }),
          spec: {
            serviceRef: { name: 'web', port },
            targetGroupARN: group.arn,
            targetType: 'ip',
            ipAddressType: 'ipv4',
            vpcID: VPC,
          },
        }))
        .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)),
    );
    // The targets are the service controller's, as before.
    expect(targetsOf(groups.get(80)!.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080']);
    expect(hostname()).toBe(onlyLb().dnsName);

    const before = stack.list();
    stack.bindings.resetCalls();
    await stack.pass();
    expect(stack.bindings.writeCount()).toBe(0);
    expect(stack.list()).toEqual(before);
    // Every endpoint is ready: no Pod is read.
    expect(w.kube.callCount('listPods')).toBe(0);
  });

  it('a port removed: its binding is deleted before its target group goes; the other is left as it is', async () => {
    putIpService(w, WEB_PORTS);
    await stack.converge();
    const groups = groupsByPort();
    const kept = stack.list().find((b) => b.metadata.name === groups.get(80)!.name)!;
    const seen = deletionWatch();

    w.kube.mutateService('default', 'web', (s) => {
      s.spec!.ports = [WEB_PORTS[0]!];
    });
    await stack.converge();

    expect(deleting().map((b) => b.metadata.name)).toEqual([groups.get(443)!.name]);
    expect(seen.get(groups.get(443)!.name)).toBe(true);
    expect(w.elbv2.targetGroupNamed(groups.get(443)!.name)).toBeUndefined();
    expect(stack.list().find((b) => b.metadata.name === kept.metadata.name)).toEqual(kept);
  });

  it('the Service deleted: its bindings are deleted before its target groups, and the load balancer goes as before', async () => {
    putIpService(w, WEB_PORTS);
    await stack.converge();
    const names = [...groupsByPort().values()].map((g) => g.name).sort();
    const seen = deletionWatch();

    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.deletionTimestamp = new Date(w.clock.now()).toISOString();
    });
    await stack.converge();

    expect(deleting().map((b) => b.metadata.name)).toEqual(names);
    expect(names.map((n) => seen.get(n))).toEqual([true, true]);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(w.elbv2.targetGroups.size).toBe(0);
    expect(w.kube.services.get('default/web')).toBeUndefined();
  });

  it('no longer a load balancer: its bindings are deleted with its load balancer', async () => {
    putIpService(w);
    await stack.converge();
    w.kube.mutateService('default', 'web', (s) => {
      s.spec!.type = 'ClusterIP';
    });
    await stack.converge();
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(deleting()).toHaveLength(1);
  });

  it('instance targets get their bindings too', async () => {
    putIpService(w);
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.type]: 'external', [ANNOTATION.nlbTargetType]: 'instance' };
    });
    await stack.converge();
    const group = groupsByPort().get(80)!;
    expect(stack.list().map((b) => [b.metadata.name, b.spec])).toEqual([
      [
        group.name,
        {
          serviceRef: { name: 'web', port: 80 },
          targetGroupARN: group.arn,
          targetType: 'instance',
          ipAddressType: 'ipv4',
          vpcID: VPC,
        },
      ],
    ]);
  });
});

describe('where none is made', () => {
  it('an in-tree Service: not a single binding call, made or deleted', async () => {
    w.putService('web', { ports: WEB_PORTS });
    await stack.converge();
    expect(w.elbv2.loadBalancers.size).toBe(1);
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.deletionTimestamp = new Date(w.clock.now()).toISOString();
    });
    await stack.converge();
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(stack.bindings.calls.size).toBe(0);
    expect(w.kube.callCount('listPods')).toBe(0);
  });

  it('stack bindings off (no port): none, and the load balancer serves as before', async () => {
    putIpService(w);
    const { stackBindings: _, ...deps } = stack.deps;
    await stack.converge('web', { deps });
    expect(stack.bindings.bindings.size).toBe(0);
    expect(hostname()).toBe(onlyLb().dnsName);
  });

  it('the CRD not installed: a Warning on the Service, and the load balancer serves all the same', async () => {
    stack.bindings.crdInstalled = false;
    putIpService(w);
    await stack.converge();
    expect(hostname()).toBe(onlyLb().dnsName);
    expect(targetsOf(groupsByPort().get(80)!.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080']);
    // Said on each pass that finds it so (once per pass).
    const name = groupsByPort().get(80)!.name;
    expect([...new Set(eventsOf(STACK_BINDING_WARNING))]).toEqual([
      `TargetGroupBinding default/${name} not made: the TargetGroupBinding CRD is not installed (deploy/crds/targetgroupbindings.yaml), so the Pods behind target group ${name} get no readiness gate`,
    ]);
  });

  it("a binding of that name that is not the stack's: a Warning, and it is left alone", async () => {
    putIpService(w);
    await stack.converge();
    const name = stack.list()[0]!.metadata.name;
    const theirs = stack.bindings.mutateBinding('default', name, (b) => {
      b.metadata.labels = { team: 'payments' };
    });
    w.kube.events.length = 0;

    await stack.pass();

    expect(eventsOf(STACK_BINDING_WARNING)).toEqual([
      `TargetGroupBinding default/${name} exists and is not this stack's: the readiness gates of target group ${name} are left to it`,
    ]);
    expect(stack.bindings.bindings.get(`default/${name}`)).toEqual(theirs);
    expect(service().status?.loadBalancer?.ingress?.[0]?.hostname).toBe(onlyLb().dnsName);
  });
});

describe('the stack going another way', () => {
  it('the garbage collection: a Service gone without its cleanup has its bindings deleted before its target groups', async () => {
    putIpService(w);
    await stack.converge();
    const name = stack.list()[0]!.metadata.name;
    const seen = deletionWatch();
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.finalizers = [];
    });
    w.kube.deleteService('default', 'web');

    await collect();

    expect(deleting().map((b) => b.metadata.name)).toEqual([name]);
    expect(seen.get(name)).toBe(true);
    expect(w.elbv2.targetGroups.size).toBe(0);
  });

  it("the garbage collection leaves a live Service's bindings, and everything with stack bindings off", async () => {
    putIpService(w);
    await stack.converge();
    const before = stack.list();
    await collect();
    expect(stack.list()).toEqual(before);

    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.finalizers = [];
    });
    w.kube.deleteService('default', 'web');
    const { stackBindings: _, ...deps } = stack.deps;
    await collect(deps);
    expect(stack.list()).toEqual(before);
  });

  it('moved to the in-tree way: the bindings go before the reference-made target groups, and none is made again', async () => {
    putIpService(w);
    await stack.converge();
    const old = groupsByPort().get(80)!;
    const seen = deletionWatch();

    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = {};
    });
    await stack.converge();

    expect(onlyLb().name).toMatch(/^test-clus[a-z]*-default-web-/);
    expect(w.elbv2.targetGroupNamed(old.name)).toBeUndefined();
    expect(deleting().map((b) => b.metadata.name)).toEqual([old.name]);
    expect(seen.get(old.name)).toBe(true);
    expect(service().metadata.finalizers).toEqual(['service.kubernetes.io/load-balancer-cleanup']);

    stack.bindings.resetCalls();
    await stack.pass();
    expect(stack.bindings.calls.size).toBe(0);
  });
});
