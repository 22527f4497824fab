import { describe, expect, it } from 'vitest';
import { TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { Crash, countingCalls, crashAfter } from '../../test/helpers/crash.ts';
import type { TgbDeps } from './deps.ts';
import { createTgbWorld, NAMESPACE } from './testing/world.ts';

/**
 * A pass killed after any call (AWS or Kubernetes, reads included) and run again ends where an uninterrupted one does;
 * a multi-cluster binding never loses track of a target it registered, so its deletion leaves only the others'.
 */

const FOREIGN = '10.1.0.5:8080';

async function scenario() {
  const w = createTgbWorld();
  w.addPodNode(1, ['10.0.20.11', '10.0.20.12', '10.0.20.13']);
  w.putWebService();
  const group = await w.targetGroup('web-ip');
  await w.elbv2Port.registerTargets(group.arn, [w.target('10.1.0.5')]);
  const slice = (n: number) =>
    w.putSlice(Array.from({ length: n }, (_, i) => ({ pod: `web-${i + 1}`, ip: `10.0.20.${11 + i}` })));
  slice(1);
  w.putBinding('web', {
    targetGroupARN: group.arn,
    multiClusterTargetGroup: true,
    networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 8080 }] }] },
  });
  await w.reconcile('web');
  // The pass under test: two more Pods.
  slice(3);
  return { w, group, slice };
}

/** The crash itself, or an error that wraps it (the reads translate what they catch, keeping it as `cause`). */
function isCrash(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof Crash) return true;
  return false;
}

const withPorts = (deps: TgbDeps, ports: [TgbDeps['elbv2'], TgbDeps['ec2'], TgbDeps['kube']]): TgbDeps => ({
  ...deps,
  elbv2: ports[0],
  ec2: ports[1],
  kube: ports[2],
});

describe('a pass killed after any call', () => {
  it('converges on the next pass, and deletion leaves only the targets of other clusters', async () => {
    const probe = await scenario();
    const counting = countingCalls(probe.w.deps.elbv2, probe.w.deps.ec2, probe.w.deps.kube);
    await probe.w.reconcile('web', withPorts(probe.w.deps, counting.ports));
    const total = counting.calls();
    expect(total).toBeGreaterThan(5);
    expect(probe.w.registered(probe.group.arn)).toEqual([
      '10.0.20.11:8080',
      '10.0.20.12:8080',
      '10.0.20.13:8080',
      FOREIGN,
    ]);
    for (let n = 1; n <= total; n++) {
      const { w, group, slice } = await scenario();
      const crashing = crashAfter(n, w.deps.elbv2, w.deps.ec2, w.deps.kube);
      await w.reconcile('web', withPorts(w.deps, crashing.ports)).catch((err: unknown) => {
        if (!isCrash(err)) throw err;
      });
      // Before the retry, the two new Pods went again: whatever the killed pass registered must be found ours.
      slice(1);
      await w.reconcile('web');
      expect(w.registered(group.arn), `crash after call ${n}`).toEqual(['10.0.20.11:8080', FOREIGN]);
      expect(w.binding('web')!.metadata.annotations?.['serverless-ccm/registered-targets']).toBe('10.0.20.11:8080');
      w.reset();
      await w.reconcile('web');
      expect(w.writes(), `a pass after the crash at call ${n} and its retry`).toBe(0);
      w.bindings.deleteBinding(NAMESPACE, 'web');
      await w.reconcile('web');
      expect(w.registered(group.arn)).toEqual([FOREIGN]);
      expect(w.binding('web')?.metadata.finalizers ?? []).not.toContain(TGB_FINALIZER);
    }
  });
});
