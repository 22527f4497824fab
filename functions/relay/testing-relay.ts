import { systemClock } from '../../shared/clock.ts';
import { silentLog } from '../../shared/observability/log.ts';
import type { SqsPort } from '../../shared/queue/sqs-port.ts';
import { ClientNodeLeases } from './client-node-leases.ts';
import { ClientNodeListWatch } from './client-node-source.ts';
import { type FakeKubeApi, kubeConfigFor } from './fake-kube-api.ts';
import { Relay, type RelayOptions } from './relay.ts';
import type { Reconciler } from './routes.ts';

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

/** A relay talking to the fake API server through the real client-node adapters. */
export function relayFor(
  api: FakeKubeApi,
  sqs: SqsPort,
  queues: Partial<Record<Reconciler, string>>,
  options: Partial<RelayOptions> & { token?: string } = {},
): Relay {
  const kubeConfig = kubeConfigFor(api, options.token ?? 'relay-token');
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
      source: new ClientNodeListWatch(kubeConfig),
      leases: new ClientNodeLeases(kubeConfig),
      sqs,
      clock: systemClock,
      log: silentLog,
    },
  );
}
