import fc from 'fast-check';
import { type GroupId, stackName } from '../../shared/ingress/membership.ts';
import type { Ingress } from '../../shared/k8s/ingress-types.ts';
import type { Service } from '../../shared/k8s/types.ts';
import type { Cluster } from './cluster.ts';

/**
 * The Ingress part of a cluster history: Ingresses of class alb in two explicit IngressGroups or their own implicit
 * one, created, changed (paths and backends), moved between groups (`group.name`) and deleted. Every Ingress the
 * history makes can be built (its Services exist and stay, its paths are its own): at quiescence each is served.
 */

export const INGRESS_NAMESPACE = 'front';
export const INGRESS_NAMES = ['ia', 'ib', 'ic'] as const;
/** Explicit groups; index GROUPS.length is the Ingress's implicit group. */
export const GROUPS = ['g-one', 'g-two'] as const;
export const HOST = 'shop.example.com';
/** NodePort Services the Ingresses forward to (never deleted: a backend that goes would make a model unbuildable). */
export const BACKENDS = [
  { name: 'be-a', nodePort: 31080 },
  { name: 'be-b', nodePort: 31090 },
] as const;
const GROUP_ANNOTATION = 'alb.ingress.kubernetes.io/group.name';

export type IngressOp =
  /** Create the Ingress, or change it: its group (GROUPS index, or GROUPS.length for implicit) and paths variant. */
  { op: 'ingress'; ing: number; group: number; variant: number } | { op: 'deleteIngress'; ing: number };

const ing = fc.integer({ min: 0, max: INGRESS_NAMES.length - 1 });

export const ingressOpArbitrary: fc.Arbitrary<IngressOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('ingress' as const),
      ing,
      group: fc.integer({ min: 0, max: GROUPS.length }),
      variant: fc.nat(2),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteIngress' as const), ing }) },
);

/** An Ingress's paths and their backends, by variant: one path to either Service, or two paths, one to each. */
export function pathsOf(k: number, variant: number): { path: string; service: string }[] {
  const name = INGRESS_NAMES[k]!;
  const [a, b] = [BACKENDS[0].name, BACKENDS[1].name];
  if (variant === 0) return [{ path: `/${name}/x`, service: a }];
  if (variant === 1) return [{ path: `/${name}/x`, service: b }];
  return [
    { path: `/${name}/x`, service: a },
    { path: `/${name}/y`, service: b },
  ];
}

export function groupOfIndex(k: number, group: number): GroupId {
  const explicit = GROUPS[group];
  return explicit !== undefined
    ? { explicit: true, name: explicit }
    : { explicit: false, namespace: INGRESS_NAMESPACE, name: INGRESS_NAMES[k]! };
}

function ingressOf(k: number, group: number, variant: number): Ingress {
  const explicit = GROUPS[group];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: INGRESS_NAMES[k]!,
      namespace: INGRESS_NAMESPACE,
      uid: `uid-ingress-${INGRESS_NAMES[k]}`,
      ...(explicit !== undefined ? { annotations: { [GROUP_ANNOTATION]: explicit } } : {}),
    },
    spec: {
      ingressClassName: 'alb',
      rules: [
        {
          host: HOST,
          http: {
            paths: pathsOf(k, variant).map((p) => ({
              path: p.path,
              pathType: 'Prefix' as const,
              backend: { service: { name: p.service, port: { number: 80 } } },
            })),
          },
        },
      ],
    },
  };
}

function backendService(i: number): Service {
  const def = BACKENDS[i]!;
  return {
    metadata: { name: def.name, namespace: INGRESS_NAMESPACE, uid: `uid-service-${def.name}` },
    spec: {
      type: 'NodePort',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: def.nodePort }],
      selector: { app: def.name },
    },
  };
}

/** What the history did to Ingresses so far. */
export class IngressTruth {
  /** Live Ingresses (not deleted by the history): their group and variant. */
  readonly live = new Map<number, { group: number; variant: number }>();
  readonly deleted = new Set<number>();

  /** Per stack, the probes (paths) its live members want served, with the Service each goes to. */
  wanted(): Map<string, Map<string, string>> {
    const out = new Map<string, Map<string, string>>();
    for (const [k, { group, variant }] of this.live) {
      const stack = stackName(groupOfIndex(k, group));
      const probes = out.get(stack) ?? new Map<string, string>();
      for (const p of pathsOf(k, variant)) probes.set(p.path, p.service);
      out.set(stack, probes);
    }
    return out;
  }
}

/** Applies Ingress ops as people would (kubectl apply, kubectl delete). */
export function applyIngressOp(c: Cluster, truth: IngressTruth, op: IngressOp): void {
  switch (op.op) {
    case 'ingress': {
      // A deleted Ingress is not made again: whether its deletion finished by then is the controller's doing.
      if (truth.deleted.has(op.ing)) return;
      if (!c.kube.services.has(`${INGRESS_NAMESPACE}/${BACKENDS[0].name}`)) {
        for (const i of BACKENDS.keys()) c.kube.putService(backendService(i));
      }
      const wanted = ingressOf(op.ing, op.group, op.variant);
      truth.live.set(op.ing, { group: op.group, variant: op.variant });
      const current = c.ingresses.ingresses.get(`${INGRESS_NAMESPACE}/${INGRESS_NAMES[op.ing]}`);
      if (!current) {
        c.ingresses.putIngress(wanted);
        return;
      }
      c.ingresses.mutateIngress(INGRESS_NAMESPACE, INGRESS_NAMES[op.ing]!, (i) => {
        i.metadata.annotations = { ...wanted.metadata.annotations };
        i.spec = wanted.spec;
      });
      return;
    }
    case 'deleteIngress': {
      if (!truth.live.has(op.ing)) return;
      truth.live.delete(op.ing);
      truth.deleted.add(op.ing);
      if (c.ingresses.ingresses.has(`${INGRESS_NAMESPACE}/${INGRESS_NAMES[op.ing]}`)) {
        c.ingresses.deleteIngress(INGRESS_NAMESPACE, INGRESS_NAMES[op.ing]!);
      }
      return;
    }
  }
}
