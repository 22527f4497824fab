import { describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { crashAfter } from '../../test/helpers/crash.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { ANNOTATION } from './annotations.ts';
import { DEFAULT_REPLACEMENT_GRACE_SECONDS } from './deps.ts';
import { LBC_SERVICE_FINALIZER } from './lbc/names.ts';
import { serviceReconciler } from './reconciler.ts';
import { lbcWorld } from './testing/lbc.ts';
import { moveWatcher } from './testing/moves.ts';

/**
 * A move between the in-tree way and the reference's with a crash right after any AWS call of its first pass (the new
 * way's finalizer, the new load balancer) or of the pass that retires the old load balancer and removes the old way's
 * finalizer: the status never names a load balancer that does not
 * serve, and the passes that follow (without the garbage collector's help) leave the account and the Service as an
 * undisturbed move does.
 */

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
const service = () => w.kube.services.get('default/web')!;
const hostname = () => service().status?.loadBalancer?.ingress?.[0]?.hostname;

const WAYS = [
  ['in-tree to the reference way', {}, { [ANNOTATION.type]: 'external' }, LBC_SERVICE_FINALIZER],
  ['the reference way back to in-tree', { [ANNOTATION.type]: 'external' }, {}, FINALIZER_LOAD_BALANCER_CLEANUP],
] as const;

type Step = 'build' | 'retire';

/**
 * The Service served the `from` way, its annotations changed to the `to` way; for `retire`, passes until the status
 * names the new load balancer and the grace is over.
 */
async function upTo(from: Record<string, string>, to: Record<string, string>, step: Step) {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  // AWS frees a deleted load balancer's security group at once: what the passes leave is theirs, not the collector's.
  w.elbv2.eniDrainMs = 0;
  // New targets stay `initial` for a few looks: a status moved before health checks pass would show.
  w.elbv2.initialDescribes = 4;
  w.addNode(1);
  w.addNode(2);
  w.putService('web', { ports: WEB_PORTS, annotations: from });
  await lbc.converge();
  const [old] = [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
  for (const group of w.elbv2.listenersOf(old!.arn).map((l) => l.targetGroupArn!)) {
    for (const t of w.elbv2.targetsOf(group)) w.elbv2.setTargetHealth(group, t.target.id, 'healthy');
  }
  w.kube.mutateService('default', 'web', (s) => {
    s.metadata.annotations = to;
  });
  if (step === 'build') return old!;
  for (let i = 0; i < 30 && hostname() === old!.dnsName; i++) {
    await lbc.pass();
    w.clock.advance(10_000);
  }
  expect(hostname()).not.toBe(old!.dnsName);
  w.clock.advance((DEFAULT_REPLACEMENT_GRACE_SECONDS + 1) * 1000);
  return old!;
}

async function invokeCrashing(n: number) {
  const wrapped = crashAfter(n, lbc.deps.elbv2, lbc.deps.ec2);
  const [elbv2, ec2] = wrapped.ports;
  const response = await w.invoke(serviceReconciler, { ...lbc.deps, elbv2, ec2 }, [
    fifoRecord(w.serviceKey('web', 'default', { eventType: 'MODIFIED', resourceVersion: `crash-${n}` })),
  ]);
  return { response, calls: wrapped.calls() };
}

async function finish() {
  await lbc.converge();
  return { inventory: w.inventory(), finalizers: service().metadata.finalizers, hostname: hostname() };
}

const CASES = WAYS.flatMap(([way, from, to, finalizer]) =>
  (['build', 'retire'] as const).map((step) => [way, step, from, to, finalizer] as const),
);

describe('crash after every AWS call of the pass that builds the new load balancer, and of the one that retires the old', () => {
  it.each(CASES)('%s, the %s pass: then passes until done', async (_, step, from, to, finalizer) => {
    await upTo(from, to, step);
    const expected = await finish();
    expect(expected.inventory.loadBalancers).toHaveLength(1);
    expect(expected.finalizers).toEqual([finalizer]);

    await upTo(from, to, step);
    const { calls: points } = await invokeCrashing(Number.POSITIVE_INFINITY);
    expect(points).toBeGreaterThan(5);
    for (let n = 1; n <= points; n++) {
      await upTo(from, to, step);
      const { response } = await invokeCrashing(n);
      expect(response.batchItemFailures).toHaveLength(1);
      expect({ n, outage: moveWatcher(w).outage() }).toEqual({ n, outage: undefined });
      const done = await finish();
      expect({ n, ...done, hostname: done.hostname === undefined }).toEqual({
        n,
        ...expected,
        hostname: false,
      });
    }
  });
});
