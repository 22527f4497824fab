import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import type { Clock } from '../../shared/clock.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';

/**
 * Instance ID -> Node name, from the Nodes' provider IDs. Node names cannot be derived from an
 * instance ID (clusters name Nodes by DNS name, resource name or anything kubelet was told), and a
 * terminated instance no longer reports its DNS name, so we ask the Nodes. One paged list serves
 * every event of a container for `ttlMs`; a miss refreshes early (a Node may be new), but at most
 * once per `minRefreshMs`, so a flood of events about foreign instances cannot turn into a flood of lists.
 */
export class NodeIndex {
  private byInstance = new Map<string, string>();
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading?: Promise<void>;

  constructor(
    private readonly kube: KubernetesPort,
    private readonly clock: Clock,
    private readonly ttlMs = 60_000,
    private readonly minRefreshMs = 5_000,
  ) {}

  async nodeFor(instanceId: string): Promise<string | undefined> {
    const age = this.clock.now() - this.loadedAt;
    if (age > this.ttlMs) await this.refresh();
    const hit = this.byInstance.get(instanceId);
    if (hit || this.clock.now() - this.loadedAt < this.minRefreshMs) return hit;
    await this.refresh();
    return this.byInstance.get(instanceId);
  }

  private refresh(): Promise<void> {
    this.loading ??= this.kube
      .listNodes()
      .then((nodes) => {
        const next = new Map<string, string>();
        for (const node of nodes) {
          const id = instanceIdFromProviderId(node.spec?.providerID);
          if (id) next.set(id, node.metadata.name);
        }
        this.byInstance = next;
        this.loadedAt = this.clock.now();
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}
