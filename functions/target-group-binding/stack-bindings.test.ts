import { beforeEach, describe, expect, it } from 'vitest';
import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { type StackRef, stackBinding } from '../../shared/k8s/stack-bindings.ts';
import { READINESS_GATE_PREFIX, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { EVENT } from './kube.ts';
import { BINDING_DELETED_MESSAGE } from './readiness.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from './testing/world.ts';

/**
 * Stack bindings (shared/k8s/stack-bindings.ts): the TargetGroupBinding the Ingress or service controller keeps beside
 * each target group it makes, named as the group. The binding controller keeps the readiness gates of the Pods behind
 * it, registers a Pod held back only by that gate (its EndpointSlice does not change when its containers become ready)
 * and nothing else: the group's other targets are its owner's, never deregistered here, even on deletion.
 */

const STACKS: [string, StackRef][] = [
  ['a Service of the reference', { kind: 'service', namespace: NAMESPACE, name: 'web' }],
  ['an explicit IngressGroup', { kind: 'ingress', explicit: true, name: 'shop' }],
  ['an implicit IngressGroup', { kind: 'ingress', explicit: false, namespace: NAMESPACE, name: 'storefront' }],
];

let w: TgbWorld;
let group: TargetGroup;
let instanceId: string;
/** The stack binding's name: its target group's. */
const NAME = 'k8s-shop-web-0a1b2c3d4e';
const gate = `${READINESS_GATE_PREFIX}${NAME}`;
const gateOf = (pod: string) => w.kube.workloads.get(NAMESPACE, pod)?.status?.conditions?.find((c) => c.type === gate);

beforeEach(async () => {
  w = createTgbWorld();
  instanceId = w.addPodNode(1).instance.instanceId;
  w.putWebService();
  group = await w.targetGroup(NAME);
  w.elbv2.initialDescribes = 1000;
});

/** The binding as the stack's controller creates it (a POST: the server gives it its uid). */
async function putStackBinding(stack: StackRef) {
  const wanted = { group, service: { namespace: NAMESPACE, name: 'web', port: 80 } };
  return w.bindings.createTargetGroupBinding(stackBinding(stack, wanted));
}

describe.each(STACKS)('the stack binding of %s', (_, stack) => {
  beforeEach(async () => {
    await putStackBinding(stack);
  });

  it('holds a gated Pod with ELB’s reason while its target is initial, lets it go once healthy; requeued meanwhile', async () => {
    // Registered by the group's owner while the Pod was ready before its gate; now held by the gate only.
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.0.20.11')]);
    w.putPod('web-1', '10.0.20.11', { gates: [NAME], ready: false });
    w.putSlice([{ pod: 'web-1', ip: '10.0.20.11', ready: false }]);
    w.reset();

    expect(await w.reconcile(NAME)).toEqual({ requeueAfterSeconds: 10 });
    expect(gateOf('web-1')).toMatchObject({
      status: 'False',
      reason: 'Elb.RegistrationInProgress',
      message: 'Target registration is in progress',
    });
    expect(w.elbv2.writeCallCount()).toBe(0);

    w.reset();
    expect(await w.reconcile(NAME)).toEqual({ requeueAfterSeconds: 10 });
    expect(w.writes()).toBe(0);

    w.elbv2.setTargetHealth(group.arn, '10.0.20.11', 'healthy');
    expect(await w.reconcile(NAME)).toBeUndefined();
    expect(gateOf('web-1')).toMatchObject({ status: 'True' });
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
    // The binding itself is left as its controller wrote it: no finalizer work, no spec filled, no status.
    expect(w.binding(NAME)?.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(w.binding(NAME)?.status).toBeUndefined();
  });

  it('registers a Pod waiting only for its gate, and nothing else; deregisters nothing', async () => {
    // The owner's targets: a ready Pod, and one the binding would not want (the owner decides its removal).
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.0.20.11'), w.target('10.0.20.99')]);
    w.putPod('web-1', '10.0.20.11', { gates: [NAME] });
    w.putPod('web-2', '10.0.20.12', { gates: [NAME], ready: false });
    w.putPod('web-3', '10.0.20.13', { gates: [NAME], ready: false, containersReady: false });
    w.putSlice([
      { pod: 'web-1', ip: '10.0.20.11' },
      { pod: 'web-2', ip: '10.0.20.12', ready: false },
      { pod: 'web-3', ip: '10.0.20.13', ready: false },
    ]);
    w.reset();

    expect(await w.reconcile(NAME)).toEqual({ requeueAfterSeconds: 10 });
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080', '10.0.20.99:8080']);
    expect(w.elbv2.callCount('DeregisterTargets')).toBe(0);
    expect(w.elbv2.callCount('RegisterTargets')).toBe(1);
    expect(gateOf('web-2')).toMatchObject({ status: 'False', reason: 'Elb.RegistrationInProgress' });
    // Its containers not ready: not registered, held as not registered.
    expect(gateOf('web-3')).toMatchObject({ status: 'False', reason: 'Target.NotRegistered' });

    // Registered once: the next pass finds it there.
    w.reset();
    await w.reconcile(NAME);
    expect(w.elbv2.writeCallCount()).toBe(0);

    // The owner drops the ready Pod's target (say, the Pod is going): the binding controller does not put it back.
    await w.elbv2Port.deregisterTargets(group.arn, [w.target('10.0.20.11')]);
    w.reset();
    await w.reconcile(NAME);
    expect(w.elbv2.writeCallCount()).toBe(0);
    expect(w.registered(group.arn)).toEqual(['10.0.20.12:8080', '10.0.20.99:8080']);
  });

  it('deleted: every gated Pod let go and the finalizer dropped, its targets untouched', async () => {
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.0.20.11'), w.target('10.0.20.12')]);
    w.putPod('web-1', '10.0.20.11', { gates: [NAME], ready: false });
    w.putPod('web-2', '10.0.20.12', { gates: [NAME], ready: false, containersReady: false });
    w.putSlice([
      { pod: 'web-1', ip: '10.0.20.11', ready: false },
      { pod: 'web-2', ip: '10.0.20.12', ready: false },
    ]);
    await w.reconcile(NAME);
    expect(gateOf('web-1')?.status).toBe('False');

    const uid = w.binding(NAME)?.metadata.uid;
    expect(await w.bindings.deleteTargetGroupBinding(NAMESPACE, NAME, uid)).toBe('deleted');
    // The finalizer holds it until the Pods are let go.
    expect(w.binding(NAME)?.metadata.deletionTimestamp).toBeDefined();
    w.reset();
    expect(await w.reconcile(NAME)).toBeUndefined();
    for (const pod of ['web-1', 'web-2']) {
      expect(gateOf(pod)).toMatchObject({ status: 'True', message: BINDING_DELETED_MESSAGE });
    }
    expect(w.binding(NAME)).toBeUndefined();
    expect(w.elbv2.writeCallCount()).toBe(0);
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080']);
  });
});

describe('a stack binding being deleted', () => {
  it('keeps its finalizer while its Pods cannot be read: FailedCleanup, retried', async () => {
    await putStackBinding(STACKS[0]![1]);
    w.putPod('web-1', '10.0.20.11', { gates: [NAME], ready: false });
    await w.bindings.deleteTargetGroupBinding(NAMESPACE, NAME);
    w.kube.queueError('listPods', new KubernetesApiError(503, 'ServiceUnavailable', 'etcd is busy'));

    await expect(w.reconcile(NAME)).rejects.toThrow(/etcd is busy/);
    expect(w.binding(NAME)?.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(w.eventsOf(NAME, EVENT.failedCleanup)).toHaveLength(1);
    expect(gateOf('web-1')?.status).not.toBe('True');

    await w.reconcile(NAME);
    expect(w.binding(NAME)).toBeUndefined();
    expect(gateOf('web-1')).toMatchObject({ status: 'True', message: BINDING_DELETED_MESSAGE });
  });

  it('of an instance target group: only the finalizer goes (no Pod has its gate)', async () => {
    const nodes = await w.targetGroup('k8s-shop-web-instance', { targetType: 'instance', port: 30080 });
    await w.elbv2Port.registerTargets(nodes.arn, [{ id: instanceId, port: 30080 }]);
    await w.bindings.createTargetGroupBinding(
      stackBinding(STACKS[0]![1], { group: nodes, service: { namespace: NAMESPACE, name: 'web', port: 80 } }),
    );
    w.reset();
    expect(await w.reconcile('k8s-shop-web-instance')).toBeUndefined();
    expect(w.writes()).toBe(0);
    await w.bindings.deleteTargetGroupBinding(NAMESPACE, 'k8s-shop-web-instance');
    await w.reconcile('k8s-shop-web-instance');
    expect(w.binding('k8s-shop-web-instance')).toBeUndefined();
    expect(w.elbv2.writeCallCount()).toBe(0);
  });
});
