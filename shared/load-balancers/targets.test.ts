import { describe, expect, it } from 'vitest';
import { makeNode } from '../../test/helpers/nodes.ts';
import type { Node } from '../k8s/types.ts';
import { eligibleNodes } from './targets.ts';

describe('targets', () => {
  const ready = (name: string, extra: Parameters<typeof makeNode>[1] = {}): Node =>
    makeNode(name, {
      providerID: `aws:///eu-west-1a/i-0000000000000000${name.slice(-1)}`,
      initialized: true,
      ...extra,
    });

  it('eligible Nodes (KEP-3458: readiness does not count): not deleting, not excluded, not being scaled away, with an instance, matching the labels', () => {
    const nodes = [
      ready('n1', { labels: { pool: 'web' } }),
      ready('n2', { labels: { pool: 'web' }, ready: false }),
      ready('n3', { labels: { pool: 'web', 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' } }),
      ready('n4', {
        labels: { pool: 'web' },
        taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }],
      }),
      {
        ...ready('n5', { labels: { pool: 'web' } }),
        metadata: { name: 'n5', labels: { pool: 'web' }, deletionTimestamp: 'x' },
      },
      makeNode('n6', { initialized: true, labels: { pool: 'web' } }),
      ready('n7', { labels: { pool: 'batch' } }),
      ready('n8', { labels: { pool: 'web', gpu: 'a100' } }),
    ];
    expect(eligibleNodes(nodes, { pool: 'web' }).map((n) => n.metadata.name)).toEqual(['n1', 'n2', 'n8']);
    expect(eligibleNodes(nodes, { gpu: undefined }).map((n) => n.metadata.name)).toEqual(['n8']);
    expect(eligibleNodes(nodes).map((n) => n.metadata.name)).toEqual(['n1', 'n2', 'n7', 'n8']);
  });
});
