import { makeInstance, makeRouteTable } from '../../../shared/aws/fakes/ec2/fake-ec2.ts';
import { ANNOTATION_PROVIDED_NODE_IP, TAINT_SHUTDOWN } from '../../../shared/k8s/node-helpers.ts';
import { ANNOTATION } from '../../../shared/k8s/service-annotations.ts';
import {
  LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS,
  TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
} from '../../../shared/k8s/service-port.ts';
import type { Node } from '../../../shared/k8s/types.ts';
import { routeTableMessage } from '../../../shared/queue/route-table-key.ts';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { podOnNode } from '../../../test/helpers/pods.ts';
import { fifoRecord, nodeKey } from '../../../test/helpers/records.ts';
import { createServiceWorld } from '../../../test/helpers/service-world.ts';
import { createWorld } from '../../../test/helpers/world.ts';
import { ipamReconciler } from '../../ipam/reconciler.ts';
import { createIpamWorld, IPAM_QUEUE, type IpamWorld } from '../../ipam/testing/world.ts';
import { LABEL_ZONE } from '../../node/plan.ts';
import { nodeReconciler } from '../../node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../node-lifecycle/reconciler.ts';
import { routeReconciler } from '../../route/reconciler.ts';
import { RECONCILERS, type Reconciler } from '../controllers/index.ts';
import { recordIngressReads } from './ingress-recording.ts';
import { type ReadRecorder, recordingPort } from './reads.ts';
import { recordTargetGroupBindingReads } from './tgb-recording.ts';

/**
 * The reconcilers that read Nodes, Services, EndpointSlices, Pods and the VPC CNI ConfigMap, run on the
 * fakes over objects chosen to take every branch that reads something (tainted or not, excluded or not,
 * IP or instance targets, being deleted, finished...), with their Kubernetes ports handing out recorded
 * objects. Test support for reads-coverage.test.ts.
 */

/** Which kind each reading method of the ports answers with. */
const KINDS = {
  getNode: 'Node',
  listNodes: 'Node',
  patchNode: 'Node',
  patchNodeStatus: 'Node',
  getService: 'Service',
  listServices: 'Service',
  patchService: 'Service',
  patchServiceStatus: 'Service',
  listEndpointSlices: 'EndpointSlice',
  listPodsOnNode: 'Pod',
  patchPodAnnotations: 'Pod',
  getConfigMap: 'ConfigMap',
} as const;

const DELETING = '2026-11-02T09:00:00Z';

function deleting(node: Node): Node {
  node.metadata.deletionTimestamp = DELETING;
  node.metadata.finalizers = ['example.com/hold'];
  return node;
}

/**
 * Every reconciler that reads a watched kind, on its scenarios; reads go to `recorder`. Run in the order of the
 * table of controllers (controllers/index.ts); the record's type makes a controller added there need its recording
 * here before anything compiles, and reads-coverage.test.ts fails for a controller whose recording reads nothing.
 */
export async function recordReconcilerReads(recorder: ReadRecorder): Promise<void> {
  for (const reconciler of RECONCILERS) await RECORDINGS[reconciler](recorder);
}

/** Result of one Lambda invocation; the scenarios expect every key to succeed. */
function expectDone(what: Reconciler, result: { batchItemFailures: unknown[] }): void {
  if (result.batchItemFailures.length > 0) {
    throw new Error(`${what}: ${result.batchItemFailures.length} keys failed; the scenario no longer runs through`);
  }
}

async function recordNodeReads(recorder: ReadRecorder): Promise<void> {
  const w = createWorld();
  const byDns = w.ec2.putInstance(makeInstance({ index: 1 }));
  w.kube.putNode(
    makeNode(byDns.privateDnsName!, { annotations: { [ANNOTATION_PROVIDED_NODE_IP]: byDns.privateIpAddress! } }),
  );
  const byId = w.ec2.putInstance(makeInstance({ index: 2, availabilityZone: 'eu-west-1b' }));
  w.kube.putNode(
    makeNode('worker-b', { providerID: `aws:///eu-west-1b/${byId.instanceId}`, labels: { [LABEL_ZONE]: 'b' } }),
  );
  const moved = w.ec2.putInstance(makeInstance({ index: 3 }));
  const settled = makeNode('worker-c', { providerID: `aws:///eu-west-1a/${moved.instanceId}`, initialized: true });
  // As many addresses as the instance has, one of them out of date: they are compared one by one.
  settled.status!.addresses = [
    { type: 'InternalIP', address: '10.0.9.9' },
    { type: 'InternalDNS', address: moved.privateDnsName! },
    { type: 'Hostname', address: moved.privateDnsName! },
  ];
  w.kube.putNode(settled);
  w.kube.putNode(deleting(makeNode('worker-d', { providerID: `aws:///eu-west-1a/${moved.instanceId}` })));
  recorder.reconciler = 'node';
  const deps = { ...w.nodeDeps, kube: recordingPort(w.kube, recorder, KINDS) };
  const names = [byDns.privateDnsName!, 'worker-b', 'worker-c', 'worker-d'];
  expectDone(
    'node',
    await w.invoke(
      nodeReconciler,
      deps,
      names.map((n) => fifoRecord(nodeKey(n))),
    ),
  );
}

async function recordLifecycleReads(recorder: ReadRecorder): Promise<void> {
  const w = createWorld();
  const node = (name: string, index: number, options: Parameters<typeof makeNode>[1] = {}) => {
    const instance = w.ec2.putInstance(makeInstance({ index }));
    w.kube.putNode(
      makeNode(name, { providerID: `aws:///eu-west-1a/${instance.instanceId}`, initialized: true, ...options }),
    );
    return instance.instanceId;
  };
  node('back', 1, { taints: [{ key: TAINT_SHUTDOWN, effect: 'NoSchedule' }] });
  w.ec2.setState(node('stopped', 2, { ready: false }), 'stopped');
  w.ec2.setState(node('terminated', 3, { ready: 'Unknown' }), 'terminated');
  w.kube.putNode(makeNode('new'));
  w.kube.putNode(deleting(makeNode('leaving', { providerID: 'aws:///eu-west-1a/i-0000000000000dead', ready: false })));
  recorder.reconciler = 'node-lifecycle';
  const deps = { ...w.lifecycleDeps, kube: recordingPort(w.kube, recorder, KINDS) };
  const names = ['back', 'stopped', 'terminated', 'new', 'leaving'];
  expectDone(
    'node-lifecycle',
    await w.invoke(
      nodeLifecycleReconciler,
      deps,
      names.map((n) => fifoRecord(nodeKey(n))),
    ),
  );
}

async function recordRouteReads(recorder: ReadRecorder): Promise<void> {
  const w = createWorld();
  w.ec2.putRouteTable(makeRouteTable());
  const worker = (index: number, spec: Node['spec'], change: (n: Node) => void = () => {}) => {
    const instance = w.ec2.putInstance(makeInstance({ index }));
    const node = makeNode(`node-${index}`, {
      providerID: `aws:///eu-west-1a/${instance.instanceId}`,
      initialized: true,
    });
    node.spec = { ...node.spec, ...spec };
    change(node);
    w.kube.putNode(node);
  };
  worker(1, { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] });
  worker(2, { podCIDR: '10.244.2.0/24' });
  worker(3, { podCIDRs: ['10.244.3.0/24'] }, (n) => {
    n.status!.conditions!.push({ type: 'NetworkUnavailable', status: 'True', reason: 'NoRouteCreated' });
  });
  worker(4, { podCIDRs: ['10.244.4.0/24'] }, deleting);
  worker(5, {});
  recorder.reconciler = 'route';
  const deps = { ...w.routeDeps, kube: recordingPort(w.kube, recorder, KINDS) };
  const key = routeTableMessage({ eventType: 'RESYNC', eventId: 'reads' });
  expectDone('route', await w.invoke(routeReconciler, deps, [fifoRecord(key)]));
}

/**
 * Services of every sort the service controller tells apart, over Nodes of every sort the load
 * balancer node predicate tells apart; two passes, so that the second finds what the first made and
 * the Services deleted or turned into ClusterIP in between.
 */
async function recordServiceReads(recorder: ReadRecorder): Promise<void> {
  const w = createServiceWorld();
  w.addNode(1, { labels: { team: 'a' } });
  w.addNode(2, { labels: { [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' } });
  w.addNode(3);
  w.kube.mutateNode('node-3', (n) => {
    n.spec!.taints = [{ key: TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER, effect: 'NoSchedule' }];
  });
  w.addNode(4, { ready: false });
  w.addNode(5);
  w.kube.mutateNode('node-5', deleting);
  w.kube.putNode(makeNode('no-instance', { initialized: true }));

  w.putService('web');
  w.putService('web-team', {
    annotations: { [ANNOTATION.targetNodeLabels]: 'team=a' },
    spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 31000 },
  });
  w.putService('web-ip', { annotations: { [ANNOTATION.nlbTargetType]: 'ip' } });
  w.putSlice('web-ip', [
    { ip: '10.0.1.20' },
    { ip: '10.0.1.21', ready: false },
    { ip: '10.0.1.22', terminating: true },
  ]);
  w.putService('alb', { annotations: { [ANNOTATION.type]: 'external' } });
  w.putService('gone');
  w.putService('was-lb');
  const names = ['web', 'web-team', 'web-ip', 'alb', 'gone', 'was-lb'];

  recorder.reconciler = 'service';
  const deps = { ...w.serviceDeps, kube: recordingPort(w.kube, recorder, KINDS) };
  // Played until the queue is empty: requeues while provisioning and retries included.
  const pass = () =>
    w.converge(
      names.map((name) => w.serviceKey(name)),
      deps,
    );
  await pass();
  if (w.elbv2.loadBalancers.size !== 5) throw new Error('service: the first pass no longer makes the load balancers');
  w.kube.deleteService('default', 'gone');
  w.kube.mutateService('default', 'was-lb', (s) => {
    s.spec!.type = 'ClusterIP';
  });
  await pass();
}

/** The IPAM world's deps with both Kubernetes ports (Nodes and Events; Pods and the ConfigMap) recording. */
function recordingIpamDeps(w: IpamWorld, recorder: ReadRecorder) {
  return { ...w.deps, kube: recordingPort(w.kube, recorder, KINDS), pods: recordingPort(w.kube, recorder, KINDS) };
}

/** Send the Nodes' keys and play the IPAM queue until it is empty; every message must be handled, none dead-lettered. */
async function settleRecorded(w: IpamWorld, recorder: ReadRecorder, names: string[], eventId: string): Promise<void> {
  await w.enqueue(
    IPAM_QUEUE,
    names.map((name) => ({ ...w.keyOf(name), hint: { eventId } })),
  );
  await w.drain(IPAM_QUEUE, ipamReconciler, recordingIpamDeps(w, recorder));
  if (w.sqs.depth('ipam-dlq.fifo') > 0)
    throw new Error('ipam: a key was dead-lettered; the scenario no longer runs through');
}

/**
 * Windows Nodes (GA and beta os label, capacity to advertise, a journal to trust or rebuild) with Pods that get
 * addresses, keep them, finish, are deleted (terminating, then gone) or never take part (host network, no
 * request); a Linux Node and a missing one; a setting that cannot be used; prefix mode; the flag off.
 */
async function recordIpamReads(recorder: ReadRecorder): Promise<void> {
  recorder.reconciler = 'ipam';
  const w = createIpamWorld();
  w.configure();
  w.addWindowsNode('win-1');
  w.addWindowsNode('win-beta');
  w.kube.mutateNode('win-beta', (n) => {
    n.metadata.labels = { 'beta.kubernetes.io/os': 'windows' };
  });
  w.kube.putNode(makeNode('linux-1', { initialized: true, labels: { 'kubernetes.io/os': 'linux' } }));
  for (const name of ['a', 'b', 'c', 'job']) w.addPod('win-1', name);
  w.addPod('win-1', 'host', { hostNetwork: true });
  w.kube.putPod(podOnNode('win-1', 'plain', { phase: 'Running' }));
  w.addPod('win-beta', 'beta-a');
  await settleRecorded(w, recorder, ['win-1', 'win-beta', 'linux-1', 'gone'], 'first');
  if (!w.podAddress('default', 'a') || !w.podAddress('default', 'beta-a')) {
    throw new Error('ipam: the first pass no longer hands out addresses');
  }

  // A finished Pod, one being deleted, one gone, a new one; the capacity went missing; a RESYNC looks at EC2.
  const job = w.kube.workloads.pods.get('default/job')!;
  w.kube.putPod({ ...job, status: { ...job.status, phase: 'Succeeded' } });
  w.kube.workloads.deleteRequest('default', 'b', { gracePeriodSeconds: 30 });
  w.kube.workloads.deleteRequest('default', 'c', { gracePeriodSeconds: 0 });
  w.addPod('win-1', 'd');
  w.kube.mutateNode('win-beta', (n) => {
    n.status = { ...n.status, capacity: {}, allocatable: {} };
  });
  await settleRecorded(w, recorder, ['win-1', 'win-beta'], 'second');
  const finished = w.podAddress('default', 'job')!.split('/')[0]!;
  if (!w.podAddress('default', 'd') || w.journal('win-1')?.assigned[finished] !== undefined) {
    throw new Error('ipam: the second pass no longer serves a new Pod or takes a finished one back');
  }
  await w.enqueue(IPAM_QUEUE, [{ ...w.keyOf('win-1'), hint: { eventType: 'RESYNC', eventId: 'resync' } }]);
  await w.drain(IPAM_QUEUE, ipamReconciler, recordingIpamDeps(w, recorder));

  // A setting that cannot be used (a Warning on the Node), then the flag off.
  w.configure({ 'warm-ip-target': 'lots' });
  w.addPod('win-1', 'e');
  await settleRecorded(w, recorder, ['win-1'], 'invalid');
  w.configure({ 'enable-windows-ipam': 'false' });
  w.addPod('win-1', 'f');
  await settleRecorded(w, recorder, ['win-1'], 'off');

  const prefixes = createIpamWorld();
  prefixes.configure({ 'enable-windows-prefix-delegation': 'true', 'windows-minimum-ip-target': '4' });
  prefixes.addWindowsNode('win-p');
  for (const name of ['p', 'q']) prefixes.addPod('win-p', name);
  await settleRecorded(prefixes, recorder, ['win-p'], 'prefix');
  if (!prefixes.podAddress('default', 'p')) throw new Error('ipam: prefix mode no longer hands out addresses');
}

/** One recording per controller of the table. */
const RECORDINGS: Record<Reconciler, (recorder: ReadRecorder) => Promise<void>> = {
  node: recordNodeReads,
  'node-lifecycle': recordLifecycleReads,
  route: recordRouteReads,
  service: recordServiceReads,
  ipam: recordIpamReads,
  ingress: recordIngressReads,
  'target-group-binding': recordTargetGroupBindingReads,
};
