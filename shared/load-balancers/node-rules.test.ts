import { describe, expect, it } from 'vitest';
import type { SecurityGroupRule } from '../aws/ec2-port.ts';
import { clusterNodeGroups, isOurNodeRule } from './node-rules.ts';
import { planRules } from './security-rules.ts';

describe('security group rules', () => {
  const rule = (port: number, extra: Partial<SecurityGroupRule> = {}): SecurityGroupRule => ({
    protocol: 'tcp',
    fromPort: port,
    toPort: port,
    sourceGroupId: 'sg-lb',
    ...extra,
  });

  it('adds what is missing and removes only what is ours and unwanted', () => {
    const plan = planRules(
      [rule(80, { description: 'ours' }), rule(443, { description: 'ours' })],
      [rule(80, { description: 'ours' }), rule(8080, { description: 'ours' }), rule(22, { description: 'theirs' })],
      (r) => r.description === 'ours',
    );
    expect(plan.authorize.map((r) => r.fromPort)).toEqual([443]);
    expect(plan.revoke.map((r) => r.fromPort)).toEqual([8080]);
  });

  it('a wanted rule that exists under another description is left as it is (EC2 refuses duplicates)', () => {
    const plan = planRules(
      [rule(80, { description: 'ours' })],
      [rule(80, { description: 'theirs' })],
      (r) => r.description === 'ours',
    );
    expect(plan).toEqual({ authorize: [], revoke: [] });
  });

  it('our Node rules are recognised by description only', () => {
    expect(
      isOurNodeRule(
        { protocol: 'tcp', fromPort: 1, toPort: 1, description: 'kubernetes.io/rule/nlb/backend=prod' },
        'prod',
      ),
    ).toBe(true);
    expect(
      isOurNodeRule(
        { protocol: 'tcp', fromPort: 1, toPort: 1, description: 'kubernetes.io/rule/nlb/backend=dev' },
        'prod',
      ),
    ).toBe(false);
    expect(isOurNodeRule({ protocol: 'tcp', fromPort: 1, toPort: 1 }, 'prod')).toBe(false);
  });

  it('Node groups: only those with our cluster tag', () => {
    const group = (id: string, tags: Record<string, string>) => ({
      groupId: id,
      groupName: id,
      description: '',
      tags,
      ingress: [],
    });
    expect(
      clusterNodeGroups(
        ['sg-a', 'sg-b', 'sg-c'],
        [
          group('sg-a', { 'kubernetes.io/cluster/prod': 'owned' }),
          group('sg-b', {}),
          group('sg-c', { 'kubernetes.io/cluster/prod': 'shared' }),
          group('sg-d', { 'kubernetes.io/cluster/prod': 'owned' }),
        ],
        'prod',
      ).map((g) => g.groupId),
    ).toEqual(['sg-a', 'sg-c']);
  });
});
