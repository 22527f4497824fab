import fc from 'fast-check';
import type { Instance, InstanceState } from '../../shared/aws/ec2-port.ts';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { IPV4_RESOURCE, VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';
import { TAINT_UNINITIALIZED } from '../../shared/k8s/node-helpers.ts';
import { ANNOTATION } from '../../shared/k8s/service-annotations.ts';
import { TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER } from '../../shared/k8s/service-port.ts';
import type { Pod, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { CLUSTER, type Cluster, NODE_GROUP, WINDOWS_SUBNET, ZONES } from './cluster.ts';
import { applyIngressOp, type IngressOp, IngressTruth, ingressOpArbitrary } from './ingress-ops.ts';
import { applyTgbOp, type TgbOp, TgbTruth, tgbOpArbitrary } from './tgb-ops.ts';

/**
 * A cluster history: what people and AWS do, step by step, with the controller's time between steps. The same
 * history runs calm and faulted. Steps that make no sense at that point (a Node joining for an instance never
 * launched, a second termination) are skipped, so any subsequence of a history is a history: fast-check shrinks
 * freely.
 */

/** Slots 0..2: Linux instances (zones a, b, c); slot 3: a Windows instance in the IP address manager's subnet. */
export const SLOTS = 4;
export const WINDOWS_SLOT = 3;
export const SERVICES = [
  { name: 'web', type: 'nlb', target: 'instance' },
  { name: 'legacy', type: 'classic', target: 'instance' },
  { name: 'api', type: 'nlb', target: 'ip' },
] as const;
export const NAMESPACE = 'shop';
export const WINDOWS_PODS = 4;
/** How long EC2's spot interruption warning comes before the interruption. */
const SPOT_NOTICE_MS = 2 * 60_000;

export type Op =
  /** EC2 launches the slot's instance; it stays unseen by this many lookups (eventual consistency). */
  | { op: 'launch'; slot: number; invisibleCalls: number }
  /** Its kubelet registers the Node (uninitialized taint); with `providerId`, kubelet set the provider ID itself. */
  | { op: 'join'; slot: number; providerId: boolean; ready: boolean }
  | { op: 'ready'; slot: number }
  | { op: 'stop'; slot: number }
  | { op: 'start'; slot: number }
  | { op: 'terminate'; slot: number }
  /** `kubectl delete node` (a scale-in). */
  | { op: 'leave'; slot: number }
  /** The cluster autoscaler marks the Node for scale-down (its taint): it leaves the load balancers, and stays. */
  | { op: 'scaleDown'; slot: number }
  /** Create the Service, or change it to this variant (ports, the internal scheme). */
  | { op: 'service'; svc: number; variant: number }
  | { op: 'deleteService'; svc: number }
  /** The ip-target Service's EndpointSlice now lists these endpoints (an empty list deletes it). */
  | { op: 'slice'; endpoints: number[] }
  /** Three replicas under a PodDisruptionBudget (minAvailable 2) on the slot's Node, then a spot warning for it. */
  | { op: 'spot'; slot: number }
  /** The VPC CNI ConfigMap's enable-windows-ipam. */
  | { op: 'cni'; on: boolean }
  | { op: 'winPod'; pod: number }
  | { op: 'deletePod'; pod: number }
  | { op: 'finishPod'; pod: number }
  /** Ingresses in IngressGroups (ingress-ops.ts). */
  | IngressOp
  /** TargetGroupBindings of target groups made outside the cluster (tgb-ops.ts). */
  | TgbOp;

export interface Step {
  op: Op;
  /** Simulated time to the next step, spread over `pumps` polls of every queue. */
  gapMs: number;
  pumps: number;
}

const slot = fc.integer({ min: 0, max: SLOTS - 1 });
const svc = fc.integer({ min: 0, max: SERVICES.length - 1 });
const pod = fc.integer({ min: 0, max: WINDOWS_PODS - 1 });

export const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ op: fc.constant('launch' as const), slot, invisibleCalls: fc.nat(3) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('join' as const), slot, providerId: fc.boolean(), ready: fc.boolean() }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('ready' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('stop' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('start' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('terminate' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('leave' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('scaleDown' as const), slot }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('service' as const), svc, variant: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteService' as const), svc }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('slice' as const),
      endpoints: fc.uniqueArray(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('spot' as const), slot }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cni' as const), on: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('winPod' as const), pod }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deletePod' as const), pod }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('finishPod' as const), pod }) },
  { weight: 6, arbitrary: ingressOpArbitrary },
  { weight: 1, arbitrary: tgbOpArbitrary },
);

export const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  op: opArbitrary,
  gapMs: fc.integer({ min: 0, max: 20_000 }),
  pumps: fc.integer({ min: 0, max: 3 }),
});

/** A slot's boot: its instance launched, then (usually) its kubelet registering, as steps. */
const bootArbitrary = (s: number): fc.Arbitrary<Step[]> =>
  fc
    .record({
      invisibleCalls: fc.oneof(fc.constant(0), fc.nat(3)),
      join: fc.option(fc.record({ providerId: fc.boolean(), ready: fc.boolean() }), { freq: 5 }),
      gapMs: fc.integer({ min: 0, max: 20_000 }),
      pumps: fc.integer({ min: 0, max: 2 }),
    })
    .map(({ invisibleCalls, join, gapMs, pumps }) => [
      { op: { op: 'launch', slot: s, invisibleCalls }, gapMs, pumps },
      ...(join ? [{ op: { op: 'join', slot: s, ...join }, gapMs, pumps } satisfies Step] : []),
    ]);

/**
 * Booted slots first (each may be left out), the VPC CNI ConfigMap perhaps, then any steps. Any subsequence
 * still being a history, shrinking removes what does not matter, boots included.
 */
export function historyArbitrary(maxSteps: number): fc.Arbitrary<Step[]> {
  const boots = Array.from({ length: SLOTS }, (_, s) => fc.option(bootArbitrary(s), { freq: 4 }));
  return fc
    .tuple(
      fc.tuple(...boots),
      fc.option(fc.constant<Step>({ op: { op: 'cni', on: true }, gapMs: 0, pumps: 0 }), { freq: 4 }),
      fc.array(stepArbitrary, { minLength: 1, maxLength: maxSteps }),
    )
    .map(([booted, cni, steps]) => [...booted.flatMap((b) => b ?? []), ...(cni ? [cni] : []), ...steps]);
}

/** The slot's instance, as EC2 will describe it. */
export function instanceOf(s: number): Instance {
  const windows = s === WINDOWS_SLOT;
  const base = makeInstance({
    index: 1 + s,
    availabilityZone: windows ? WINDOWS_SUBNET.availabilityZone : ZONES[s % ZONES.length],
    clusterName: CLUSTER,
  });
  if (!windows) {
    return {
      ...base,
      networkInterfaces: base.networkInterfaces.map((e) => ({ ...e, securityGroupIds: [NODE_GROUP] })),
    };
  }
  const ip = '10.0.1.240';
  return {
    ...base,
    subnetId: WINDOWS_SUBNET.subnetId,
    privateIpAddress: ip,
    privateDnsName: `ip-${ip.replaceAll('.', '-')}.eu-west-1.compute.internal`,
    networkInterfaces: base.networkInterfaces.map((e) => ({
      ...e,
      subnetId: WINDOWS_SUBNET.subnetId,
      privateIpAddresses: [{ address: ip, primary: true }],
      securityGroupIds: [NODE_GROUP],
    })),
  };
}

export const nodeNameOf = (s: number) => instanceOf(s).privateDnsName!;

/** What the history did so far: the truth the controller's results are judged against. */
export class Truth {
  readonly launched = new Set<number>();
  readonly joined = new Set<number>();
  readonly left = new Set<number>();
  /** When each slot's spot warning came. */
  readonly spotted = new Map<number, number>();
  readonly services = new Set<number>();
  readonly deletedServices = new Set<number>();
  readonly winPods = new Set<number>();
  readonly finished = new Set<number>();
  /** Joined with the provider ID set by the kubelet. */
  readonly providerIds = new Set<number>();
  readonly state = new Map<number, InstanceState>();
  readonly evicted = new Set<string>();

  /** Slots whose Node the controller must keep: joined, not deleted by a person, instance not terminated. */
  nodesToKeep(): number[] {
    return [...this.joined].filter((s) => !this.left.has(s) && this.state.get(s) !== 'terminated');
  }
}

function servicePorts(svcIndex: number, variant: number): ServicePortSpec[] {
  const base = 30080 + svcIndex * 10;
  const http: ServicePortSpec = { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: base };
  if (variant !== 1) return [http];
  return [http, { name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: base + 1 }];
}

function serviceOf(svcIndex: number, variant: number): Service {
  const def = SERVICES[svcIndex]!;
  const annotations: Record<string, string> = { [ANNOTATION.type]: def.type };
  if (def.target === 'ip') annotations[ANNOTATION.nlbTargetType] = 'ip';
  if (variant === 2) annotations[ANNOTATION.internal] = 'true';
  return {
    metadata: { name: def.name, namespace: NAMESPACE, annotations },
    spec: {
      type: 'LoadBalancer',
      ports: servicePorts(svcIndex, variant),
      selector: { app: def.name },
      externalTrafficPolicy: 'Cluster',
    },
  };
}

function windowsPod(k: number, createdAt: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `win-${k}`,
      namespace: 'win',
      labels: { app: 'iis' },
      creationTimestamp: new Date(createdAt).toISOString(),
    },
    spec: {
      nodeName: nodeNameOf(WINDOWS_SLOT),
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'iis',
          image: 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
          resources: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } },
        },
      ],
    },
    status: { phase: 'Running' },
  };
}

function replicaPod(nodeName: string, name: string, app: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'work',
      labels: { app },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-rs`, uid: `uid-${app}-rs`, controller: true },
      ],
    },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'app', image: 'public.ecr.aws/docker/library/busybox:1.36' }],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function ec2Event(c: Cluster, detailType: string, id: string, detail: Record<string, unknown>, instanceId: string) {
  return {
    version: '0',
    id,
    'detail-type': detailType,
    source: 'aws.ec2',
    account: '000000000000',
    time: new Date(c.clock.now()).toISOString(),
    region: 'eu-west-1',
    resources: [`arn:aws:ec2:eu-west-1:000000000000:instance/${instanceId}`],
    detail,
  };
}

/** Applies the steps' ops to the cluster as the world would (the people, kubelets and EC2). */
export class HistoryPlayer {
  readonly truth = new Truth();
  readonly ingressTruth = new IngressTruth();
  readonly tgbTruth = new TgbTruth();
  private events = 0;

  constructor(private readonly c: Cluster) {}

  /**
   * Within the two minutes a spot warning gives, the instance stays and its Node with it: how far a drain got when
   * either went sooner would depend on how fast the controller was, not on what it did.
   */
  private warned(s: number): boolean {
    const at = this.truth.spotted.get(s);
    return at !== undefined && this.c.clock.now() < at + SPOT_NOTICE_MS;
  }

  private setState(s: number, state: InstanceState): void {
    const { instanceId } = instanceOf(s);
    this.c.ec2.setState(instanceId, state);
    this.truth.state.set(s, state);
    this.c.enqueueEc2Event(
      ec2Event(
        this.c,
        'EC2 Instance State-change Notification',
        `ev-${++this.events}-${instanceId}-${state}`,
        { 'instance-id': instanceId, state },
        instanceId,
      ),
    );
  }

  private setReady(s: number, status: 'True' | 'Unknown' | 'False'): void {
    const name = nodeNameOf(s);
    if (!this.c.kube.nodes.has(name)) return;
    this.c.kube.mutateNode(name, (n) => {
      const others = (n.status?.conditions ?? []).filter((x) => x.type !== 'Ready');
      n.status = {
        ...n.status,
        conditions: [
          ...others,
          { type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'NodeStatusUnknown' },
        ],
      };
    });
  }

  async apply(op: Op): Promise<void> {
    const { c, truth } = this;
    const alive = (s: number) => truth.launched.has(s) && truth.state.get(s) !== 'terminated';
    switch (op.op) {
      case 'launch': {
        if (truth.launched.has(op.slot)) return;
        truth.launched.add(op.slot);
        truth.state.set(op.slot, 'running');
        c.ec2.putInstance(instanceOf(op.slot), { invisibleForCalls: op.invisibleCalls });
        return;
      }
      case 'join': {
        if (!alive(op.slot) || truth.joined.has(op.slot)) return;
        truth.joined.add(op.slot);
        if (op.providerId) truth.providerIds.add(op.slot);
        const instance = instanceOf(op.slot);
        const name = instance.privateDnsName!;
        c.kube.putNode({
          metadata: {
            name,
            labels: {
              'kubernetes.io/hostname': name,
              ...(op.slot === WINDOWS_SLOT ? { 'kubernetes.io/os': 'windows' } : {}),
            },
          },
          spec: {
            ...(op.providerId ? { providerID: `aws:///${instance.availabilityZone}/${instance.instanceId}` } : {}),
            podCIDR: `10.244.${op.slot}.0/24`,
            podCIDRs: [`10.244.${op.slot}.0/24`],
            taints: [{ key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' }],
          },
          status: {
            addresses: [{ type: 'Hostname', address: name }],
            conditions: [
              op.ready
                ? { type: 'Ready', status: 'True', reason: 'KubeletReady' }
                : { type: 'Ready', status: 'False', reason: 'KubeletNotReady' },
            ],
          },
        });
        return;
      }
      case 'ready':
        if (alive(op.slot) && truth.state.get(op.slot) === 'running') this.setReady(op.slot, 'True');
        return;
      case 'stop':
        if (!alive(op.slot) || truth.state.get(op.slot) !== 'running' || this.warned(op.slot)) return;
        this.setState(op.slot, 'stopped');
        this.setReady(op.slot, 'Unknown');
        return;
      case 'start':
        if (!alive(op.slot) || truth.state.get(op.slot) !== 'stopped') return;
        this.setState(op.slot, 'running');
        this.setReady(op.slot, 'True');
        return;
      case 'terminate':
        if (!alive(op.slot) || this.warned(op.slot)) return;
        this.setState(op.slot, 'terminated');
        this.setReady(op.slot, 'Unknown');
        return;
      case 'scaleDown': {
        const name = nodeNameOf(op.slot);
        if (!truth.joined.has(op.slot) || truth.left.has(op.slot) || !c.kube.nodes.has(name)) return;
        c.kube.mutateNode(name, (n) => {
          const taints = (n.spec?.taints ?? []).filter((t) => t.key !== TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER);
          const mark = {
            key: TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
            value: '1796000000',
            effect: 'NoSchedule' as const,
          };
          n.spec = { ...n.spec, taints: [...taints, mark] };
        });
        return;
      }
      case 'leave': {
        const name = nodeNameOf(op.slot);
        if (!truth.joined.has(op.slot) || truth.left.has(op.slot) || this.warned(op.slot)) return;
        truth.left.add(op.slot);
        if (c.kube.nodes.has(name)) await c.kube.deleteNode(name, {});
        return;
      }
      case 'service': {
        // Decided by the history alone: a deleted Service is not made again (whether its deletion finished by
        // then is the controller's doing), and one the history made is there (the controller holds its finalizer).
        const def = SERVICES[op.svc]!;
        if (truth.deletedServices.has(op.svc)) return;
        const wanted = serviceOf(op.svc, op.variant);
        if (!truth.services.has(op.svc)) {
          truth.services.add(op.svc);
          c.kube.putService(wanted);
          return;
        }
        c.kube.mutateService(NAMESPACE, def.name, (s) => {
          s.metadata.annotations = { ...wanted.metadata.annotations };
          s.spec = { ...s.spec, ...wanted.spec };
        });
        return;
      }
      case 'deleteService': {
        const def = SERVICES[op.svc]!;
        if (!truth.services.has(op.svc) || truth.deletedServices.has(op.svc)) return;
        truth.deletedServices.add(op.svc);
        if (c.kube.services.has(`${NAMESPACE}/${def.name}`)) c.kube.deleteService(NAMESPACE, def.name);
        return;
      }
      case 'slice': {
        const name = 'api-x1';
        if (op.endpoints.length === 0) {
          c.kube.deleteEndpointSlice(NAMESPACE, name);
          return;
        }
        c.kube.putEndpointSlice({
          metadata: { name, namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'api' } },
          addressType: 'IPv4',
          endpoints: op.endpoints.map((e) => ({
            addresses: [`10.0.10.${20 + e}`],
            conditions: { ready: true, serving: true, terminating: false },
          })),
          ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
        });
        return;
      }
      case 'spot': {
        const name = nodeNameOf(op.slot);
        // A warning for an instance no Node names yet (not initialized) is acknowledged and counted by design
        // (docs/keys.md): whether it is honoured would depend on when the router sees it. So only Nodes whose
        // kubelet set the provider ID (decided by the history, not by how far the controller got).
        const named = truth.providerIds.has(op.slot) && !truth.left.has(op.slot) && c.kube.nodes.has(name);
        if (!alive(op.slot) || truth.spotted.has(op.slot) || !named) return;
        truth.spotted.set(op.slot, c.clock.now());
        const app = `spot${op.slot}`;
        for (let i = 0; i < 3; i++) c.kube.putPod(replicaPod(name, `${app}-${i}`, app));
        c.kube.workloads.putBudget({
          apiVersion: 'policy/v1',
          kind: 'PodDisruptionBudget',
          metadata: { name: app, namespace: 'work' },
          spec: { minAvailable: 2, selector: { matchLabels: { app } } },
        });
        const { instanceId } = instanceOf(op.slot);
        c.enqueueEc2Event(
          ec2Event(
            c,
            'EC2 Spot Instance Interruption Warning',
            `spot-${instanceId}`,
            { 'instance-id': instanceId, 'instance-action': 'terminate' },
            instanceId,
          ),
        );
        return;
      }
      case 'cni':
        c.kube.putConfigMap({
          metadata: { ...VPC_CNI_CONFIGMAP },
          data: { 'enable-windows-ipam': op.on ? 'true' : 'false' },
        });
        return;
      // Windows Pods, by the history's account (a drain may have evicted one meanwhile: that is the controller's).
      case 'winPod': {
        if (!truth.joined.has(WINDOWS_SLOT) || truth.winPods.has(op.pod)) return;
        truth.winPods.add(op.pod);
        c.kube.putPod(windowsPod(op.pod, c.clock.now()));
        return;
      }
      case 'deletePod': {
        if (!truth.winPods.delete(op.pod)) return;
        truth.finished.delete(op.pod);
        if (c.kube.workloads.get('win', `win-${op.pod}`)) await c.kube.deletePod('win', `win-${op.pod}`);
        return;
      }
      case 'finishPod': {
        if (!truth.winPods.has(op.pod) || truth.finished.has(op.pod)) return;
        truth.finished.add(op.pod);
        const p = c.kube.workloads.get('win', `win-${op.pod}`);
        if (p && !p.metadata.deletionTimestamp) c.kube.putPod({ ...p, status: { ...p.status, phase: 'Succeeded' } });
        return;
      }
      case 'ingress':
      case 'deleteIngress':
        applyIngressOp(c, this.ingressTruth, op);
        return;
      case 'binding':
      case 'bindingEndpoints':
      case 'deleteBinding':
        await applyTgbOp(c, this.tgbTruth, op);
        return;
    }
  }

  /**
   * The workload controllers: an evicted replica gets a replacement elsewhere (Ready at once), so a drain can go
   * on without taking its budget below the minimum.
   */
  replaceEvicted(): void {
    for (const p of this.c.kube.workloads.list()) {
      if (p.metadata.namespace !== 'work' || !p.metadata.deletionTimestamp) continue;
      if (this.truth.evicted.has(p.metadata.name)) continue;
      this.truth.evicted.add(p.metadata.name);
      this.c.kube.putPod(replicaPod('spare-node', `${p.metadata.name}-r`, p.metadata.labels!.app!));
    }
  }
}
