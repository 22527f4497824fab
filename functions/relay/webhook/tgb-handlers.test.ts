import { describe, expect, it } from 'vitest';
import { KubernetesApiError } from '../../../shared/k8s/errors.ts';
import type { TargetGroupBinding, TargetGroupBindingSpec } from '../../../shared/k8s/tgb-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import type { AdmissionRequest } from './admission.ts';
import { mutatePodReadiness } from './mutate-pod-readiness.ts';
import { FakeTgbAdmissionReads } from './testing/fake-tgb-reads.ts';
import { validateTargetGroupBinding } from './validate-tgb.ts';

/** The TargetGroupBinding webhooks' decisions: AdmissionRequest in, AdmissionResponse out, over in-memory lists. */

const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef';
const OTHER_ARN = 'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/api/fedcba9876543210';

function binding(namespace: string, name: string, spec: Partial<TargetGroupBindingSpec> = {}): TargetGroupBinding {
  return {
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'TargetGroupBinding',
    metadata: { namespace, name },
    spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: ARN, ...spec },
  };
}

function service(namespace: string, name: string, selector?: Record<string, string>): Service {
  return {
    metadata: { namespace, name },
    spec: { ports: [{ port: 80, targetPort: 8080 }], ...(selector ? { selector } : {}) },
  };
}

function create(object: TargetGroupBinding): AdmissionRequest {
  return {
    uid: 'uid-1',
    operation: 'CREATE',
    namespace: object.metadata.namespace,
    name: object.metadata.name,
    object: object as unknown as Record<string, unknown>,
  };
}

function update(old: TargetGroupBinding, object: TargetGroupBinding): AdmissionRequest {
  return { ...create(object), operation: 'UPDATE', oldObject: old as unknown as Record<string, unknown> };
}

const message = (response: { status?: { message: string } }) => response.status?.message ?? '';

describe('validateTargetGroupBinding (vtargetgroupbinding.elbv2.k8s.aws)', () => {
  it('admits a binding of its own target group, by ARN or by name', async () => {
    const reads = new FakeTgbAdmissionReads();
    reads.bindings.push(binding('shop', 'api', { targetGroupARN: OTHER_ARN }));
    expect((await validateTargetGroupBinding(create(binding('shop', 'web')), reads)).allowed).toBe(true);
    const byName = binding('shop', 'named', { targetGroupARN: undefined, targetGroupName: 'web' });
    expect((await validateTargetGroupBinding(create(byName), reads)).allowed).toBe(true);
    // The ARN is checked against every namespace's bindings: one list of them all.
    expect(reads.calls).toEqual(['bindings:*']);
  });

  it.each([
    ['no target group', { targetGroupARN: undefined }, 'spec.targetGroupARN or spec.targetGroupName must be set'],
    [
      'nodeSelector with ip targets',
      { targetType: 'ip' as const, nodeSelector: { matchLabels: { pool: 'edge' } } },
      'spec.nodeSelector can only be set with spec.targetType instance',
    ],
  ])('refuses %s, naming the field', async (_what, spec, expected) => {
    const response = await validateTargetGroupBinding(
      create(binding('shop', 'web', spec)),
      new FakeTgbAdmissionReads(),
    );
    expect(response.allowed).toBe(false);
    expect(response.status?.code).toBe(403);
    expect(message(response)).toContain(expected);
  });

  it('admits nodeSelector with instance targets, or a target type not filled in yet', async () => {
    const reads = new FakeTgbAdmissionReads();
    const nodeSelector = { matchLabels: { pool: 'edge' } };
    const instance = binding('shop', 'web', { targetType: 'instance', nodeSelector });
    expect((await validateTargetGroupBinding(create(instance), reads)).allowed).toBe(true);
    const unset = binding('shop', 'unset', { targetGroupARN: OTHER_ARN, nodeSelector });
    expect((await validateTargetGroupBinding(create(unset), reads)).allowed).toBe(true);
  });

  it.each([
    ['targetGroupARN', { targetGroupARN: OTHER_ARN }],
    ['targetType', { targetType: 'instance' as const }],
    ['ipAddressType', { ipAddressType: 'ipv6' as const }],
    ['vpcID', { vpcID: 'vpc-0b' }],
    ['vpcID', { vpcID: undefined }],
  ])('refuses a change of spec.%s once set', async (field, change) => {
    const old = binding('shop', 'web', { targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a' });
    const changed = binding('shop', 'web', { ...old.spec, ...change });
    const response = await validateTargetGroupBinding(update(old, changed), new FakeTgbAdmissionReads());
    expect(response.allowed).toBe(false);
    expect(message(response)).toContain(`spec.${field} is immutable once set`);
  });

  it('admits the fields the controller fills in (unset -> set) and changes of the others', async () => {
    const reads = new FakeTgbAdmissionReads();
    const old = binding('shop', 'web');
    const filled = binding('shop', 'web', { targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a' });
    expect((await validateTargetGroupBinding(update(old, filled), reads)).allowed).toBe(true);
    const moved = binding('shop', 'web', { ...filled.spec, serviceRef: { name: 'web-v2', port: 'http' } });
    expect((await validateTargetGroupBinding(update(filled, moved), reads)).allowed).toBe(true);
    // The ARN did not change: no list.
    expect(reads.calls).toEqual([]);
  });

  it('refuses a second binding of a target group, naming the first, unless every binding of it is multi-cluster', async () => {
    const reads = new FakeTgbAdmissionReads();
    reads.bindings.push(binding('shop', 'web'));
    const second = await validateTargetGroupBinding(create(binding('other', 'web')), reads);
    expect(second.allowed).toBe(false);
    expect(message(second)).toContain(`spec.targetGroupARN ${ARN} is already bound by shop/web`);
    expect(message(second)).toContain('spec.multiClusterTargetGroup');
    // The new one alone says so: still refused, the first one does not share.
    const halfShared = await validateTargetGroupBinding(
      create(binding('other', 'web', { multiClusterTargetGroup: true })),
      reads,
    );
    expect(halfShared.allowed).toBe(false);
    expect(message(halfShared)).toContain('shop/web');
    // Every binding of it says so.
    reads.bindings[0]!.spec.multiClusterTargetGroup = true;
    const shared = create(binding('other', 'web', { multiClusterTargetGroup: true }));
    expect((await validateTargetGroupBinding(shared, reads)).allowed).toBe(true);
    // The binding itself, listed (a re-applied create, an update), is no conflict.
    expect((await validateTargetGroupBinding(create(binding('shop', 'web')), reads)).allowed).toBe(true);
  });

  it('checks sharing again when an update sets the ARN or turns multi-cluster off', async () => {
    const reads = new FakeTgbAdmissionReads();
    reads.bindings.push(binding('shop', 'web', { multiClusterTargetGroup: true }));
    const byName = binding('other', 'web', { targetGroupARN: undefined, targetGroupName: 'web' });
    const resolved = binding('other', 'web', { targetGroupName: 'web' });
    const fill = await validateTargetGroupBinding(update(byName, resolved), reads);
    expect(fill.allowed).toBe(false);
    expect(message(fill)).toContain('already bound by shop/web');
    const shared = binding('other', 'web', { multiClusterTargetGroup: true });
    reads.bindings.push(shared);
    const unshare = binding('other', 'web', { multiClusterTargetGroup: false });
    const response = await validateTargetGroupBinding(update(shared, unshare), reads);
    expect(response.allowed).toBe(false);
    expect(message(response)).toContain('already bound by shop/web');
  });

  it('refuses, saying why, when the bindings cannot be listed', async () => {
    const reads = new FakeTgbAdmissionReads();
    reads.failWith = new KubernetesApiError(403, 'Forbidden', 'targetgroupbindings is forbidden');
    const response = await validateTargetGroupBinding(create(binding('shop', 'web')), reads);
    expect(response.allowed).toBe(false);
    expect(message(response)).toContain('listing the TargetGroupBindings');
    expect(message(response)).toContain('forbidden');
  });

  it('admits an update that leaves the spec alone, even of a binding that would be refused now', async () => {
    const reads = new FakeTgbAdmissionReads();
    const invalid = binding('shop', 'web', { targetGroupARN: undefined, targetType: 'ip', nodeSelector: {} });
    const finalized = structuredClone(invalid);
    finalized.metadata.finalizers = ['elbv2.k8s.aws/resources'];
    finalized.metadata.deletionTimestamp = '2026-12-04T10:00:00Z';
    expect((await validateTargetGroupBinding(update(invalid, finalized), reads)).allowed).toBe(true);
    expect(reads.calls).toEqual([]);
    // A spec change of it is checked.
    const changed = binding('shop', 'web', { ...invalid.spec, serviceRef: { name: 'api', port: 80 } });
    expect((await validateTargetGroupBinding(update(invalid, changed), reads)).allowed).toBe(false);
  });

  it('lets deletions through', async () => {
    const request = { ...create(binding('shop', 'web', { targetGroupARN: undefined })), operation: 'DELETE' as const };
    expect((await validateTargetGroupBinding(request, new FakeTgbAdmissionReads())).allowed).toBe(true);
  });
});

type PatchedPod = { spec: { readinessGates?: { conditionType: string }[] } };

function pod(labels: Record<string, string>, readinessGates?: { conditionType: string }[]) {
  return {
    metadata: { generateName: 'web-', labels },
    spec: { containers: [], ...(readinessGates ? { readinessGates } : {}) },
  };
}

function podCreate(object: ReturnType<typeof pod>, namespace = 'shop'): AdmissionRequest {
  return { uid: 'uid-2', operation: 'CREATE', namespace, object: object as unknown as Record<string, unknown> };
}

/** Applies the response's one operation on /spec/readinessGates, as the API server would. */
function patched(object: ReturnType<typeof pod>, patch: string | undefined): PatchedPod {
  const operations = JSON.parse(Buffer.from(patch ?? '', 'base64').toString('utf8'));
  expect(operations).toHaveLength(1);
  const [operation] = operations;
  expect(operation.path).toBe('/spec/readinessGates');
  expect(operation.op).toBe(object.spec.readinessGates ? 'replace' : 'add');
  return { spec: { ...object.spec, readinessGates: operation.value } };
}

function world() {
  const reads = new FakeTgbAdmissionReads();
  reads.services.push(service('shop', 'web', { app: 'web' }), service('shop', 'api', { app: 'api' }));
  reads.services.push(service('shop', 'headless'), service('other', 'web', { app: 'web' }));
  reads.bindings.push(
    binding('shop', 'web-ip', { targetType: 'ip' }),
    binding('shop', 'web-unset'),
    binding('shop', 'web-instance', { targetType: 'instance' }),
    binding('shop', 'api', { serviceRef: { name: 'api', port: 80 }, targetType: 'ip' }),
    binding('shop', 'headless', { serviceRef: { name: 'headless', port: 80 } }),
    binding('other', 'web-ip', { targetType: 'ip' }),
  );
  return reads;
}

const gate = (name: string) => ({ conditionType: `target-health.elbv2.k8s.aws/${name}` });

describe('mutatePodReadiness (mpod.elbv2.k8s.aws)', () => {
  it('gates a new Pod on every IP binding of its namespace whose Service selects it (not one whose type is unknown yet)', async () => {
    const reads = world();
    const object = pod({ app: 'web', version: '2' });
    const response = await mutatePodReadiness(podCreate(object), reads, silentLog);
    expect(response.allowed).toBe(true);
    expect(patched(object, response.patch).spec.readinessGates).toEqual([gate('web-ip')]);
    // Two lists, of the Pod's namespace.
    expect(reads.calls.sort()).toEqual(['bindings:shop', 'services:shop']);
  });

  it('keeps the gates a Pod has, replaces a legacy gate of the same binding, never adds one twice', async () => {
    const reads = world();
    const object = pod({ app: 'web' }, [
      { conditionType: 'example.com/warm' },
      { conditionType: 'target-health.alb.ingress.k8s.aws/web-ip' },
      { conditionType: 'target-health.alb.ingress.k8s.aws/elsewhere' },
      gate('web-unset'),
    ]);
    const response = await mutatePodReadiness(podCreate(object), reads, silentLog);
    expect(patched(object, response.patch).spec.readinessGates).toEqual([
      { conditionType: 'example.com/warm' },
      { conditionType: 'target-health.alb.ingress.k8s.aws/elsewhere' },
      gate('web-unset'),
      gate('web-ip'),
    ]);
    // Already gated on both: nothing to change.
    const done = pod({ app: 'web' }, [gate('web-ip'), gate('web-unset')]);
    const again = await mutatePodReadiness(podCreate(done), reads, silentLog);
    expect(again).toEqual({ uid: 'uid-2', allowed: true });
  });

  it('leaves alone a Pod no IP binding selects, an update, and a Pod when the lists fail', async () => {
    const reads = world();
    for (const labels of [{ app: 'other' }, {}] as Record<string, string>[]) {
      expect(await mutatePodReadiness(podCreate(pod(labels)), reads, silentLog)).toEqual({
        uid: 'uid-2',
        allowed: true,
      });
    }
    // Another namespace's Service and binding are not this Pod's.
    expect((await mutatePodReadiness(podCreate(pod({ app: 'api' }), 'other'), reads, silentLog)).patch).toBe(undefined);
    const updateRequest = { ...podCreate(pod({ app: 'web' })), operation: 'UPDATE' as const };
    expect((await mutatePodReadiness(updateRequest, reads, silentLog)).patch).toBe(undefined);
    reads.failWith = new Error('connect ECONNREFUSED');
    const response = await mutatePodReadiness(podCreate(pod({ app: 'web' })), reads, silentLog);
    expect(response).toEqual({ uid: 'uid-2', allowed: true });
  });
});
