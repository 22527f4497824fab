import { AcmAdapter } from '../shared/aws/acm-adapter.ts';
import { Ec2Adapter } from '../shared/aws/ec2-adapter.ts';
import type { Instance, InstanceState } from '../shared/aws/ec2-port.ts';
import { ElbAdapter } from '../shared/aws/elb-adapter.ts';
import { Elbv2Adapter } from '../shared/aws/elbv2-adapter.ts';
import { FakeAcm } from '../shared/aws/fakes/acm/fake-acm.ts';
import { FakeEc2, makeInstance, makeRouteTable, makeSubnet } from '../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElb } from '../shared/aws/fakes/elb/fake-elb.ts';
import { FakeElbv2 } from '../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { FakeWafv2 } from '../shared/aws/fakes/wafv2/fake-wafv2.ts';
import { Wafv2Adapter } from '../shared/aws/wafv2-adapter.ts';
import { FakeClock } from '../shared/clock.ts';
import { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import { FakeIngresses, fakeIngressControllerKube } from '../shared/k8s/fakes/ingresses.ts';
import {
  FakeTargetGroupBindings,
  fakeStackBindings,
  fakeTgbControllerKube,
} from '../shared/k8s/fakes/target-group-bindings.ts';
import { isNodeReady, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { parseCidr } from '../shared/net/cidr.ts';
import type { Log } from '../shared/observability/log.ts';
import { RecordingMetrics } from '../shared/observability/metrics.ts';
import { createEngine, DLQS, type EngineOptions } from './engine.ts';
import { ingressScenario } from './sim-ingress.ts';
import { interruptionScenario } from './sim-interruption.ts';
import { ipamScenario, SIM_IPAM_COOLDOWN_SECONDS, SIM_WINDOWS_INSTANCE_TYPE } from './sim-ipam.ts';
import { startSimulatedRelay } from './sim-relay.ts';
import { tgbScenario } from './sim-tgb.ts';

export const SIM_CLUSTER = 'local-sim';
const NODE_SECURITY_GROUP = 'sg-00000000000000000';
/** The Service the scenario creates: a `type: LoadBalancer` on port 80 -> NodePort 30080. */
export const SIM_SERVICE = { namespace: 'shop', name: 'web' };

/**
 * A Service moved over from the reference cloud controller: its Classic ELB (the reference's `a<uid>` name and
 * tags, a `k8s-elb-` group tagged with the cluster only) exists before the scenario starts, and stays.
 */
export const SIM_CLASSIC_SERVICE = { namespace: 'shop', name: 'legacy', uid: '7d2c1f0e-3b4a-4c5d-9e8f-a0b1c2d3e4f5' };
const SIM_CLASSIC_NAME = `a${SIM_CLASSIC_SERVICE.uid.replace(/-/g, '')}`.slice(0, 32);
const SIM_CLASSIC_GROUP = 'sg-0000000000000clb0';

/** The cluster's pod network (kube-controller-manager --cluster-cidr); each Node gets a /24 of it. */
export const SIM_CLUSTER_CIDR = '10.244.0.0/16';
const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
/**
 * The last Nodes of the scenario are Windows, in the first zone's subnet: their Pods get VPC addresses
 * (bin/sim-ipam.ts). Only when there are Nodes enough beyond the four the other stories use.
 */
export const SIM_WINDOWS_NODES = 2;

export interface SimulationOptions {
  nodes: number;
  /** Real milliseconds each simulated EC2 call takes. */
  ec2LatencyMs: number;
  /** Throttle this many DescribeInstances calls early on, to show backoff at work. */
  throttleDescribes: number;
  /** Simulated seconds per real second; 0 runs as fast as possible (tests). */
  speed?: number;
  log: Log;
}

type Step = { at: number; what: string; run: () => void | Promise<void> };

/**
 * The embedded simulated AWS account and cluster: the fakes the tests use, wired to the real
 * reconcilers through an in-process SQS that keeps the FIFO workqueue semantics. The relay's change
 * router turns changes that matter into keys (bin/sim-relay.ts); EC2 state changes become EventBridge events on
 * the events queue, as in AWS. Scenario time is simulated (the clock jumps when nothing is due);
 * EC2 latency is real.
 */
export function createSimulation(options: SimulationOptions) {
  const clock = new FakeClock();
  const start = clock.now();
  const ec2 = new FakeEc2(clock);
  const elbv2 = new FakeElbv2(clock, ec2);
  const elb = new FakeElb(clock, ec2);
  const elbPort = new ElbAdapter(elb);
  ec2.latencyMs = options.ec2LatencyMs;
  const kube = new FakeKubernetes(clock);
  const metrics = new RecordingMetrics();
  const log = options.log;
  const ingresses = new FakeIngresses(clock);
  const bindings = new FakeTargetGroupBindings(clock);
  const elbv2Port = new Elbv2Adapter(elbv2);
  // The binding controller runs, so the Ingress and service controllers keep their stack bindings, as deployed with
  // CCM_TARGET_GROUP_BINDING=true (STACK_TARGET_GROUP_BINDINGS).
  const stackBindings = fakeStackBindings(bindings, kube);
  const engine = createEngine({
    clusterName: SIM_CLUSTER,
    region: 'eu-west-1',
    ipFamilies: ['ipv4'],
    clock,
    // The reconcilers reach the simulated account through the real adapter, as they reach EC2.
    ec2: new Ec2Adapter(ec2),
    kube,
    log,
    metrics,
    // Every controller of shared/controllers.ts runs: the type asks for each one's options.
    controllers: {
      node: {},
      'node-lifecycle': {},
      route: { clusterCidrs: [clusterCidr()], routeTableLimit: 50 },
      service: {
        vpcId: 'vpc-0a1b2c3d',
        elbv2: new Elbv2Adapter(elbv2),
        elb: elbPort,
        kube,
        provisioningRequeueSeconds: 30,
        stackBindings,
      },
      interruption: { drain: kube },
      ipam: { pods: kube, vpcId: 'vpc-0a1b2c3d', cooldownSeconds: SIM_IPAM_COOLDOWN_SECONDS },
      // Runs as deployed with CCM_INGRESS=true: the scenario's IngressGroup (bin/sim-ingress.ts).
      ingress: {
        vpcId: 'vpc-0a1b2c3d',
        kube: fakeIngressControllerKube(ingresses, kube),
        elbv2: new Elbv2Adapter(elbv2),
        acm: new AcmAdapter(new FakeAcm(clock)),
        wafv2: new Wafv2Adapter(new FakeWafv2(clock)),
        stackBindings,
      },
      // Runs as deployed with CCM_TARGET_GROUP_BINDING=true: the scenario's binding (bin/sim-tgb.ts).
      'target-group-binding': { kube: fakeTgbControllerKube(bindings, kube), elbv2: elbv2Port },
    } satisfies Required<NonNullable<EngineOptions['controllers']>>,
  });
  const sqs = engine.sqs;
  // The VPC: the cluster's route table (default route to the internet gateway, so its subnets are
  // public), one subnet per zone tagged for internet-facing load balancers, the Nodes' security group.
  ec2.putRouteTable({
    ...makeRouteTable({ clusterName: SIM_CLUSTER }),
    associations: ZONES.map((zone, i) => ({ subnetId: makeSubnet({ index: 100 + i, zone }).subnetId, main: false })),
  });
  ZONES.forEach((zone, i) => {
    ec2.putSubnet(
      makeSubnet({ index: 100 + i, zone, tags: { Name: `public-${zone}`, 'kubernetes.io/role/elb': '1' } }),
    );
  });
  ec2.putSecurityGroup({
    groupId: NODE_SECURITY_GROUP,
    groupName: `${SIM_CLUSTER}-nodes`,
    vpcId: 'vpc-0a1b2c3d',
    description: 'cluster nodes',
    tags: { [`kubernetes.io/cluster/${SIM_CLUSTER}`]: 'owned' },
    ingress: [],
  });
  ec2.instanceTypes.set(SIM_WINDOWS_INSTANCE_TYPE.instanceType, SIM_WINDOWS_INSTANCE_TYPE);
  let classicHostname: string | undefined;
  /** What the reference controller left for a Service on a Classic ELB, and that Service. */
  async function seedReferenceClassic(): Promise<string> {
    const clusterTag = `kubernetes.io/cluster/${SIM_CLUSTER}`;
    ec2.putSecurityGroup({
      groupId: SIM_CLASSIC_GROUP,
      groupName: `k8s-elb-${SIM_CLASSIC_NAME}`,
      vpcId: 'vpc-0a1b2c3d',
      description: `Security group for Kubernetes ELB ${SIM_CLASSIC_NAME} (shop/legacy)`,
      tags: { [clusterTag]: 'owned' },
      ingress: [{ protocol: 'tcp', fromPort: 8080, toPort: 8080, cidrIpv4: '0.0.0.0/0' }],
    });
    const nodes = ec2.securityGroups.get(NODE_SECURITY_GROUP)!;
    nodes.ingress.push({ protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: SIM_CLASSIC_GROUP });
    const created = await elbPort.createLoadBalancer({
      name: SIM_CLASSIC_NAME,
      scheme: 'internet-facing',
      subnets: ZONES.map((zone, i) => makeSubnet({ index: 100 + i, zone }).subnetId),
      securityGroups: [SIM_CLASSIC_GROUP],
      listeners: [{ loadBalancerPort: 8080, protocol: 'TCP', instancePort: 30088, instanceProtocol: 'TCP' }],
      tags: { [clusterTag]: 'owned', 'kubernetes.io/service-name': 'shop/legacy' },
    });
    if (created === 'name-taken') throw new Error(`simulation: ${SIM_CLASSIC_NAME} exists`);
    kube.putService({
      metadata: {
        ...SIM_CLASSIC_SERVICE,
        finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
      },
      spec: {
        type: 'LoadBalancer',
        ports: [{ name: 'http', protocol: 'TCP', port: 8080, targetPort: 8080, nodePort: 30088 }],
        selector: { app: 'legacy' },
        externalTrafficPolicy: 'Cluster',
      },
      status: { loadBalancer: { ingress: [{ hostname: created.dnsName }] } },
    });
    return created.dnsName;
  }
  const t = () => `t+${((clock.now() - start) / 1000).toFixed(1)}s`;
  startSimulatedRelay(kube, engine, clock, ingresses, bindings);
  const recordEvent = kube.recordEvent.bind(kube);
  kube.recordEvent = async (event) => {
    await recordEvent(event);
    log.info(`${t()} event ${event.type} ${event.reason} ${event.involvedObject.kind}/${event.involvedObject.name}`, {
      message: event.message,
    });
  };

  // The scenario: instances boot and their kubelets register; later one stops and one terminates.
  const steps: Step[] = [];
  const instances: Instance[] = [];
  const at = (seconds: number, what: string, run: Step['run']) => steps.push({ at: start + seconds * 1000, what, run });
  const setState = (instance: Instance, state: InstanceState) => {
    ec2.setState(instance.instanceId, state);
    void engine.enqueueEc2Event(
      JSON.stringify({
        version: '0',
        id: `sim-${instance.instanceId}-${state}`,
        'detail-type': 'EC2 Instance State-change Notification',
        source: 'aws.ec2',
        account: '000000000000',
        time: new Date(clock.now()).toISOString(),
        region: 'eu-west-1',
        resources: [`arn:aws:ec2:eu-west-1:000000000000:instance/${instance.instanceId}`],
        detail: { 'instance-id': instance.instanceId, state },
      }),
    );
  };
  const setReady = (name: string, status: 'True' | 'Unknown') => {
    kube.mutateNode(name, (n) => {
      n.status!.conditions = [
        { type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'NodeStatusUnknown' },
      ];
    });
  };

  const windows: Instance[] = [];
  const windowsNodes = options.nodes >= 4 + SIM_WINDOWS_NODES ? SIM_WINDOWS_NODES : 0;
  for (let i = 0; i < options.nodes; i++) {
    const isWindows = i >= options.nodes - windowsNodes;
    const base = makeInstance({
      index: 1 + i,
      availabilityZone: isWindows ? ZONES[0] : ZONES[i % ZONES.length],
      clusterName: SIM_CLUSTER,
      state: 'pending',
      instanceType: isWindows ? SIM_WINDOWS_INSTANCE_TYPE.instanceType : i % 2 ? 'm5.large' : 't3.medium',
    });
    const instance: Instance = isWindows
      ? windowsInstance(base, windows.length)
      : {
          ...base,
          networkInterfaces: base.networkInterfaces.map((eni) => ({ ...eni, securityGroupIds: [NODE_SECURITY_GROUP] })),
        };
    instances.push(instance);
    if (isWindows) windows.push(instance);
    const launch = 1 + i * 0.5;
    at(launch, `launch ${instance.instanceId}`, () => {
      // New instances are not visible to every EC2 endpoint at once.
      ec2.putInstance(instance, { invisibleForCalls: i % 3 === 0 ? 1 : 0 });
    });
    at(launch + 8, `${instance.instanceId} running`, () => setState(instance, 'running'));
    at(launch + 20, `kubelet registers ${instance.privateDnsName}`, () => {
      kube.putNode({
        metadata: {
          name: instance.privateDnsName!,
          labels: {
            'kubernetes.io/hostname': instance.privateDnsName!,
            ...(isWindows ? { 'kubernetes.io/os': 'windows' } : {}),
          },
        },
        spec: {
          // kube-controller-manager allocates the pod CIDR when the Node registers.
          podCIDR: `10.244.${i}.0/24`,
          podCIDRs: [`10.244.${i}.0/24`],
          taints: [{ key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' }],
        },
        status: {
          addresses: [{ type: 'Hostname', address: instance.privateDnsName! }],
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        },
      });
    });
  }
  at(
    1 + options.nodes * 0.5 + 22,
    `create Service ${SIM_SERVICE.namespace}/${SIM_SERVICE.name} (type LoadBalancer)`,
    () => {
      // The relay sees it and sends its key (bin/sim-relay.ts).
      kube.putService({
        metadata: { ...SIM_SERVICE },
        spec: {
          type: 'LoadBalancer',
          ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
          selector: { app: 'web' },
          externalTrafficPolicy: 'Cluster',
        },
      });
    },
  );
  at(
    0.5,
    `the reference controller's Classic ELB ${SIM_CLASSIC_NAME} of ${SIM_CLASSIC_SERVICE.namespace}/${SIM_CLASSIC_SERVICE.name}`,
    async () => {
      classicHostname = await seedReferenceClassic();
    },
  );
  const stopped = instances[1];
  const terminated = instances[2];
  const end = 1 + options.nodes * 0.5 + 30;
  if (stopped) {
    at(end, `stop ${stopped.instanceId}`, () => setState(stopped, 'stopped'));
    at(end + 40, `kubelet of ${stopped.privateDnsName} goes silent`, () =>
      setReady(stopped.privateDnsName!, 'Unknown'),
    );
  }
  if (terminated) {
    const dns = terminated.privateDnsName!;
    at(end + 10, `terminate ${terminated.instanceId}`, () => setState(terminated, 'terminated'));
    at(end + 50, `kubelet of ${dns} goes silent`, () => setReady(dns, 'Unknown'));
  }
  // A spot interruption of a fourth Node (bin/sim-interruption.ts), once the NLB is active: while it provisions,
  // the Service's key waits out its provisioning requeue, and a deregistration with it.
  const interruption =
    instances[3] &&
    interruptionScenario(
      {
        clock,
        start,
        kube,
        ec2,
        elbv2,
        elb,
        classicName: SIM_CLASSIC_NAME,
        enqueueEc2Event: engine.enqueueEc2Event,
        terminate: (instance) => setState(instance, 'terminated'),
        at,
      },
      instances[3],
      end + 85,
    );
  // Windows Pods get VPC addresses once the Windows Nodes are initialized; one goes and its address cools down.
  const ipam = ipamScenario({ clock, start, kube, ec2, log, at }, windows, end + 5);
  // An IngressGroup of two Ingresses gets one Application Load Balancer and keeps it when one member goes.
  const ingressGroup = ingressScenario({ kube, ingresses, elbv2, log, at }, end + 20);
  // A TargetGroupBinding follows a Deployment's scale-up, then holds its rollout until each new Pod is healthy.
  const binding = tgbScenario({ kube, bindings, elbv2, elbv2Port, vpcId: 'vpc-0a1b2c3d', log, at }, end + 25);
  if (options.throttleDescribes > 0) {
    at(1 + options.nodes * 0.25 + 20, 'EC2 starts throttling DescribeInstances', () =>
      ec2.throttle('DescribeInstances', options.throttleDescribes),
    );
  }
  steps.sort((a, b) => a.at - b.at);

  /** Move simulated time on; paced against the wall clock when a speed is set, so a person can watch. */
  async function pass(ms: number): Promise<void> {
    clock.advance(ms);
    if (options.speed) await new Promise((r) => setTimeout(r, ms / options.speed!));
  }

  /** Run the scenario to the end and until every queue is empty. Bounded. */
  async function runToCompletion(onTick?: () => void, maxTicks = 10_000): Promise<void> {
    for (let tick = 0; tick < maxTicks; tick++) {
      while (steps.length > 0 && steps[0]!.at <= clock.now()) {
        const step = steps.shift()!;
        log.info(`${t()} scenario: ${step.what}`);
        await step.run();
      }
      interruption?.tick();
      ipam?.tick();
      binding.tick();
      const handled = await engine.pumpOnce();
      onTick?.();
      if (handled > 0) {
        await pass(100); // a poll of the event source mapping
        continue;
      }
      const waits = [engine.nextVisibleInMs(), steps[0] ? steps[0].at - clock.now() : undefined].filter(
        (x): x is number => x !== undefined,
      );
      if (waits.length === 0) return;
      await pass(Math.max(100, Math.min(...waits)));
    }
    throw new Error(`simulation did not settle in ${maxTicks} ticks`);
  }

  /** What a converged cluster looks like; each problem is one line. */
  function problems(): string[] {
    const out: string[] = [];
    for (const instance of instances) {
      const live = ec2.instances.get(instance.instanceId);
      const node = kube.nodes.get(instance.privateDnsName!);
      if (live?.state === 'terminated') {
        if (node) out.push(`Node ${node.metadata.name} of terminated ${instance.instanceId} still exists`);
        continue;
      }
      if (!node) {
        out.push(`Node for ${instance.instanceId} missing`);
        continue;
      }
      if (!node.spec?.providerID) out.push(`Node ${node.metadata.name} not initialized`);
      if (node.spec?.taints?.some((x) => x.key === TAINT_UNINITIALIZED))
        out.push(`${node.metadata.name} still tainted uninitialized`);
      const shutdownTainted = node.spec?.taints?.some((x) => x.key === 'node.cloudprovider.kubernetes.io/shutdown');
      if (live?.state === 'stopped' && !isNodeReady(node) && !shutdownTainted) {
        out.push(`Node ${node.metadata.name} of stopped ${instance.instanceId} lacks the shutdown taint`);
      }
    }
    const routes = [...ec2.routeTables.values()][0]?.routes ?? [];
    for (const node of kube.nodes.values()) {
      const cidr = node.spec?.podCIDR;
      const id = node.spec?.providerID?.split('/').pop();
      if (!cidr || !id) continue;
      if (!routes.some((r) => r.destination === cidr && r.target.instanceId === id)) {
        out.push(`no route ${cidr} -> ${id} for Node ${node.metadata.name}`);
      }
      const networkUnavailable = node.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');
      if (networkUnavailable?.status !== 'False')
        out.push(`Node ${node.metadata.name} has no NetworkUnavailable=False`);
    }
    for (const route of routes) {
      if (
        route.destination.startsWith('10.244.') &&
        ![...kube.nodes.values()].some((n) => n.spec?.podCIDR === route.destination)
      ) {
        out.push(`route ${route.destination} has no Node`);
      }
    }
    const service = kube.services.get(`${SIM_SERVICE.namespace}/${SIM_SERVICE.name}`);
    const hostname = service?.status?.loadBalancer?.ingress?.[0]?.hostname;
    const lb = [...elbv2.loadBalancers.values()].find((l) => l.lb.dnsName === hostname);
    if (!service) out.push('the LoadBalancer Service is missing');
    else if (!lb)
      out.push(`Service ${SIM_SERVICE.namespace}/${SIM_SERVICE.name} has no load balancer hostname in its status`);
    else {
      if (lb.lb.state !== 'active') out.push(`load balancer ${lb.lb.name} is ${lb.lb.state}`);
      const wanted = runningNodeInstances();
      // The Service's own target groups (the Ingress group's are the Ingress scenario's to check).
      const registered = [...elbv2.targetGroups.values()]
        .filter((tg) => elbv2.targetGroupNamed(tg.tg.name)?.loadBalancerArns.includes(lb.lb.arn))
        .flatMap((tg) => [...tg.targets.values()])
        .filter((t) => t.state !== 'draining')
        .map((t) => t.target.id)
        .sort();
      if (JSON.stringify(wanted) !== JSON.stringify(registered)) {
        out.push(`targets ${registered.join(',')} != ready Nodes' instances ${wanted.join(',')}`);
      }
    }
    out.push(
      ...classicProblems(),
      ...(interruption?.problems() ?? []),
      ...(ipam?.problems() ?? []),
      ...ingressGroup.problems(),
      ...binding.problems(),
    );
    for (const dlq of DLQS) {
      if (sqs.depth(dlq) > 0) out.push(`${sqs.depth(dlq)} message(s) in ${dlq}`);
    }
    return out;
  }

  /** Instance targets since KEP-3458: every Node's running instance, Ready or not. */
  function runningNodeInstances(): string[] {
    return [...kube.nodes.values()]
      .map((n) => n.spec?.providerID?.split('/').pop())
      .filter((id): id is string => id !== undefined && ec2.instances.get(id)?.state === 'running')
      .sort();
  }

  /** The moved-over Service keeps its Classic ELB (same DNS name), with the Nodes' instances registered. */
  function classicProblems(): string[] {
    const service = kube.services.get(`${SIM_CLASSIC_SERVICE.namespace}/${SIM_CLASSIC_SERVICE.name}`);
    const lb = elb.describeNamed(SIM_CLASSIC_NAME);
    if (!service || !lb) return [`the moved-over Service or its Classic ELB ${SIM_CLASSIC_NAME} is gone`];
    const out: string[] = [];
    if (service.status?.loadBalancer?.ingress?.[0]?.hostname !== classicHostname) {
      out.push(`Service ${SIM_CLASSIC_SERVICE.name} no longer names its Classic ELB`);
    }
    const registered = (lb.Instances ?? []).map((i) => i.InstanceId!).sort();
    if (JSON.stringify(registered) !== JSON.stringify(runningNodeInstances())) {
      out.push(
        `Classic ELB instances ${registered.join(',')} != Nodes' running instances ${runningNodeInstances().join(',')}`,
      );
    }
    return out;
  }

  return {
    clock,
    start,
    ec2,
    elbv2,
    elb,
    kube,
    sqs,
    engine,
    metrics,
    instances,
    interruption,
    ipam,
    ingresses,
    ingressGroup,
    bindings,
    binding,
    runToCompletion,
    problems,
    elapsed: () => clock.now() - start,
  };
}

export type Simulation = ReturnType<typeof createSimulation>;

/**
 * A Windows instance with its primary interface in the first zone's subnet (10.0.100.0/24), where the IP address
 * manager takes its Pods' addresses from: the subnet must be one the simulated EC2 knows.
 */
function windowsInstance(base: Instance, nth: number): Instance {
  return instanceInSubnet(base, makeSubnet({ index: 100, zone: ZONES[0] }).subnetId, `10.0.100.${240 + nth}`, [
    NODE_SECURITY_GROUP,
  ]);
}

/** `base` with its address `ip` and its interface in `subnetId` (and those groups), named as EC2 names it. */
export function instanceInSubnet(base: Instance, subnetId: string, ip: string, securityGroupIds: string[]): Instance {
  return {
    ...base,
    subnetId,
    privateIpAddress: ip,
    privateDnsName: `ip-${ip.replaceAll('.', '-')}.eu-west-1.compute.internal`,
    networkInterfaces: base.networkInterfaces.map((eni) => ({
      ...eni,
      subnetId,
      privateIpAddresses: [{ address: ip, primary: true }],
      securityGroupIds,
    })),
  };
}

function clusterCidr() {
  const parsed = parseCidr(SIM_CLUSTER_CIDR);
  if (!parsed.ok) throw new Error(`bad simulation CIDR: ${parsed.error}`);
  return parsed.cidr;
}
