import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import {
  AttachInternetGatewayCommand,
  CreateInternetGatewayCommand,
  CreateRouteCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateTagsCommand,
  CreateVpcCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import {
  DescribeListenersCommand,
  DescribeLoadBalancersCommand,
  DescribeTargetGroupsCommand,
  DescribeTargetHealthCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator } from '../helpers/emulator.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE, type KubeLab, startKubeLab } from '../helpers/kube-lab.ts';
import { kubeHttp } from './kube-http.ts';
import { RELAY_POD_NAME } from './relay.ts';
import { buildDeployment, type E2eWorld, startEmulator, startWorld } from './world.ts';

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
/** The functions of scenarios (a) to (c): Node initialization, Service load balancers, spot interruptions. */
const FUNCTIONS = ['node', 'service', 'ec2-events', 'interruption'] as const;
/** How long an outcome may take before a test gives up on it (well beyond what each takes). */
const WAIT_MS = 25_000;
/** A test's own limit: a few waits of WAIT_MS at most. */
const TEST_MS = 60_000;

const missing = [
  ...(KUBE_LAB_AVAILABLE ? [] : [KUBE_LAB_SKIPPED_MESSAGE]),
  ...(EMULATOR_AVAILABLE ? [] : [EMULATOR_SKIPPED_MESSAGE]),
];
if (missing.length > 0) {
  console.warn(`end-to-end suite skipped: ${missing.join('; ')}`);
}

interface KubeService {
  metadata: { name: string; finalizers?: string[] };
  status?: { loadBalancer?: { ingress?: { hostname?: string }[] } };
}

interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { providerID?: string; unschedulable?: boolean; taints?: { key: string; effect: string }[] };
  status?: { addresses?: { type: string; address: string }[] };
}

describe.skipIf(missing.length > 0)('the deployed shape: relay, Lambda bundles, kube-apiserver, moto', () => {
  // The builds (several seconds a bundle on a busy machine) run while the API server and moto start; a skipped
  // suite's body is still run to collect its tests, so only when the suite runs.
  const building = missing.length === 0 ? buildDeployment(FUNCTIONS) : undefined;
  building?.catch(() => {}); // awaited, and reported, in beforeAll
  // An API server of its own, not the run's shared one (test/k8s-contract/lab.ts): the relay lists and watches every
  // Node and Service of the cluster, and the functions would act on other files' objects (a finalizer and an NLB
  // for their LoadBalancer Services, Warning Events on their Nodes), and theirs on ours. It starts in about 5 s,
  // while the builds run.
  const starting = missing.length === 0 ? startKubeLab() : undefined;
  starting?.catch(() => {}); // awaited, and reported, in beforeAll
  let kubeLab: KubeLab | undefined;
  const lab = () => kubeLab!;
  let emulator: Emulator;
  let world: E2eWorld;
  let ec2: EC2Client;
  let elbv2: ElasticLoadBalancingV2Client;
  let sqs: SQSClient;
  let subnetId: string;
  let nodeGroup: string;

  beforeAll(async () => {
    kubeLab = await starting;
    emulator = await startEmulator();
    ec2 = new EC2Client(emulator.clientConfig);
    elbv2 = new ElasticLoadBalancingV2Client(emulator.clientConfig);
    sqs = new SQSClient(emulator.clientConfig);
    // The cluster's VPC: a public subnet in two zones (tagged for internet-facing load balancers, routed to an
    // internet gateway by the main table) and the Nodes' cluster-tagged security group.
    const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
    const subnets = await Promise.all(
      [
        ['10.0.1.0/24', ZONE],
        ['10.0.2.0/24', 'eu-west-1b'],
      ].map(async ([cidr, zone]) => {
        const created = await ec2.send(
          new CreateSubnetCommand({
            VpcId: vpcId,
            CidrBlock: cidr,
            AvailabilityZone: zone,
            TagSpecifications: [{ ResourceType: 'subnet', Tags: [{ Key: 'kubernetes.io/role/elb', Value: '1' }] }],
          }),
        );
        return created.Subnet!.SubnetId!;
      }),
    );
    subnetId = subnets[0]!;
    const igw = (await ec2.send(new CreateInternetGatewayCommand({}))).InternetGateway!.InternetGatewayId!;
    await ec2.send(new AttachInternetGatewayCommand({ InternetGatewayId: igw, VpcId: vpcId }));
    const tables = await ec2.send(
      new DescribeRouteTablesCommand({
        Filters: [
          { Name: 'vpc-id', Values: [vpcId] },
          { Name: 'association.main', Values: ['true'] },
        ],
      }),
    );
    await ec2.send(
      new CreateRouteCommand({
        RouteTableId: tables.RouteTables![0]!.RouteTableId!,
        DestinationCidrBlock: '0.0.0.0/0',
        GatewayId: igw,
      }),
    );
    nodeGroup = (
      await ec2.send(
        new CreateSecurityGroupCommand({
          GroupName: 'nodes',
          Description: 'cluster nodes',
          VpcId: vpcId,
          TagSpecifications: [{ ResourceType: 'security-group', Tags: [{ Key: CLUSTER_TAG, Value: 'owned' }] }],
        }),
      )
    ).GroupId!;
    world = await startWorld(lab(), emulator, (await building)!, { vpcId });
  }, 120_000);

  afterAll(async () => {
    // E2E_OUTPUT=<file>: everything the relay and the functions wrote, to read what a passing run did.
    if (process.env.E2E_OUTPUT)
      (await import('node:fs')).writeFileSync(process.env.E2E_OUTPUT, world?.output(200_000) ?? '');
    await world?.close();
    // The world removes the build folder when it closes; without one, it is removed here.
    if (!world) {
      const built = await building?.catch(() => undefined);
      if (built) rmSync(built.dir, { recursive: true, force: true });
    }
    await (await starting?.catch(() => undefined))?.stop();
    ec2?.destroy();
    elbv2?.destroy();
    sqs?.destroy();
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
    const deadline = Date.now() + WAIT_MS;
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
        SecurityGroupIds: [nodeGroup],
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

  it(
    'initializes new Nodes: found by name and by provider ID, labelled, addressed, the taint removed',
    async () => {
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
      // (The mapping deletes after the invocation returns, so a moment after the Node changed.)
      const stats = world.mappings.get('node')!.stats;
      await eventually(
        'the handled messages deleted',
        async () => stats.deleted,
        (n) => n >= 2,
      );
      expect(stats.errors).toEqual([]);
      // The relay holds its Lease as the Deployment names it (RELAY_LEASE_NAME, its Pod's namespace and name).
      const lease = await kube(
        'GET',
        '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/serverless-ccm-relay',
      );
      expect(lease.status, lease.text).toBe(200);
      expect((lease.body as { spec: { holderIdentity?: string } }).spec.holderIdentity).toBe(RELAY_POD_NAME);
    },
    TEST_MS,
  );

  it(
    "retries a Node whose instance is not yet the cluster's: a partial batch failure, brought back early by the runner",
    async () => {
      const instance = await launch({ tagged: false });
      const name = `e2e-untagged-${instance.instanceId}`;
      const created = await kube(
        'POST',
        '/api/v1/nodes',
        registeredNode(name, `aws:///${ZONE}/${instance.instanceId}`),
      );
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
    },
    TEST_MS,
  );

  /** A namespace of the test's own (Services are namespaced; Nodes are not, and have names of their own). */
  async function namespace(name: string): Promise<string> {
    const created = await kube('POST', '/api/v1/namespaces', { metadata: { name } });
    expect(created.status, created.text).toBe(201);
    // The controller-manager's part (the lab has none): a namespace's default ServiceAccount, which Pods need.
    const account = await kube('POST', `/api/v1/namespaces/${name}/serviceaccounts`, { metadata: { name: 'default' } });
    expect(account.status, account.text).toBe(201);
    return name;
  }

  async function initializedNode(): Promise<{ name: string; instanceId: string }> {
    const instance = await launch();
    const created = await kube('POST', '/api/v1/nodes', registeredNode(instance.privateDnsName));
    expect(created.status, created.text).toBe(201);
    await eventually(
      `Node ${instance.privateDnsName} initialized`,
      () => getNode(instance.privateDnsName),
      (n) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED),
    );
    return { name: instance.privateDnsName, instanceId: instance.instanceId };
  }

  /** The load balancers in moto tagged for this Service (kubernetes.io/service-name is how the controller names its own). */
  async function loadBalancersNamed(dnsName: string) {
    const all = await elbv2.send(new DescribeLoadBalancersCommand({}));
    return (all.LoadBalancers ?? []).filter((lb) => lb.DNSName === dnsName);
  }

  it(
    'gives a LoadBalancer Service an NLB with its Nodes as targets, and deletes it with the Service',
    async () => {
      const nodes = [await initializedNode(), await initializedNode()];
      const ns = await namespace('e2e-nlb');
      const created = await kube('POST', `/api/v1/namespaces/${ns}/services`, {
        metadata: {
          name: 'web',
          // Said outright, as users of the reference controller do: moto names an NLB as AWS names a Classic ELB
          // (`<name>-1.<region>.elb.amazonaws.com`, not `<name>-<16 hex>.elb.<region>.amazonaws.com`), and without
          // the annotation the controller goes by the hostname (functions/service/reconciler.ts backendsFor): it
          // would delete a Classic ELB of that name, and leave the NLB behind.
          annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' },
        },
        spec: {
          type: 'LoadBalancer',
          selector: { app: 'web' },
          ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
        },
      });
      expect(created.status, created.text).toBe(201);
      const nodePort = (created.body as { spec: { ports: { nodePort: number }[] } }).spec.ports[0]!.nodePort;

      const service = await eventually(
        'the Service to get its load balancer',
        () => kube('GET', `/api/v1/namespaces/${ns}/services/web`),
        (a) => Boolean((a.body as KubeService).status?.loadBalancer?.ingress?.[0]?.hostname),
      );
      const body = service.body as KubeService;
      expect(body.metadata.finalizers).toContain('service.kubernetes.io/load-balancer-cleanup');
      const hostname = body.status!.loadBalancer!.ingress![0]!.hostname!;
      const [lb] = await loadBalancersNamed(hostname);
      expect(lb).toMatchObject({ Type: 'network', Scheme: 'internet-facing' });

      const listeners = await elbv2.send(new DescribeListenersCommand({ LoadBalancerArn: lb!.LoadBalancerArn }));
      expect(listeners.Listeners?.map((l) => [l.Port, l.Protocol])).toEqual([[80, 'TCP']]);
      const groups = await elbv2.send(new DescribeTargetGroupsCommand({ LoadBalancerArn: lb!.LoadBalancerArn }));
      expect(groups.TargetGroups?.map((g) => [g.Port, g.Protocol, g.TargetType])).toEqual([
        [nodePort, 'TCP', 'instance'],
      ]);
      // externalTrafficPolicy Cluster: every initialized Node of the cluster is a target (this file's earlier Nodes too).
      const clusterInstances = async () => {
        const list = (await kube('GET', '/api/v1/nodes')).body as { items: KubeNode[] };
        return list.items.flatMap((n) => n.spec?.providerID?.split('/').slice(-1) ?? []).sort();
      };
      const expected = await clusterInstances();
      expect(expected).toEqual(expect.arrayContaining(nodes.map((n) => n.instanceId)));
      const targets = await eventually(
        'every Node registered as a target',
        () =>
          elbv2
            .send(new DescribeTargetHealthCommand({ TargetGroupArn: groups.TargetGroups![0]!.TargetGroupArn }))
            .then((h) => (h.TargetHealthDescriptions ?? []).map((d) => d.Target?.Id ?? '').sort()),
        (ids) => ids.length >= expected.length,
      );
      expect(targets).toEqual(expected);

      // The first pass requeued the key (the load balancer was provisioning); the pass it comes back for finds it
      // in place, as the SDK reads it back from moto, and succeeds: the queue is left empty. (Not a quiet pass on
      // moto: it names NLBs as AWS names Classic ELBs, so each pass takes the Service for one moving from a Classic
      // ELB of that name and tags, then untags, the NLB as its successor; on AWS that pass changes nothing.)
      await eventually(
        'the service queue drained (the requeued pass done)',
        () =>
          sqs
            .send(
              new GetQueueAttributesCommand({
                QueueUrl: world.queues.service.url,
                AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
              }),
            )
            .then(
              (q) =>
                Number(q.Attributes?.ApproximateNumberOfMessages) +
                Number(q.Attributes?.ApproximateNumberOfMessagesNotVisible),
            ),
        (n) => n === 0,
      );
      expect(world.mappings.get('service')!.stats.failedRecords).toBeGreaterThan(0);
      const events = (await kube('GET', `/api/v1/namespaces/${ns}/events?fieldSelector=involvedObject.name=web`))
        .body as { items: { reason: string; type: string }[] };
      expect(events.items.map((e) => e.reason)).toContain('EnsuredLoadBalancer');
      expect(events.items.filter((e) => e.type === 'Warning')).toEqual([]);
      expect(
        (await elbv2.send(new DescribeListenersCommand({ LoadBalancerArn: lb!.LoadBalancerArn }))).Listeners,
      ).toHaveLength(1);

      // The load balancer's own security group, tagged with the Service's key.
      const managedGroups = () =>
        ec2
          .send(
            new DescribeSecurityGroupsCommand({
              Filters: [{ Name: 'tag:kubernetes.io/service-name', Values: [`${ns}/web`] }],
            }),
          )
          .then((g) => g.SecurityGroups ?? []);
      expect(await managedGroups()).toHaveLength(1);

      const deleted = await kube('DELETE', `/api/v1/namespaces/${ns}/services/web`);
      expect(deleted.status, deleted.text).toBe(200);
      // The finalizer holds the Service until the load balancer is gone; then the controller lets it go.
      await eventually(
        'the Service to be deleted',
        () => kube('GET', `/api/v1/namespaces/${ns}/services/web`),
        (a) => a.status === 404,
      );
      expect(await loadBalancersNamed(hostname)).toEqual([]);
      const left = await elbv2.send(new DescribeTargetGroupsCommand({}));
      expect((left.TargetGroups ?? []).filter((g) => g.Port === nodePort)).toEqual([]);
      expect(await managedGroups()).toEqual([]);
      expect(world.mappings.get('service')!.stats.errors).toEqual([]);
    },
    TEST_MS,
  );

  it(
    'drains a Node on a spot interruption warning: EventBridge to the router, a notice to the interruption controller',
    async () => {
      const node = await initializedNode();
      const ns = await namespace('e2e-spot');
      // A Pod the scheduler would have put there (the lab has none): bound by nodeName, and gone at once when
      // evicted (no kubelet here to end it: a grace period of 0 makes the eviction delete it).
      const pod = await kube('POST', `/api/v1/namespaces/${ns}/pods`, {
        metadata: { name: 'app' },
        spec: {
          nodeName: node.name,
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
        },
      });
      expect(pod.status, pod.text).toBe(201);

      // What the stack's SpotInterruption rule delivers to the EC2 events queue: the EventBridge event as the body.
      // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: world.queues['ec2-events'].url,
          MessageBody: JSON.stringify({
            version: '0',
            id: randomUUID(),
            'detail-type': 'EC2 Spot Instance Interruption Warning',
            source: 'aws.ec2',
            account: '123456789012',
            time: new Date().toISOString(),
            region: 'eu-west-1',
            resources: [`arn:aws:ec2:${ZONE}:instance/${node.instanceId}`],
            detail: { 'instance-id': node.instanceId, 'instance-action': 'terminate' },
          }),
        }),
      );

      const drained = await eventually(
        `Node ${node.name} cordoned and tainted`,
        () => getNode(node.name),
        (n) =>
          n.spec?.unschedulable === true &&
          (n.spec.taints ?? []).some((t) => t.key === 'aws-node-termination-handler/spot-itn'),
      );
      expect(drained.spec?.taints).toContainEqual(
        expect.objectContaining({ key: 'aws-node-termination-handler/spot-itn', effect: 'NoSchedule' }),
      );
      await eventually(
        'the Pod evicted',
        () => kube('GET', `/api/v1/namespaces/${ns}/pods/app`),
        (a) => a.status === 404,
      );
      // The router took the event off its queue; the controller's notice went through its FIFO queue.
      for (const name of ['ec2-events', 'interruption'] as const) {
        const stats = world.mappings.get(name)!.stats;
        await eventually(
          `${name}'s messages handled`,
          async () => stats.deleted,
          (n) => n > 0,
        );
        expect(stats.errors).toEqual([]);
      }
    },
    TEST_MS,
  );
});
