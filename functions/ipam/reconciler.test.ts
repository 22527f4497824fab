import { describe, expect, it } from 'vitest';
import { IPV4_RESOURCE } from '../../shared/k8s/ipam-names.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { VERIFY_AFTER_SECONDS } from './observe.ts';
import { ipamReconciler } from './reconciler.ts';
import { createIpamWorld, IPAM_QUEUE, type IpamWorld, SUBNET } from './testing/world.ts';

const NODE = 'win-1';

function addresses(w: IpamWorld, names: string[]): string[] {
  return names.map((n) => w.podAddress('default', n) ?? '');
}

function expectUnique(values: string[]) {
  expect(new Set(values).size).toBe(values.length);
}

describe('ipam: Windows Pods get VPC addresses', () => {
  it('advertises capacity and annotates each bound Pod with an address EC2 shows on the Node interface', async () => {
    const w = createIpamWorld();
    w.configure();
    const instance = w.addWindowsNode(NODE);
    for (const name of ['a', 'b', 'c']) w.addPod(NODE, name);
    await w.settle(NODE);

    const node = w.kube.nodes.get(NODE)!;
    // m5.large: 10 IPv4 addresses per interface, the primary one is the Node's.
    expect(node.status?.capacity?.[IPV4_RESOURCE]).toBe('9');
    expect(node.status?.allocatable?.[IPV4_RESOURCE]).toBe('9');
    const given = addresses(w, ['a', 'b', 'c']);
    for (const value of given) expect(value).toMatch(/^10\.0\.1\.\d+\/24$/);
    expectUnique(given);
    const onInterface = (await w.interfaceAddresses(instance.instanceId)).addresses;
    for (const value of given) expect(onInterface).toContain(value.split('/')[0]);
    // Three Pods and the warm pool: one allocation.
    expect(w.ec2.callCount('AssignPrivateIpAddresses')).toBe(1);
    expect(w.kube.eventsFor('Pod', 'a', 'ResourceAllocated')).toHaveLength(1);
    expect(w.metrics.total(MetricName.IpamAddressesAssigned)).toBe(3);
    // 3 in use + 3 warm.
    expect(onInterface).toHaveLength(6);
  });

  it('the first Pods of a new Node get their addresses in one pass (what EC2 just gave is never cooling)', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.enqueue(IPAM_QUEUE, [w.keyOf(NODE)]);
    expect(await w.sqs.pump(IPAM_QUEUE, (records) => w.invoke(ipamReconciler, w.deps, records))).toBe(1);
    expect(w.podAddress('default', 'a')).toBeDefined();
    expect(w.sqs.depth(IPAM_QUEUE)).toBe(0);
  });

  it('leaves Linux Nodes, host-network Pods, and everything while the ConfigMap does not turn it on', async () => {
    const w = createIpamWorld();
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    expect(w.podAddress('default', 'a')).toBeUndefined();
    expect(w.ec2.callCount()).toBe(0);

    w.configure();
    w.addPod(NODE, 'host', { hostNetwork: true });
    await w.settle(NODE);
    expect(w.podAddress('default', 'a')).toBeDefined();
    expect(w.podAddress('default', 'host')).toBeUndefined();

    w.kube.putNode({
      ...w.kube.nodes.get(NODE)!,
      metadata: { ...w.kube.nodes.get(NODE)!.metadata, labels: { 'kubernetes.io/os': 'linux' } },
    });
    w.addPod(NODE, 'linux');
    await w.settle(NODE);
    expect(w.podAddress('default', 'linux')).toBeUndefined();
  });

  it('turning the flag off stops new assignments and leaves running Pods alone', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    const held = w.podAddress('default', 'a');
    w.configure({ 'enable-windows-ipam': 'false' });
    w.addPod(NODE, 'b');
    w.ec2.resetCalls();
    await w.settle(NODE);
    expect(w.podAddress('default', 'a')).toBe(held);
    expect(w.podAddress('default', 'b')).toBeUndefined();
    expect(w.ec2.writeCallCount()).toBe(0);
  });

  it('uses the beta os label when the GA one is absent', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    const node = w.kube.nodes.get(NODE)!;
    w.kube.putNode({ ...node, metadata: { ...node.metadata, labels: { 'beta.kubernetes.io/os': 'windows' } } });
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    expect(w.podAddress('default', 'a')).toBeDefined();
  });

  it('puts the capacity back when it goes missing', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    await w.settle(NODE);
    const node = w.kube.nodes.get(NODE)!;
    w.kube.putNode({ ...node, status: { ...node.status, capacity: {}, allocatable: {} } });
    await w.settle(NODE);
    expect(w.kube.nodes.get(NODE)!.status?.capacity?.[IPV4_RESOURCE]).toBe('9');
  });

  it('prefix mode: capacity x16, addresses from /28 prefixes', async () => {
    const w = createIpamWorld();
    w.configure({ 'enable-windows-prefix-delegation': 'true' });
    const instance = w.addWindowsNode(NODE);
    for (const name of ['a', 'b']) w.addPod(NODE, name);
    await w.settle(NODE);
    expect(w.kube.nodes.get(NODE)!.status?.capacity?.[IPV4_RESOURCE]).toBe('144');
    const { prefixes } = await w.interfaceAddresses(instance.instanceId);
    expect(prefixes).toHaveLength(1);
    const base = Number(prefixes[0]!.split('/')[0]!.split('.')[3]);
    for (const value of addresses(w, ['a', 'b'])) {
      const last = Number(value.split('/')[0]!.split('.')[3]);
      expect(last).toBeGreaterThanOrEqual(base);
      expect(last).toBeLessThan(base + 16);
    }
  });
});

describe('ipam: prefix delegation follows the instance type’s hypervisor (issue 36 item 2)', () => {
  it('a Xen type keeps secondary addresses while prefix delegation is on: capacity, assignment, a Warning', async () => {
    const w = createIpamWorld();
    // EC2's figures for m4.large: 2 interfaces of 10 IPv4 addresses, Xen.
    w.ec2.instanceTypes.set('m4.large', {
      instanceType: 'm4.large',
      maximumNetworkInterfaces: 2,
      ipv4AddressesPerInterface: 10,
      ipv6AddressesPerInterface: 10,
      hypervisor: 'xen',
    });
    w.configure({ 'enable-windows-prefix-delegation': 'true', 'warm-ip-target': '5' });
    const instance = w.addWindowsNode(NODE, 'm4.large');
    for (const name of ['a', 'b']) w.addPod(NODE, name);
    await w.settle(NODE);

    expect(w.kube.nodes.get(NODE)!.status?.capacity?.[IPV4_RESOURCE]).toBe('9');
    expect(w.kube.nodes.get(NODE)!.status?.allocatable?.[IPV4_RESOURCE]).toBe('9');
    const onInterface = await w.interfaceAddresses(instance.instanceId);
    expect(onInterface.prefixes).toEqual([]);
    // Secondary-address defaults (warm 3, minimum 3): the ConfigMap's targets are the prefixes'.
    expect(onInterface.addresses).toHaveLength(5);
    for (const value of addresses(w, ['a', 'b'])) expect(onInterface.addresses).toContain(value.split('/')[0]);
    const [event] = w.kube.eventsFor('Node', NODE, 'Unsupported');
    expect(event?.type).toBe('Warning');
    expect(event?.message).toContain('m4.large');
  });

  it('a bare-metal type (no hypervisor) gets prefixes', async () => {
    const w = createIpamWorld();
    w.ec2.instanceTypes.set('m5.metal', {
      instanceType: 'm5.metal',
      maximumNetworkInterfaces: 15,
      ipv4AddressesPerInterface: 50,
      ipv6AddressesPerInterface: 50,
      bareMetal: true,
    });
    w.configure({ 'enable-windows-prefix-delegation': 'true' });
    const instance = w.addWindowsNode(NODE, 'm5.metal');
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    expect(w.kube.nodes.get(NODE)!.status?.capacity?.[IPV4_RESOURCE]).toBe(String(49 * 16));
    expect((await w.interfaceAddresses(instance.instanceId)).prefixes).toHaveLength(1);
    expect(w.kube.eventsFor('Node', NODE, 'Unsupported')).toEqual([]);
  });
});

describe('ipam: only what DescribeNetworkInterfaces shows as a secondary address (issue 36 item 5)', () => {
  it('an assign answer listing every address of the interface (the AWS API emulator’s) never gives a Pod the primary', async () => {
    const w = createIpamWorld();
    w.ec2.assignAnswer = 'every-address';
    w.configure();
    const instance = w.addWindowsNode(NODE);
    // The subnet's lower addresses are taken: the interface's primary (10.0.1.101) is the lowest it holds.
    w.ec2.reserveAddresses(SUBNET.subnetId, 97);
    const primary = instance.privateIpAddress!;
    for (const name of ['a', 'b', 'c']) w.addPod(NODE, name);
    await w.settle(NODE);
    // A second allocation: the answer repeats the earlier addresses too.
    for (const name of ['d', 'e', 'f', 'g']) w.addPod(NODE, name);
    await w.settle(NODE);

    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const given = addresses(w, names).map((value) => value.split('/')[0]!);
    const { addresses: secondaries } = await w.interfaceAddresses(instance.instanceId);
    expect(given).not.toContain(primary);
    for (const address of given) expect(secondaries).toContain(address);
    expectUnique(given);
    const journal = w.journal(NODE)!;
    expect(journal.addresses).not.toContain(primary);
    expect(new Set(journal.addresses).size).toBe(journal.addresses.length);
    for (const name of names) {
      expect(w.kube.eventsFor('Pod', name, 'ResourceAllocated')[0]?.message).not.toContain(primary);
    }
  });
});

describe('ipam: an assign answer a describe does not confirm yet', () => {
  it('units the answer names but DescribeNetworkInterfaces does not show wait for the next look at EC2', async () => {
    const w = createIpamWorld();
    w.ec2.assignAnswer = 'every-address';
    // New addresses stay out of the first describe after the assign (EC2's eventual consistency).
    w.ec2.newAddressInvisibleCalls = 1;
    w.configure();
    const instance = w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    const address = w.podAddress('default', 'a')!.split('/')[0]!;
    expect(address).not.toBe(instance.privateIpAddress);
    expect((await w.interfaceAddresses(instance.instanceId)).addresses).toContain(address);
    // One describe after the assign admitted nothing; the next pass looked at EC2 and served the Pod.
    expect(w.ec2.callCount('AssignPrivateIpAddresses')).toBe(1);
    expect(w.ec2.callCount('DescribeNetworkInterfaces')).toBeGreaterThanOrEqual(3);
  });
});

describe('ipam: release, cooldown, warm pool', () => {
  it("a deleted Pod's address cools down for 30 s, is never handed out inside it, then is reused", async () => {
    const w = createIpamWorld();
    w.configure({ 'warm-ip-target': '1', 'minimum-ip-target': '1' });
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    const freed = w.podAddress('default', 'a')!;
    w.kube.workloads.deleteRequest('default', 'a', { gracePeriodSeconds: 0 });
    await w.enqueue(IPAM_QUEUE, [w.keyOf(NODE)]);
    await w.sqs.pump(IPAM_QUEUE, (records) => w.invoke(ipamReconciler, w.deps, records));
    expect(w.journal(NODE)!.cooling[freed.split('/')[0]!]).toBeDefined();

    // Inside the cooldown a new Pod gets another address.
    w.clock.advance(10_000);
    w.addPod(NODE, 'b');
    await w.enqueue(IPAM_QUEUE, [{ ...w.keyOf(NODE), hint: { resourceVersion: 'b' } }]);
    await w.sqs.pump(IPAM_QUEUE, (records) => w.invoke(ipamReconciler, w.deps, records));
    expect(w.podAddress('default', 'b')).toBeDefined();
    expect(w.podAddress('default', 'b')).not.toBe(freed);

    // After it, the cooled address is the next one handed out.
    w.clock.advance(25_000);
    w.addPod(NODE, 'c');
    await w.settle(NODE);
    expect(w.podAddress('default', 'c')).toBe(freed);
  });

  it('a finished Pod gives its address back', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'job');
    await w.settle(NODE);
    const pod = w.kube.workloads.pods.get('default/job')!;
    w.kube.putPod({ ...pod, status: { ...pod.status, phase: 'Succeeded' } });
    await w.settle(NODE);
    const address = w.podAddress('default', 'job')!.split('/')[0]!;
    expect(w.journal(NODE)!.assigned[address]).toBeUndefined();
  });

  it('a warm hit: the Pod has its address before any EC2 call; the refill and the shrink are one call each', async () => {
    const w = createIpamWorld({ instanceType: 'm5.large' });
    w.configure();
    const instance = w.addWindowsNode(NODE);
    for (const name of ['a', 'b', 'c', 'd', 'e']) w.addPod(NODE, name);
    await w.settle(NODE);
    expect((await w.interfaceAddresses(instance.instanceId)).addresses).toHaveLength(8);

    w.ec2.resetCalls();
    const annotatedAtFirstCall: (string | undefined)[] = [];
    w.ec2.beforeCall = () => {
      if (annotatedAtFirstCall.length === 0) annotatedAtFirstCall.push(w.podAddress('default', 'warm'));
    };
    w.addPod(NODE, 'warm');
    await w.settle(NODE);
    w.ec2.beforeCall = undefined;
    expect(annotatedAtFirstCall).toEqual([w.podAddress('default', 'warm')]);
    expect(annotatedAtFirstCall[0]).toMatch(/^10\.0\.1\./);
    // 6 in use + warm 3 = 9, the interface's capacity: one refill of 1.
    expect(Object.fromEntries(w.ec2.calls)).toEqual({ AssignPrivateIpAddresses: 1 });

    w.ec2.resetCalls();
    for (const name of ['a', 'b', 'c', 'd', 'e'])
      w.kube.workloads.deleteRequest('default', name, { gracePeriodSeconds: 0 });
    await w.settle(NODE);
    w.clock.advance(31_000);
    await w.settle(NODE);
    // 1 in use, warm 3, minimum 3: 4 stay once the cooled addresses are free again.
    expect((await w.interfaceAddresses(instance.instanceId)).addresses).toHaveLength(4);
    // Cooling addresses are not warm: the 3 free ones are the warm pool until the cooldown is over, then the
    // surplus goes in one call.
    expect(w.ec2.callCount('UnassignPrivateIpAddresses')).toBe(1);
    expect(w.ec2.callCount('AssignPrivateIpAddresses')).toBe(0);
  });
});

describe('ipam: the warm pool counts only free addresses (issue 36 item 3)', () => {
  it('addresses cooling down are not warm: after Pods go the warm addresses stay, and the next Pods need no EC2 call', async () => {
    const w = createIpamWorld({ instanceType: 'm5.large' });
    w.configure();
    const instance = w.addWindowsNode(NODE);
    const first = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const name of first) w.addPod(NODE, name);
    await w.settle(NODE);
    // 6 in use + 3 warm: the interface's 9 slots.
    expect((await w.interfaceAddresses(instance.instanceId)).addresses).toHaveLength(9);

    w.ec2.resetCalls();
    for (const name of ['a', 'b', 'c']) w.kube.workloads.deleteRequest('default', name, { gracePeriodSeconds: 0 });
    await w.settle(NODE);
    // 3 in use, 3 cooling, 3 warm: the warm target (3 in use + 3) is met by the free ones alone, nothing goes.
    expect(w.ec2.callCount('UnassignPrivateIpAddresses')).toBe(0);
    expect((await w.interfaceAddresses(instance.instanceId)).addresses).toHaveLength(9);

    w.ec2.resetCalls();
    for (const name of ['g', 'h', 'i']) w.addPod(NODE, name);
    await w.settle(NODE);
    for (const name of ['g', 'h', 'i']) expect(w.podAddress('default', name)).toMatch(/^10\.0\.1\.\d+\/24$/);
    expectUnique(addresses(w, ['d', 'e', 'f', 'g', 'h', 'i']));
    // Served from the warm pool: no Pod waited for EC2.
    expect(w.ec2.callCount()).toBe(0);
  });
});

describe('ipam: never one address on two Pods', () => {
  it('duplicates, redelivery and two Lambdas at once over one Node', async () => {
    const w = createIpamWorld({ instanceType: 'm5.2xlarge' });
    w.configure();
    w.addWindowsNode(NODE, 'm5.xlarge');
    const names = Array.from({ length: 12 }, (_, i) => `p${i}`);
    for (const name of names) w.addPod(NODE, name);
    const record = () => fifoRecord(w.keyOf(NODE));
    // Two invocations of the same key at once, as a redelivery after a visibility timeout can cause.
    await Promise.allSettled([
      w.invoke(ipamReconciler, w.deps, [record(), record()]),
      w.invoke(ipamReconciler, w.deps, [record()]),
    ]);
    await w.settle(NODE);
    const given = addresses(w, names);
    expect(given.filter((a) => a === '')).toEqual([]);
    expectUnique(given);
  });

  it('a pass that stops between the journal and the Pod gives the same address next time', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    w.kube.queueError('patchPod', new Error('connection reset'));
    await w.settle(NODE);
    const promised = Object.entries(w.journal(NODE)!.assigned);
    expect(promised).toHaveLength(1);
    expect(w.podAddress('default', 'a')).toBe(`${promised[0]![0]}/24`);
    expect(w.ec2.callCount('AssignPrivateIpAddresses')).toBe(1);
  });

  it('addresses EC2 does not show yet are neither lost nor handed out twice', async () => {
    const w = createIpamWorld();
    w.ec2.newAddressInvisibleCalls = 3;
    w.configure();
    const instance = w.addWindowsNode(NODE);
    for (const name of ['a', 'b']) w.addPod(NODE, name);
    await w.settle(NODE);
    w.addPod(NODE, 'c');
    await w.enqueue(IPAM_QUEUE, [{ ...w.keyOf(NODE), hint: { eventType: 'RESYNC', eventId: 'r1' } }]);
    await w.settle();
    const given = addresses(w, ['a', 'b', 'c']);
    expectUnique(given);
    w.ec2.newAddressInvisibleCalls = 0;
    const onInterface = (await w.interfaceAddresses(instance.instanceId)).addresses;
    for (const value of given) expect(onInterface).toContain(value.split('/')[0]);
  });
});

describe('ipam: failures', () => {
  it('a full subnet is a Warning and a look again in 2 minutes, not a retry storm', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    w.fillSubnet();
    w.addPod(NODE, 'a');
    await w.enqueue(IPAM_QUEUE, [w.keyOf(NODE)]);
    for (let minute = 0; minute < 10; minute++) {
      await w.sqs.pump(IPAM_QUEUE, (records) => w.invoke(ipamReconciler, w.deps, records));
      w.clock.advance(60_000);
    }
    expect(w.podAddress('default', 'a')).toBeUndefined();
    expect(w.ec2.callCount('AssignPrivateIpAddresses')).toBeLessThanOrEqual(6);
    expect(w.kube.eventsFor('Node', NODE, 'SubnetExhausted').length).toBeGreaterThanOrEqual(1);
    expect(w.kube.eventsFor('Pod', 'a', 'ResourceAllocationFailed').length).toBeGreaterThanOrEqual(1);
    expect(w.metrics.total(MetricName.IpamSubnetExhausted)).toBeGreaterThanOrEqual(1);
    expect(w.sqs.depth('ipam-dlq.fifo')).toBe(0);
  });

  it('an unusable warm target is a Warning naming the key, and the default applies', async () => {
    const w = createIpamWorld();
    w.configure({ 'warm-ip-target': 'lots' });
    w.addWindowsNode(NODE);
    await w.settle(NODE);
    const [event] = w.kube.eventsFor('Node', NODE, 'InvalidIPAMConfiguration');
    expect(event?.message).toContain('warm-ip-target: "lots"');
    expect(w.journal(NODE)!.addresses).toHaveLength(3);
  });

  it('a Node whose instance is terminated is let be: its key ends, no waiting on EC2 until the DLQ', async () => {
    const w = createIpamWorld();
    w.configure();
    const instance = w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    w.ec2.setState(instance.instanceId, 'terminated');
    // The journal is old enough that the pass looks at EC2 (as a resync's or a retried pass does).
    w.clock.advance((VERIFY_AFTER_SECONDS + 1) * 1000);
    w.addPod(NODE, 'b');
    await w.enqueue(IPAM_QUEUE, [w.keyOf(NODE)]);
    for (let i = 0; i < 30; i++) {
      await w.sqs.pump(IPAM_QUEUE, (records) => w.invoke(ipamReconciler, w.deps, records));
      w.clock.advance(10_000);
    }
    expect(w.sqs.depth(IPAM_QUEUE)).toBe(0);
    expect(w.sqs.depth('ipam-dlq.fifo')).toBe(0);
    expect(w.podAddress('default', 'b')).toBeUndefined();
    expect(w.ec2.callCount('AssignPrivateIpAddresses')).toBe(1);
  });

  it('a deleted Node is forgotten: nothing read, nothing written', async () => {
    const w = createIpamWorld();
    w.configure();
    await w.settle('gone');
    expect(w.ec2.callCount()).toBe(0);
  });
});

describe('ipam: a full subnet never holds up Pods the pool can serve', () => {
  it('a refill refused by a full subnet is no requeue while every Pod has an address', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    await w.settle(NODE);
    w.fillSubnet();
    w.addPod(NODE, 'a');
    await w.enqueue(IPAM_QUEUE, [{ ...w.keyOf(NODE), hint: { eventId: 'served' } }]);
    const response = await w.sqs.pump(IPAM_QUEUE, (records) => w.invoke(ipamReconciler, w.deps, records));
    expect(response).toBe(1);
    expect(w.podAddress('default', 'a')).toBeDefined();
    expect(w.kube.eventsFor('Node', NODE, 'SubnetExhausted')).toHaveLength(1);
    // Nothing holds the Node's message group: the queue is empty at once.
    expect(w.sqs.depth(IPAM_QUEUE)).toBe(0);
  });
});

describe('ipam: unreadable input', () => {
  it('a Pod address annotation that is no <ip>/<length> is a Warning, and the Pod gets a real address', async () => {
    const w = createIpamWorld();
    w.configure();
    w.addWindowsNode(NODE);
    const pod = w.addPod(NODE, 'a');
    w.kube.putPod({
      ...pod,
      metadata: { ...pod.metadata, annotations: { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.1.999/24' } },
    });
    await w.settle(NODE);
    expect(w.podAddress('default', 'a')).toMatch(/^10\.0\.1\.\d{1,3}\/24$/);
    expect(w.podAddress('default', 'a')).not.toBe('10.0.1.999/24');
    const [event] = w.kube.eventsFor('Pod', 'a', 'InvalidIPAddressAnnotation');
    expect(event?.message).toContain('"10.0.1.999/24" is no <IPv4 address>/<prefix length>');
    expect(w.metrics.total(MetricName.IpamInvalidInput, { input: 'PodAnnotation' })).toBe(1);
  });

  it('an enable flag that is neither true nor false is named in a Warning (and IPAM stays off)', async () => {
    const w = createIpamWorld();
    w.configure({ 'enable-windows-ipam': 'yes' });
    w.addWindowsNode(NODE);
    w.addPod(NODE, 'a');
    await w.settle(NODE);
    expect(w.podAddress('default', 'a')).toBeUndefined();
    const [event] = w.kube.eventsFor('Node', NODE, 'InvalidIPAMConfiguration');
    expect(event?.message).toContain('enable-windows-ipam: "yes" is not a boolean (true, false, 1, 0, t, f');
    expect(w.metrics.total(MetricName.IpamInvalidInput, { input: 'ConfigMap' })).toBe(1);
  });
});

describe('ipam: the ConfigMap as the reference reads it', () => {
  it.each([['True'], ['1'], ['T']])(
    'enable-windows-ipam "%s" is on (Go strconv.ParseBool): the Pod gets an address',
    async (value) => {
      const w = createIpamWorld();
      w.configure({ 'enable-windows-ipam': value });
      w.addWindowsNode(NODE);
      w.addPod(NODE, 'a');
      await w.settle(NODE);
      expect(w.podAddress('default', 'a')).toMatch(/^10\.0\.1\.\d+\/24$/);
      expect(w.kube.eventsFor('Node', NODE, 'InvalidIPAMConfiguration')).toEqual([]);
    },
  );
});

describe('ipam: capacity from DescribeInstanceTypes', () => {
  it('is asked once per instance type, however many Nodes of a batch need it', async () => {
    const w = createIpamWorld();
    w.configure();
    const nodes = ['w1', 'w2', 'w3', 'w4'];
    for (const name of nodes) w.addWindowsNode(name, 'm5.xlarge');
    await w.settle(...nodes);
    for (const name of nodes) expect(w.kube.nodes.get(name)!.status?.capacity?.[IPV4_RESOURCE]).toBe('14');
    expect(w.ec2.callCount('DescribeInstanceTypes')).toBe(1);
  });

  it('an instance type EC2 launched after this code was written works on day one', async () => {
    const w = createIpamWorld();
    w.ec2.instanceTypes.set('z9.metal-next', {
      instanceType: 'z9.metal-next',
      maximumNetworkInterfaces: 15,
      ipv4AddressesPerInterface: 50,
      ipv6AddressesPerInterface: 50,
    });
    w.configure();
    w.addWindowsNode(NODE, 'z9.metal-next');
    await w.settle(NODE);
    expect(w.kube.nodes.get(NODE)!.status?.capacity?.[IPV4_RESOURCE]).toBe('49');
  });
});

describe('ipam: EC2 hands back what the Node just released', () => {
  it('rejoins the pool (no longer being released), and stays on the interface', async () => {
    const w = createIpamWorld();
    w.configure({ 'warm-ip-target': '1', 'minimum-ip-target': '1' });
    const instance = w.addWindowsNode(NODE);
    for (const name of ['a', 'b', 'c']) w.addPod(NODE, name);
    await w.settle(NODE);
    for (const name of ['a', 'b', 'c']) w.kube.workloads.deleteRequest('default', name, { gracePeriodSeconds: 0 });
    await w.settle(NODE);
    w.clock.advance(31_000);
    await w.settle(NODE);
    const released = Object.keys(w.journal(NODE)!.releasing);
    expect(released.length).toBeGreaterThan(0);

    for (const name of ['d', 'e', 'f']) w.addPod(NODE, name);
    await w.settle(NODE);
    const given = addresses(w, ['d', 'e', 'f']).map((a) => a.split('/')[0]!);
    // The fake gives the lowest free addresses: the ones just released.
    expect(given.some((a) => released.includes(a))).toBe(true);
    const journal = w.journal(NODE)!;
    for (const a of given) expect(journal.releasing[a]).toBeUndefined();

    w.ec2.resetCalls();
    await w.enqueue(IPAM_QUEUE, [{ ...w.keyOf(NODE), hint: { eventType: 'RESYNC', eventId: 'round' } }]);
    await w.settle();
    expect(w.ec2.callCount('UnassignPrivateIpAddresses')).toBe(0);
    const onInterface = (await w.interfaceAddresses(instance.instanceId)).addresses;
    for (const a of given) expect(onInterface).toContain(a);
  });
});
