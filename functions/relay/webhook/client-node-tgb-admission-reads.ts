import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { apiConfiguration, listAllPages } from '../../../shared/k8s/client-node-adapter.ts';
import { isNotFound } from '../../../shared/k8s/errors.ts';
import { LIST_PAGE_SIZE } from '../../../shared/k8s/rest-client.ts';
import { type TargetGroupBinding, TGB_GROUP, TGB_PLURAL } from '../../../shared/k8s/tgb-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { RELAY_USER_AGENT } from '../kube-source.ts';
import type { TgbAdmissionReads } from './tgb-admission-reads.ts';

/** The TargetGroupBinding webhooks' lists over client-node (kubeconfig mode: local runs), paged. */
export class ClientNodeTgbAdmissionReads implements TgbAdmissionReads {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;

  constructor(kubeConfig: KubeConfig) {
    const configuration = apiConfiguration(kubeConfig, RELAY_USER_AGENT);
    this.core = new CoreV1Api(configuration);
    this.custom = new CustomObjectsApi(configuration);
  }

  async listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]> {
    const what = { group: TGB_GROUP, version: 'v1beta1', plural: TGB_PLURAL, limit: LIST_PAGE_SIZE };
    try {
      return await listAllPages<TargetGroupBinding>(async (token) => {
        // A custom object list is the API server's JSON as is: its token is `metadata.continue`.
        const page = (
          namespace === undefined
            ? await this.custom.listClusterCustomObject({ ...what, _continue: token })
            : await this.custom.listNamespacedCustomObject({ ...what, namespace, _continue: token })
        ) as { items?: object[]; metadata?: { continue?: string } };
        return { items: page.items ?? [], metadata: { _continue: page.metadata?.continue } };
      });
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  listServices(namespace: string): Promise<Service[]> {
    return listAllPages<Service>((token) =>
      this.core.listNamespacedService({ namespace, limit: LIST_PAGE_SIZE, _continue: token }),
    );
  }
}
