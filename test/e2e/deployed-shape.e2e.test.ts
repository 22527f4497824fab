import {
  CreateSubnetCommand,
  CreateTagsCommand,
  CreateVpcCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator } from '../helpers/emulator.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { useKubeLab } from '../k8s-contract/lab.ts';
import { kubeHttp } from './kube-http.ts';
import { type E2eWorld, startEmulator, startWorld } from './world.ts';

/**
 * The deployed shape end to end (issue 35): the relay as its container runs it, the Lambda bundles of
 * `npm run build` invoked as Lambda's SQS event source mapping invokes them, a real kube-apiserver and moto as
 * AWS. Nothing here is a fake of the project's: every write is the bundles' own, over the REST client (token mode,
 * the token read from Secrets Manager) and the AWS SDK. The tests wait for outcomes (Kubernetes objects, AWS
 * state), never for a time.
 */

const CLUSTER_TAG = 'kubernetes.io/cluster/e2e';
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const ZONE = 'eu-west-1a';

const missing = [
  ...(KUBE_LAB_AVAILABLE ? [] : [KUBE_LAB_SKIPPED_MESSAGE]),
  ...(EMULATOR_AVAILABLE ? [] : [EMULATOR_SKIPPED_MESSAGE]),
];
if (missing.length > 0) {
  console.warn(`end-to-end suite skipped: ${missing.join('; ')}`);
}

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { providerID?: string; taints?: { key: string; effect: string }[] };
  status?: { addresses?: { type: string; address: string }[] };
}

describe.skipIf(missing.length > 0)('the deployed shape: relay, Lambda bundles, kube-apiserver, moto', () => {
  const lab = useKubeLab();
  let emulator: Emulator;
  let world: E2eWorld;
  let ec2: EC2Client;
  let subnetId: string;

  beforeAll(async () => {
    emulator = await startEmulator();
    ec2 = new EC2Client(emulator.clientConfig);
    const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
    subnetId = (
      await ec2.send(new CreateSubnetCommand({ VpcId: vpcId, CidrBlock: '10.0.1.0/24', AvailabilityZone: ZONE }))
    ).Subnet!.SubnetId!;
    world = await startWorld(lab(), emulator, { functions: ['node'], vpcId });
  }, 120_000);

  afterAll(async () => {
    await world?.close();
    ec2?.destroy();
    await emulator?.stop();
  }, 30_000);

  /** The lab's API server, as its admin. */
  const kube = (method: string, path: string, body?: unknown) => kubeHttp(lab())(method, path, body);

  async function getNode(name: string): Promise<KubeNode> {
    const answer = await kube('GET', `/api/v1/nodes/${name}`);
    expect(answer.status, answer.text).toBe(200);
    return answer.body as KubeNode;
  }

  /** Polls until `check` holds, failing with the world's output (relay and functions) if it never does. */
  async function eventually<T>(what: string, probe: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 20_000;
    let last: T = await probe();
    while (!check(last)) {
      if (Date.now() > deadline) {
        throw new Error(`${what} never happened; last seen ${JSON.stringify(last)}\n\n${world.output()}`);
      }
      await new Promise((r) => setTimeout(r, 200));
      last = await probe();
    }
    return last;
  }

  async function launch({
    tagged = true,
  } = {}): Promise<{ instanceId: string; privateDnsName: string; privateIp: string }> {
    const created = await ec2.send(
      new RunInstancesCommand({
        ImageId: 'ami-12c6146b',
        InstanceType: 'm5.large',
        MinCount: 1,
        MaxCount: 1,
        SubnetId: subnetId,
        ...(tagged
          ? { TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: CLUSTER_TAG, Value: 'owned' }] }] }
          : {}),
      }),
    );
    const instance = created.Instances![0]!;
    return {
      instanceId: instance.InstanceId!,
      privateDnsName: instance.PrivateDnsName!,
      privateIp: instance.PrivateIpAddress!,
    };
  }

  /** A Node as kubelet with `--cloud-provider=external` registers it: tainted until a cloud controller initializes it. */
  function registeredNode(name: string, providerID?: string) {
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
      spec: {
        ...(providerID ? { providerID } : {}),
        taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }],
      },
    };
  }

  it('initializes new Nodes: found by name and by provider ID, labelled, addressed, the taint removed', async () => {
    const byName = await launch();
    const byId = await launch();
    const providerID = `aws:///${ZONE}/${byId.instanceId}`;
    const byIdName = `e2e-node-${byId.instanceId}`;
    for (const node of [registeredNode(byName.privateDnsName), registeredNode(byIdName, providerID)]) {
      const created = await kube('POST', '/api/v1/nodes', node);
      expect(created.status, created.text).toBe(201);
    }

    for (const [name, instance] of [
      [byName.privateDnsName, byName],
      [byIdName, byId],
    ] as const) {
      const node = await eventually(
        `Node ${name} initialized`,
        () => getNode(name),
        (n) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED),
      );
      expect(node.spec?.providerID).toBe(`aws:///${ZONE}/${instance.instanceId}`);
      expect(node.metadata.labels).toMatchObject({
        'node.kubernetes.io/instance-type': 'm5.large',
        'topology.kubernetes.io/zone': ZONE,
        'topology.kubernetes.io/region': 'eu-west-1',
      });
      expect(node.metadata.labels?.['topology.k8s.aws/zone-id']).toMatch(/^euw1-az\d$/);
      const addresses = await eventually(
        `Node ${name} addressed`,
        () => getNode(name).then((n) => n.status?.addresses ?? []),
        (a) => a.some((x) => x.type === 'InternalIP'),
      );
      expect(addresses).toContainEqual({ type: 'InternalIP', address: instance.privateIp });
    }
    // The keys came through the relay and the queue: the mapping invoked the bundle and deleted what it handled.
    const stats = world.mappings.get('node')!.stats;
    expect(stats.deleted).toBeGreaterThan(0);
    expect(stats.errors).toEqual([]);
  });

  it("retries a Node whose instance is not yet the cluster's: a partial batch failure, brought back early by the runner", async () => {
    const instance = await launch({ tagged: false });
    const name = `e2e-untagged-${instance.instanceId}`;
    const created = await kube('POST', '/api/v1/nodes', registeredNode(name, `aws:///${ZONE}/${instance.instanceId}`));
    expect(created.status, created.text).toBe(201);

    // The bundle told the user (an Event on the Node, in the default namespace) and failed the key.
    await eventually(
      'an InstanceNotInCluster Event',
      () => kube('GET', `/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=${name}`),
      (a) =>
        (a.body as { items?: { reason: string }[] }).items?.some((e) => e.reason === 'InstanceNotInCluster') ?? false,
    );
    const stats = world.mappings.get('node')!.stats;
    await eventually(
      'a failed record',
      async () => stats.failedRecords,
      (n) => n > 0,
    );
    expect((await getNode(name)).spec?.taints?.map((t) => t.key)).toContain(UNINITIALIZED);

    // Tagged now: the message comes back (within seconds, as the runner set its visibility, not the queue's six
    // minutes) and the Node is initialized.
    await ec2.send(
      new CreateTagsCommand({ Resources: [instance.instanceId], Tags: [{ Key: CLUSTER_TAG, Value: 'owned' }] }),
    );
    const node = await eventually(
      `Node ${name} initialized`,
      () => getNode(name),
      (n) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED),
    );
    expect(node.metadata.labels?.['node.kubernetes.io/instance-type']).toBe('m5.large');
    expect(stats.errors).toEqual([]);
  });
});
