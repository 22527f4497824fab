import type { FakeElbv2 } from '../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import type { FakeIngresses } from '../shared/k8s/fakes/ingresses.ts';
import type { Ingress } from '../shared/k8s/ingress-types.ts';
import type { Log } from '../shared/observability/log.ts';

/**
 * The simulation's IngressGroup: two Ingresses of class `alb` in the group `shop` (the storefront on `/`, the cart
 * on `/cart`, each its own NodePort Service) get one Application Load Balancer with a rule each; then the cart's
 * Ingress is deleted, and the group keeps serving the storefront on the same load balancer while the cart's rule and
 * target group go and its finalizer is released. The relay sends the group's key as it does in a cluster.
 */

export const SIM_INGRESS_GROUP = 'shop';
const NAMESPACE = 'shop';
const HOST = 'shop.example.com';
const MEMBERS = [
  { name: 'storefront', path: '/', nodePort: 30081 },
  { name: 'cart', path: '/cart', nodePort: 30082 },
] as const;

export interface IngressHost {
  kube: FakeKubernetes;
  ingresses: FakeIngresses;
  elbv2: FakeElbv2;
  log: Log;
  /** A scenario step `seconds` after the start. */
  at(seconds: number, what: string, run: () => void | Promise<void>): void;
}

function ingress(name: string, path: string): Ingress {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: NAMESPACE,
      annotations: {
        'alb.ingress.kubernetes.io/group.name': SIM_INGRESS_GROUP,
        'alb.ingress.kubernetes.io/scheme': 'internet-facing',
      },
    },
    spec: {
      ingressClassName: 'alb',
      rules: [
        {
          host: HOST,
          http: { paths: [{ path, pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }] },
        },
      ],
    },
  };
}

export function ingressScenario(host: IngressHost, startAt: number) {
  const { kube, ingresses, elbv2, log, at } = host;
  const found: string[] = [];
  /** The group's load balancer and where a request for `path` goes on it (the target group's name). */
  const routeOf = (path: string): { lb?: string; to?: string } => {
    const lb = [...elbv2.loadBalancers.values()].find((l) => l.tags['ingress.k8s.aws/stack'] === SIM_INGRESS_GROUP);
    if (!lb) return {};
    const listener = elbv2.listenersOf(lb.lb.arn).find((l) => l.port === 80);
    if (!listener) return { lb: lb.lb.dnsName };
    const action = elbv2.route(listener.arn, { host: HOST, path }).actions[0];
    if (action?.type !== 'forward') return { lb: lb.lb.dnsName, to: action?.type };
    const arn = action.targetGroups[0]!.arn;
    return { lb: lb.lb.dnsName, to: [...elbv2.targetGroups.values()].find((g) => g.tg.arn === arn)?.tg.name };
  };

  at(
    startAt,
    `Ingresses ${NAMESPACE}/storefront and ${NAMESPACE}/cart join IngressGroup "${SIM_INGRESS_GROUP}"`,
    () => {
      ingresses.putIngressClass({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: 'alb' },
        spec: { controller: 'ingress.k8s.aws/alb' },
      });
      for (const m of MEMBERS) {
        kube.putService({
          metadata: { name: m.name, namespace: NAMESPACE },
          spec: {
            type: 'NodePort',
            selector: { app: m.name },
            ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: m.nodePort }],
          },
        });
        ingresses.putIngress(ingress(m.name, m.path));
      }
    },
  );
  // Both served by one load balancer before the cart goes.
  at(startAt + 90, 'check: one load balancer serves both members of the group', () => {
    const hostnames = MEMBERS.map(
      (m) => ingresses.ingresses.get(`${NAMESPACE}/${m.name}`)?.status?.loadBalancer?.ingress?.[0]?.hostname,
    );
    const cart = routeOf('/cart/checkout');
    const front = routeOf('/');
    log.info(`IngressGroup ${SIM_INGRESS_GROUP}: ${hostnames[0]} serves / -> ${front.to}, /cart -> ${cart.to}`);
    if (!hostnames[0] || hostnames[0] !== hostnames[1])
      found.push(`the members' status names ${hostnames.join(' and ')}`);
    if (!cart.to?.startsWith(`k8s-${NAMESPACE}-cart-`)) found.push(`/cart goes to ${cart.to ?? 'nothing'}`);
    if (!front.to?.startsWith(`k8s-${NAMESPACE}-storefro-`)) found.push(`/ goes to ${front.to ?? 'nothing'}`);
  });
  at(startAt + 100, `Ingress ${NAMESPACE}/cart is deleted`, () => ingresses.deleteIngress(NAMESPACE, 'cart'));

  return {
    problems(): string[] {
      const out = [...found];
      const storefront = ingresses.ingresses.get(`${NAMESPACE}/storefront`);
      const served = routeOf('/cart/checkout');
      if (ingresses.ingresses.has(`${NAMESPACE}/cart`))
        out.push(`Ingress ${NAMESPACE}/cart still exists (finalizer kept)`);
      if (!storefront?.status?.loadBalancer?.ingress?.[0]?.hostname) out.push('the storefront Ingress has no status');
      else if (storefront.status.loadBalancer.ingress[0].hostname !== served.lb?.toLowerCase()) {
        out.push(
          `the storefront's status names ${storefront.status.loadBalancer.ingress[0].hostname}, not ${served.lb}`,
        );
      }
      if (!served.to?.startsWith(`k8s-${NAMESPACE}-storefro-`))
        out.push(`after the cart left, /cart goes to ${served.to}`);
      const cartGroups = [...elbv2.targetGroups.values()].filter((g) => g.tg.name.startsWith(`k8s-${NAMESPACE}-cart-`));
      if (cartGroups.length > 0) out.push(`the cart's target group ${cartGroups[0]!.tg.name} was left behind`);
      return out;
    },
  };
}
