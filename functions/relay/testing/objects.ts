import { FakeSqs } from '../../../shared/aws/fakes/sqs/fake-sqs.ts';
import { systemClock } from '../../../shared/clock.ts';
import { IPV4_RESOURCE, VPC_CNI_CONFIGMAP } from '../../../shared/k8s/ipam-names.ts';
import { TAINT_UNINITIALIZED } from '../../../shared/k8s/node-helpers.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import type { Node } from '../../../shared/k8s/types.ts';
import type { KeyMessage } from '../../../shared/queue/message.ts';
import type { SendFailure, SqsPort, VisibilityChange } from '../../../shared/queue/sqs-port.ts';
import { RECONCILERS, type Reconciler } from '../controllers/index.ts';
import type { KubeObject } from '../kinds.ts';

/**
 * Test helpers that do not load client-node, so the pure tests start fast (the relay harness is in
 * testing/relay.ts). Objects are shaped like the API server's, with the churn a real cluster has
 * (heartbeats, images, statuses).
 */

export function makeNode(name: string, options: { ready?: boolean; providerID?: string; podCIDR?: string } = {}): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'm5.large',
        'topology.kubernetes.io/zone': 'eu-west-1a',
      },
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: {
      // A well-formed instance ID (hex of the name), so the Node is a load balancer target candidate.
      providerID:
        options.providerID ?? `aws:///eu-west-1a/i-${Buffer.from(name).toString('hex').padStart(17, '0').slice(-17)}`,
      ...(options.podCIDR ? { podCIDR: options.podCIDR, podCIDRs: [options.podCIDR] } : {}),
    },
    status: {
      addresses: [
        { type: 'InternalIP', address: '10.0.1.10' },
        { type: 'Hostname', address: name },
      ],
      capacity: { cpu: '2', memory: '7935140Ki', pods: '29' },
      allocatable: { cpu: '1930m', memory: '7244964Ki', pods: '29' },
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID'),
        condition('Ready', options.ready === false ? 'False' : 'True', 'KubeletReady'),
      ],
    },
  };
}

function condition(type: string, status: 'True' | 'False', reason: string) {
  return {
    type,
    status,
    reason,
    lastHeartbeatTime: '2026-11-02T08:00:00Z',
    lastTransitionTime: '2026-11-02T07:00:00Z',
  } as const;
}

/** What kubelet writes every status report: new heartbeat times, nothing a reconciler reads. */
export function heartbeat(node: Node, at: string): void {
  for (const c of node.status?.conditions ?? []) c.lastHeartbeatTime = at;
  (node.status as Record<string, unknown>).images = [{ names: [`registry.example/app@sha256:${at}`], sizeBytes: 1234 }];
}

export function setReady(node: Node, ready: boolean): void {
  const c = node.status?.conditions?.find((x) => x.type === 'Ready');
  if (c) c.status = ready ? 'True' : 'False';
}

export function uninitialized(node: Node): Node {
  return {
    ...node,
    spec: { ...node.spec, taints: [{ key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
  };
}

export function makePod(
  namespace: string,
  name: string,
  nodeName: string | undefined,
  extra: Partial<KubeObject> = {},
) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: name.replace(/-[^-]+$/, '') } },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [{ name: 'app', image: 'registry.example/app:1', resources: {} }],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [] },
    ...extra,
  } as KubeObject;
}

/** A Windows Node advertising `addresses` VPC addresses for Pods, as the IPAM reconciler leaves it. */
export function makeWindowsNode(name: string, addresses = '9'): Node {
  const node = makeNode(name);
  node.metadata.labels = { ...node.metadata.labels, 'kubernetes.io/os': 'windows', 'beta.kubernetes.io/os': 'windows' };
  node.status!.capacity = { ...node.status!.capacity, [IPV4_RESOURCE]: addresses };
  node.status!.allocatable = { ...node.status!.allocatable, [IPV4_RESOURCE]: addresses };
  return node;
}

/** A Pod asking for a VPC address, as the mutating webhook leaves a Windows Pod. */
export function makeAddressPod(namespace: string, name: string, nodeName: string | undefined) {
  const pod = makePod(namespace, name, nodeName);
  const resources = { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } };
  (pod.spec as { containers: { resources: unknown }[] }).containers[0]!.resources = resources;
  return pod;
}

/** The VPC CNI's ConfigMap (kube-system/amazon-vpc-cni). */
export function makeVpcCniConfigMap(data: Record<string, string> = { 'enable-windows-ipam': 'true' }) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { ...VPC_CNI_CONFIGMAP },
    data,
  } as KubeObject;
}

export function makeService(
  namespace: string,
  name: string,
  type = 'LoadBalancer',
  annotations: Record<string, string> = {},
) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, annotations },
    spec: {
      type,
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      externalTrafficPolicy: 'Cluster',
    },
  } as KubeObject;
}

export function makeSlice(namespace: string, service: string, suffix: string, addresses: string[]) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-${suffix}`, namespace, labels: { [LABEL_SERVICE_NAME]: service } },
    addressType: 'IPv4',
    endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  } as KubeObject;
}

/** One FIFO queue per controller of the table, named after it. */
export const QUEUE_NAMES = Object.fromEntries(
  RECONCILERS.map((reconciler) => [reconciler, `${reconciler}.fifo`]),
) as Record<Reconciler, string>;

/** A FakeSqs with one FIFO queue per reconciler. */
export function reconcilerQueues(): { sqs: FakeSqs; urls: Record<Reconciler, string> } {
  const sqs = new FakeSqs(systemClock);
  const urls = {} as Record<Reconciler, string>;
  for (const [reconciler, name] of Object.entries(QUEUE_NAMES) as [Reconciler, string][]) {
    urls[reconciler] = sqs.createQueue(name).url;
  }
  return { sqs, urls };
}

/** Key messages waiting on a reconciler's queue. */
export function keysOn(sqs: FakeSqs, reconciler: Reconciler): KeyMessage[] {
  return sqs.bodies(QUEUE_NAMES[reconciler]).map((body) => JSON.parse(body) as KeyMessage);
}

/** Records which relay sent what, when (two relays sharing one FakeSqs). */
export class RecordingSqs implements SqsPort {
  readonly sends: { who: string; at: number; keys: number }[] = [];
  constructor(
    private readonly inner: SqsPort,
    private readonly who: string,
  ) {}
  sendKeys(queueUrl: string, messages: readonly KeyMessage[]): Promise<SendFailure[]> {
    this.sends.push({ who: this.who, at: Date.now(), keys: messages.length });
    return this.inner.sendKeys(queueUrl, messages);
  }
  changeVisibility(queueArn: string, entries: readonly VisibilityChange[]): Promise<void> {
    return this.inner.changeVisibility(queueArn, entries);
  }
}

/** Poll until `check` holds (or throw after `timeoutMs`). */
export async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
