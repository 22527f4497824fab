import { beforeEach, describe, expect, it } from 'vitest';
import type { SecurityGroup } from '../../shared/aws/ec2-port.ts';
import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import type { TargetGroupBinding, TgbNetworkingIngressRule } from '../../shared/k8s/tgb-types.ts';
import { planNetworking, ruleGroupOf, SHARED_RULE_DESCRIPTION, wantedRules, wantsOf } from './networking.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from './testing/world.ts';

/** `networking.ingress`: the pure plan, and the rules on the fakes as bindings come, change and go. */

const shared = (rule: string) => `${rule}:${SHARED_RULE_DESCRIPTION}`;

describe('the rules a binding wants', () => {
  it.each<[string, TgbNetworkingIngressRule[], string[]]>([
    [
      'a port number from a CIDR',
      [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 8080 }] }],
      ['tcp:8080-8080:10.1.0.0/16::'],
    ],
    [
      'no port: every TCP port',
      [{ from: [{ securityGroup: { groupID: 'sg-0123456789abcdef0' } }], ports: [] }],
      ['tcp:0-65535:::sg-0123456789abcdef0'],
    ],
    [
      'a named port, resolved; UDP',
      [{ from: [{ ipBlock: { cidr: 'fd00::/8' } }], ports: [{ port: 'http', protocol: 'UDP' }] }],
      ['udp:8080-8080::fd00::/8:'],
    ],
  ])('%s', (_, ingress, keys) => {
    const { rules, problems } = wantedRules(ingress, (name) => (name === 'http' ? 8080 : undefined));
    expect(problems).toEqual([]);
    expect(
      rules.map(
        (r) =>
          `${r.protocol}:${r.fromPort}-${r.toPort}:${r.cidrIpv4 ?? ''}:${r.cidrIpv6 ?? ''}:${r.sourceGroupId ?? ''}`,
      ),
    ).toEqual(keys);
    expect(rules.every((r) => r.description === SHARED_RULE_DESCRIPTION)).toBe(true);
  });

  it('a port name the targets lack is a problem naming it', () => {
    const { rules, problems } = wantedRules(
      [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 'metrics' }] }],
      () => undefined,
    );
    expect(rules).toEqual([]);
    expect(problems).toEqual([
      { message: 'spec.networking.ingress[0].ports[0].port: networking port metrics names no port of the targets' },
    ]);
  });

  it.each([
    ['10.0.0.300', 'from[0].ipBlock.cidr: networking peer "10.0.0.300" is not a CIDR block (address/prefix)'],
    ['10.0.0.0/33', 'from[0].ipBlock.cidr: networking peer prefix length "33" must be 0-32 for ipv4'],
    ['10.0.0.1/16', 'from[0].ipBlock.cidr: networking peer 10.0.0.1/16 has host bits set (did you mean 10.0.0.0/16?)'],
  ])('a CIDR EC2 would refuse (%s) is a problem naming the field, and the rest goes on', (cidr, message) => {
    const { rules, problems } = wantedRules(
      [
        {
          from: [{ ipBlock: { cidr } }, { securityGroup: { groupID: 'sg-0123456789abcdef0' } }],
          ports: [{ port: 80 }],
        },
      ],
      () => undefined,
    );
    expect(problems).toEqual([{ message: `spec.networking.ingress[0].${message}` }]);
    expect(rules.map((r) => r.sourceGroupId)).toEqual(['sg-0123456789abcdef0']);
  });

  it('a security group that is no ID is a problem naming the field', () => {
    const { problems } = wantedRules(
      [{ from: [{ securityGroup: { groupID: 'web-lb' } }], ports: [] }],
      () => undefined,
    );
    expect(problems).toEqual([
      {
        message:
          'spec.networking.ingress[0].from[0].securityGroup.groupID: networking peer "web-lb" is not a security group ID',
      },
    ]);
  });

  it('the group of an interface: its only one, else the single cluster-tagged one, else a problem', () => {
    const tagged = (id: string, value?: string): SecurityGroup => ({
      groupId: id,
      groupName: id,
      description: '',
      tags: value ? { 'kubernetes.io/cluster/c1': value } : {},
      ingress: [],
    });
    const groups = new Map(
      [tagged('sg-a'), tagged('sg-b', 'shared'), tagged('sg-c', 'owned')].map((g) => [g.groupId, g]),
    );
    expect(ruleGroupOf({ id: 'eni-1', groupIds: ['sg-a'] }, groups, 'c1')).toBe('sg-a');
    expect(ruleGroupOf({ id: 'eni-1', groupIds: ['sg-a', 'sg-b'] }, groups, 'c1')).toBe('sg-b');
    expect(ruleGroupOf({ id: 'eni-1', groupIds: ['sg-b', 'sg-c'] }, groups, 'c1')).toMatchObject({
      message: expect.stringContaining('network interface eni-1 has 2 security groups, 2 of them tagged'),
    });
  });

  it('revokes only shared rules nobody wants; a port by name counts as any port', () => {
    const rule = (fromPort: number, source: string, description = SHARED_RULE_DESCRIPTION) => ({
      protocol: 'tcp' as const,
      fromPort,
      toPort: fromPort,
      cidrIpv4: source,
      description,
    });
    const group: SecurityGroup = {
      groupId: 'sg-n',
      groupName: 'n',
      description: '',
      tags: {},
      ingress: [
        rule(80, '10.1.0.0/16'),
        rule(81, '10.1.0.0/16'),
        rule(82, '10.2.0.0/16'),
        rule(83, '10.3.0.0/16', 'user'),
      ],
    };
    const other = {
      metadata: { name: 'other' },
      spec: {
        serviceRef: { name: 'x', port: 1 },
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.2.0.0/16' } }], ports: [{ port: 'http' }] }] },
      },
    } as TargetGroupBinding;
    const plan = planNetworking(['sg-n'], new Map([['sg-n', group]]), [rule(80, '10.1.0.0/16')], wantsOf(other));
    expect(plan.authorize.size).toBe(0);
    expect(plan.revoke.get('sg-n')?.map((r) => r.fromPort)).toEqual([81]);
  });
});

describe('networking rules on the fakes', () => {
  let w: TgbWorld;
  let group: TargetGroup;
  const rulesOf = (id: string) =>
    w.ec2.securityGroups
      .get(id)!
      .ingress.filter((r) => r.description === SHARED_RULE_DESCRIPTION)
      .map((r) => `${r.protocol}:${r.fromPort}-${r.toPort}:${r.cidrIpv4 ?? r.sourceGroupId}:${r.description}`)
      .sort();

  beforeEach(async () => {
    w = createTgbWorld();
    w.addPodNode(1, ['10.0.20.11']);
    w.putWebService();
    w.putSlice([{ pod: 'web-1', ip: '10.0.20.11' }]);
    group = await w.targetGroup('web-ip');
  });

  const networking = (cidr: string, port: number | string = 'http') => ({
    ingress: [{ from: [{ ipBlock: { cidr } }], ports: [{ port }] }],
  });

  it('authorizes the missing rules on the group of the interface holding the Pod address, once', async () => {
    w.putBinding('web', { targetGroupARN: group.arn, networking: networking('10.1.0.0/16') });
    await w.reconcile('web');
    expect(rulesOf(w.NODE_GROUP)).toEqual([shared('tcp:8080-8080:10.1.0.0/16')]);
    w.reset();
    await w.reconcile('web');
    expect(w.ec2.writeCallCount()).toBe(0);
  });

  it('a port name is a container port of the Pods; with instance targets a name is a problem, numbers only', async () => {
    w.kube.putPod({
      metadata: { name: 'web-1', namespace: NAMESPACE, labels: { app: 'web' } },
      spec: { nodeName: 'node-1', containers: [{ name: 'app', ports: [{ name: 'metrics', containerPort: 9090 }] }] },
      status: { phase: 'Running', podIP: '10.0.20.11' },
    });
    w.putBinding('web', { targetGroupARN: group.arn, networking: networking('10.1.0.0/16', 'metrics') });
    await w.reconcile('web');
    expect(rulesOf(w.NODE_GROUP)).toEqual([shared('tcp:9090-9090:10.1.0.0/16')]);

    const nodes = await w.targetGroup('web-instance', { targetType: 'instance', port: 30080 });
    w.putBinding('nodes', { targetGroupARN: nodes.arn, networking: networking('10.2.0.0/16', 'http') });
    await w.reconcile('nodes');
    expect(w.registered(nodes.arn)).toHaveLength(1);
    expect(w.eventsOf('nodes', 'FailedNetworkReconcile')).toEqual([
      'FailedNetworkReconcile: spec.networking.ingress[0].ports[0].port: networking port http names no port of the targets',
    ]);
  });

  it('revokes a rule the binding no longer asks for, unless another live binding asks for it', async () => {
    w.putBinding('web', { targetGroupARN: group.arn, networking: networking('10.1.0.0/16', 8080) });
    const second = await w.targetGroup('web-ip-2');
    w.putBinding('web2', { targetGroupARN: second.arn, networking: networking('10.1.0.0/16', 8080) });
    await w.reconcile('web');
    await w.reconcile('web2');
    w.bindings.mutateBinding(NAMESPACE, 'web', (b) => {
      b.spec.networking = networking('10.9.0.0/16', 8080);
    });
    await w.reconcile('web');
    // web2 still asks for 10.1.0.0/16: kept.
    expect(rulesOf(w.NODE_GROUP)).toEqual([shared('tcp:8080-8080:10.1.0.0/16'), shared('tcp:8080-8080:10.9.0.0/16')]);
    w.bindings.deleteBinding(NAMESPACE, 'web2');
    await w.reconcile('web2');
    expect(rulesOf(w.NODE_GROUP)).toEqual([shared('tcp:8080-8080:10.9.0.0/16')]);
    w.bindings.mutateBinding(NAMESPACE, 'web', (b) => {
      delete b.spec.networking;
    });
    await w.reconcile('web');
    expect(rulesOf(w.NODE_GROUP)).toEqual([]);
    // The Node group's own rule (not ours) stays.
    expect(w.ec2.securityGroups.get(w.NODE_GROUP)!.ingress).toHaveLength(1);
  });

  it('a rule AWS refuses: FailedNetworkReconcile naming the call, the targets and gates served all the same', async () => {
    w.ec2.queueError(
      'AuthorizeSecurityGroupIngress',
      new AwsServiceError('UnauthorizedOperation', 'not authorized', 403),
    );
    w.putBinding('web', { targetGroupARN: group.arn, networking: networking('10.1.0.0/16') });
    expect(await w.reconcile('web')).toBeUndefined();
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
    expect(w.eventsOf('web', 'FailedNetworkReconcile')).toEqual([
      expect.stringContaining('UnauthorizedOperation: not authorized'),
    ]);
    expect(w.binding('web')!.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'FailedNetworkReconcile',
    });
    // A throttle is retried instead.
    w.ec2.throttle('AuthorizeSecurityGroupIngress', 1);
    await expect(w.reconcile('web')).rejects.toThrow(/RequestLimitExceeded/);
    await w.reconcile('web');
    expect(rulesOf(w.NODE_GROUP)).toEqual([shared('tcp:8080-8080:10.1.0.0/16')]);
    expect(w.binding('web')!.status?.conditions?.[0]).toMatchObject({ status: 'True' });
  });

  it('an interface with several groups, none cluster-tagged: FailedNetworkReconcile, the targets still registered', async () => {
    w.ec2.putSecurityGroup({
      groupId: 'sg-0000000000000aaaa',
      groupName: 'a',
      vpcId: 'vpc-0a1b2c3d',
      description: '',
      tags: {},
      ingress: [],
    });
    w.ec2.putSecurityGroup({
      groupId: 'sg-0000000000000bbbb',
      groupName: 'b',
      vpcId: 'vpc-0a1b2c3d',
      description: '',
      tags: {},
      ingress: [],
    });
    w.addPodNode(2, ['10.0.20.12'], 'sg-0000000000000aaaa');
    const instance = [...w.ec2.instances.values()].find(
      (i) => i.privateIpAddress && i.networkInterfaces[0]!.privateIpAddresses.some((a) => a.address === '10.0.20.12'),
    )!;
    w.ec2.putInstance({
      ...instance,
      networkInterfaces: instance.networkInterfaces.map((e) => ({
        ...e,
        securityGroupIds: ['sg-0000000000000aaaa', 'sg-0000000000000bbbb'],
      })),
    });
    w.putSlice([{ pod: 'web-2', ip: '10.0.20.12', node: 'node-2' }]);
    w.putBinding('web', { targetGroupARN: group.arn, networking: networking('10.1.0.0/16') });
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.12:8080']);
    expect(w.eventsOf('web', 'FailedNetworkReconcile')).toEqual([
      expect.stringContaining('has 2 security groups, 0 of them tagged'),
    ]);
    expect(w.binding('web')!.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'FailedNetworkReconcile',
    });
  });
});
