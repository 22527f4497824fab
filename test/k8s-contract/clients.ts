import { ClientNodeLeases } from '../../functions/relay/client-node-leases.ts';
import { ClientNodeListWatch } from '../../functions/relay/client-node-source.ts';
import type { ListWatchSource } from '../../functions/relay/kube-source.ts';
import type { LeasePort } from '../../functions/relay/lease.ts';
import { RestLeases, RestListWatch } from '../../functions/relay/rest-source.ts';
import { ClientNodeKubernetes } from '../../shared/k8s/client-node-adapter.ts';
import { ClientNodeDrain } from '../../shared/k8s/client-node-drain.ts';
import { ClientNodeIpam } from '../../shared/k8s/client-node-ipam.ts';
import { ClientNodeServices } from '../../shared/k8s/client-node-services.ts';
import type { DrainPort } from '../../shared/k8s/drain-port.ts';
import type { IpamKubernetesPort } from '../../shared/k8s/ipam-port.ts';
import { tokenKubeConfig } from '../../shared/k8s/lambda-access.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import { KubernetesRestClient } from '../../shared/k8s/rest-client.ts';
import { RestDrain, RestIpam, RestKubernetes, RestServices } from '../../shared/k8s/rest-ports.ts';
import type { ServicesPort } from '../../shared/k8s/service-port.ts';

/**
 * The project's two Kubernetes clients, built as production builds them from an API server's URL, CA and
 * bearer token: client-node (kubeconfig mode: local runs, the relay outside a Pod) and the small REST client
 * (the Lambdas, and the relay in a Pod). Each hands out every port the contract suite exercises: the
 * controllers' ports (shared/k8s) and the relay's list/watch and Leases (functions/relay).
 */

export interface KubeServer {
  url: string;
  /** Base64 PEM CA bundle. */
  caData: string;
  token: string;
}

export interface KubeClient {
  name: 'client-node' | 'REST client';
  kubernetes(server: KubeServer): KubernetesPort;
  services(server: KubeServer): ServicesPort;
  ipam(server: KubeServer): IpamKubernetesPort;
  drain(server: KubeServer): DrainPort;
  leases(server: KubeServer): LeasePort;
  listWatch(server: KubeServer): ListWatchSource;
}

const kubeConfig = (server: KubeServer) =>
  tokenKubeConfig({ endpoint: server.url, caData: server.caData }, server.token);
const rest = (server: KubeServer) => ({ server: server.url, caData: server.caData, token: server.token });

export const KUBE_CLIENTS: KubeClient[] = [
  {
    name: 'client-node',
    kubernetes: (server) => new ClientNodeKubernetes(kubeConfig(server)),
    services: (server) => new ClientNodeServices(kubeConfig(server)),
    ipam: (server) => new ClientNodeIpam(kubeConfig(server)),
    drain: (server) => new ClientNodeDrain(kubeConfig(server)),
    leases: (server) => new ClientNodeLeases(kubeConfig(server)),
    listWatch: (server) => new ClientNodeListWatch(kubeConfig(server)),
  },
  {
    name: 'REST client',
    kubernetes: (server) => new RestKubernetes(rest(server)),
    services: (server) => new RestServices(rest(server)),
    ipam: (server) => new RestIpam(rest(server)),
    drain: (server) => new RestDrain(rest(server)),
    leases: (server) => new RestLeases(new KubernetesRestClient(rest(server))),
    listWatch: (server) => new RestListWatch(new KubernetesRestClient(rest(server))),
  },
];
