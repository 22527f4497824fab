import { describe, expect, it } from 'vitest';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { TAINT_UNINITIALIZED } from '../../shared/k8s/node-helpers.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { initializationPatch } from './plan.ts';

describe('initializationPatch', () => {
  const instance = makeInstance({ index: 5, availabilityZone: 'eu-west-1b', instanceType: 't3.medium' });

  it('sets providerID, every label and removes only the uninitialized taint', () => {
    const node = makeNode('n', {
      taints: [
        { key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' },
        { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      ],
    });
    expect(initializationPatch(node, { instance, zoneId: 'euw1-az1', region: 'eu-west-1' })).toEqual({
      metadata: {
        labels: {
          'node.kubernetes.io/instance-type': 't3.medium',
          'beta.kubernetes.io/instance-type': 't3.medium',
          'topology.kubernetes.io/zone': 'eu-west-1b',
          'failure-domain.beta.kubernetes.io/zone': 'eu-west-1b',
          'topology.kubernetes.io/region': 'eu-west-1',
          'failure-domain.beta.kubernetes.io/region': 'eu-west-1',
          'topology.k8s.aws/zone-id': 'euw1-az1',
        },
      },
      spec: {
        providerID: `aws:///eu-west-1b/${instance.instanceId}`,
        taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
      },
    });
  });

  it('never overwrites a label already present, nor an existing providerID', () => {
    const node = makeNode('n', {
      providerID: `aws:////${instance.instanceId}`,
      labels: { 'topology.kubernetes.io/zone': 'custom', 'node.kubernetes.io/instance-type': 'custom' },
    });
    const patch = initializationPatch(node, { instance, zoneId: undefined, region: 'eu-west-1' });
    expect(patch.spec?.providerID).toBeUndefined();
    expect(patch.metadata?.labels).toEqual({
      'beta.kubernetes.io/instance-type': 't3.medium',
      'failure-domain.beta.kubernetes.io/zone': 'eu-west-1b',
      'topology.kubernetes.io/region': 'eu-west-1',
      'failure-domain.beta.kubernetes.io/region': 'eu-west-1',
    });
  });
});
