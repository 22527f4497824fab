import { describe, expect, it } from 'vitest';
import { countingCalls, crashAfter } from '../../../test/helpers/crash.ts';
import { fifoRecord } from '../../../test/helpers/records.ts';
import { WEB_PORTS } from '../../../test/helpers/service-world.ts';
import { ANNOTATION } from '../annotations.ts';
import { serviceReconciler } from '../reconciler.ts';
import { type ClassicWorld, classicAccount, createClassicWorld, referenceClassic } from '../testing/clb.ts';

/**
 * Crash injection for Classic ELBs: a reconcile dies right after its n-th AWS call (which took effect), for
 * every n of a create, an update and a delete; the key comes back and is reconciled to the end. Whatever the
 * crash point, the account ends exactly as after an undisturbed run.
 */

type Step = 'create' | 'update' | 'delete';

async function setUp(step: Step): Promise<ClassicWorld> {
  const w = createClassicWorld();
  w.addNode(1);
  w.addNode(2);
  if (step === 'create') {
    w.serviceDeps.defaultLoadBalancerType = 'classic';
    w.putService('web', {
      annotations: { [ANNOTATION.proxyProtocol]: '*', [ANNOTATION.crossZone]: 'true' },
      ports: WEB_PORTS,
    });
    return w;
  }
  await referenceClassic(w);
  await w.converge([w.serviceKey('web')]);
  if (step === 'update') {
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = {
        [ANNOTATION.connectionIdleTimeout]: '300',
        [ANNOTATION.additionalResourceTags]: 'team=web',
      };
      s.spec!.ports = [{ name: 'http', protocol: 'TCP', port: 8080, targetPort: 8080, nodePort: 31080 }];
    });
  } else {
    w.kube.deleteService('default', 'web');
  }
  return w;
}

function ports(w: ClassicWorld, wrap: (...ports: object[]) => { ports: object[]; calls: () => number }) {
  const deps = w.serviceDeps;
  const wrapped = wrap(deps.elb!, deps.elbv2, deps.ec2);
  const [elb, elbv2, ec2] = wrapped.ports as [typeof deps.elb, typeof deps.elbv2, typeof deps.ec2];
  return { deps: { ...deps, elb, elbv2, ec2 }, calls: wrapped.calls };
}

describe.each<Step>(['create', 'update', 'delete'])('crash after every AWS call of a Classic ELB %s', (step) => {
  it('then a reconcile: the account ends as an undisturbed run leaves it', async () => {
    const reference = await setUp(step);
    await reference.converge([reference.serviceKey('web', 'default', { eventType: 'MODIFIED', eventId: 'calm' })]);
    const expected = await classicAccount(reference);
    const expectedService = reference.kube.services.has('default/web');
    if (step === 'delete') expect(expected.loadBalancers).toEqual([]);
    else expect(expected.loadBalancers).toHaveLength(1);

    const counter = await setUp(step);
    const counting = ports(counter, countingCalls);
    await counter.invoke(serviceReconciler, counting.deps, [fifoRecord(counter.serviceKey('web'))]);
    const points = counting.calls();
    expect(points).toBeGreaterThanOrEqual(step === 'delete' ? 5 : 10);
    for (let n = 1; n <= points; n++) {
      const w = await setUp(step);
      const crashing = ports(w, (...p) => crashAfter(n, ...p));
      const response = await w.invoke(serviceReconciler, crashing.deps, [
        fifoRecord(w.serviceKey('web', 'default', { eventType: 'MODIFIED', resourceVersion: `crash-${n}` })),
      ]);
      expect(response.batchItemFailures).toHaveLength(1);
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `after-${n}` })]);
      expect({ crashAfter: n, ...(await classicAccount(w)) }).toEqual({ crashAfter: n, ...expected });
      expect(w.kube.services.has('default/web')).toBe(expectedService);
    }
  });
});
