import { beforeEach, describe, expect, it } from 'vitest';
import { createServiceWorld, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { garbageCollectionMessage, sweep } from './gc.ts';
import { lbcSecurityGroupName } from './lbc/names.ts';
import { lbcWorld, putLbcService, WEB_UID } from './testing/lbc.ts';

/**
 * The garbage collector and the AWS Load Balancer Controller's Services: what they have is recognised as theirs by its
 * tags, never swept while they live (even with SERVICE_LBC_SERVICES turned off since), and swept once they are gone.
 */

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
beforeEach(async () => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  w.addNode(1);
  putLbcService(w, {
    ports: [
      { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 },
      { name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 30443 },
    ],
  });
  await lbc.converge();
});
const managedName = lbcSecurityGroupName({ clusterName: CLUSTER, namespace: 'default', name: 'web', uid: WEB_UID });
const inventory = () => ({
  loadBalancers: [...w.elbv2.loadBalancers.values()].map((l) => l.lb.name),
  targetGroups: [...w.elbv2.targetGroups.values()].map((g) => g.tg.name).sort(),
  managed: [...w.ec2.securityGroups.values()].some((g) => g.groupName === managedName),
});
let gcRuns = 0;
const collect = (deps = lbc.deps) =>
  w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: `lbc-gc-${++gcRuns}` })], deps);

describe('garbage collection', () => {
  it('a live Service keeps its load balancer, target groups and frontend group', async () => {
    const before = inventory();
    expect(before.loadBalancers).toHaveLength(1);
    expect(before.targetGroups).toHaveLength(2);
    expect(before.managed).toBe(true);

    expect(await sweep(lbc.deps)).toEqual({
      loadBalancers: [],
      targetGroups: [],
      securityGroups: [],
      rules: 0,
      pending: 0,
    });
    expect(inventory()).toEqual(before);
  });

  it('before its status names the load balancer (a pass that stopped short), the one it asks for is kept', async () => {
    w.kube.mutateService('default', 'web', (s) => {
      s.status = {};
    });
    const before = inventory();
    await collect();
    expect(inventory()).toEqual(before);
  });

  it('with the switch turned off since, nothing of the Service is swept either', async () => {
    const before = inventory();
    await collect({ ...lbc.deps, lbcServices: false });
    expect(inventory()).toEqual(before);
  });

  it('once the Service is gone (its finalizer removed by hand), everything it had is swept', async () => {
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.finalizers = [];
    });
    w.kube.deleteService('default', 'web');
    expect(w.kube.services.get('default/web')).toBeUndefined();

    await collect();

    expect(inventory()).toEqual({ loadBalancers: [], targetGroups: [], managed: false });
  });
});
