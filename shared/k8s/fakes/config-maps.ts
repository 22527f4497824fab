import type { ConfigMap } from '../ipam-port.ts';
import type { KubernetesOperation } from './fake-kubernetes.ts';

/**
 * ConfigMaps of FakeKubernetes: written by tests (as `kubectl apply` or an add-on's installer would),
 * read by the port's `getConfigMap`. Every write and delete takes a new resourceVersion and is reported
 * to watches, as the relay watches the VPC CNI's ConfigMap.
 */

export interface FakeConfigMapsHost {
  nextRevision(): number;
  nextUid(): string;
  /** Counts the call and throws the error queued for it, if any (`FakeKubernetes.queueError`). */
  call(operation: KubernetesOperation): void;
  /** A ConfigMap written or removed (with the object as last stored, and for DELETED a new revision). */
  written(type: 'ADDED' | 'MODIFIED' | 'DELETED', configMap: ConfigMap): void;
}

export class FakeConfigMaps {
  /** By `namespace/name`. */
  readonly stored = new Map<string, ConfigMap>();

  constructor(private readonly host: FakeConfigMapsHost) {}

  /** Create or overwrite, keeping the uid of the one it replaces. */
  put(configMap: ConfigMap): ConfigMap {
    const namespace = configMap.metadata.namespace ?? 'default';
    const at = `${namespace}/${configMap.metadata.name}`;
    const existing = this.stored.get(at);
    const stored: ConfigMap = structuredClone({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      ...configMap,
      metadata: {
        ...configMap.metadata,
        namespace,
        uid: configMap.metadata.uid ?? existing?.metadata.uid ?? this.host.nextUid(),
        resourceVersion: String(this.host.nextRevision()),
      },
    });
    this.stored.set(at, stored);
    this.host.written(existing ? 'MODIFIED' : 'ADDED', stored);
    return structuredClone(stored);
  }

  delete(namespace: string, name: string): void {
    const last = this.stored.get(`${namespace}/${name}`);
    if (!last) return;
    this.stored.delete(`${namespace}/${name}`);
    this.host.written('DELETED', last);
  }

  /** The port's read (counted as `getConfigMap`). */
  getRequest(namespace: string, name: string): ConfigMap | undefined {
    this.host.call('getConfigMap');
    const stored = this.stored.get(`${namespace}/${name}`);
    return stored && structuredClone(stored);
  }

  list(): ConfigMap[] {
    return [...this.stored.values()].map((c) => structuredClone(c));
  }
}
