import { describe, expect, it } from 'vitest';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { INGRESS_GARBAGE_COLLECTION_KEY } from '../../shared/queue/ingress-gc-key.ts';
import { createIngressWorld } from '../../test/helpers/ingress-world.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';
import { ingressReconciler } from './reconciler.ts';

describe('Ingress garbage collection', () => {
  it('deletes the stacks no Ingress names any more, and leaves the others alone', async () => {
    const w = createIngressWorld();
    w.addNode(1);
    w.kube.putService(makeService({ name: 'web' }));
    for (const group of ['kept', 'orphan']) {
      w.ingresses.putIngress(
        makeIngress({
          name: group,
          annotations: { 'group.name': group },
          rules: [rule(`${group}.example.com`, path('/', 'Prefix', backend('web', 80)))],
        }),
      );
    }
    const groups: GroupId[] = [
      { explicit: true, name: 'kept' },
      { explicit: true, name: 'orphan' },
    ];
    await w.converge(groups);
    expect(w.loadBalancers()).toHaveLength(2);
    // Deleted with its finalizer taken off by hand: nothing will ever send its group's key again.
    w.ingresses.ingresses.delete('default/orphan');

    const collect = () =>
      ingressReconciler.reconcile(INGRESS_GARBAGE_COLLECTION_KEY, w.ingressDeps, undefined, {
        hints: [],
        payloads: [],
        receiveCount: 1,
      });
    await collect();
    w.clock.advance(300_000);
    await collect();

    const stacks = (tags: Record<string, string>) => tags['ingress.k8s.aws/stack'];
    expect([...w.elbv2.loadBalancers.values()].map((l) => stacks(l.tags))).toEqual(['kept']);
    expect([...w.elbv2.targetGroups.values()].map((g) => stacks(g.tags))).toEqual(['kept']);
    expect(
      [...w.ec2.securityGroups.values()].filter((g) => g.tags['ingress.k8s.aws/stack']).map((g) => stacks(g.tags)),
    ).toEqual(['kept']);
    expect(w.hostname('kept')).toBe(w.loadBalancers()[0]!.dnsName.toLowerCase());
  });
});
