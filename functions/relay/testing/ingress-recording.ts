import { systemClock } from '../../../shared/clock.ts';
import {
  type ClassLookup,
  GROUP_NAME_ANNOTATION,
  GROUP_ORDER_ANNOTATION,
  type GroupId,
  membersOf,
} from '../../../shared/ingress/membership.ts';
import { FakeIngresses } from '../../../shared/k8s/fakes/ingresses.ts';
import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  IMPLICIT_GROUP_FINALIZER,
  INGRESS_CLASS_ANNOTATION,
  INGRESS_CONTROLLER_NAME,
  type Ingress,
  type IngressClassParams,
} from '../../../shared/k8s/ingress-types.ts';
import type { WatchedKind } from '../kinds.ts';
import { type ReadRecorder, recordingPort } from './reads.ts';

/**
 * What the Ingress controller reads of Ingresses, IngressClasses and IngressClassParams to know its groups: the
 * membership step every pass starts with (shared/ingress/membership.ts, as functions/ingress/reconciler.ts calls
 * it: every Ingress, every class, the params the classes name), over Ingresses of every sort it tells apart.
 * Test support for reads-coverage.test.ts.
 */

const KINDS: Readonly<Record<string, WatchedKind>> = {
  listIngresses: 'Ingress',
  getIngress: 'Ingress',
  setIngressFinalizers: 'Ingress',
  setIngressStatus: 'Ingress',
  listIngressClasses: 'IngressClass',
  getIngressClassParams: 'IngressClassParams',
};

const ingress = (
  name: string,
  options: { className?: string; annotations?: Record<string, string>; finalizers?: string[]; deleting?: boolean },
): Ingress => ({
  metadata: {
    namespace: 'shop',
    name,
    ...(options.annotations ? { annotations: options.annotations } : {}),
    ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    ...(options.deleting ? { deletionTimestamp: '2026-11-02T09:00:00Z' } : {}),
  },
  spec: {
    ...(options.className ? { ingressClassName: options.className } : {}),
    rules: [{ http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: name } } }] } }],
  },
});

/** The membership of each group, read through recording ports. */
export async function recordIngressMembershipReads(recorder: ReadRecorder): Promise<void> {
  const fake = new FakeIngresses(systemClock);
  fake.putIngressClass({ metadata: { name: 'alb' }, spec: { controller: INGRESS_CONTROLLER_NAME } });
  fake.putIngressClass({
    metadata: { name: 'shared', annotations: { [DEFAULT_INGRESS_CLASS_ANNOTATION]: 'true' } },
    spec: {
      controller: INGRESS_CONTROLLER_NAME,
      parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: 'shared' },
    },
  });
  fake.putIngressClass({
    metadata: { name: 'wrong-params' },
    spec: { controller: INGRESS_CONTROLLER_NAME, parameters: { kind: 'ConfigMap', name: 'x' } },
  });
  fake.putIngressClass({ metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } });
  fake.putIngressClassParams({ metadata: { name: 'shared' }, spec: { group: { name: 'shared' } } });

  fake.putIngress(ingress('legacy', { annotations: { [INGRESS_CLASS_ANNOTATION]: 'alb' } }));
  fake.putIngress(ingress('legacy-other', { annotations: { [INGRESS_CLASS_ANNOTATION]: 'nginx' } }));
  fake.putIngress(
    ingress('grouped', {
      className: 'alb',
      annotations: { [GROUP_NAME_ANNOTATION]: 'web', [GROUP_ORDER_ANNOTATION]: '5' },
    }),
  );
  fake.putIngress(ingress('ordered', { className: 'alb', annotations: { [GROUP_NAME_ANNOTATION]: 'web' } }));
  fake.putIngress(
    ingress('bad-order', {
      className: 'alb',
      annotations: { [GROUP_NAME_ANNOTATION]: 'web', [GROUP_ORDER_ANNOTATION]: 'x' },
    }),
  );
  fake.putIngress(ingress('by-default', {}));
  fake.putIngress(ingress('nginx', { className: 'nginx', finalizers: ['group.ingress.k8s.aws/web'] }));
  fake.putIngress(ingress('missing-class', { className: 'gone', finalizers: ['group.ingress.k8s.aws/web'] }));
  fake.putIngress(ingress('bad-params', { className: 'wrong-params', finalizers: ['group.ingress.k8s.aws/web'] }));
  fake.putIngress(ingress('implicit', { className: 'alb', finalizers: [IMPLICIT_GROUP_FINALIZER] }));
  fake.putIngress(
    ingress('leaving', {
      className: 'alb',
      finalizers: [IMPLICIT_GROUP_FINALIZER, 'example.com/hold'],
      deleting: true,
    }),
  );

  recorder.reconciler = 'ingress';
  const kube = recordingPort(fake, recorder, KINDS);
  const groups: GroupId[] = [
    { explicit: true, name: 'web' },
    { explicit: true, name: 'shared' },
    { explicit: false, namespace: 'shop', name: 'legacy' },
    { explicit: false, namespace: 'shop', name: 'implicit' },
    { explicit: false, namespace: 'shop', name: 'leaving' },
  ];
  for (const group of groups) {
    const ingresses = await kube.listIngresses();
    const classes = await kube.listIngressClasses();
    const params = new Map<string, IngressClassParams>();
    for (const c of classes) {
      const ref = c.spec?.parameters;
      const found = ref && (await kube.getIngressClassParams(ref.name));
      if (ref && found) params.set(ref.name, found);
    }
    const lookup: ClassLookup = { classes, params: (name) => params.get(name) };
    const members = membersOf(group, ingresses, lookup);
    if (group.explicit && group.name === 'web' && members.active.length !== 3) {
      throw new Error('ingress: the scenario no longer makes the web group of three members');
    }
  }
}
