import { describe, expect, it } from 'vitest';
import type { Instance } from '../../shared/aws/ec2-port.ts';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { providerIdFor } from '../../shared/aws/provider-id.ts';
import { ANNOTATION_PROVIDED_NODE_IP, TAINT_SHUTDOWN } from '../../shared/k8s/node-helpers.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { instanceAddresses } from '../../shared/nodes/addresses.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { sweepNodes } from './node-sweep.ts';

const shutdownTaint = { key: TAINT_SHUTDOWN, effect: 'NoSchedule' as const };

/** A Node the node and node-lifecycle reconcilers left in step with `instance`: initialized, Ready. */
function inStep(instance: Instance): Node {
  const node = makeNode(instance.privateDnsName!, {
    initialized: true,
    providerID: providerIdFor(instance.availabilityZone, instance.instanceId),
  });
  node.status!.addresses = instanceAddresses(instance, ['ipv4']);
  return node;
}

const sweep = (node: Node, instances: Instance[]) =>
  sweepNodes({ nodes: [node], clusterInstances: instances, ipFamilies: ['ipv4'] });

describe('sweepNodes', () => {
  it('finds nothing to do for Nodes in step with their instances', () => {
    const instances = [1, 2, 3].map((index) => makeInstance({ index }));
    const nodes = instances.map(inStep);
    expect(sweepNodes({ nodes, clusterInstances: instances, ipFamilies: ['ipv4'] })).toEqual({
      node: [],
      lifecycle: [],
    });
  });

  type Case = [string, (n: Node, i: Instance) => [Node, Instance[]], { node: boolean; lifecycle: boolean }];
  const cases: Case[] = [
    [
      'uninitialized (taint still on): provider ID, labels, zone ID to set',
      (n, i) => [{ ...n, spec: { ...n.spec, taints: makeNode('x').spec!.taints } }, [i]],
      { node: true, lifecycle: false },
    ],
    [
      'uninitialized, NotReady and no provider ID: lifecycle judges it by its name',
      (n, i) => [{ ...makeNode(n.metadata.name, { ready: false }) }, [i]],
      { node: true, lifecycle: true },
    ],
    [
      'an address changed (a secondary private IP)',
      (n, i) => [
        n,
        [
          {
            ...i,
            networkInterfaces: [
              {
                ...i.networkInterfaces[0]!,
                privateIpAddresses: [
                  ...i.networkInterfaces[0]!.privateIpAddresses,
                  { address: '10.0.9.9', primary: false },
                ],
              },
            ],
          },
        ],
      ],
      { node: true, lifecycle: false },
    ],
    [
      'a public IP assigned',
      (n, i) => [n, [{ ...i, publicIpAddress: '203.0.113.7' }]],
      { node: true, lifecycle: false },
    ],
    [
      'a provided node IP the instance does not have (the reconciler reports it)',
      (n, i) => [
        { ...n, metadata: { ...n.metadata, annotations: { [ANNOTATION_PROVIDED_NODE_IP]: '10.9.9.9' } } },
        [i],
      ],
      { node: true, lifecycle: false },
    ],
    [
      'an aws provider ID naming no instance (the reconciler reports it)',
      (n, i) => [{ ...n, spec: { ...n.spec, providerID: 'aws:///eu-west-1a/not-an-instance' } }, [i]],
      { node: true, lifecycle: false },
    ],
    ['the instance missing from the cluster list', (n) => [n, []], { node: false, lifecycle: true }],
    [
      'NotReady and the instance stopped: shutdown taint to add',
      (n, i) => [notReady(n), [{ ...i, state: 'stopped' }]],
      { node: false, lifecycle: true },
    ],
    [
      'NotReady and the instance terminated: Node to delete',
      (n, i) => [notReady(n), [{ ...i, state: 'terminated' }]],
      { node: false, lifecycle: true },
    ],
    [
      'Ready with the shutdown taint: taint to remove',
      (n, i) => [{ ...n, spec: { ...n.spec, taints: [shutdownTaint] } }, [i]],
      { node: false, lifecycle: true },
    ],
  ];
  it.each(cases)('%s', (_, change, expected) => {
    const [node, instances] = change(inStep(makeInstance({ index: 7 })), makeInstance({ index: 7 }));
    const found = sweep(node, instances);
    expect({ node: found.node.length === 1, lifecycle: found.lifecycle.length === 1 }).toEqual(expected);
  });

  it.each<[string, (n: Node, i: Instance) => [Node, Instance[]]]>([
    ['NotReady, instance running (kubelet trouble, not ours)', (n, i) => [notReady(n), [i]]],
    ['NotReady, stopped and already tainted', (n, i) => [notReady(n, [shutdownTaint]), [{ ...i, state: 'stopped' }]]],
    ['Ready, instance terminated (the reference waits for NotReady)', (n, i) => [n, [{ ...i, state: 'terminated' }]]],
    ["another cloud's provider ID", (n, i) => [{ ...n, spec: { ...n.spec, providerID: 'gce://p/z/vm' } }, [i]]],
    ['instance-type label differs (set only at initialization)', (n, i) => [n, [{ ...i, instanceType: 'm6i.large' }]]],
  ])('leaves alone what neither reconciler changes: %s', (_, change) => {
    const [node, instances] = change(inStep(makeInstance({ index: 7 })), makeInstance({ index: 7 }));
    expect(sweep(node, instances)).toEqual({ node: [], lifecycle: [] });
  });

  it('finds a Node without a provider ID by its DNS name, only when exactly one live instance has it', () => {
    const instance = makeInstance({ index: 7 });
    const node = inStep(instance);
    node.spec!.providerID = undefined;
    expect(sweep(node, [instance])).toEqual({ node: [], lifecycle: [] });
    expect(sweep(node, [{ ...instance, publicIpAddress: '203.0.113.7' }]).node).toEqual([node.metadata.name]);
    // Two live instances with the name: the reconciler finds none, so does nothing.
    const twin = { ...instance, instanceId: 'i-0000000000000abcd', publicIpAddress: '203.0.113.7' };
    expect(sweep(node, [{ ...instance, publicIpAddress: '203.0.113.7' }, twin]).node).toEqual([]);
  });
});

function notReady(node: Node, taints = node.spec?.taints ?? []): Node {
  return {
    ...node,
    spec: { ...node.spec, taints },
    status: { ...node.status, conditions: [{ type: 'Ready', status: 'False', reason: 'NodeStatusUnknown' }] },
  };
}
