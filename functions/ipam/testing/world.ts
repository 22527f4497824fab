import { Ec2Facts } from '../../../shared/aws/ec2-facts.ts';
import { makeInstance, makeSubnet } from '../../../shared/aws/fakes/ec2/fake-ec2.ts';
import { IPV4_RESOURCE, POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../../../shared/k8s/ipam-names.ts';
import type { Pod } from '../../../shared/k8s/types.ts';
import type { KeyMessage } from '../../../shared/queue/message.ts';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { podOnNode } from '../../../test/helpers/pods.ts';
import { CLUSTER, createWorld } from '../../../test/helpers/world.ts';
import type { IpamDeps } from '../deps.ts';
import { ipamReconciler } from '../reconciler.ts';
import { POOL_ANNOTATION, type PoolRecord, readRecord } from '../record.ts';

export const IPAM_QUEUE = 'ipam.fifo';
/** The subnet the Windows Nodes' interfaces are in: 10.0.1.0/24. */
export const SUBNET = makeSubnet({ index: 1 });

/**
 * The test world with the IP address manager's deps: FakeKubernetes (Nodes, Pods, the VPC CNI ConfigMap), FakeEc2
 * behind the real adapter (interfaces, addresses, prefixes, subnets), the FIFO queue with its DLQ.
 */
export function createIpamWorld(options: { instanceType?: string } = {}) {
  const w = createWorld();
  w.ec2.putSubnet(SUBNET);
  // Larger Windows instance types than the fake's defaults (EC2's figures: IPv4 addresses per interface; Nitro).
  for (const [instanceType, interfaces, perInterface] of [
    ['m5.xlarge', 4, 15],
    ['m5.2xlarge', 4, 15],
    ['m5.4xlarge', 8, 30],
  ] as const) {
    w.ec2.instanceTypes.set(instanceType, {
      instanceType,
      maximumNetworkInterfaces: interfaces,
      ipv4AddressesPerInterface: perInterface,
      ipv6AddressesPerInterface: perInterface,
      hypervisor: 'nitro',
      bareMetal: false,
    });
  }
  w.sqs.createQueue(IPAM_QUEUE, { maxReceiveCount: 8, deadLetterQueue: 'ipam-dlq.fifo' });
  const deps: IpamDeps = {
    clusterName: CLUSTER,
    vpcId: 'vpc-0a1b2c3d',
    kube: w.kube,
    pods: w.kube,
    ec2: w.ec2Port,
    facts: new Ec2Facts(w.ec2Port, w.clock),
    cooldownSeconds: 30,
    clock: w.clock,
    log: w.nodeDeps.log,
    metrics: w.metrics,
  };
  let nodes = 0;

  const configure = (data: Record<string, string> = {}) =>
    w.kube.putConfigMap({
      metadata: { ...VPC_CNI_CONFIGMAP },
      data: { 'enable-windows-ipam': 'true', ...data },
    });

  /** A Windows Node on a new instance in SUBNET. */
  const addWindowsNode = (name: string, instanceType = options.instanceType ?? 'm5.large') => {
    const index = 100 + ++nodes;
    const instance = makeInstance({ index, instanceType, subnetId: SUBNET.subnetId });
    for (const eni of instance.networkInterfaces) eni.subnetId = SUBNET.subnetId;
    instance.privateIpAddress = `10.0.1.${index}`;
    instance.networkInterfaces[0]!.privateIpAddresses = [{ address: `10.0.1.${index}`, primary: true }];
    w.ec2.putInstance(instance);
    w.kube.putNode(
      makeNode(name, {
        providerID: `aws:///eu-west-1a/${instance.instanceId}`,
        initialized: true,
        labels: { 'kubernetes.io/os': 'windows' },
      }),
    );
    return instance;
  };

  /** A Pod the webhook mutated (it requests one address), bound to `node`. */
  const addPod = (node: string, name: string, extra: Partial<Pod['spec']> = {}) => {
    const pod = podOnNode(node, name, { phase: 'Pending' });
    pod.metadata.creationTimestamp = new Date(w.clock.now()).toISOString();
    pod.spec = {
      ...pod.spec,
      containers: [
        {
          name: 'app',
          image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022',
          resources: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } },
        },
      ],
      ...extra,
    };
    return w.kube.putPod(pod);
  };

  const keyOf = (node: string): KeyMessage => ({ kind: 'Node', name: node });
  /** Send the Nodes' keys and play the queue until it is empty (requeues included). */
  let sends = 0;
  const settle = async (...names: string[]) => {
    // A new event ID per send, so SQS does not drop it as the previous one's duplicate.
    const hint = { eventId: `send-${++sends}` };
    if (names.length > 0)
      await w.enqueue(
        IPAM_QUEUE,
        names.map((n) => ({ ...keyOf(n), hint })),
      );
    return w.drain(IPAM_QUEUE, ipamReconciler, deps);
  };

  const podAddress = (namespace: string, name: string) =>
    w.kube.workloads.pods.get(`${namespace}/${name}`)?.metadata.annotations?.[POD_IP_ANNOTATION];
  const journal = (node: string): PoolRecord | undefined => readRecord(w.kube.nodes.get(node)?.metadata.annotations);
  const rawJournal = (node: string) => w.kube.nodes.get(node)?.metadata.annotations?.[POOL_ANNOTATION];
  /** The secondary addresses (prefixes expanded not) EC2 holds on the instance's primary interface. */
  const interfaceAddresses = async (instanceId: string) => {
    const instance = (await w.ec2Port.describeInstances([instanceId])).get(instanceId)!;
    const [eni] = await w.ec2Port.describeNetworkInterfaces({
      networkInterfaceIds: [instance.networkInterfaces[0]!.networkInterfaceId],
    });
    return {
      addresses: eni!.privateIpAddresses.filter((a) => !a.primary).map((a) => a.address),
      prefixes: eni!.ipv4Prefixes,
    };
  };

  /** Other parties take every free address of the subnet. */
  const fillSubnet = () => {
    for (;;) {
      try {
        w.ec2.reserveAddresses(SUBNET.subnetId, 1);
      } catch {
        return;
      }
    }
  };

  return {
    ...w,
    deps,
    fillSubnet,
    configure,
    addWindowsNode,
    addPod,
    settle,
    podAddress,
    journal,
    rawJournal,
    interfaceAddresses,
    keyOf,
  };
}

export type IpamWorld = ReturnType<typeof createIpamWorld>;
