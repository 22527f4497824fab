import { systemClock } from '../../../shared/clock.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import type { SqsPort } from '../../../shared/queue/sqs-port.ts';
import type { Reconciler } from '../controllers/index.ts';
import { restClients } from '../kube-clients.ts';
import { Relay, type RelayOptions } from '../relay.ts';
import { FakeCluster, type FakeKubeApi, restConfigFor, startFakeKubeApi } from './fake-kube-api.ts';
import {
  makeAddressPod,
  makeNode,
  makePod,
  makeService,
  makeSlice,
  makeVpcCniConfigMap,
  makeWindowsNode,
  uninitialized,
  until,
} from './objects.ts';

/** Relay settings for tests: every wait in tens of milliseconds. */
export const FAST: Pick<RelayOptions, 'listWatch' | 'forwarder' | 'nodeSetDebounceMs' | 'sendBudgetMs'> = {
  listWatch: {
    pageSize: 500,
    watchTimeoutSeconds: 60,
    inactivityMs: 5_000,
    relistIntervalMs: 0,
    backoffBaseMs: 20,
    backoffMaxMs: 200,
  },
  forwarder: { lingerMs: 5, maxInFlightBatches: 4, retryBaseMs: 20, retryMaxMs: 200 },
  nodeSetDebounceMs: 10,
  sendBudgetMs: 50,
};

/** A relay talking to the fake API server through the clients it uses in a Pod (rest-source.ts). */
export function relayFor(
  api: FakeKubeApi,
  sqs: SqsPort,
  queues: Partial<Record<Reconciler, string>>,
  options: Partial<RelayOptions> & { token?: string } = {},
): Relay {
  const { source, leases } = restClients(restConfigFor(api, options.token ?? 'relay-token'));
  return new Relay(
    {
      identity: options.identity ?? 'relay-a',
      namespace: 'kube-system',
      leaseName: 'serverless-ccm-relay',
      election: false,
      queues,
      ...FAST,
      ...options,
    },
    {
      source,
      leases,
      sqs,
      clock: systemClock,
      log: silentLog,
    },
  );
}

/** The relay has seen every change made to the cluster so far, and SQS accepted every key. */
export async function settled(
  relay: Relay,
  c: FakeCluster,
  what = 'the relay to catch up and send everything',
): Promise<void> {
  const seen = () => relay.kinds.every((kind) => Number(relay.resourceVersions()[kind] ?? 0) >= c.lastRevision(kind));
  await until(() => relay.status().synced && seen() && relay.status().pending === 0, what);
}

export const N1 = 'ip-10-0-1-10.eu-west-1.compute.internal';
export const N2 = 'ip-10-0-1-11.eu-west-1.compute.internal';

/**
 * Two Nodes (N2 uninitialized), LoadBalancer Services with instance and IP targets and a ClusterIP
 * one with their EndpointSlices, a bound Pod asking for a VPC address, a pending one and a host-network one.
 */
export function cluster(): FakeCluster {
  const c = new FakeCluster();
  c.apply('Node', makeNode(N1, { podCIDR: '10.244.1.0/24' }));
  c.apply('Node', uninitialized(makeNode(N2)));
  c.apply('Service', makeService('default', 'web'));
  c.apply(
    'Service',
    makeService('default', 'web-ip', 'LoadBalancer', {
      'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
    }),
  );
  c.apply('Service', makeService('default', 'internal', 'ClusterIP'));
  c.apply('EndpointSlice', makeSlice('default', 'web-ip', 'abcde', ['10.244.1.5']));
  c.apply('EndpointSlice', makeSlice('default', 'internal', 'fghij', ['10.244.1.6']));
  c.apply('Pod', makeAddressPod('default', 'app-1', N1));
  c.apply('Pod', makeAddressPod('default', 'pending-1', undefined));
  c.apply(
    'Pod',
    makePod('kube-system', 'kube-proxy-x', N1, { spec: { nodeName: N1, hostNetwork: true, containers: [] } }),
  );
  return c;
}

export const W1 = 'ip-10-0-2-10.eu-west-1.compute.internal';
export const W2 = 'ip-10-0-2-11.eu-west-1.compute.internal';

/**
 * Windows IPAM: two Windows Nodes (W1, W2) and a Linux one (N1), the VPC CNI's ConfigMap and another
 * kube-system ConfigMap, a Pod on W1 asking for an address and one on N1 that does not.
 */
export function windowsCluster(): FakeCluster {
  const c = new FakeCluster();
  c.apply('Node', makeWindowsNode(W1));
  c.apply('Node', makeWindowsNode(W2));
  c.apply('Node', makeNode(N1));
  c.apply('ConfigMap', makeVpcCniConfigMap());
  c.apply('ConfigMap', { metadata: { namespace: 'kube-system', name: 'coredns' }, data: { Corefile: '.:53 {}' } });
  c.apply('Pod', makeAddressPod('default', 'win-app-1', W1));
  c.apply('Pod', makePod('default', 'linux-app-1', N1));
  return c;
}

/** API servers and relays a test started, stopped by `stopStarted` (each test file's afterEach). */
const startedApis: FakeKubeApi[] = [];
const startedRelays: Relay[] = [];

/** The fake API server for a cluster, closed after the test. */
export async function serve(
  cluster: FakeCluster,
  options?: Parameters<typeof startFakeKubeApi>[1],
): Promise<FakeKubeApi> {
  const api = await startFakeKubeApi(cluster, options);
  startedApis.push(api);
  return api;
}

/** Starts a relay, stopped after the test. */
export function start(relay: Relay): Relay {
  startedRelays.push(relay);
  relay.start();
  return relay;
}

export async function stopStarted(): Promise<void> {
  await Promise.all(startedRelays.splice(0).map((r) => r.stop(1_000)));
  await Promise.all(startedApis.splice(0).map((a) => a.close()));
}
