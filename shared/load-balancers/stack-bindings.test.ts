import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { KubernetesApiError } from '../k8s/errors.ts';
import { FakeTargetGroupBindings } from '../k8s/fakes/target-group-bindings.ts';
import {
  belongsTo,
  planStackBindings,
  type StackRef,
  stackBinding,
  stackLabels,
  type WantedStackBinding,
} from '../k8s/stack-bindings.ts';
import { STACK_LABELS, TGB_FINALIZER } from '../k8s/tgb-types.ts';
import { keepStackBindings } from './stack-bindings.ts';

/** Stack bindings: the reference's labels, the plan from what exists, and the writes on the fake API server. */

const SERVICE_STACK: StackRef = { kind: 'service', namespace: 'shop', name: 'web' };
const EXPLICIT: StackRef = { kind: 'ingress', explicit: true, name: 'public' };
const IMPLICIT: StackRef = { kind: 'ingress', explicit: false, namespace: 'shop', name: 'front' };

const wanted = (name: string, arn = `arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/${name}/1`) =>
  ({
    group: { arn, name, targetType: 'ip', ipAddressType: 'ipv4', vpcId: 'vpc-1' },
    service: { namespace: 'shop', name: 'web', port: 80 },
  }) satisfies WantedStackBinding;

describe('the labels', () => {
  it('are the reference’s for each kind of stack, and every one is a stack label the binding controller knows', () => {
    expect(stackLabels(EXPLICIT)).toEqual({ 'ingress.k8s.aws/stack': 'public' });
    expect(stackLabels(IMPLICIT)).toEqual({
      'ingress.k8s.aws/stack-namespace': 'shop',
      'ingress.k8s.aws/stack-name': 'front',
    });
    expect(stackLabels(SERVICE_STACK)).toEqual({
      'service.k8s.aws/stack-namespace': 'shop',
      'service.k8s.aws/stack-name': 'web',
    });
    for (const stack of [EXPLICIT, IMPLICIT, SERVICE_STACK]) {
      for (const key of Object.keys(stackLabels(stack))) expect(STACK_LABELS).toContain(key);
    }
  });

  it('make a binding the stack’s only with every label equal', () => {
    const binding = stackBinding(IMPLICIT, wanted('k8s-shop-web-1'));
    expect(belongsTo(binding, IMPLICIT)).toBe(true);
    expect(belongsTo(binding, { ...IMPLICIT, name: 'other' })).toBe(false);
    expect(belongsTo(binding, { kind: 'service', namespace: 'shop', name: 'front' })).toBe(false);
  });
});

describe('the plan', () => {
  it('creates what is missing with the target group’s name, in the Service’s namespace, with the finalizer', () => {
    const plan = planStackBindings(SERVICE_STACK, [], [wanted('k8s-shop-web-1')]);
    expect(plan.create).toHaveLength(1);
    const [binding] = plan.create;
    expect(binding!.metadata).toMatchObject({ name: 'k8s-shop-web-1', namespace: 'shop', finalizers: [TGB_FINALIZER] });
    expect(binding!.spec).toEqual({
      serviceRef: { name: 'web', port: 80 },
      targetGroupARN: wanted('k8s-shop-web-1').group.arn,
      targetType: 'ip',
      ipAddressType: 'ipv4',
      vpcID: 'vpc-1',
    });
    expect(plan.delete).toEqual([]);
  });

  it('leaves one in line alone, deletes one no longer wanted and one naming another target group', () => {
    const kept = {
      ...stackBinding(SERVICE_STACK, wanted('a')),
      metadata: { ...stackBinding(SERVICE_STACK, wanted('a')).metadata, uid: 'u-a' },
    };
    const stale = {
      ...stackBinding(SERVICE_STACK, wanted('b')),
      metadata: { ...stackBinding(SERVICE_STACK, wanted('b')).metadata, uid: 'u-b' },
    };
    const moved = stackBinding(SERVICE_STACK, wanted('c', 'arn:old'));
    const plan = planStackBindings(SERVICE_STACK, [kept, stale, moved], [wanted('a'), wanted('c')]);
    expect(plan.create).toEqual([]);
    expect(plan.delete).toEqual([
      { namespace: 'shop', name: 'c' },
      { namespace: 'shop', name: 'b', uid: 'u-b' },
    ]);
  });

  it('never deletes another stack’s binding or one already going, and names one of the wanted name that is not ours', () => {
    const other = stackBinding({ kind: 'service', namespace: 'shop', name: 'api' }, wanted('x'));
    const going = {
      ...stackBinding(SERVICE_STACK, wanted('y')),
      metadata: { ...stackBinding(SERVICE_STACK, wanted('y')).metadata, deletionTimestamp: '2026-12-04T00:00:00Z' },
    };
    const users = { metadata: { name: 'z', namespace: 'shop' }, spec: { serviceRef: { name: 'web', port: 80 } } };
    const plan = planStackBindings(SERVICE_STACK, [other, going, users], [wanted('z')]);
    expect(plan.delete).toEqual([]);
    expect(plan.create).toEqual([]);
    expect(plan.conflicts).toEqual([expect.stringContaining('TargetGroupBinding shop/z exists and is not this stack')]);
  });
});

describe('keepStackBindings on the fake API server', () => {
  const world = () => new FakeTargetGroupBindings(new FakeClock(Date.parse('2026-12-04T12:00:00Z')));

  it('writes once, then nothing; deletes when none is wanted (marked, as the finalizer holds it)', async () => {
    const api = world();
    expect(await keepStackBindings(api, SERVICE_STACK, [wanted('a'), wanted('b')])).toEqual({
      writes: 2,
      warnings: [],
    });
    expect(await keepStackBindings(api, SERVICE_STACK, [wanted('a'), wanted('b')])).toEqual({
      writes: 0,
      warnings: [],
    });
    expect(api.callCount('createTargetGroupBinding')).toBe(2);
    expect(await keepStackBindings(api, SERVICE_STACK, [wanted('a')])).toEqual({ writes: 1, warnings: [] });
    expect(api.bindings.get('shop/b')?.metadata.deletionTimestamp).toBeDefined();
    expect(await keepStackBindings(api, SERVICE_STACK, [wanted('a')])).toEqual({ writes: 0, warnings: [] });
  });

  it('lists one namespace for a Service or an implicit group, every namespace for an explicit group', async () => {
    const api = world();
    const listed: (string | undefined)[] = [];
    const port = {
      listTargetGroupBindings: async (ns?: string) => {
        listed.push(ns);
        return api.listTargetGroupBindings(ns);
      },
      createTargetGroupBinding: api.createTargetGroupBinding.bind(api),
      deleteTargetGroupBinding: api.deleteTargetGroupBinding.bind(api),
    };
    await keepStackBindings(port, SERVICE_STACK, []);
    await keepStackBindings(port, IMPLICIT, []);
    await keepStackBindings(port, EXPLICIT, []);
    expect(listed).toEqual(['shop', 'shop', undefined]);
  });

  it('says so when the CRD is not installed, and fails nothing', async () => {
    const api = world();
    api.crdInstalled = false;
    const result = await keepStackBindings(api, SERVICE_STACK, [wanted('a'), wanted('b')]);
    expect(result.writes).toBe(0);
    expect(result.warnings).toEqual([expect.stringContaining('the TargetGroupBinding CRD is not installed')]);
  });

  it('takes a binding made meanwhile (409) as made, and a delete whose uid no longer matches as not ours', async () => {
    const api = world();
    api.queueError('createTargetGroupBinding', new KubernetesApiError(409, 'AlreadyExists', 'exists'));
    expect(await keepStackBindings(api, SERVICE_STACK, [wanted('a')])).toEqual({ writes: 0, warnings: [] });
    await keepStackBindings(api, SERVICE_STACK, [wanted('a')]);
    api.queueError('deleteTargetGroupBinding', new KubernetesApiError(409, 'Conflict', 'Precondition failed'));
    expect(await keepStackBindings(api, SERVICE_STACK, [])).toEqual({ writes: 0, warnings: [] });
  });

  it('fails the pass, to be retried, on anything else', async () => {
    const api = world();
    api.queueError('createTargetGroupBinding', new KubernetesApiError(500, 'InternalError', 'etcd'));
    await expect(keepStackBindings(api, SERVICE_STACK, [wanted('a')])).rejects.toThrow(
      /creating TargetGroupBinding shop\/a: 500 InternalError/,
    );
  });
});
