import { createRealMode, type RealMode, type RealModeOptions } from '../../bin/real.ts';
import { controllerPlan, type RealPorts, realSwitches, resyncPlan } from '../../bin/real-plan.ts';
import { instanceInSubnet } from '../../bin/simulation.ts';
import { ClientNodeLeases } from '../../functions/relay/client-node-leases.ts';
import { ClientNodeListWatch } from '../../functions/relay/client-node-source.ts';
import type { KubeObject } from '../../functions/relay/kinds.ts';
import {
  FakeCluster,
  type FakeKubeApi,
  kubeConfigFor,
  startFakeKubeApi,
} from '../../functions/relay/testing/fake-kube-api.ts';
import { FAST } from '../../functions/relay/testing/relay.ts';
import { AcmAdapter } from '../../shared/aws/acm-adapter.ts';
import { AutoScalingAdapter } from '../../shared/aws/autoscaling-adapter.ts';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import type { Instance } from '../../shared/aws/ec2-port.ts';
import { ElbAdapter } from '../../shared/aws/elb-adapter.ts';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import { FakeAcm } from '../../shared/aws/fakes/acm/fake-acm.ts';
import { FakeAutoScaling } from '../../shared/aws/fakes/autoscaling/fake-autoscaling.ts';
import { FakeEc2, makeInstance, makeRouteTable, makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElb } from '../../shared/aws/fakes/elb/fake-elb.ts';
import { FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { FakeWafv2 } from '../../shared/aws/fakes/wafv2/fake-wafv2.ts';
import { Wafv2Adapter } from '../../shared/aws/wafv2-adapter.ts';
import { systemClock } from '../../shared/clock.ts';
import { loadConfig } from '../../shared/config/config.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import { FakeIngresses, fakeIngressControllerKube } from '../../shared/k8s/fakes/ingresses.ts';
import {
  FakeTargetGroupBindings,
  fakeStackBindings,
  fakeTgbControllerKube,
} from '../../shared/k8s/fakes/target-group-bindings.ts';
import { type Log, silentLog } from '../../shared/observability/log.ts';
import { RecordingMetrics } from '../../shared/observability/metrics.ts';
import { makeNode } from './nodes.ts';

/**
 * `npm start -- --real` against stand-ins: the relay lists, watches and holds its Lease over HTTPS on
 * the relay's fake API server (functions/relay/testing/fake-kube-api.ts) through the same client-node adapters
 * as in a cluster; the reconcilers read and write a FakeKubernetes whose every change is copied to that
 * server, so what they write is watched as a real API server would report it; EC2 is FakeEc2 behind
 * the real adapter. Time is real: this is what a local run feels like.
 */

export const LOCAL_CLUSTER = 'local-real';
const VPC = 'vpc-0a1b2c3d';
/** The Windows Nodes' instance type, with EC2's figures (IPv4 addresses per interface), and their subnet. */
export const WINDOWS_INSTANCE_TYPE = {
  instanceType: 'm5.xlarge',
  maximumNetworkInterfaces: 4,
  ipv4AddressesPerInterface: 15,
  ipv6AddressesPerInterface: 15,
};
export const WINDOWS_SUBNET = makeSubnet({ index: 10, zone: 'eu-west-1a' });
const NODE_GROUP = 'sg-0000000000000node';
const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];

export interface LocalRealWorld {
  cluster: FakeCluster;
  api: FakeKubeApi;
  kube: FakeKubernetes;
  ec2: FakeEc2;
  elbv2: FakeElbv2;
  elb: FakeElb;
  autoscaling: FakeAutoScaling;
  /** The Ingress controller's Kubernetes side (copied to the API server, but Namespaces) and its ACM and WAFv2 accounts. */
  ingresses: FakeIngresses;
  acm: FakeAcm;
  wafv2: FakeWafv2;
  /** The TargetGroupBindings (copied to the API server, which the relay watches them on). */
  bindings: FakeTargetGroupBindings;
  /** A cluster-tagged running instance, launched, with the Node kubelet would register for it (not yet registered). */
  launch(index: number): { instance: Instance; node: ReturnType<typeof makeNode> };
  /** As `launch`, a Windows instance whose interface is in WINDOWS_SUBNET, and its Node labelled Windows. */
  launchWindows(index: number): { instance: Instance; node: ReturnType<typeof makeNode> };
  close(): Promise<void>;
}

/** Every change of a Node, Service or EndpointSlice in `kube` becomes the same change on the API server. */
function mirror(kube: FakeKubernetes, cluster: FakeCluster): () => void {
  const key = (object: KubeObject) =>
    object.metadata?.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata?.name;
  return kube.watch((change) => {
    const object = structuredClone(change.object) as unknown as KubeObject;
    if (change.type === 'DELETED') cluster.remove(change.kind, key(object)!);
    else cluster.apply(change.kind, object);
  });
}

/** Every change of an Ingress, IngressClass or IngressClassParams in `ingresses` becomes the same on the API server. */
function mirrorIngresses(ingresses: FakeIngresses, cluster: FakeCluster): () => void {
  return ingresses.watch((change) => {
    // Namespaces are read by the controller only, never watched by the relay.
    if (change.kind === 'Namespace') return;
    const object = structuredClone(change.object) as unknown as KubeObject;
    const { namespace, name } = object.metadata ?? {};
    if (change.type === 'DELETED') cluster.remove(change.kind, namespace ? `${namespace}/${name}` : name!);
    else cluster.apply(change.kind, object);
  });
}

/** Every change of a TargetGroupBinding in `bindings` becomes the same on the API server. */
function mirrorBindings(bindings: FakeTargetGroupBindings, cluster: FakeCluster): () => void {
  return bindings.watch((change) => {
    const object = structuredClone(change.object) as unknown as KubeObject;
    const { namespace, name } = object.metadata ?? {};
    if (change.type === 'DELETED') cluster.remove('TargetGroupBinding', `${namespace}/${name}`);
    else cluster.apply('TargetGroupBinding', object);
  });
}

/** What internet-facing load balancers need: a public subnet per zone and the Nodes' cluster-tagged security group. */
function seedVpc(ec2: FakeEc2): void {
  ZONES.forEach((zone, i) => {
    ec2.putSubnet(makeSubnet({ index: 10 + i, zone, tags: { 'kubernetes.io/role/elb': '1' } }));
  });
  ec2.putRouteTable({
    ...makeRouteTable({ clusterName: LOCAL_CLUSTER }),
    associations: ZONES.map((_, i) => ({ subnetId: makeSubnet({ index: 10 + i }).subnetId, main: false })),
  });
  ec2.putSecurityGroup({
    groupId: NODE_GROUP,
    groupName: 'nodes',
    vpcId: VPC,
    description: 'cluster nodes',
    tags: { [`kubernetes.io/cluster/${LOCAL_CLUSTER}`]: 'owned' },
    ingress: [],
  });
}

export async function createLocalRealWorld(): Promise<LocalRealWorld> {
  const cluster = new FakeCluster();
  const api = await startFakeKubeApi(cluster);
  const kube = new FakeKubernetes(systemClock);
  const ec2 = new FakeEc2(systemClock);
  seedVpc(ec2);
  ec2.instanceTypes.set(WINDOWS_INSTANCE_TYPE.instanceType, WINDOWS_INSTANCE_TYPE);
  const elbv2 = new FakeElbv2(systemClock, ec2);
  const unmirror = mirror(kube, cluster);
  const ingresses = new FakeIngresses(systemClock);
  const unmirrorIngresses = mirrorIngresses(ingresses, cluster);
  const bindings = new FakeTargetGroupBindings(systemClock);
  const unmirrorBindings = mirrorBindings(bindings, cluster);
  const launch = (instance: Instance, labels: Record<string, string> = {}) => {
    ec2.putInstance(instance);
    return { instance, node: makeNode(instance.privateDnsName!, { labels }) };
  };
  return {
    cluster,
    api,
    kube,
    ec2,
    elbv2,
    elb: new FakeElb(systemClock, ec2),
    autoscaling: new FakeAutoScaling(systemClock),
    ingresses,
    acm: new FakeAcm(systemClock),
    wafv2: new FakeWafv2(systemClock),
    bindings,
    launch(index) {
      const base = makeInstance({ index, clusterName: LOCAL_CLUSTER });
      return launch({
        ...base,
        networkInterfaces: base.networkInterfaces.map((eni) => ({ ...eni, securityGroupIds: [NODE_GROUP] })),
      });
    },
    launchWindows(index) {
      const ip = `10.0.10.${200 + index}`;
      const base = makeInstance({
        index,
        clusterName: LOCAL_CLUSTER,
        instanceType: WINDOWS_INSTANCE_TYPE.instanceType,
      });
      return launch(instanceInSubnet(base, WINDOWS_SUBNET.subnetId, ip, [NODE_GROUP]), {
        'kubernetes.io/os': 'windows',
      });
    },
    async close() {
      unmirror();
      unmirrorIngresses();
      unmirrorBindings();
      await api.close();
    },
  };
}

export interface LocalProcess {
  mode: RealMode;
  metrics: RecordingMetrics;
  /** Resolves when `run` returned (after `stop`, or by itself with `once`). */
  done: Promise<void>;
  stop(): Promise<void>;
}

export interface LocalProcessOptions {
  identity?: string;
  /** `--resync-seconds`; default an hour, so that whatever is reconciled was started by an event. */
  resyncSeconds?: number;
  once?: boolean;
  election?: RealModeOptions['relay']['election'];
  migration?: RealModeOptions['relay']['migration'];
  ec2Events?: RealModeOptions['ec2Events'];
  /** `--vpc-id`: also the service controller, in the world's VPC. */
  services?: boolean;
  /** `--interruption` (CCM_INTERRUPTION=true). */
  interruption?: boolean;
  /** `--ipam` (CCM_IPAM=true); with the world's VPC. */
  ipam?: boolean;
  /** Run the Ingress controller (its `--ingress`), on the world's FakeIngresses, FakeAcm and FakeWafv2. */
  ingress?: boolean;
  /** Run the TargetGroupBinding controller (its `--target-group-binding`), on the world's FakeTargetGroupBindings. */
  targetGroupBinding?: boolean;
  /** More of the Lambdas' settings, as the environment would give them (INTERRUPTION_DRAIN_REQUEUE_SECONDS, ...). */
  settings?: Record<string, string>;
  /** The relay's own timings (forwarder linger, node-set debounce, backoffs), as `npm start -- --real` has them, instead of FAST. */
  deployedTimings?: boolean;
  log?: Log;
}

/** Short Lease timings, so a takeover takes about a second. */
export const TEST_ELECTION = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 };

/** The world's fakes behind the real adapters, where `npm start -- --real` has the kubeconfig's and the SDK's. */
function fakePorts(w: LocalRealWorld): RealPorts {
  return {
    serviceKube: () => w.kube,
    elbv2: () => new Elbv2Adapter(w.elbv2),
    elb: () => new ElbAdapter(w.elb),
    drain: () => w.kube,
    autoscaling: () => new AutoScalingAdapter(w.autoscaling),
    pods: () => w.kube,
    ingressKube: () => fakeIngressControllerKube(w.ingresses, w.kube),
    acm: () => new AcmAdapter(w.acm),
    wafv2: () => new Wafv2Adapter(w.wafv2),
    tgbKube: () => fakeTgbControllerKube(w.bindings, w.kube),
    stackBindings: () => fakeStackBindings(w.bindings, w.kube),
  };
}

/**
 * One `npm start -- --real` process on the world (its own bearer token, so the API server tells processes apart):
 * the configuration read as real mode reads it (shared/config), the controllers switched on and given their
 * settings by real mode's own plan (bin/real-plan.ts), the resync periods as deployed but for `resyncSeconds`.
 */
export function startLocalProcess(w: LocalRealWorld, options: LocalProcessOptions = {}): LocalProcess {
  const identity = options.identity ?? 'laptop_local_1';
  const kubeConfig = kubeConfigFor(w.api, `token-${identity}`);
  const metrics = new RecordingMetrics();
  const config = loadConfig({
    CLUSTER_NAME: LOCAL_CLUSTER,
    AWS_REGION: 'eu-west-1',
    ...(options.services || options.ipam || options.ingress ? { VPC_ID: VPC } : {}),
    ...options.settings,
  });
  const switches = realSwitches(config, {
    interruption: options.interruption ?? false,
    ipam: options.ipam ?? false,
    ingress: options.ingress ?? false,
    targetGroupBinding: options.targetGroupBinding ?? false,
  });
  const { controllers } = controllerPlan(config, switches, false, fakePorts(w));
  // Tests wait less than the Lambdas' 5 s minimum for a provisioning load balancer to be looked at again.
  if (controllers.service)
    Object.assign(controllers.service, { provisioningRequeueSeconds: 1, cleanupRequeueSeconds: 1 });
  const mode = createRealMode(
    {
      engine: {
        clusterName: config.CLUSTER_NAME,
        region: config.AWS_REGION,
        ipFamilies: config.NODE_IP_FAMILIES,
        clock: systemClock,
        ec2: new Ec2Adapter(w.ec2),
        kube: w.kube,
        log: options.log ?? silentLog,
        metrics,
        controllers,
      },
      relay: {
        identity,
        lease: { namespace: 'kube-system', name: 'serverless-ccm-relay' },
        election: options.election ?? TEST_ELECTION,
        ...(options.migration ? { migration: options.migration } : {}),
        ...(options.deployedTimings ? {} : FAST),
      },
      resyncSeconds: resyncPlan(options.resyncSeconds ?? 3_600),
      once: options.once ?? false,
      ...(options.ec2Events ? { ec2Events: options.ec2Events } : {}),
    },
    { source: new ClientNodeListWatch(kubeConfig), leases: new ClientNodeLeases(kubeConfig) },
  );
  const abort = new AbortController();
  const done = mode.run(abort.signal);
  return {
    mode,
    metrics,
    done,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

/**
 * Nothing left to do: the relay has seen every change made to the cluster (the reconcilers' own writes
 * included), sent every key, and every queue is empty.
 */
export function quiet(w: LocalRealWorld, p: LocalProcess): boolean {
  const seen = p.mode.relay.resourceVersions();
  const caughtUp = p.mode.relay.kinds.every((kind) => Number(seen[kind] ?? 0) >= w.cluster.lastRevision(kind));
  return caughtUp && p.mode.relay.status().pending === 0 && p.mode.engine.depth() === 0;
}

/** Poll `check` until it holds; fails naming `what` after `timeoutMs`. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
