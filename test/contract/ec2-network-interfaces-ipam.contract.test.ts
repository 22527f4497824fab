import { expect } from 'vitest';
import { createIpamWorld } from '../../functions/ipam/testing/world.ts';
import { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import { makeNode } from '../helpers/nodes.ts';
import { ec2Backends } from './backends.ts';
import { describeContract } from './contract.ts';

/**
 * The IP address manager (functions/ipam) over each EC2 backend: Ec2Adapter on the AWS API emulator and on FakeEc2,
 * the Kubernetes side the IPAM test world's fakes. The emulator answers AssignPrivateIpAddresses with every private
 * address of the interface, the primary included (docs/emulator-differences.md, `eni.assign-answer`): the pool must
 * still admit only what DescribeNetworkInterfaces shows as a secondary address, so no Pod ever gets the Node's own
 * address (issue 36 item 5: the first Windows Pod was annotated with the Node's primary address).
 */
describeContract('IPAM over Ec2Port: Pods get secondary addresses only', ec2Backends(), (backend, test) => {
  test('no Pod gets the interface’s primary address, or an address EC2 does not describe as secondary', async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16' });
    const { subnetId } = await seed.subnet({ vpcId, cidr: '10.0.1.0/24', zone: 'eu-west-1a' });
    const [instance] = await seed.instances({ subnetId, count: 1 });
    const w = createIpamWorld();
    w.deps.ec2 = ec2;
    w.deps.facts = new Ec2Facts(ec2, w.clock);
    w.configure();
    w.kube.putNode(
      makeNode('win-1', {
        providerID: `aws:///eu-west-1a/${instance!.instanceId}`,
        initialized: true,
        labels: { 'kubernetes.io/os': 'windows' },
      }),
    );
    const names = ['a', 'b', 'c', 'd', 'e'];
    for (const name of names.slice(0, 2)) w.addPod('win-1', name);
    await w.settle('win-1');
    // A second allocation: the emulator's answer lists the first one's addresses again.
    for (const name of names.slice(2)) w.addPod('win-1', name);
    await w.settle('win-1');

    const [eni] = await ec2.describeNetworkInterfaces({ networkInterfaceIds: [instance!.networkInterfaceId] });
    const secondary = eni!.privateIpAddresses.filter((a) => !a.primary).map((a) => a.address);
    const given = names.map((name) => w.podAddress('default', name)?.split('/')[0]);
    for (const address of given) {
      expect(address).toBeDefined();
      expect(address).not.toBe(instance!.privateIpAddress);
      expect(secondary).toContain(address);
    }
    expect(new Set(given).size).toBe(names.length);
    expect(w.journal('win-1')!.addresses).not.toContain(instance!.privateIpAddress);
  }, 30_000);
});
