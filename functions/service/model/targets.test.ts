import { describe, expect, it } from 'vitest';
import type { EndpointSlice, Node } from '../../../shared/k8s/types.ts';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { ANNOTATION } from '../annotations.ts';
import { spec, svc } from '../testing/model.ts';
import { eligibleNodes, instanceTargets, ipTargets } from './targets.ts';

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

  it('instance targets use the node port', () => {
    const group = spec(svc()).targetGroups[0]!;
    expect(instanceTargets(group, ['i-1', 'i-2'])).toEqual([
      { id: 'i-1', port: 30080 },
      { id: 'i-2', port: 30080 },
    ]);
  });

  it('IP targets: ready IPv4 endpoints on the port the slice gives for the Service port name and protocol', () => {
    const group = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [{ name: 'http', port: 80, targetPort: 'web' }],
      }),
    ).targetGroups[0]!;
    const slice = (
      addressType: EndpointSlice['addressType'],
      ports: EndpointSlice['ports'],
      endpoints: EndpointSlice['endpoints'],
    ): EndpointSlice => ({
      metadata: { name: 's' },
      addressType,
      ports,
      endpoints,
    });
    const slices = [
      slice(
        'IPv4',
        [{ name: 'http', protocol: 'TCP', port: 8080 }],
        [
          { addresses: ['10.0.0.2'], conditions: { ready: true } },
          { addresses: ['10.0.0.1'] },
          { addresses: ['10.0.0.3'], conditions: { ready: false } },
          { addresses: ['10.0.0.4'], conditions: { ready: true, terminating: true } },
        ],
      ),
      slice('IPv4', [{ name: 'http', protocol: 'TCP', port: 9090 }], [{ addresses: ['10.0.0.5'] }]),
      slice('IPv4', [{ name: 'metrics', protocol: 'TCP', port: 9100 }], [{ addresses: ['10.0.0.6'] }]),
      slice('IPv6', [{ name: 'http', protocol: 'TCP', port: 8080 }], [{ addresses: ['fd00::1'] }]),
    ];
    expect(ipTargets(group, slices)).toEqual([
      { id: '10.0.0.1', port: 8080 },
      { id: '10.0.0.2', port: 8080 },
      { id: '10.0.0.5', port: 9090 },
    ]);
  });
});
