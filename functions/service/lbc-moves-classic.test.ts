import { beforeEach, describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { WEB_PORTS } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { garbageCollectionMessage } from './gc.ts';
import { LBC_SERVICE_FINALIZER, lbcLoadBalancerName } from './lbc/names.ts';
import { type ClassicWorld, createClassicWorld } from './testing/clb.ts';
import { lbcWorld } from './testing/lbc.ts';
import { moveWatcher } from './testing/moves.ts';

/**
 * A Service served in-tree by a Classic ELB, handed to the AWS Load Balancer Controller's way (its type annotation):
 * the Classic ELB serves until the reference-named NLB does, and only then goes (a change of kind: the Classic ELB's
 * own backend retires it, as a Classic -> NLB move does); the in-tree finalizer stays until it is gone.
 */

let w: ClassicWorld;
let lbc: ReturnType<typeof lbcWorld>;
beforeEach(() => {
  w = createClassicWorld();
  lbc = lbcWorld(w);
  lbc.deps.defaultLoadBalancerType = 'classic';
  // New targets stay `initial` for a few looks: a status moved before health checks pass would show.
  w.elbv2.initialDescribes = 4;
  w.addNode(1);
  w.addNode(2);
});
const service = () => w.kube.services.get('default/web')!;
const hostname = () => service().status?.loadBalancer?.ingress?.[0]?.hostname;
const classics = () => [...w.elbFake.loadBalancers.values()];

describe('in-tree Classic ELB to the reference way', () => {
  it('the Classic ELB serves until the reference-named NLB does, at every AWS state; then it and the in-tree finalizer go', async () => {
    w.putService('web', { ports: WEB_PORTS });
    await lbc.converge();
    const [classic] = classics();
    expect(classics()).toHaveLength(1);
    expect(hostname()).toBe(classic!.dnsName);
    for (const id of classic!.instances.keys()) w.elbFake.setInstanceHealth(classic!.name, id, 'InService');
    const watcher = moveWatcher(w, w.elbFake);
    expect(watcher.outage()).toBeUndefined();

    const { seen, deps } = watcher.watched(lbc.deps);
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.type]: 'external' };
    });
    await lbc.converge('web', { deps });
    w.clock.advance(w.elbFake.eniDrainMs);
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-classic' })], deps);

    expect(seen.outages).toEqual([]);
    expect(seen.both).toBeGreaterThan(0);
    expect(seen.finalizers).toContain([FINALIZER_LOAD_BALANCER_CLEANUP, LBC_SERVICE_FINALIZER].sort().join(','));
    const nlbs = [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
    expect(nlbs.map((lb) => lb.name)).toEqual([
      lbcLoadBalancerName(
        { clusterName: CLUSTER, namespace: 'default', name: 'web', uid: service().metadata.uid! },
        'internal',
      ),
    ]);
    expect(classics()).toEqual([]);
    // The Classic ELB went only once the status had moved.
    expect(seen.goneAt.get(classic!.name)!).toBeGreaterThanOrEqual(seen.namedAt.get(nlbs[0]!.name)!);
    expect(hostname()).toBe(nlbs[0]!.dnsName);
    expect(service().metadata.finalizers).toEqual([LBC_SERVICE_FINALIZER]);
    // The Classic ELB's own security group went with it.
    const classicGroups = [...w.ec2.securityGroups.values()].filter((g) => classic!.securityGroups.includes(g.groupId));
    expect(classicGroups.filter((g) => g.tags['kubernetes.io/service-name'] === 'default/web')).toEqual([]);
  });
});
