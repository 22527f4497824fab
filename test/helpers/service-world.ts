import type { ServiceDeps } from '../../functions/service/deps.ts';
import { serviceReconciler } from '../../functions/service/reconciler.ts';
import type { Instance } from '../../shared/aws/ec2-port.ts';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import { makeInstance, makeRouteTable, makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { EndpointSlice, Node, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { type KeyMessage, NODE_SET_HINT_SOURCE } from '../../shared/queue/message.ts';
import { makeNode } from './nodes.ts';
import { fifoRecord } from './records.ts';
import { CLUSTER, createWorld } from './world.ts';

export const VPC = 'vpc-0a1b2c3d';
export const NODE_GROUP = 'sg-0000000000000node';
export const SERVICE_QUEUE = 'service.fifo';
export const SERVICE_QUEUE_ARN = 'arn:aws:sqs:eu-west-1:111122223333:service.fifo';
const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
/** The ports of a typical web Service: HTTP and HTTPS on node ports 30080 and 30443. */
export const WEB_PORTS: ServicePortSpec[] = [
  { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 },
  { name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 30443 },
];

/**
 * The route tests' world plus what Service load balancers need: a VPC with a public and a private subnet
 * per zone (the public ones routed to an internet gateway and tagged `kubernetes.io/role/elb`, the private
 * ones `kubernetes.io/role/internal-elb`), a cluster-tagged Node security group, a FakeElbv2 linked to the
 * FakeEc2, and the service controller's deps and queue. `elbv2` is the fake ELBv2 account (its state and
 * counters); the reconciler reaches it through the real adapter, `elbv2Port`, as it reaches AWS.
 */
export function createServiceWorld() {
  const w = createWorld();
  w.ec2.clock = w.clock;
  const elbv2 = new FakeElbv2(w.clock, w.ec2);
  const elbv2Port = new Elbv2Adapter(elbv2);
  w.sqs.createQueue(SERVICE_QUEUE, { maxReceiveCount: 50, deadLetterQueue: 'service-dlq.fifo' });

  ZONES.forEach((zone, i) => {
    w.ec2.putSubnet(
      makeSubnet({ index: 10 + i, zone, tags: { Name: `public-${zone}`, 'kubernetes.io/role/elb': '1' } }),
    );
    w.ec2.putSubnet(
      makeSubnet({ index: 20 + i, zone, tags: { Name: `private-${zone}`, 'kubernetes.io/role/internal-elb': '1' } }),
    );
  });
  // Public subnets route to the internet gateway; everything else uses the main table (a NAT gateway).
  w.ec2.putRouteTable({
    ...makeRouteTable({ routeTableId: 'rtb-0000000000000publ', clusterName: '' }),
    tags: {},
    associations: ZONES.map((_, i) => ({ subnetId: makeSubnet({ index: 10 + i }).subnetId, main: false })),
  });
  w.ec2.putRouteTable({
    ...makeRouteTable({ routeTableId: 'rtb-0000000000000priv', clusterName: '' }),
    tags: {},
    routes: [
      { destination: '10.0.0.0/16', target: { gatewayId: 'local' }, origin: 'CreateRouteTable' },
      { destination: '0.0.0.0/0', target: { natGatewayId: 'nat-0a1b2c3d' }, origin: 'CreateRoute' },
    ],
    associations: [{ main: true }],
  });
  w.ec2.putSecurityGroup({
    groupId: NODE_GROUP,
    groupName: 'nodes',
    vpcId: VPC,
    description: 'cluster nodes',
    tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' },
    ingress: [{ protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: NODE_GROUP }],
  });

  const serviceDeps: ServiceDeps = {
    clusterName: CLUSTER,
    vpcId: VPC,
    provisioningRequeueSeconds: 30,
    cleanupRequeueSeconds: 30,
    kube: w.kube,
    ec2: w.ec2Port,
    elbv2: elbv2Port,
    clock: w.clock,
    log: w.nodeDeps.log,
    metrics: w.metrics,
  };

  /** A running instance in the Node security group and its Ready, initialized Node. */
  const addNode = (
    index: number,
    options: { labels?: Record<string, string>; ready?: boolean; group?: string } = {},
  ) => {
    const base = makeInstance({ index, availabilityZone: ZONES[index % 3] });
    const instance: Instance = {
      ...base,
      networkInterfaces: base.networkInterfaces.map((e) => ({ ...e, securityGroupIds: [options.group ?? NODE_GROUP] })),
    };
    w.ec2.putInstance(instance);
    const node: Node = makeNode(`node-${index}`, {
      providerID: `aws:///${instance.availabilityZone}/${instance.instanceId}`,
      initialized: true,
      labels: options.labels,
      ready: options.ready ?? true,
    });
    w.kube.putNode(node);
    return { instance, node: w.kube.nodes.get(node.metadata.name)! };
  };

  /** A LoadBalancer Service with ports given as `[port, nodePort, protocol?, targetPort?]`. */
  const putService = (
    name: string,
    options: {
      namespace?: string;
      annotations?: Record<string, string>;
      ports?: ServicePortSpec[];
      spec?: Partial<NonNullable<Service['spec']>>;
    } = {},
  ): Service =>
    w.kube.putService({
      metadata: { name, namespace: options.namespace ?? 'default', annotations: options.annotations },
      spec: {
        type: 'LoadBalancer',
        ports: options.ports ?? [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
        selector: { app: name },
        externalTrafficPolicy: 'Cluster',
        ...options.spec,
      },
    });

  const putSlice = (
    service: string,
    endpoints: { ip: string; ready?: boolean; terminating?: boolean }[],
    options: { namespace?: string; name?: string; ports?: EndpointSlice['ports'] } = {},
  ) =>
    w.kube.putEndpointSlice({
      metadata: {
        name: options.name ?? `${service}-abc12`,
        namespace: options.namespace ?? 'default',
        labels: { 'kubernetes.io/service-name': service },
      },
      addressType: 'IPv4',
      endpoints: endpoints.map((e) => ({
        addresses: [e.ip],
        conditions: { ready: e.ready ?? true, serving: e.ready ?? true, terminating: e.terminating ?? false },
      })),
      ports: options.ports ?? [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });

  const serviceKey = (name: string, namespace = 'default', hint?: KeyMessage['hint']): KeyMessage => ({
    kind: 'Service',
    namespace,
    name,
    ...(hint ? { hint } : {}),
  });

  /**
   * The keys the relay sends when the Node set changes: every named Service's, hinted as a Node-set change and
   * naming the Service's uid (`withUid: false`: as a relay before it named them).
   */
  const nodeSetKeys = (
    names: readonly string[],
    resourceVersion = '9001',
    source = NODE_SET_HINT_SOURCE,
    withUid = true,
  ): KeyMessage[] =>
    names.map((name) => {
      const uid = withUid ? w.kube.services.get(`default/${name}`)?.metadata.uid : undefined;
      return serviceKey(name, 'default', { eventType: 'MODIFIED', resourceVersion, source, ...(uid ? { uid } : {}) });
    });

  /** One Lambda invocation for these keys. */
  const reconcile = (...messages: KeyMessage[]) =>
    w.invoke(
      serviceReconciler,
      serviceDeps,
      messages.map((m) => fifoRecord(m, { queueArn: SERVICE_QUEUE_ARN })),
    );

  /**
   * Send the keys and play the queue until it is empty (requeues and retries included). Keys without a hint
   * get a fresh one, so SQS deduplication never drops a test's message.
   */
  let sent = 0;
  const converge = async (messages: KeyMessage[], deps: ServiceDeps = serviceDeps, maxPolls = 500) => {
    const hinted = messages.map((m) =>
      m.hint ? m : { ...m, hint: { eventType: 'RESYNC' as const, eventId: `converge-${++sent}` } },
    );
    await w.enqueue(SERVICE_QUEUE, hinted);
    return w.drain(SERVICE_QUEUE, serviceReconciler, deps, maxPolls);
  };

  const awsCalls = () => w.ec2.callCount() + elbv2.callCount();
  const awsWrites = () => w.ec2.writeCallCount() + elbv2.writeCallCount();
  const resetCounters = () => {
    w.ec2.resetCalls();
    elbv2.resetCalls();
    w.kube.resetCalls();
    w.kube.events.length = 0;
    w.metrics.reset();
  };

  /**
   * Everything the controller may have made in AWS, by name and without generated IDs or ARNs, so that two
   * worlds that reached the same state compare equal however they got there.
   */
  const inventory = () => {
    const groupName = (id: string) => w.ec2.securityGroups.get(id)?.groupName ?? id;
    const tgName = (arn: string | undefined) =>
      arn ? ([...elbv2.targetGroups.values()].find((g) => g.tg.arn === arn)?.tg.name ?? arn) : undefined;
    const loadBalancers = [...elbv2.loadBalancers.values()]
      .map(({ lb, tags, attributes }) => ({
        name: lb.name,
        scheme: lb.scheme,
        ipAddressType: lb.ipAddressType,
        subnets: lb.subnets
          .map(
            (s) =>
              `${s.subnetId}${s.allocationId ? `:${s.allocationId}` : ''}${s.privateIPv4Address ? `:${s.privateIPv4Address}` : ''}`,
          )
          .sort(),
        securityGroups: lb.securityGroups.map(groupName).sort(),
        tags,
        attributes,
        listeners: elbv2
          .listenersOf(lb.arn)
          .map((l) => ({
            port: l.port,
            protocol: l.protocol,
            targetGroup: tgName(l.targetGroupArn),
            certificates: l.certificateArns,
            sniCertificates: [...(elbv2.listenerCertificates.get(l.arn) ?? [])].sort(),
            alpnPolicy: l.alpnPolicy ?? 'None',
            attributes: elbv2.listenerAttributes.get(l.arn) ?? {},
            tags: elbv2.listenerTags.get(l.arn) ?? {},
          }))
          .sort((a, b) => a.port - b.port),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    const targetGroups = [...elbv2.targetGroups.values()]
      .map(({ tg, tags, attributes, targets }) => ({
        name: tg.name,
        protocol: tg.protocol,
        port: tg.port,
        targetType: tg.targetType,
        healthCheck: tg.healthCheck,
        tags,
        attributes,
        targets: [...targets.values()]
          .filter((t) => t.state !== 'draining')
          .map((t) => `${t.target.id}:${t.target.port}`)
          .sort(),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    const securityGroups = [...w.ec2.securityGroups.values()]
      .map((g) => ({
        name: g.groupName,
        tags: g.tags,
        ingress: g.ingress
          .map(
            (r) =>
              `${r.protocol}:${r.fromPort}-${r.toPort}:${r.cidrIpv4 ?? r.cidrIpv6 ?? groupName(r.sourceGroupId ?? '')}:${r.description ?? ''}`,
          )
          .sort(),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return { loadBalancers, targetGroups, securityGroups };
  };

  return {
    ...w,
    elbv2,
    elbv2Port,
    serviceDeps,
    addNode,
    putService,
    putSlice,
    serviceKey,
    nodeSetKeys,
    reconcile,
    converge,
    awsCalls,
    awsWrites,
    resetCounters,
    inventory,
  };
}

export type ServiceWorld = ReturnType<typeof createServiceWorld>;
