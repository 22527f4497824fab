import { GROUP_NAME_ANNOTATION, GROUP_ORDER_ANNOTATION, type GroupId } from '../../../shared/ingress/membership.ts';
import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  INGRESS_ANNOTATION_PREFIX,
  INGRESS_CLASS_ANNOTATION,
  INGRESS_CONTROLLER_NAME,
  type Ingress,
  type IngressBackend,
} from '../../../shared/k8s/ingress-types.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../../shared/k8s/service-port.ts';
import { createIngressWorld } from '../../../test/helpers/ingress-world.ts';
import type { WatchedKind } from '../kinds.ts';
import { type ReadRecorder, recordingPort } from './reads.ts';

/**
 * What the Ingress controller (functions/ingress) reads of Ingresses, IngressClasses, IngressClassParams, Services,
 * EndpointSlices and Nodes: the reconciler itself on the fakes (test/helpers/ingress-world.ts), over Ingresses of
 * every sort it tells apart (ours by class, default class, legacy annotation, class params; explicit and implicit
 * groups; another controller's; a class that cannot be used; instance and IP targets; a forward action; a member
 * leaving and one deleted). Test support for reads-coverage.test.ts.
 */

const KINDS: Readonly<Record<string, WatchedKind>> = {
  listIngresses: 'Ingress',
  getIngress: 'Ingress',
  setIngressFinalizers: 'Ingress',
  setIngressStatus: 'Ingress',
  listIngressClasses: 'IngressClass',
  getIngressClassParams: 'IngressClassParams',
  getService: 'Service',
  listEndpointSlices: 'EndpointSlice',
  listNodes: 'Node',
};

const a = (name: string) => `${INGRESS_ANNOTATION_PREFIX}${name}`;
const backend = (service: string, port: number | string): IngressBackend => ({
  service: { name: service, port: typeof port === 'number' ? { number: port } : { name: port } },
});

function ingress(
  name: string,
  options: {
    className?: string;
    annotations?: Record<string, string>;
    finalizers?: string[];
    backends?: IngressBackend[];
    defaultBackend?: IngressBackend;
  } = {},
): Ingress {
  const backends = options.backends ?? [backend('web', 80)];
  return {
    metadata: {
      namespace: 'default',
      name,
      annotations: { [a('scheme')]: 'internet-facing', ...options.annotations },
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: {
      ...(options.className === undefined ? {} : { ingressClassName: options.className }),
      ...(options.defaultBackend ? { defaultBackend: options.defaultBackend } : {}),
      rules: [
        {
          host: `${name}.example.com`,
          http: {
            paths: backends.map((b, i) => ({ path: `/p${i}`, pathType: 'Prefix' as const, backend: b })),
          },
        },
      ],
    },
  };
}

/** Every reconciler read, over two passes: the first builds the groups, the second sees members leave and go. */
export async function recordIngressReads(recorder: ReadRecorder): Promise<void> {
  const w = createIngressWorld();
  w.addNode(1, { labels: { team: 'a' } });
  w.addNode(2, { labels: { [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' } });
  w.addNode(3, { ready: false });
  w.putService('web', { spec: { type: 'NodePort' } });
  w.putService('api', {
    annotations: { [a('target-type')]: 'ip', [a('healthcheck-path')]: '/healthz' },
    spec: { type: 'ClusterIP', ipFamilies: ['IPv4'] },
    ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'http' }],
  });
  w.putSlice('api', [{ ip: '10.0.1.20' }, { ip: '10.0.1.21', ready: false }, { ip: '10.0.1.22', terminating: true }]);

  const { ingresses } = w;
  ingresses.putIngressClass({
    metadata: { name: 'shared', annotations: { [DEFAULT_INGRESS_CLASS_ANNOTATION]: 'true' } },
    spec: {
      controller: INGRESS_CONTROLLER_NAME,
      parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: 'shared' },
    },
  });
  ingresses.putIngressClassParams({
    metadata: { name: 'shared' },
    spec: { group: { name: 'shared' }, scheme: 'internal', targetType: 'instance', tags: [{ key: 'k', value: 'v' }] },
  });
  ingresses.putIngressClass({ metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } });
  ingresses.putIngressClass({
    metadata: { name: 'wrong-params' },
    spec: { controller: INGRESS_CONTROLLER_NAME, parameters: { kind: 'ConfigMap', name: 'x' } },
  });

  const web = { [GROUP_NAME_ANNOTATION]: 'web' };
  ingresses.putIngress(ingress('front', { className: 'alb', annotations: { ...web, [GROUP_ORDER_ANNOTATION]: '-5' } }));
  ingresses.putIngress(
    ingress('ip', {
      className: 'alb',
      annotations: web,
      backends: [backend('api', 'http')],
      defaultBackend: backend('web', 80),
    }),
  );
  ingresses.putIngress(
    ingress('weighted', {
      className: 'alb',
      annotations: {
        [a('actions.split')]: JSON.stringify({
          type: 'forward',
          forwardConfig: { targetGroups: [{ serviceName: 'web', servicePort: '80', weight: 1 }] },
        }),
      },
      backends: [backend('split', 'use-annotation')],
    }),
  );
  ingresses.putIngress(ingress('legacy', { annotations: { [INGRESS_CLASS_ANNOTATION]: 'alb' } }));
  ingresses.putIngress(ingress('by-default'));
  ingresses.putIngress(ingress('nginx', { className: 'nginx' }));
  ingresses.putIngress(ingress('bad-params', { className: 'wrong-params', finalizers: ['group.ingress.k8s.aws/web'] }));
  ingresses.putIngress(ingress('missing-class', { className: 'gone' }));
  ingresses.putIngress(ingress('missing-service', { className: 'alb', backends: [backend('nowhere', 80)] }));

  recorder.reconciler = 'ingress';
  const deps = { ...w.ingressDeps, kube: recordingPort(w.ingressDeps.kube, recorder, KINDS) };
  const groups: GroupId[] = [
    { explicit: true, name: 'web' },
    { explicit: true, name: 'shared' },
    ...['weighted', 'legacy', 'missing-service', 'nginx'].map(
      (name): GroupId => ({ explicit: false, namespace: 'default', name }),
    ),
  ];
  await w.converge(groups, deps);
  if (w.loadBalancers().length < 3) throw new Error('ingress: the first pass no longer makes the load balancers');

  // A member leaves its group for another controller, another is deleted (its finalizer holds it), one moves.
  ingresses.mutateIngress('default', 'front', (i) => {
    i.spec = { ...i.spec, ingressClassName: 'nginx' };
  });
  ingresses.deleteIngress('default', 'weighted');
  ingresses.mutateIngress('default', 'legacy', (i) => {
    i.metadata.annotations = { ...i.metadata.annotations, [GROUP_NAME_ANNOTATION]: 'shared' };
  });
  await w.converge([...groups, { explicit: false, namespace: 'default', name: 'front' }], deps);
  if (w.ingress('weighted')) throw new Error('ingress: the second pass no longer lets a deleted member go');
}
