import fc from 'fast-check';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import type { TargetGroupBinding } from '../../shared/k8s/tgb-types.ts';
import type { EndpointSlice, Service } from '../../shared/k8s/types.ts';
import { LBC_TCP_HEALTH_CHECK } from '../../shared/load-balancers/health-check.ts';
import { type Cluster, VPC } from './cluster.ts';

/**
 * The TargetGroupBinding part of a cluster history: target groups someone made outside the cluster (as Terraform
 * would, before any binding names them), bound by an ip binding (by ARN) and an instance binding (by name, its
 * target type left for the controller to fill in); the bindings created, changed (the Service port they name), and
 * deleted; the Service's endpoints scaled up and down. The Nodes behind the instance binding come and go with the
 * history's own Node steps. The Service stays (a binding whose Service goes is the corpus's business).
 */

export const TGB_NAMESPACE = 'bind';
export const TGB_SERVICE = 'bind-web';
/** The Service's ports: `http` 80 -> 8080 and `metrics` 9100 -> 9100, each with its node port. */
export const TGB_PORTS = [
  { name: 'http', port: 80, targetPort: 8080, nodePort: 31500 },
  { name: 'metrics', port: 9100, targetPort: 9100, nodePort: 31501 },
] as const;
export const TGB_BINDINGS = [
  { name: 'web-ip', targetType: 'ip', group: 'tf-bind-ip' },
  { name: 'web-inst', targetType: 'instance', group: 'tf-bind-inst' },
] as const;
/** Endpoint k of the Service is the Pod address 10.0.40.(10 + k). */
export const TGB_ENDPOINTS = 5;
export const endpointAddress = (k: number) => `10.0.40.${10 + k}`;

export type TgbOp =
  /** Create the binding, or change it to this variant: serviceRef.port 80, `http`, or `metrics`. */
  | { op: 'binding'; b: number; variant: number }
  /** The Service's EndpointSlice now lists these ready endpoints (an empty list deletes it). */
  | { op: 'bindingEndpoints'; endpoints: number[] }
  | { op: 'deleteBinding'; b: number };

const b = fc.integer({ min: 0, max: TGB_BINDINGS.length - 1 });

export const tgbOpArbitrary: fc.Arbitrary<TgbOp> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('binding' as const), b, variant: fc.nat(2) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('bindingEndpoints' as const),
      endpoints: fc.uniqueArray(fc.integer({ min: 0, max: TGB_ENDPOINTS - 1 }), { maxLength: TGB_ENDPOINTS }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteBinding' as const), b }) },
);

/** The Service port a variant names: by number, by name, or the other port by name. */
export function refOf(variant: number): number | string {
  return variant === 0 ? 80 : variant === 1 ? 'http' : 'metrics';
}

/** The port a variant's targets are registered on: the Pods' target port (ip) or the node port (instance). */
export function targetPortOf(b: number, variant: number): number {
  const port = TGB_PORTS[variant === 2 ? 1 : 0];
  return TGB_BINDINGS[b]!.targetType === 'ip' ? port.targetPort : port.nodePort;
}

/** What the history did to bindings so far. */
export class TgbTruth {
  /** The user's target groups, by binding index, once made. */
  readonly groups = new Map<number, Pick<TargetGroup, 'arn' | 'name'>>();
  /** Live bindings (not deleted by the history): their variant. */
  readonly live = new Map<number, number>();
  readonly deleted = new Set<number>();
  /** The endpoints the Service's slice lists. */
  endpoints: number[] = [];
}

function service(): Service {
  return {
    metadata: { name: TGB_SERVICE, namespace: TGB_NAMESPACE, uid: `uid-service-${TGB_SERVICE}` },
    spec: {
      type: 'NodePort',
      selector: { app: TGB_SERVICE },
      ports: TGB_PORTS.map((p) => ({ ...p, protocol: 'TCP' as const })),
    },
  };
}

function slice(endpoints: readonly number[]): EndpointSlice {
  return {
    metadata: {
      name: `${TGB_SERVICE}-x1`,
      namespace: TGB_NAMESPACE,
      labels: { 'kubernetes.io/service-name': TGB_SERVICE },
    },
    addressType: 'IPv4',
    endpoints: endpoints.map((k) => ({
      addresses: [endpointAddress(k)],
      conditions: { ready: true, serving: true, terminating: false },
    })),
    ports: TGB_PORTS.map((p) => ({ name: p.name, protocol: 'TCP' as const, port: p.targetPort })),
  };
}

/**
 * The user's target groups and the Service, the first time the history touches bindings. Made straight on the fake
 * (no fault tape) and visible at once: Terraform made them long before.
 */
async function setUp(c: Cluster, truth: TgbTruth): Promise<void> {
  if (truth.groups.size > 0) return;
  const terraform = new Elbv2Adapter(c.elbv2 as never);
  const invisible = c.elbv2.newTargetGroupInvisibleMs;
  c.elbv2.newTargetGroupInvisibleMs = 0;
  try {
    for (const [i, def] of TGB_BINDINGS.entries()) {
      const group = await terraform.createTargetGroup({
        name: def.group,
        protocol: 'TCP',
        port: def.targetType === 'ip' ? TGB_PORTS[0].targetPort : TGB_PORTS[0].nodePort,
        targetType: def.targetType,
        vpcId: VPC,
        healthCheck: LBC_TCP_HEALTH_CHECK,
        tags: { owner: 'terraform' },
      });
      if (group === 'name-taken') throw new Error(`target group ${def.group} exists`);
      truth.groups.set(i, group);
    }
  } finally {
    c.elbv2.newTargetGroupInvisibleMs = invisible;
  }
  c.kube.putService(service());
}

function bindingOf(truth: TgbTruth, k: number, variant: number): TargetGroupBinding {
  const def = TGB_BINDINGS[k]!;
  const group = truth.groups.get(k)!;
  return {
    metadata: { name: def.name, namespace: TGB_NAMESPACE },
    spec: {
      serviceRef: { name: TGB_SERVICE, port: refOf(variant) },
      // The ip binding names its group by ARN and type; the instance one by name, its type filled in from the group.
      ...(def.targetType === 'ip'
        ? { targetGroupARN: group.arn, targetType: 'ip' as const }
        : { targetGroupName: group.name }),
    },
  };
}

/** Applies binding ops as people would (kubectl apply, kubectl delete, a Deployment scaled). */
export async function applyTgbOp(c: Cluster, truth: TgbTruth, op: TgbOp): Promise<void> {
  await setUp(c, truth);
  switch (op.op) {
    case 'binding': {
      // A deleted binding is not made again: whether its deletion finished by then is the controller's doing.
      if (truth.deleted.has(op.b)) return;
      const name = TGB_BINDINGS[op.b]!.name;
      const current = c.bindings.bindings.get(`${TGB_NAMESPACE}/${name}`);
      truth.live.set(op.b, op.variant);
      if (!current) {
        c.bindings.putBinding(bindingOf(truth, op.b, op.variant));
        return;
      }
      // kubectl apply keeps the fields the controller filled in: only the port changes.
      c.bindings.mutateBinding(TGB_NAMESPACE, name, (x) => {
        x.spec.serviceRef = { ...x.spec.serviceRef, port: refOf(op.variant) };
      });
      return;
    }
    case 'bindingEndpoints': {
      truth.endpoints = [...op.endpoints].sort((x, y) => x - y);
      if (op.endpoints.length === 0) c.kube.deleteEndpointSlice(TGB_NAMESPACE, `${TGB_SERVICE}-x1`);
      else c.kube.putEndpointSlice(slice(truth.endpoints));
      return;
    }
    case 'deleteBinding': {
      if (!truth.live.has(op.b)) return;
      truth.live.delete(op.b);
      truth.deleted.add(op.b);
      const name = TGB_BINDINGS[op.b]!.name;
      if (c.bindings.bindings.has(`${TGB_NAMESPACE}/${name}`)) c.bindings.deleteBinding(TGB_NAMESPACE, name);
      return;
    }
  }
}
