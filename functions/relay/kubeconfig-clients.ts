import { KubeConfig } from '@kubernetes/client-node';
import { ClientNodeLeases } from './client-node-leases.ts';
import { ClientNodeListWatch } from './client-node-source.ts';
import type { KubeClients } from './kube-clients.ts';
import { ClientNodeTgbAdmissionReads } from './webhook/client-node-tgb-admission-reads.ts';
import { ClientNodeTlsStore } from './webhook/client-node-tls-store.ts';

/**
 * The relay's clients from a kubeconfig, over @kubernetes/client-node (exec plugins, client certificates,
 * contexts). Only kube-clients.ts imports this module, on demand: a relay in a Pod never loads it.
 */

/** `path`, or client-node's default: $KUBECONFIG, then ~/.kube/config, then the Pod's service account. */
export function loadKubeConfig(path?: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (path) kubeConfig.loadFromFile(path);
  else kubeConfig.loadFromDefault();
  return kubeConfig;
}

export function clientNodeClients(kubeConfig: KubeConfig): KubeClients {
  return {
    source: new ClientNodeListWatch(kubeConfig),
    leases: new ClientNodeLeases(kubeConfig),
    tlsStore: async (names) => new ClientNodeTlsStore(kubeConfig, names),
    tgbAdmissionReads: () => new ClientNodeTgbAdmissionReads(kubeConfig),
  };
}
