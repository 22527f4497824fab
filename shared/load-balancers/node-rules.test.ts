import { describe, expect, it } from 'vitest';
import type { SecurityGroupRule } from '../../../shared/aws/ec2-port.ts';
import { ANNOTATION } from '../annotations.ts';
import { planRules } from '../model/security-rules.ts';
import { spec, svc } from '../testing/model.ts';
import { clusterNodeGroups, isOurNodeRule, nodeRules } from './node-rules.ts';

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

  it('Node rules: from the backend group, node ports as the whole node port range, other ports one by one', () => {
    const s = spec(
      svc({
        spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
        ports: [
          { name: 'a', protocol: 'TCP', port: 80, nodePort: 30080 },
          { name: 'b', protocol: 'UDP', port: 53, nodePort: 30053 },
          { name: 'c', protocol: 'TCP', port: 81, nodePort: 8081 },
        ],
      }),
    );
    const rules = nodeRules(s, new Map(), 'sg-backend');
    expect(rules.map((r) => `${r.sourceGroupId} ${r.protocol}:${r.fromPort}-${r.toPort}`)).toEqual([
      'sg-backend udp:30000-32767',
      'sg-backend tcp:30000-32767',
      'sg-backend tcp:8081-8081',
    ]);
    expect(new Set(rules.map((r) => r.description))).toEqual(new Set(['kubernetes.io/rule/nlb/backend=prod']));
    expect(
      nodeRules(s, new Map(), 'sg-backend', { from: 8000, to: 9000 }).map(
        (r) => `${r.protocol}:${r.fromPort}-${r.toPort}`,
      ),
    ).toEqual(['udp:30053-30053', 'tcp:32000-32000', 'tcp:30080-30080', 'tcp:8000-9000']);
  });

  it('IP targets open the Pod ports that the targets use', () => {
    const s = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [{ name: 'http', port: 80, targetPort: 'web' }],
      }),
    );
    const targets = new Map([
      [
        s.targetGroups[0]!.name,
        [
          { id: '10.0.0.1', port: 8080 },
          { id: '10.0.0.2', port: 8081 },
        ],
      ],
    ]);
    expect(nodeRules(s, targets, 'sg-backend').map((r) => `${r.fromPort}`)).toEqual(['8080', '8081']);
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
