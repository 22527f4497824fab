import { expect } from 'vitest';
import type { SecurityGroupRule } from '../../shared/aws/ec2-port.ts';
import { RetryableError } from '../../shared/errors.ts';
import { ec2Backends } from './backends.ts';
import { describeContract } from './contract.ts';

/** Ec2Port security groups, on the adapter over the emulator and on the fake. */

const OWNED = { 'kubernetes.io/cluster/contract': 'owned' };

const tcp = (fromPort: number, toPort: number, source: Partial<SecurityGroupRule>): SecurityGroupRule => ({
  protocol: 'tcp',
  fromPort,
  toPort,
  ...source,
});

describeContract('Ec2Port: security groups', ec2Backends(), (backend, test) => {
  async function vpc() {
    const { seed } = backend();
    return (await seed.vpc({ cidr: '10.0.0.0/16' })).vpcId;
  }

  async function group(vpcId: string, groupName: string, tags: Record<string, string> = OWNED) {
    const created = await backend().ec2.createSecurityGroup({
      groupName,
      description: `${groupName} group`,
      vpcId,
      tags,
    });
    if (created === 'name-taken') throw new Error(`${groupName} is taken`);
    return created.groupId;
  }

  test('creates a group tagged in the same call, read back by ID with no inbound rules', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();

    const created = await ec2.createSecurityGroup({
      groupName: 'k8s-elb-web',
      description: 'Security group for the web load balancer',
      vpcId,
      tags: OWNED,
    });

    expect(created).toEqual({ groupId: expect.stringMatching(/^sg-[0-9a-f]+$/) });
    const groupId = (created as { groupId: string }).groupId;
    expect(await ec2.findSecurityGroups({ groupIds: [groupId] })).toEqual([
      {
        groupId,
        groupName: 'k8s-elb-web',
        vpcId,
        description: 'Security group for the web load balancer',
        tags: OWNED,
        ingress: [],
      },
    ]);
  });

  test('answers name-taken for a name the VPC has already; another VPC may use it', async () => {
    const { ec2, seed } = backend();
    const vpcId = await vpc();
    const { vpcId: otherVpcId } = await seed.vpc({ cidr: '10.1.0.0/16' });
    await group(vpcId, 'k8s-elb-web');

    const again = await ec2.createSecurityGroup({ groupName: 'k8s-elb-web', description: 'x', vpcId, tags: OWNED });
    const elsewhere = await ec2.createSecurityGroup({
      groupName: 'k8s-elb-web',
      description: 'x',
      vpcId: otherVpcId,
      tags: OWNED,
    });

    expect(again).toBe('name-taken');
    expect(elsewhere).toEqual({ groupId: expect.stringMatching(/^sg-/) });
  });

  test('finds groups by name, VPC, tag key, tag value, every filter at once; unknown IDs are absent', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const web = await group(vpcId, 'web', { ...OWNED, role: 'lb' });
    const api = await group(vpcId, 'api', { ...OWNED, role: 'nodes' });
    const untagged = await group(vpcId, 'untagged', { Name: 'untagged' });
    const ids = (groups: { groupId: string }[]) => groups.map((g) => g.groupId).sort();

    expect(ids(await ec2.findSecurityGroups({ groupNames: ['web', 'nope'] }))).toEqual([web]);
    expect(ids(await ec2.findSecurityGroups({ vpcId, tags: { 'kubernetes.io/cluster/contract': undefined } }))).toEqual(
      [web, api].sort(),
    );
    expect(ids(await ec2.findSecurityGroups({ tags: { role: 'nodes' } }))).toEqual([api]);
    expect(ids(await ec2.findSecurityGroups({ vpcId, groupNames: ['web', 'api'], tags: { role: 'lb' } }))).toEqual([
      web,
    ]);
    expect(ids(await ec2.findSecurityGroups({ groupIds: [untagged, 'sg-0123456789abcdef0'] }))).toEqual([untagged]);
    expect(await ec2.findSecurityGroups({ groupIds: ['sg-0123456789abcdef0'] })).toEqual([]);
    expect(await ec2.findSecurityGroups({ groupIds: [] })).toEqual([]);
  });

  test('adds inbound rules of every source kind and reads them back one rule per source', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const nodes = await group(vpcId, 'nodes');
    const lb = await group(vpcId, 'lb');
    const rules: SecurityGroupRule[] = [
      tcp(30000, 32767, { cidrIpv4: '10.0.0.0/16', description: 'kubernetes.io/rule/nlb/client=web' }),
      tcp(30000, 32767, { cidrIpv6: '2001:db8::/56' }),
      tcp(30000, 32767, { sourceGroupId: lb, description: 'from the load balancer' }),
      { protocol: 'udp', fromPort: 53, toPort: 53, cidrIpv4: '0.0.0.0/0' },
      { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '10.0.0.0/16', description: 'path MTU discovery' },
    ];

    await ec2.authorizeSecurityGroupIngress(nodes, rules);

    const [read] = await ec2.findSecurityGroups({ groupIds: [nodes] });
    expect(read?.ingress).toHaveLength(rules.length);
    expect(read?.ingress).toEqual(expect.arrayContaining(rules));
  });

  test('adding rules the group has already (whatever their description) is no error and adds only the new ones', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const nodes = await group(vpcId, 'nodes');
    const existing = tcp(443, 443, { cidrIpv4: '10.0.0.0/16', description: 'first' });
    await ec2.authorizeSecurityGroupIngress(nodes, [existing]);

    await ec2.authorizeSecurityGroupIngress(nodes, [
      { ...existing, description: 'second' },
      tcp(80, 80, { cidrIpv4: '10.0.0.0/16' }),
    ]);

    const [read] = await ec2.findSecurityGroups({ groupIds: [nodes] });
    expect(read?.ingress).toHaveLength(2);
    // The rule that was there keeps its description.
    expect(read?.ingress).toEqual(expect.arrayContaining([existing, tcp(80, 80, { cidrIpv4: '10.0.0.0/16' })]));
  });

  test('all-traffic rules are stated without ports', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const nodes = await group(vpcId, 'nodes');
    const lb = await group(vpcId, 'lb');

    await ec2.authorizeSecurityGroupIngress(nodes, [{ protocol: '-1', fromPort: 0, toPort: 65535, sourceGroupId: lb }]);

    const [read] = await ec2.findSecurityGroups({ groupIds: [nodes] });
    expect(read?.ingress).toEqual([{ protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: lb }]);
  });

  test('removes inbound rules; rules the group does not have are no error', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const nodes = await group(vpcId, 'nodes');
    const keep = tcp(443, 443, { cidrIpv4: '10.0.0.0/16' });
    const drop = tcp(80, 80, { cidrIpv4: '10.0.0.0/16' });
    await ec2.authorizeSecurityGroupIngress(nodes, [keep, drop]);

    await ec2.revokeSecurityGroupIngress(nodes, [drop]);
    await ec2.revokeSecurityGroupIngress(nodes, [drop, tcp(8080, 8080, { cidrIpv4: '10.9.0.0/16' })]);

    const [read] = await ec2.findSecurityGroups({ groupIds: [nodes] });
    expect(read?.ingress).toEqual([keep]);
  });

  test('finds the groups whose rules reference a group', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const lb = await group(vpcId, 'lb');
    const nodes = await group(vpcId, 'nodes');
    await group(vpcId, 'bystander');
    await ec2.authorizeSecurityGroupIngress(nodes, [tcp(30000, 32767, { sourceGroupId: lb })]);

    const referencing = await ec2.findSecurityGroups({ referencingGroupIds: [lb] });

    expect(referencing.map((g) => g.groupId)).toEqual([nodes]);
    expect(await ec2.findSecurityGroups({ referencingGroupIds: [] })).toEqual([]);
  });

  test('deletes a group; deleting it again is not-found', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const lb = await group(vpcId, 'lb');

    expect(await ec2.deleteSecurityGroup(lb)).toBe('deleted');
    expect(await ec2.findSecurityGroups({ groupIds: [lb] })).toEqual([]);
    expect(await ec2.deleteSecurityGroup(lb)).toBe('not-found');
  });

  test.differs(
    'ec2.sg-delete-referenced',
    "refuses to delete a group another group's rule references (DependencyViolation, retryable)",
    async () => {
      const { ec2 } = backend();
      const vpcId = await vpc();
      const lb = await group(vpcId, 'lb');
      const nodes = await group(vpcId, 'nodes');
      const rule = tcp(30000, 32767, { sourceGroupId: lb });
      await ec2.authorizeSecurityGroupIngress(nodes, [rule]);

      const refused = await ec2.deleteSecurityGroup(lb).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(RetryableError);
      expect(String(refused)).toMatch(/DependencyViolation/);

      await ec2.revokeSecurityGroupIngress(nodes, [rule]);
      expect(await ec2.deleteSecurityGroup(lb)).toBe('deleted');
    },
  );

  test.differs(
    'ec2.sg-delete-in-use',
    "refuses to delete a group an instance's network interface uses (DependencyViolation, retryable)",
    async () => {
      const { ec2, seed } = backend();
      const vpcId = await vpc();
      const { subnetId } = await seed.subnet({ vpcId, cidr: '10.0.1.0/24', zone: 'eu-west-1a' });
      const nodes = await group(vpcId, 'nodes');
      await seed.instances({ subnetId, count: 1, securityGroupIds: [nodes] });

      const refused = await ec2.deleteSecurityGroup(nodes).catch((err: unknown) => err);

      expect(refused).toBeInstanceOf(RetryableError);
      expect(String(refused)).toMatch(/DependencyViolation/);
    },
  );

  test('tags and untags a group', async () => {
    const { ec2 } = backend();
    const vpcId = await vpc();
    const lb = await group(vpcId, 'lb', { Name: 'lb' });

    await ec2.createTags([lb], { ...OWNED, 'kubernetes.io/service-name': 'default/web' });
    expect((await ec2.findSecurityGroups({ groupIds: [lb] }))[0]?.tags).toEqual({
      Name: 'lb',
      ...OWNED,
      'kubernetes.io/service-name': 'default/web',
    });

    await ec2.deleteTags([lb], ['kubernetes.io/service-name']);
    expect((await ec2.findSecurityGroups({ groupIds: [lb] }))[0]?.tags).toEqual({ Name: 'lb', ...OWNED });
  });
});
