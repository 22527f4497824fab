import { TAINT_UNINITIALIZED } from '../../shared/k8s/node-helpers.ts';
import type { Node } from '../../shared/k8s/types.ts';

/** A Node as kubelet registers it with --cloud-provider=external: uninitialized taint, Ready. */
export function makeNode(
  name: string,
  options: {
    providerID?: string;
    ready?: boolean | 'Unknown';
    taints?: Node['spec'] extends infer S ? (S extends { taints?: infer T } ? T : never) : never;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    addresses?: { type: 'Hostname' | 'InternalIP'; address: string }[];
    initialized?: boolean;
  } = {},
): Node {
  const ready = options.ready ?? true;
  const taints =
    options.taints ??
    (options.initialized ? [] : [{ key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' as const }]);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, ...(options.labels ?? {}) },
      annotations: options.annotations,
    },
    spec: { providerID: options.providerID, taints },
    status: {
      addresses: options.addresses ?? [{ type: 'Hostname', address: name }],
      conditions: [
        {
          type: 'Ready',
          status: ready === 'Unknown' ? 'Unknown' : ready ? 'True' : 'False',
          reason: ready === true ? 'KubeletReady' : 'NodeStatusUnknown',
        },
      ],
    },
  };
}
