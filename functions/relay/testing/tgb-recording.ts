import { TGB_FINALIZER } from '../../../shared/k8s/tgb-types.ts';
import { createTgbWorld, NAMESPACE } from '../../target-group-binding/testing/world.ts';
import type { WatchedKind } from '../kinds.ts';
import { type ReadRecorder, recordingPort } from './reads.ts';

/**
 * What the TargetGroupBinding controller (functions/target-group-binding) reads of bindings, Services,
 * EndpointSlices, Nodes and Pods: the reconciler itself on the fakes (functions/target-group-binding/testing/world.ts),
 * over bindings of every sort it tells apart (IP targets with gated Pods ready, waiting on their gate and
 * terminating; instance targets with a nodeSelector over Nodes ready, not ready and excluded; a binding by target
 * group name; networking rules by port name; multi-cluster; one whose Service is gone; one being deleted). Test
 * support for reads-coverage.test.ts.
 */

const KINDS: Readonly<Record<string, WatchedKind>> = {
  listTargetGroupBindings: 'TargetGroupBinding',
  getTargetGroupBinding: 'TargetGroupBinding',
  setTargetGroupBindingFinalizers: 'TargetGroupBinding',
  setTargetGroupBindingAnnotations: 'TargetGroupBinding',
  fillTargetGroupBindingSpec: 'TargetGroupBinding',
  setTargetGroupBindingStatus: 'TargetGroupBinding',
  getService: 'Service',
  listEndpointSlices: 'EndpointSlice',
  listNodes: 'Node',
  listPods: 'Pod',
  setPodCondition: 'Pod',
};

export async function recordTargetGroupBindingReads(recorder: ReadRecorder): Promise<void> {
  const w = createTgbWorld();
  w.putWebService();
  w.addPodNode(1, ['10.0.20.11', '10.0.20.12', '10.0.20.13']);
  w.addPodNode(2);
  w.addPodNode(3);
  w.kube.mutateNode('node-2', (n) => {
    n.metadata.labels = { ...n.metadata.labels, pool: 'web' };
    n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'False' }] };
  });
  w.kube.mutateNode('node-3', (n) => {
    n.metadata.labels = {
      ...n.metadata.labels,
      pool: 'web',
      'node.kubernetes.io/exclude-from-external-load-balancers': '',
    };
  });
  w.kube.mutateNode('node-1', (n) => {
    n.metadata.labels = { ...n.metadata.labels, pool: 'web' };
  });
  const ip = await w.targetGroup('web-ip');
  const byName = await w.targetGroup('web-named');
  const shared = await w.targetGroup('web-shared');
  const instance = await w.targetGroup('web-instance', { targetType: 'instance', port: 30080 });
  const orphan = await w.targetGroup('web-orphan');
  const leaving = await w.targetGroup('web-leaving');

  w.putPod('web-1', '10.0.20.11', { gates: ['web', 'named'] });
  w.putPod('web-2', '10.0.20.12', { gates: ['web'], ready: false });
  w.putPod('web-3', '10.0.20.13', { gates: ['web'], ready: false, deleting: true });
  w.putSlice([
    { pod: 'web-1', ip: '10.0.20.11' },
    { pod: 'web-2', ip: '10.0.20.12', ready: false },
    { pod: 'web-3', ip: '10.0.20.13', ready: false, terminating: true },
  ]);
  w.putBinding('web', {
    targetGroupARN: ip.arn,
    networking: {
      ingress: [
        { from: [{ ipBlock: { cidr: '10.2.0.0/16' } }], ports: [{ port: 'http' }] },
        { from: [{ ipBlock: { cidr: '10.3.0.0/16' } }], ports: [{ protocol: 'TCP', port: 8080 }] },
      ],
    },
  });
  w.putBinding('named', { targetGroupName: 'web-named' });
  w.putBinding('shared', { targetGroupARN: shared.arn, multiClusterTargetGroup: true });
  w.putBinding('nodes', { targetGroupARN: instance.arn, nodeSelector: { matchLabels: { pool: 'web' } } });
  w.putBinding('orphan', { targetGroupARN: orphan.arn, serviceRef: { name: 'gone', port: 80 } });
  w.putBinding('stack', { targetGroupARN: leaving.arn }, { labels: { 'service.k8s.aws/stack-name': 'web' } });
  w.putBinding('leaving', { targetGroupARN: leaving.arn, targetType: 'ip' }, { finalizers: [TGB_FINALIZER] });

  recorder.reconciler = 'target-group-binding';
  const deps = { ...w.deps, kube: recordingPort(w.deps.kube, recorder, KINDS) };
  const names = ['web', 'named', 'shared', 'nodes', 'orphan', 'stack', 'leaving'];
  for (const name of names) await w.reconcile(name, deps);
  // The gated Pods' targets become healthy: their conditions are set True on the next pass.
  for (const arn of [ip.arn, byName.arn]) {
    for (const t of w.elbv2.targetsOf(arn)) w.elbv2.setTargetHealth(arn, t.target.id, 'healthy');
  }
  await w.reconcile('web', deps);
  await w.reconcile('named', deps);
  if (w.registered(ip.arn).length === 0) throw new Error('target-group-binding: the IP binding registers nothing');
  if (w.registered(instance.arn).length === 0) {
    throw new Error('target-group-binding: the instance binding registers nothing');
  }
  // One binding is deleted (its finalizer holds it): its targets go, its gated Pods are let go.
  w.bindings.deleteBinding(NAMESPACE, 'leaving');
  w.bindings.deleteBinding(NAMESPACE, 'named');
  await w.reconcile('leaving', deps);
  await w.reconcile('named', deps);
}
