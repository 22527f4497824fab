import type { LoadBalancer } from '../../../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import { LBC_TCP_HEALTH_CHECK } from '../../../shared/load-balancers/health-check.ts';
import type { KeyMessage } from '../../../shared/queue/message.ts';
import { fifoRecord } from '../../../test/helpers/records.ts';
import { NODE_GROUP, SERVICE_QUEUE_ARN, type ServiceWorld, VPC } from '../../../test/helpers/service-world.ts';
import { CLUSTER } from '../../../test/helpers/world.ts';
import type { ServiceDeps } from '../deps.ts';
import { lbcLoadBalancerName, lbcSecurityGroupName, lbcTargetGroupName } from '../lbc/names.ts';
import { serviceReconciler } from '../reconciler.ts';

/**
 * A service world's controller with SERVICE_LBC_SERVICES on. Its Kubernetes access is the world's FakeKubernetes, which
 * also answers the AWS Load Balancer Controller's leader Lease (`w.kube.workloads.leases`: none unless a test holds it).
 */
export function lbcWorld(w: ServiceWorld) {
  const deps: ServiceDeps = { ...w.serviceDeps, kube: w.kube, lbcServices: true };
  let sent = 0;
  const key = (name: string, namespace = 'default'): KeyMessage => ({
    kind: 'Service',
    namespace,
    name,
    hint: { eventType: 'RESYNC', eventId: `lbc-${++sent}` },
  });
  return {
    deps,
    /** How often the Lease was read. */
    leaseReads: () => w.kube.callCount('getLease'),
    /** One Lambda invocation for the Service's key. */
    pass: (name = 'web', options: { deps?: ServiceDeps } = {}) =>
      w.invoke(serviceReconciler, options.deps ?? deps, [fifoRecord(key(name), { queueArn: SERVICE_QUEUE_ARN })]),
    /** The Service's key played until the queue is empty. */
    converge: (name = 'web', options: { deps?: ServiceDeps } = {}) => w.converge([key(name)], options.deps ?? deps),
  };
}

/** A uid fixed per test, so the reference's names (which hash it) are known. */
export const WEB_UID = '3f6c1b2a-9d7e-4c1f-8a5b-0e2d4c6f8a9b';

/** A Service the reference serves: class `service.k8s.aws/nlb` unless `annotations` hand it over by type. */
export function putLbcService(
  w: ServiceWorld,
  options: {
    name?: string;
    annotations?: Record<string, string>;
    ports?: ServicePortSpec[];
    byClass?: boolean;
    spec?: Partial<NonNullable<Service['spec']>>;
    finalizers?: string[];
    hostname?: string;
  } = {},
): Service {
  const name = options.name ?? 'web';
  return w.kube.putService({
    metadata: {
      name,
      namespace: 'default',
      uid: name === 'web' ? WEB_UID : `${WEB_UID.slice(0, -4)}${name.slice(0, 4).padEnd(4, '0')}`,
      annotations: options.annotations ?? {},
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: {
      type: 'LoadBalancer',
      ports: options.ports ?? [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      selector: { app: name },
      externalTrafficPolicy: 'Cluster',
      ...(options.byClass === false ? {} : { loadBalancerClass: 'service.k8s.aws/nlb' }),
      ...options.spec,
    },
    ...(options.hostname ? { status: { loadBalancer: { ingress: [{ hostname: options.hostname }] } } } : {}),
  });
}

/** The Service `web` of the reference stack: two TCP ports on node ports. */
export const REFERENCE_PORTS: ServicePortSpec[] = [
  { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 },
  { name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 30443 },
];
const REFERENCE_ID = { clusterName: CLUSTER, namespace: 'default', name: 'web', uid: WEB_UID };
/** The reference's tracking tags of one resource of the Service `default/web`. */
export const tracking = (resource: string) => ({
  'elbv2.k8s.aws/cluster': CLUSTER,
  'service.k8s.aws/stack': 'default/web',
  'service.k8s.aws/resource': resource,
});

/** What the reference leaves: its managed and backend groups, the NLB, a target group and listener per port, targets. */
export async function referenceStack(
  w: ServiceWorld,
  nodes: readonly { instance: { instanceId: string } }[],
): Promise<{ lb: LoadBalancer; groups: Map<number, string>; backend: string }> {
  const ec2 = w.ec2Port;
  const elbv2 = w.elbv2Port;
  const managed = await ec2.createSecurityGroup({
    groupName: lbcSecurityGroupName(REFERENCE_ID),
    description: '[k8s] Managed SecurityGroup for LoadBalancer',
    vpcId: VPC,
    tags: tracking('ManagedLBSecurityGroup'),
  });
  const backend = await ec2.createSecurityGroup({
    groupName: `k8s-traffic-${CLUSTER}-0123456789`,
    description: '[k8s] Shared Backend SecurityGroup for LoadBalancer',
    vpcId: VPC,
    tags: { 'elbv2.k8s.aws/cluster': CLUSTER, 'elbv2.k8s.aws/resource': 'backend-sg' },
  });
  if (managed === 'name-taken' || backend === 'name-taken') throw new Error('groups');
  await ec2.authorizeSecurityGroupIngress(
    managed.groupId,
    REFERENCE_PORTS.map((p) => ({ protocol: 'tcp', fromPort: p.port, toPort: p.port, cidrIpv4: '0.0.0.0/0' })),
  );
  await ec2.authorizeSecurityGroupIngress(NODE_GROUP, [
    {
      protocol: 'tcp',
      fromPort: 30080,
      toPort: 30443,
      sourceGroupId: backend.groupId,
      description: 'elbv2.k8s.aws/targetGroupBinding=shared',
    },
  ]);
  const lb = await elbv2.createLoadBalancer({
    name: lbcLoadBalancerName(REFERENCE_ID, 'internal'),
    scheme: 'internal',
    subnetMappings: [20, 21, 22].map((i) => ({ subnetId: makeSubnet({ index: i }).subnetId })),
    securityGroups: [managed.groupId, backend.groupId],
    tags: tracking('LoadBalancer'),
  });
  if (lb === 'name-taken') throw new Error('lb');
  w.elbv2.activate(lb.name);
  const groups = new Map<number, string>();
  for (const port of REFERENCE_PORTS) {
    const name = lbcTargetGroupName(REFERENCE_ID, {
      port: port.nodePort!,
      servicePort: port.port,
      targetType: 'instance',
      protocol: 'TCP',
      healthCheckProtocol: 'TCP',
      healthCheckIntervalSeconds: 10,
    });
    const group = await elbv2.createTargetGroup({
      name,
      protocol: 'TCP',
      port: port.nodePort!,
      targetType: 'instance',
      vpcId: VPC,
      healthCheck: LBC_TCP_HEALTH_CHECK,
      tags: tracking(`default/web:${port.port}`),
    });
    if (group === 'name-taken') throw new Error('tg');
    await elbv2.createListener(
      lb.arn,
      { port: port.port, protocol: 'TCP', targetGroupArn: group.arn },
      tracking(String(port.port)),
    );
    await elbv2.registerTargets(
      group.arn,
      nodes.map((n) => ({ id: n.instance.instanceId, port: port.nodePort! })),
    );
    for (const n of nodes) w.elbv2.setTargetHealth(group.arn, n.instance.instanceId, 'healthy');
    groups.set(port.port, group.arn);
  }
  putLbcService(w, { ports: REFERENCE_PORTS, finalizers: ['service.k8s.aws/resources'], hostname: lb.dnsName });
  w.resetCounters();
  return { lb: w.elbv2.loadBalancerNamed(lb.name)!, groups, backend: backend.groupId };
}
