import { beforeEach, describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { createServiceWorld, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { lbcLoadBalancerName } from './lbc/names.ts';
import { lbcWorld } from './testing/lbc.ts';
import { serviceTesting } from './testing/service.ts';

/**
 * A Service moving between the in-tree way and the AWS Load Balancer Controller's (its type annotation changed), and a
 * resync's quick look at one served the reference's way.
 */

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
beforeEach(() => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  w.addNode(1);
});
const { service, hostname, onlyLb, groupsOf, targetsOf } = serviceTesting(() => w);
const uid = () => service().metadata.uid!;

describe('moving', () => {
  it('in-tree to the reference way: the in-tree load balancer goes, then the reference-named one serves', async () => {
    w.putService('web');
    await lbc.converge();
    const inTree = onlyLb();
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);

    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.type]: 'external' };
    });
    await lbc.converge();

    const now = onlyLb();
    expect(now.arn).not.toBe(inTree.arn);
    expect(now.name).toBe(
      lbcLoadBalancerName({ clusterName: CLUSTER, namespace: 'default', name: 'web', uid: uid() }, 'internal'),
    );
    expect(service().metadata.finalizers).toEqual(['service.k8s.aws/resources']);
    expect(hostname()).toBe(now.dnsName);
  });

  it('the reference way back to in-tree: its load balancer goes, then an in-tree one serves', async () => {
    w.putService('web', { annotations: { [ANNOTATION.type]: 'external' } });
    await lbc.converge();
    const reference = onlyLb();

    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = {};
    });
    await lbc.converge();

    const now = onlyLb();
    expect(now.arn).not.toBe(reference.arn);
    expect(now.name).toMatch(/^test-clus[a-z]*-default-web-/);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(hostname()).toBe(now.dnsName);
  });
});

describe('a resync', () => {
  it('with the quick look on, finds the reference-named load balancer in line and writes nothing', async () => {
    const deps = { ...lbc.deps, resyncQuickCheck: true };
    w.putService('web', { annotations: { [ANNOTATION.type]: 'external' } });
    await lbc.converge('web', { deps });
    w.resetCounters();
    await lbc.pass('web', { deps });
    expect(w.awsWrites()).toBe(0);
    expect(w.kube.writeCount()).toBe(0);
    // A quick look: the load balancer, its tags and its target groups, not the full pass's reads.
    expect(w.awsCalls()).toBeLessThanOrEqual(4);
  });
});

describe('a Node-set change', () => {
  it('registers a new Node as an instance target of the reference-named load balancer', async () => {
    const deps = { ...lbc.deps, resyncQuickCheck: true };
    w.putService('web', { annotations: { [ANNOTATION.type]: 'external' } });
    await lbc.converge('web', { deps });
    const added = w.addNode(2);
    await w.converge(w.nodeSetKeys(['web']), deps);
    const [group] = groupsOf(onlyLb().arn);
    expect(targetsOf(group!.arn)).toContain(`${added.instance.instanceId}:30080`);
  });
});
