import type { Clock } from '../../clock.ts';
import { ClientNodeKubernetes } from '../client-node-adapter.ts';
import { ClientNodeDrain } from '../client-node-drain.ts';
import { ClientNodeIpam } from '../client-node-ipam.ts';
import { ClientNodeServices } from '../client-node-services.ts';
import type { DrainPort } from '../drain-port.ts';
import type { IpamKubernetesPort } from '../ipam-port.ts';
import { tokenKubeConfig } from '../lambda-access.ts';
import type { KubernetesPort } from '../port.ts';
import type { TokenKubeConfig } from '../rest-client.ts';
import { RestDrain, RestIpam, RestKubernetes, RestServices } from '../rest-ports.ts';
import type { ServicesPort } from '../service-port.ts';
import { FAKE_API_SERVER_CA_DATA } from './api-server.ts';

/**
 * The two implementations of the Kubernetes ports, for the adapter tests (`client-node-*.test.ts`) that
 * run each against the HTTPS fake API server: client-node (kubeconfig mode, the relay) and the REST client
 * the Lambdas use (docs/adr/0010-lambda-cold-start.md). Each is built as the Lambdas build it, from the
 * server's URL and CA and a bearer token.
 */
export interface AdapterClient {
  name: string;
  kubernetes(server: { url: string }, options?: { clock?: Clock; token?: string }): KubernetesPort;
  services(server: { url: string }, token?: string): ServicesPort;
  ipam(server: { url: string }, token?: string): IpamKubernetesPort;
  drain(server: { url: string }, token?: string): DrainPort;
}

const TOKEN = 'test-token';
const rest = (server: { url: string }, token = TOKEN): TokenKubeConfig => ({
  server: server.url,
  caData: FAKE_API_SERVER_CA_DATA,
  token,
});
const clientNode = (server: { url: string }, token = TOKEN) =>
  tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, token);

export const ADAPTER_CLIENTS: AdapterClient[] = [
  {
    name: 'client-node',
    kubernetes: (server, options = {}) => new ClientNodeKubernetes(clientNode(server, options.token), options),
    services: (server, token) => new ClientNodeServices(clientNode(server, token)),
    ipam: (server, token) => new ClientNodeIpam(clientNode(server, token)),
    drain: (server, token) => new ClientNodeDrain(clientNode(server, token)),
  },
  {
    name: 'the REST client',
    kubernetes: (server, options = {}) => new RestKubernetes(rest(server, options.token), options),
    services: (server, token) => new RestServices(rest(server, token)),
    ipam: (server, token) => new RestIpam(rest(server, token)),
    drain: (server, token) => new RestDrain(rest(server, token)),
  },
];
