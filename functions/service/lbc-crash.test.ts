import { describe, expect, it } from 'vitest';
import { countingCalls, crashAfter } from '../../test/helpers/crash.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { createServiceWorld, SERVICE_QUEUE_ARN, type ServiceWorld } from '../../test/helpers/service-world.ts';
import type { ServiceDeps } from './deps.ts';
import { serviceReconciler } from './reconciler.ts';
import { lbcWorld, putLbcService, REFERENCE_PORTS, referenceStack } from './testing/lbc.ts';

/**
 * Crash injection for the reference's Services: a pass dies right after its n-th AWS call (which took effect), for
 * every n of a create and of an adoption; the key comes back and is reconciled to the end. Whatever the crash point,
 * the account ends exactly as after an undisturbed run, and the adopted load balancer is the reference's own.
 */

type Scenario = 'create' | 'adopt';

async function setUp(scenario: Scenario): Promise<{ w: ServiceWorld; deps: ServiceDeps; arn?: string }> {
  const w = createServiceWorld();
  const nodes = [w.addNode(1), w.addNode(2)];
  const { deps } = lbcWorld(w);
  if (scenario === 'create') {
    putLbcService(w, { ports: REFERENCE_PORTS, annotations: {} });
    return { w, deps };
  }
  const { lb } = await referenceStack(w, nodes);
  return { w, deps, arn: lb.arn };
}

let sent = 0;
const record = () =>
  fifoRecord(
    { kind: 'Service', namespace: 'default', name: 'web', hint: { eventType: 'RESYNC', eventId: `c-${++sent}` } },
    { queueArn: SERVICE_QUEUE_ARN },
  );

describe.each<Scenario>(['create', 'adopt'])('crash after every AWS call (%s)', (scenario) => {
  it('then a reconcile: the same end state, nothing leaked, nothing made anew', async () => {
    const reference = await setUp(scenario);
    await reference.w.converge([reference.w.serviceKey('web')], reference.deps);
    const expected = reference.w.inventory();
    expect(expected.loadBalancers).toHaveLength(1);

    const counter = await setUp(scenario);
    const counting = countingCalls(counter.deps.elbv2, counter.deps.ec2);
    const [countedElbv2, countedEc2] = counting.ports;
    await counter.w.invoke(serviceReconciler, { ...counter.deps, elbv2: countedElbv2, ec2: countedEc2 }, [record()]);
    const points = counting.calls();
    expect(points).toBeGreaterThan(10);

    for (let n = 1; n <= points; n++) {
      const { w, deps, arn } = await setUp(scenario);
      const crashing = crashAfter(n, deps.elbv2, deps.ec2);
      const [elbv2, ec2] = crashing.ports;
      const response = await w.invoke(serviceReconciler, { ...deps, elbv2, ec2 }, [record()]);
      expect(response.batchItemFailures).toHaveLength(1);
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `after-${n}` })], deps);
      expect({ crashAfter: n, ...w.inventory() }).toEqual({ crashAfter: n, ...expected });
      if (arn) expect([...w.elbv2.loadBalancers.keys()]).toEqual([arn]);
      w.resetCounters();
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `again-${n}` })], deps);
      expect(w.awsWrites()).toBe(0);
    }
  });
});
