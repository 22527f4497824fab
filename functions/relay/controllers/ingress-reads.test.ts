import { describe, expect, it } from 'vitest';
import { GROUP_NAME_ANNOTATION, groupOf } from '../../../shared/ingress/membership.ts';
import { INGRESS_CLASS_ANNOTATION, type Ingress } from '../../../shared/k8s/ingress-types.ts';
import { fingerprint } from '../fingerprint.ts';
import type { KubeObject } from '../kube-object.ts';
import { makeIngress, makeIngressClass } from '../testing/ingress-objects.ts';
import { makeService } from '../testing/objects.ts';
import {
  groupFinalizers,
  ingressClassReads,
  ingressFacts,
  ingressOf,
  ingressReads,
  ingressServiceReads,
  servicesOf,
  TARGET_TYPE_ANNOTATION,
} from './ingress-reads.ts';

/** What the Ingress module fingerprints and keeps of each object. */

type Change = (object: Record<string, unknown>) => void;

/** Sets the field at a dotted path (numbers index arrays), or at a list of steps (annotation keys have dots). */
const set =
  (path: string | string[], value: unknown): Change =>
  (object) => {
    const steps = typeof path === 'string' ? path.split('.') : path;
    let parent: Record<string, unknown> = object;
    for (const step of steps.slice(0, -1)) {
      parent[step] ??= {};
      parent = parent[step] as Record<string, unknown>;
    }
    parent[steps.at(-1)!] = value;
  };

const changed = (reads: (o: KubeObject) => unknown[] | undefined, object: KubeObject, change: Change) => {
  const copy = structuredClone(object);
  change(copy as Record<string, unknown>);
  return fingerprint(reads(copy)) !== fingerprint(reads(object));
};

describe('the Ingress fingerprint', () => {
  const ingress = makeIngress('shop', 'web', {
    className: 'alb',
    annotations: { [GROUP_NAME_ANNOTATION]: 'g', other: 'x' },
    finalizers: ['group.ingress.k8s.aws/g', 'example.com/other'],
  });

  it.each<[string, Change]>([
    ['the class', set('spec.ingressClassName', 'other')],
    ['a rule', set('spec.rules.0.host', 'other.example.com')],
    ['a backend port', set('spec.rules.0.http.paths.0.backend.service.port', { number: 8080 })],
    ['a controller annotation', set(['metadata', 'annotations', GROUP_NAME_ANNOTATION], 'h')],
    ['the legacy class annotation', set(['metadata', 'annotations', INGRESS_CLASS_ANNOTATION], 'alb')],
    ['our finalizer', set('metadata.finalizers', ['example.com/other'])],
    ['deletion', set('metadata.deletionTimestamp', '2026-12-04T10:00:00Z')],
    ['generation', set('metadata.generation', 2)],
  ])('notices %s', (_what, change) => {
    expect(changed(ingressReads, ingress, change)).toBe(true);
  });

  it.each<[string, Change]>([
    ['the status', set('status', { loadBalancer: { ingress: [{ hostname: 'x' }] } })],
    ['another annotation', set('metadata.annotations.other', 'y')],
    ['labels', set('metadata.labels', { a: 'b' })],
    [
      "another controller's finalizer",
      set('metadata.finalizers', ['group.ingress.k8s.aws/g', 'example.com/other', 'example.com/more']),
    ],
    ['the resourceVersion', set('metadata.resourceVersion', '999')],
    ['managed fields', set('metadata.managedFields', [{ manager: 'kubectl' }])],
  ])('ignores %s', (_what, change) => {
    expect(changed(ingressReads, ingress, change)).toBe(false);
  });

  it('keeps only our finalizers', () => {
    expect(groupFinalizers(ingress)).toEqual(['group.ingress.k8s.aws/g']);
  });
});

describe('the IngressClass and Service fingerprints', () => {
  it('an IngressClass: controller, parameters and the default annotation, nothing else', () => {
    const c = makeIngressClass('alb', { params: 'p' });
    expect(changed(ingressClassReads, c, set('spec.controller', 'x'))).toBe(true);
    expect(changed(ingressClassReads, c, set('spec.parameters.name', 'q'))).toBe(true);
    expect(
      changed(
        ingressClassReads,
        c,
        set('metadata.annotations', { 'ingressclass.kubernetes.io/is-default-class': 'true' }),
      ),
    ).toBe(true);
    expect(changed(ingressClassReads, c, set('metadata.labels', { a: 'b' }))).toBe(false);
  });

  it('a Service: ports, type, IP families, the controller annotations; not the status or other annotations', () => {
    const s = makeService('shop', 'web', 'NodePort');
    expect(changed(ingressServiceReads, s, set('spec.ports.0.nodePort', 30081))).toBe(true);
    expect(changed(ingressServiceReads, s, set('spec.ipFamilies', ['IPv6']))).toBe(true);
    expect(changed(ingressServiceReads, s, set(['metadata', 'annotations', TARGET_TYPE_ANNOTATION], 'ip'))).toBe(true);
    expect(changed(ingressServiceReads, s, set('spec.type', 'ClusterIP'))).toBe(true);
    expect(changed(ingressServiceReads, s, set('status', { loadBalancer: {} }))).toBe(false);
    expect(changed(ingressServiceReads, s, set('metadata.annotations.team', 'a'))).toBe(false);
  });
});

describe('the facts kept per Ingress', () => {
  it('name its group again as membership.ts does', () => {
    const object = makeIngress('shop', 'web', {
      className: 'alb',
      annotations: { [GROUP_NAME_ANNOTATION]: 'g', [TARGET_TYPE_ANNOTATION]: 'ip', [INGRESS_CLASS_ANNOTATION]: 'alb' },
      finalizers: ['ingress.k8s.aws/resources'],
    });
    const facts = ingressFacts(object);
    expect(facts).toEqual({
      className: 'alb',
      legacyClass: 'alb',
      groupName: 'g',
      targetType: 'ip',
      finalizers: ['ingress.k8s.aws/resources'],
      services: ['shop/web'],
    });
    const again = ingressOf('shop/web', facts);
    expect(groupOf(again)).toEqual(groupOf(object as unknown as Ingress));
    expect(again.metadata).toMatchObject({ namespace: 'shop', name: 'web', finalizers: ['ingress.k8s.aws/resources'] });
  });

  it("the Services: backends, default backend, forward actions' serviceName in any case; not actions' own names", () => {
    const ingress = makeIngress('shop', 'web', { services: ['web', 'split:use-annotation', 'broken:use-annotation'] });
    const spec = (ingress as unknown as Ingress).spec!;
    spec.defaultBackend = { service: { name: 'fallback', port: { number: 80 } } };
    ingress.metadata!.annotations = {
      'alb.ingress.kubernetes.io/actions.split': JSON.stringify({
        Type: 'forward',
        ForwardConfig: {
          TargetGroups: [
            { ServiceName: 'blue', ServicePort: '80', Weight: 90 },
            { serviceName: 'green', servicePort: 'http', weight: 10 },
            { targetGroupARN: 'arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/x/1' },
          ],
        },
      }),
      'alb.ingress.kubernetes.io/actions.broken': '{not json',
    };
    expect(servicesOf(ingress as unknown as Ingress)).toEqual(['shop/blue', 'shop/fallback', 'shop/green', 'shop/web']);
  });
});
