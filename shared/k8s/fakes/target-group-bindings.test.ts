import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import { LBC_LEASE, lbcLeaseState } from '../lbc-lease.ts';
import { type TargetGroupBinding, TGB_FINALIZER } from '../tgb-types.ts';
import type { Pod } from '../types.ts';
import { FakeKubernetes } from './fake-kubernetes.ts';
import { FakeTargetGroupBindings, fakeTgbControllerKube, type TgbChange } from './target-group-bindings.ts';

/** FakeTargetGroupBindings, the Pod gates and the Lease on FakeKubernetes: the API server's semantics relied on. */

const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/web/0123456789abcdef';

function binding(name: string, namespace = 'shop', spec: Partial<TargetGroupBinding['spec']> = {}): TargetGroupBinding {
  return {
    metadata: { name, namespace },
    spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: ARN, ...spec },
  };
}

function setup() {
  const clock = new FakeClock(Date.parse('2026-11-02T08:00:00Z'));
  const fake = new FakeTargetGroupBindings(clock);
  const kube = new FakeKubernetes(clock);
  const changes: TgbChange[] = [];
  fake.watch((change) => changes.push(change));
  return { clock, fake, kube, changes, port: fakeTgbControllerKube(fake, kube) };
}

const guard = (b: { metadata: { resourceVersion?: string } }) => ({ resourceVersion: b.metadata.resourceVersion! });

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err as KubernetesApiError,
  );

describe('FakeTargetGroupBindings', () => {
  it('stores a binding as the API server does: typed, versioned, generation 1; lists typed items, per namespace', async () => {
    const { fake, port } = setup();
    const stored = fake.putBinding(binding('web'));
    fake.putBinding(binding('api', 'other'));
    expect(stored).toMatchObject({
      apiVersion: 'elbv2.k8s.aws/v1beta1',
      kind: 'TargetGroupBinding',
      metadata: { name: 'web', namespace: 'shop', generation: 1, creationTimestamp: '2026-11-02T08:00:00Z' },
    });
    expect(stored.status).toBeUndefined();
    expect(await port.getTargetGroupBinding('shop', 'web')).toEqual(stored);
    expect(await port.getTargetGroupBinding('shop', 'absent')).toBeUndefined();
    const all = await port.listTargetGroupBindings();
    expect(all.map((b) => b.metadata.name).sort()).toEqual(['api', 'web']);
    expect(all[0]).toMatchObject({ kind: 'TargetGroupBinding', apiVersion: 'elbv2.k8s.aws/v1beta1' });
    expect((await port.listTargetGroupBindings('other')).map((b) => b.metadata.name)).toEqual(['api']);
    expect(fake.callCount('listTargetGroupBindings')).toBe(2);
  });

  it('refuses what the CRD refuses (422 naming the field)', () => {
    const { fake } = setup();
    const bad = (spec: unknown) => () => fake.putBinding({ metadata: { name: 'x', namespace: 'shop' }, spec } as never);
    expect(bad({ targetGroupARN: ARN })).toThrow(/spec\.serviceRef: Required value/);
    expect(bad({ serviceRef: { name: 'web' } })).toThrow(/spec\.serviceRef\.port: Required value/);
    expect(bad({ serviceRef: { name: 'web', port: 80 }, targetType: 'pod' })).toThrow(
      /spec\.targetType: Unsupported value: "pod": supported values: "instance", "ip"/,
    );
    expect(bad({ serviceRef: { name: 'web', port: 80 }, ipAddressType: 'dualstack' })).toThrow(/spec\.ipAddressType/);
    expect(
      bad({ serviceRef: { name: 'web', port: 80 }, networking: { ingress: [{ from: [{ ipBlock: {} }] }] } }),
    ).toThrow(
      /spec\.networking\.ingress\[0\]\.ports: Required value, spec\.networking\.ingress\[0\]\.from\[0\]\.ipBlock\.cidr/,
    );
    try {
      bad({})();
    } catch (err) {
      expect(err).toBeInstanceOf(KubernetesApiError);
      expect((err as KubernetesApiError).statusCode).toBe(422);
    }
    expect(fake.bindings.size).toBe(0);
  });

  it('moves the generation on a spec change only; a stale guard is 409; a write changing nothing is none', async () => {
    const { fake, port } = setup();
    const first = fake.putBinding(binding('web'));
    const labelled = fake.mutateBinding('shop', 'web', (b) => {
      b.metadata.labels = { team: 'a' };
    });
    expect(labelled.metadata.generation).toBe(1);
    const stale = await rejection(port.setTargetGroupBindingFinalizers('shop', 'web', [TGB_FINALIZER], guard(first)));
    expect(stale?.statusCode).toBe(409);
    const withFinalizer = await port.setTargetGroupBindingFinalizers('shop', 'web', [TGB_FINALIZER], guard(labelled));
    expect(withFinalizer.metadata.finalizers).toEqual([TGB_FINALIZER]);
    const filled = await port.fillTargetGroupBindingSpec(
      'shop',
      'web',
      { targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-1' },
      guard(withFinalizer),
    );
    expect(filled.spec).toMatchObject({ serviceRef: { name: 'web', port: 80 }, targetType: 'ip', vpcID: 'vpc-1' });
    expect(filled.metadata.generation).toBe(2);
    const again = await port.fillTargetGroupBindingSpec('shop', 'web', { targetType: 'ip' }, guard(filled));
    expect(again.metadata.resourceVersion).toBe(filled.metadata.resourceVersion);
    const badFill = await rejection(
      port.fillTargetGroupBindingSpec('shop', 'web', { targetType: 'x' as never }, guard(filled)),
    );
    expect(badFill?.statusCode).toBe(422);
    const annotated = await port.setTargetGroupBindingAnnotations('shop', 'web', { a: '1', b: '2' }, guard(filled));
    const unannotated = await port.setTargetGroupBindingAnnotations('shop', 'web', { a: null }, guard(annotated));
    expect(unannotated.metadata.annotations).toEqual({ b: '2' });
    expect(unannotated.metadata.generation).toBe(2);
    expect(fake.writeCount()).toBe(7);
  });

  it('keeps the status apart: the status write replaces it whole and ignores nothing else; kubectl apply keeps it', async () => {
    const { fake, port } = setup();
    fake.putBinding(binding('web'));
    const condition = { type: 'Ready', status: 'False' as const, reason: 'TargetGroupNotFound', message: 'gone' };
    const written = await port.setTargetGroupBindingStatus('shop', 'web', {
      observedGeneration: 1,
      conditions: [condition],
    });
    expect(written.status).toEqual({ observedGeneration: 1, conditions: [condition] });
    expect(written.metadata.generation).toBe(1);
    const replaced = await port.setTargetGroupBindingStatus('shop', 'web', { observedGeneration: 1 });
    expect(replaced.status).toEqual({ observedGeneration: 1 });
    // The main resource takes no status; a re-apply keeps the stored one.
    const applied = fake.mutateBinding('shop', 'web', (b) => {
      b.spec.targetType = 'ip';
    });
    expect(applied.status).toEqual({ observedGeneration: 1 });
    const patched = fake.patchBinding('shop', 'web', { status: { observedGeneration: 9 } }, guard(applied), false);
    expect(patched.status).toEqual({ observedGeneration: 1 });
    const statusSpec = fake.patchBinding(
      'shop',
      'web',
      { spec: { vpcID: 'vpc-9' }, metadata: { labels: { b: 'c' } }, status: { observedGeneration: 2 } },
      guard(patched),
      true,
    );
    expect(statusSpec.spec.vpcID).toBeUndefined();
    expect(statusSpec.metadata.labels).toBeUndefined();
    expect(statusSpec.status).toEqual({ observedGeneration: 2 });
  });

  it('holds a deletion while a finalizer is on, refuses a new finalizer then, and removes it with the last one', async () => {
    const { fake, port, changes, clock } = setup();
    fake.putBinding(binding('web'));
    const held = await port.setTargetGroupBindingFinalizers(
      'shop',
      'web',
      [TGB_FINALIZER],
      guard(fake.bindings.get('shop/web')!),
    );
    clock.advance(5_000);
    fake.deleteBinding('shop', 'web');
    const marked = (await port.getTargetGroupBinding('shop', 'web'))!;
    expect(marked.metadata).toMatchObject({ deletionTimestamp: '2026-11-02T08:00:05Z', generation: 2 });
    expect(marked.metadata.resourceVersion).not.toBe(held.metadata.resourceVersion);
    const added = await rejection(
      port.setTargetGroupBindingFinalizers('shop', 'web', [TGB_FINALIZER, 'x/y'], guard(marked)),
    );
    expect(added?.statusCode).toBe(422);
    await port.setTargetGroupBindingFinalizers('shop', 'web', [], guard(marked));
    expect(await port.getTargetGroupBinding('shop', 'web')).toBeUndefined();
    expect(changes.map((c) => c.type)).toEqual(['ADDED', 'MODIFIED', 'MODIFIED', 'DELETED']);
    fake.putBinding(binding('bare'));
    fake.deleteBinding('shop', 'bare');
    expect(fake.bindings.has('shop/bare')).toBe(false);
  });

  it('answers as the API server without the CRD: [] and undefined to reads, 404 to writes', async () => {
    const { fake, port } = setup();
    fake.putBinding(binding('web'));
    const stored = guard(fake.bindings.get('shop/web')!);
    fake.crdInstalled = false;
    expect(await port.listTargetGroupBindings()).toEqual([]);
    expect(await port.getTargetGroupBinding('shop', 'web')).toBeUndefined();
    expect((await rejection(port.setTargetGroupBindingFinalizers('shop', 'web', [], stored)))?.statusCode).toBe(404);
    expect(() => fake.putBinding(binding('other'))).toThrow(/not installed/);
  });

  it('fails the next calls with queued errors, counting them', async () => {
    const { fake, port } = setup();
    fake.queueError('getTargetGroupBinding', new KubernetesApiError(500, 'InternalError', 'etcd'));
    expect((await rejection(port.getTargetGroupBinding('shop', 'web')))?.statusCode).toBe(500);
    expect(await port.getTargetGroupBinding('shop', 'web')).toBeUndefined();
    expect(fake.callCount('getTargetGroupBinding')).toBe(2);
  });
});

function pod(
  name: string,
  labels: Record<string, string>,
  conditions: NonNullable<Pod['status']>['conditions'] = [],
): Pod {
  return {
    metadata: { name, namespace: 'shop', labels },
    spec: { nodeName: 'node-1', readinessGates: [{ conditionType: 'target-health.elbv2.k8s.aws/web' }] },
    status: { phase: 'Running', conditions },
  };
}

describe('the Pod gates and the Lease on FakeKubernetes', () => {
  it("lists a namespace's Pods by a Service's selector", async () => {
    const { kube, port } = setup();
    kube.putPod(pod('web-1', { app: 'web', tier: 'a' }));
    kube.putPod(pod('web-2', { app: 'web' }));
    kube.putPod(pod('db-1', { app: 'db' }));
    kube.putPod({
      ...pod('web-x', { app: 'web' }),
      metadata: { name: 'web-x', namespace: 'other', labels: { app: 'web' } },
    });
    expect((await port.listPods('shop', { app: 'web' })).map((p) => p.metadata.name).sort()).toEqual([
      'web-1',
      'web-2',
    ]);
    expect((await port.listPods('shop', { app: 'web', tier: 'a' })).map((p) => p.metadata.name)).toEqual(['web-1']);
    expect(await port.listPods('shop', { app: 'none' })).toEqual([]);
    expect(kube.callCount('listPods')).toBe(3);
  });

  it('sets one condition by type, leaving the others; lastTransitionTime moves only when the status does', async () => {
    const { kube, port, clock } = setup();
    const ready = { type: 'Ready', status: 'False' as const, lastTransitionTime: '2026-11-02T07:00:00Z' };
    kube.putPod(pod('web-1', { app: 'web' }, [ready]));
    const gate = 'target-health.elbv2.k8s.aws/web';
    const first = await port.setPodCondition('shop', 'web-1', {
      type: gate,
      status: 'False',
      reason: 'Elb.RegistrationInProgress',
      message: 'Target registration is in progress',
    });
    // The condition the patch names comes first, then the others (the API server's strategic merge order).
    expect(first !== 'gone' && first.status?.conditions).toEqual([
      {
        type: gate,
        status: 'False',
        reason: 'Elb.RegistrationInProgress',
        message: 'Target registration is in progress',
        lastTransitionTime: '2026-11-02T08:00:00Z',
      },
      ready,
    ]);
    clock.advance(10_000);
    const version = kube.workloads.get('shop', 'web-1')!.metadata.resourceVersion;
    await port.setPodCondition('shop', 'web-1', {
      type: gate,
      status: 'False',
      reason: 'Elb.RegistrationInProgress',
      message: 'Target registration is in progress',
    });
    expect(kube.workloads.get('shop', 'web-1')!.metadata.resourceVersion).toBe(version);
    await port.setPodCondition('shop', 'web-1', { type: gate, status: 'False', reason: 'Target.FailedHealthChecks' });
    const unhealthy = kube.workloads.get('shop', 'web-1')!.status!.conditions![0];
    expect(unhealthy).toEqual({
      type: gate,
      status: 'False',
      reason: 'Target.FailedHealthChecks',
      lastTransitionTime: '2026-11-02T08:00:00Z',
    });
    clock.advance(10_000);
    const healthy = await port.setPodCondition('shop', 'web-1', { type: gate, status: 'True' });
    expect(healthy !== 'gone' && healthy.status?.conditions).toEqual([
      { type: gate, status: 'True', lastTransitionTime: '2026-11-02T08:00:20Z' },
      ready,
    ]);
    expect(kube.callCount('setPodCondition')).toBe(4);
    expect(await port.setPodCondition('shop', 'absent', { type: gate, status: 'True' })).toBe('gone');
  });

  it('serves the status strategic merge patch as the API server: a stale precondition 409, no merge key 422, $patch delete', () => {
    const { kube } = setup();
    const ready = { type: 'Ready', status: 'False' as const };
    const gate = { type: 'target-health.elbv2.k8s.aws/web', status: 'True' as const };
    const stored = kube.putPod(pod('web-1', { app: 'web' }, [ready, gate]));
    const status = (patch: unknown) => () => kube.workloads.patchStatusRequest('shop', 'web-1', patch);
    expect(status({ metadata: { resourceVersion: '1' }, status: { conditions: [gate] } })).toThrow(
      expect.objectContaining({ statusCode: 409 }),
    );
    expect(status({ status: { conditions: [{ status: 'True' }] } })).toThrow(
      expect.objectContaining({ statusCode: 422 }),
    );
    const removed = status({ status: { conditions: [{ type: gate.type, $patch: 'delete' }] } })();
    expect(removed.status?.conditions).toEqual([ready]);
    const phase = status({ status: { phase: 'Running' }, spec: { nodeName: 'elsewhere' } })();
    expect(phase.status).toMatchObject({ phase: 'Running', conditions: [ready] });
    expect(phase.spec?.nodeName).toBe('node-1');
    expect(Number(phase.metadata.resourceVersion)).toBeGreaterThan(Number(stored.metadata.resourceVersion));
    expect(() => kube.workloads.patchStatusRequest('shop', 'absent', {})).toThrow(
      expect.objectContaining({ statusCode: 404 }),
    );
  });

  it('answers Namespaces with their labels: those put, those every cluster has, those a Pod lives in', async () => {
    const { kube, port } = setup();
    kube.workloads.putNamespace({
      metadata: { name: 'gated', labels: { 'elbv2.k8s.aws/pod-readiness-gate-inject': 'enabled' } },
    });
    expect((await port.getNamespace('gated'))?.metadata.labels).toEqual({
      'elbv2.k8s.aws/pod-readiness-gate-inject': 'enabled',
      'kubernetes.io/metadata.name': 'gated',
    });
    expect((await port.getNamespace('default'))?.metadata.labels).toEqual({ 'kubernetes.io/metadata.name': 'default' });
    expect(await port.getNamespace('shop')).toBeUndefined();
    kube.putPod(pod('web-1', { app: 'web' }));
    expect((await port.getNamespace('shop'))?.metadata.name).toBe('shop');
    expect(kube.callCount('getNamespace')).toBe(4);
  });

  it("keeps the reference's leader Lease as its holder writes it: held, expired, released, deleted", async () => {
    const { kube, port, clock } = setup();
    expect(await port.getLease(LBC_LEASE.namespace, LBC_LEASE.name)).toBeUndefined();
    kube.workloads.leases.holdLbcLease('lbc-7d9f_1', { durationSeconds: 15 });
    expect(await port.getLease(LBC_LEASE.namespace, LBC_LEASE.name)).toMatchObject({
      metadata: { name: LBC_LEASE.name, namespace: 'kube-system' },
      spec: { holderIdentity: 'lbc-7d9f_1', leaseDurationSeconds: 15, renewTime: '2026-11-02T08:00:00.000000Z' },
    });
    expect(await lbcLeaseState(port, clock.now())).toEqual({ held: true, holder: 'lbc-7d9f_1', expiresInSeconds: 15 });
    clock.advance(16_000);
    expect(await lbcLeaseState(port, clock.now())).toEqual({ held: false });
    kube.workloads.leases.holdLbcLease('lbc-7d9f_1');
    expect((await lbcLeaseState(port, clock.now())).held).toBe(true);
    kube.workloads.leases.releaseLbcLease();
    expect(await lbcLeaseState(port, clock.now())).toEqual({ held: false });
    kube.workloads.leases.deleteLease(LBC_LEASE.namespace, LBC_LEASE.name);
    expect(await port.getLease(LBC_LEASE.namespace, LBC_LEASE.name)).toBeUndefined();
    kube.queueError('getLease', new KubernetesApiError(403, 'Forbidden', 'no'));
    expect((await rejection(port.getLease(LBC_LEASE.namespace, LBC_LEASE.name)))?.statusCode).toBe(403);
    expect(kube.callCount('getLease')).toBe(8);
  });
});
