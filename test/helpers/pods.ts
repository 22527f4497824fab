import type { OwnerReference, Pod, PodDisruptionBudget, PodPhase } from '../../shared/k8s/types.ts';

/** Pods and PodDisruptionBudgets for drain tests, in the shape the API server stores them. */

export interface PodOptions {
  namespace?: string;
  labels?: Record<string, string>;
  /** The controlling owner (`controller: true`), e.g. `{ kind: 'ReplicaSet', name: 'web-5d8f' }`. */
  owner?: { kind: string; name: string; apiVersion?: string };
  /** Default Running. */
  phase?: PodPhase;
  /** The Ready condition; default true for a Running Pod. */
  ready?: boolean;
  /** spec.terminationGracePeriodSeconds; unset leaves the API default (30). */
  gracePeriodSeconds?: number;
  /** Makes it a mirror Pod (the kubelet's copy of a static Pod). */
  mirror?: boolean;
  annotations?: Record<string, string>;
}

/** A Pod bound to `nodeName`. */
export function podOnNode(nodeName: string, name: string, options: PodOptions = {}): Pod {
  const phase = options.phase ?? 'Running';
  const ready = options.ready ?? phase === 'Running';
  const annotations = { ...options.annotations };
  if (options.mirror) annotations['kubernetes.io/config.mirror'] = `mirror-${name}`;
  const owner = options.owner;
  const ownerReferences: OwnerReference[] | undefined = owner && [
    {
      apiVersion: owner.apiVersion ?? 'apps/v1',
      kind: owner.kind,
      name: owner.name,
      uid: `uid-${owner.kind}-${owner.name}`,
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: options.namespace ?? 'default',
      ...(options.labels && { labels: options.labels }),
      ...(Object.keys(annotations).length > 0 && { annotations }),
      ...(ownerReferences && { ownerReferences }),
    },
    spec: {
      nodeName,
      containers: [{ name: 'app', image: 'public.ecr.aws/docker/library/busybox:1.36' }],
      ...(options.gracePeriodSeconds !== undefined && { terminationGracePeriodSeconds: options.gracePeriodSeconds }),
    },
    status: {
      phase,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

export interface BudgetOptions {
  namespace?: string;
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
}

/** A PodDisruptionBudget over the Pods with `matchLabels` (`{}`: every Pod of its namespace). */
export function budget(
  name: string,
  matchLabels: Record<string, string>,
  options: BudgetOptions = {},
): PodDisruptionBudget {
  const { namespace = 'default', ...limits } = options;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace },
    spec: { ...limits, selector: { matchLabels } },
  };
}
