import { beforeEach, describe, expect, it } from 'vitest';
import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import { RetryableError } from '../../shared/errors.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from './testing/world.ts';

/** The binding controller on the fakes: what it registers, writes and tells, pass by pass. */

let w: TgbWorld;
let group: TargetGroup;

beforeEach(async () => {
  w = createTgbWorld();
  w.addPodNode(1, ['10.0.20.11', '10.0.20.12', '10.0.20.13']);
  w.putWebService();
  group = await w.targetGroup('web-ip');
});

const pods = (n: number) => Array.from({ length: n }, (_, i) => ({ pod: `web-${i + 1}`, ip: `10.0.20.${11 + i}` }));

describe('an ip binding', () => {
  it('registers the ready endpoints on the target port, fills in what it left out, and says so once', async () => {
    w.putSlice([...pods(2), { pod: 'web-3', ip: '10.0.20.13', ready: false }]);
    w.putBinding('web', { targetGroupARN: group.arn });
    w.reset();
    expect(await w.reconcile('web')).toBeUndefined();
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080']);
    const binding = w.binding('web')!;
    expect(binding.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(binding.spec).toMatchObject({ targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a1b2c3d' });
    expect(binding.status).toMatchObject({
      observedGeneration: binding.metadata.generation,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled' }],
    });
    expect(w.eventsOf('web')).toEqual(['SuccessfullyReconciled: Successfully reconciled']);
    expect(w.metrics.total(MetricName.TargetsRegistered)).toBe(2);

    // A pass over a binding in order writes nothing at all, and says nothing.
    w.reset();
    expect(await w.reconcile('web')).toBeUndefined();
    expect(w.writes()).toBe(0);
    expect(w.kube.events).toEqual([]);
  });

  it('writes only the difference on scale-up and scale-down', async () => {
    w.putSlice(pods(2));
    w.putBinding('web', { targetGroupARN: group.arn });
    await w.reconcile('web');
    w.putSlice(pods(3));
    w.reset();
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080', '10.0.20.13:8080']);
    expect(w.elbv2.callCount('RegisterTargets')).toBe(1);
    expect(w.elbv2.callCount('DeregisterTargets')).toBe(0);
    expect(w.metrics.total(MetricName.TargetsRegistered)).toBe(1);
    w.putSlice(pods(3).slice(1));
    w.reset();
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.12:8080', '10.0.20.13:8080']);
    expect(w.elbv2.callCount('RegisterTargets')).toBe(0);
    expect(w.metrics.total(MetricName.TargetsDeregistered)).toBe(1);
  });

  it('finds the target group by name and fills the ARN in once', async () => {
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupName: 'web-ip' });
    await w.reconcile('web');
    expect(w.binding('web')!.spec.targetGroupARN).toBe(group.arn);
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
    w.reset();
    await w.reconcile('web');
    expect(w.bindings.callCount('fillTargetGroupBindingSpec')).toBe(0);
    expect(w.elbv2.callCount('DescribeTargetGroups')).toBe(1);
  });

  it('the Service gone: BackendNotFound, and its targets deregistered', async () => {
    w.putSlice(pods(2));
    w.putBinding('web', { targetGroupARN: group.arn });
    await w.reconcile('web');
    w.kube.deleteService(NAMESPACE, 'web');
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual([]);
    expect(w.eventsOf('web', 'BackendNotFound')).toEqual(['BackendNotFound: backend service shop/web not found']);
    expect(w.binding('web')!.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
  });

  it('a target nobody asked for is deregistered', async () => {
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.0.20.99')]);
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupARN: group.arn });
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
  });
});

describe('an IPv6 binding', () => {
  it('registers the addresses of the IPv6 slices only', async () => {
    const v6 = await w.targetGroup('web-ip6', { ipv6: true });
    w.putSlice(pods(1));
    w.kube.putEndpointSlice({
      metadata: { name: 'web-v6', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv6',
      endpoints: [{ addresses: ['fd00:10:244::11'], conditions: { ready: true } }],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    w.putBinding('web', { targetGroupARN: v6.arn });
    await w.reconcile('web');
    expect(w.registered(v6.arn)).toEqual(['fd00:10:244::11:8080']);
    expect(w.binding('web')!.spec.ipAddressType).toBe('ipv6');
  });
});

describe('a multi-cluster binding', () => {
  it('keeps the targets it did not register, and records its own on the binding only when they change', async () => {
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.1.0.5')]);
    w.putSlice(pods(2));
    w.putBinding('web', { targetGroupARN: group.arn, multiClusterTargetGroup: true });
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080', '10.1.0.5:8080']);
    expect(w.binding('web')!.metadata.annotations?.['serverless-ccm/registered-targets']).toBe(
      '10.0.20.11:8080,10.0.20.12:8080',
    );
    w.reset();
    await w.reconcile('web');
    expect(w.bindings.callCount('setTargetGroupBindingAnnotations')).toBe(0);
    w.putSlice(pods(1));
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.1.0.5:8080']);
    expect(w.binding('web')!.metadata.annotations?.['serverless-ccm/registered-targets']).toBe('10.0.20.11:8080');
    // Deleted: only its own go.
    w.bindings.deleteBinding(NAMESPACE, 'web');
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.1.0.5:8080']);
    expect(w.binding('web')).toBeUndefined();
  });

  it('taken over from the reference (its finalizer, no record): the wanted targets there are recorded as its own', async () => {
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.0.20.11'), w.target('10.1.0.5')]);
    w.putSlice(pods(1));
    w.putBinding(
      'web',
      { targetGroupARN: group.arn, multiClusterTargetGroup: true, targetType: 'ip' },
      { finalizers: [TGB_FINALIZER] },
    );
    w.reset();
    await w.reconcile('web');
    expect(w.elbv2.callCount('RegisterTargets')).toBe(0);
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.1.0.5:8080']);
    expect(w.binding('web')!.metadata.annotations?.['serverless-ccm/registered-targets']).toBe('10.0.20.11:8080');
  });
});

describe('deletion', () => {
  it('deregisters every target, lets gated Pods go, drops the finalizer; the target group stays', async () => {
    w.putPod('web-1', '10.0.20.11', { gates: ['web'] });
    w.putSlice(pods(2));
    w.putBinding('web', { targetGroupARN: group.arn });
    await w.reconcile('web');
    w.bindings.deleteBinding(NAMESPACE, 'web');
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual([]);
    expect(w.binding('web')).toBeUndefined();
    expect(w.elbv2.targetGroupNamed('web-ip')).toBeDefined();
    const gate = w.kube.workloads.get(NAMESPACE, 'web-1')?.status?.conditions?.find((c) => c.type.includes('web'));
    expect(gate).toMatchObject({ status: 'True', message: 'Target Group Binding is deleted' });
  });

  it('a binding without our finalizer is left alone', async () => {
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupARN: group.arn }, { finalizers: ['someone-else'] });
    w.bindings.deleteBinding(NAMESPACE, 'web');
    w.reset();
    await w.reconcile('web');
    expect(w.writes()).toBe(0);
  });
});

describe('failures, told on the binding', () => {
  const conflict = () => new KubernetesApiError(409, 'Conflict', 'the object has been modified');
  const forbidden = () => new KubernetesApiError(403, 'Forbidden', 'cannot patch targetgroupbindings');

  it('a conflict adding the finalizer is read again and retried; a refusal is FailedAddFinalizer and no target', async () => {
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupARN: group.arn, targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a1b2c3d' });
    w.bindings.queueError('setTargetGroupBindingFinalizers', conflict());
    await w.reconcile('web');
    expect(w.binding('web')!.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);

    w.putBinding('api', { targetGroupARN: (await w.targetGroup('api-ip')).arn });
    w.bindings.queueError('setTargetGroupBindingFinalizers', forbidden());
    await expect(w.reconcile('api')).rejects.toThrow(/adding finalizer/);
    expect(w.eventsOf('api', 'FailedAddFinalizer')).toEqual([expect.stringContaining('Forbidden')]);
    expect(w.elbv2.targetsOf(w.elbv2.targetGroupNamed('api-ip')!.arn)).toEqual([]);
  });

  it('a deletion AWS refuses is FailedCleanup and keeps the finalizer; a finalizer that cannot go, FailedRemoveFinalizer', async () => {
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupARN: group.arn });
    await w.reconcile('web');
    w.bindings.deleteBinding(NAMESPACE, 'web');
    w.elbv2.queueError('DeregisterTargets', new AwsServiceError('AccessDenied', 'not authorized', 403));
    await expect(w.reconcile('web')).rejects.toThrow(/AccessDenied/);
    expect(w.eventsOf('web', 'FailedCleanup')).toEqual([expect.stringContaining('AccessDenied')]);
    expect(w.binding('web')!.metadata.finalizers).toEqual([TGB_FINALIZER]);
    w.bindings.queueError('setTargetGroupBindingFinalizers', forbidden());
    await expect(w.reconcile('web')).rejects.toThrow(/removing finalizer/);
    expect(w.eventsOf('web', 'FailedRemoveFinalizer')).toEqual([expect.stringContaining('Forbidden')]);
    expect(w.registered(group.arn)).toEqual([]);
    await w.reconcile('web');
    expect(w.binding('web')).toBeUndefined();
  });

  it('a status that cannot be written is FailedUpdateStatus; the targets are in all the same', async () => {
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupARN: group.arn });
    w.bindings.queueError('setTargetGroupBindingStatus', forbidden());
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
    expect(w.eventsOf('web', 'FailedUpdateStatus')).toEqual([expect.stringContaining('Forbidden')]);
  });

  it('a binding changed between the read and the fill-in: the pass is retried, nothing written to AWS', async () => {
    w.putSlice(pods(1));
    w.putBinding('web', { targetGroupARN: group.arn });
    w.bindings.queueError('fillTargetGroupBindingSpec', conflict());
    await expect(w.reconcile('web')).rejects.toBeInstanceOf(RetryableError);
    expect(w.registered(group.arn)).toEqual([]);
    await w.reconcile('web');
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
  });
});
