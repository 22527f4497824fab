import { isNotFound } from '../../../shared/k8s/errors.ts';
import { type KubernetesRestClient, LIST_PAGE_SIZE, path } from '../../../shared/k8s/rest-client.ts';
import { type TargetGroupBinding, TGB_GROUP, TGB_PLURAL } from '../../../shared/k8s/tgb-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';

/**
 * What the TargetGroupBinding webhooks read at admission: the bindings (of every namespace, for the validating
 * webhook's one-binding-per-target-group rule; of the Pod's namespace for the readiness gates) and the Services of a
 * namespace. Read from the API server at each review rather than watched: a relay replica keeps no copy of them
 * (its memory is for the leader's fingerprints), and a review comes only with a binding's change or a Pod's creation
 * in a namespace labelled for readiness gates. deploy/relay/rbac-target-group-binding.yaml grants the lists.
 */
export interface TgbAdmissionReads {
  /** Every binding of `namespace`, or of every namespace; [] when the CRD is not installed. */
  listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]>;
  listServices(namespace: string): Promise<Service[]>;
}

/** A review waits this long at most for each page (the webhooks' own timeout is a few seconds). */
const PAGE_TIMEOUT_MS = 4_000;

/** The reads over the relay's small REST client (in a Pod), paged as every list of the project is. */
export class RestTgbAdmissionReads implements TgbAdmissionReads {
  constructor(private readonly client: KubernetesRestClient) {}

  async listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]> {
    const where = namespace === undefined ? [] : ['namespaces', namespace];
    try {
      return await this.list<TargetGroupBinding>(path('apis', TGB_GROUP, 'v1beta1', ...where, TGB_PLURAL));
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  listServices(namespace: string): Promise<Service[]> {
    return this.list<Service>(path('api', 'v1', 'namespaces', namespace, 'services'));
  }

  private async list<T>(at: string): Promise<T[]> {
    const items: T[] = [];
    let continueToken: string | undefined;
    do {
      const page = await this.client.send<{ items?: T[] | null; metadata?: { continue?: string } }>({
        method: 'GET',
        path: at,
        query: { limit: LIST_PAGE_SIZE, continue: continueToken },
        signal: AbortSignal.timeout(PAGE_TIMEOUT_MS),
      });
      items.push(...(page?.items ?? []));
      continueToken = page?.metadata?.continue || undefined;
    } while (continueToken);
    return items;
  }
}
