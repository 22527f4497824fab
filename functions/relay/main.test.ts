import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeProxy } from '../../shared/net/fakes/fake-proxy.ts';
import { silentLog } from '../../shared/observability/log.ts';
import { loadRelayConfig } from './config.ts';
import { restClients } from './kube-clients.ts';
import { sqsRequestHandler, wire } from './main.ts';
import { FakeCluster, type FakeKubeApi, restConfigFor, startFakeKubeApi } from './testing/fake-kube-api.ts';
import { keysOn, makeNode, reconcilerQueues, until } from './testing/objects.ts';

/** The process wiring: environment -> relay, and the operations endpoints the probes and Prometheus use. */

let api: FakeKubeApi | undefined;
let stop: (() => Promise<unknown>) | undefined;
afterEach(async () => {
  await stop?.();
  await api?.close();
});

describe('relay process', () => {
  it('runs from its environment: leads, forwards, and answers /healthz, /readyz and /metrics', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    api = await startFakeKubeApi(cluster);
    const { sqs, urls } = reconcilerQueues();
    const config = loadRelayConfig({
      NODE_LIFECYCLE_QUEUE_URL: urls['node-lifecycle'],
      RELAY_NAMESPACE: 'ccm',
      RELAY_PORT: '1',
      RELAY_LEASE_DURATION_SECONDS: '3',
      RELAY_RENEW_DEADLINE_SECONDS: '2',
      RELAY_RETRY_PERIOD_SECONDS: '1',
      RELAY_LEADER_MIGRATION_CONFIG: '/etc/relay/migration.yaml',
    });
    const { relay, operations, namespace } = await wire(
      { ...config, RELAY_PORT: 0 },
      {
        kube: restClients(restConfigFor(api)),
        sqs,
        log: silentLog,
        identity: 'relay-0',
        readFile: () => 'kind: LeaderMigrationConfiguration\napiVersion: controllermanager.config.k8s.io/v1\n',
      },
    );
    stop = async () => {
      await relay.stop(1_000);
      await operations.close();
    };
    const get = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${operations.port}${path}`);
      return { status: response.status, body: await response.text() };
    };
    expect(namespace).toBe('ccm');
    expect((await get('/readyz')).status).toBe(503);

    relay.start();
    await until(() => keysOn(sqs, 'node-lifecycle').length === 1, 'the key');
    await until(() => relay.status().ready, 'ready');

    expect((await get('/healthz')).status).toBe(200);
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({ leader: true, synced: true, holder: 'relay-0' });
    const metrics = await get('/metrics');
    expect(metrics.body).toContain('relay_leader 1');
    expect(metrics.body).toContain('relay_changes_forwarded_total{kind="Node"} 1');
    expect(metrics.body).toContain('relay_keys_sent_total{reconciler="node-lifecycle"} 1');
    expect(metrics.body).toMatch(/process_resident_memory_bytes \d+/);
    expect((await get('/nope')).status).toBe(404);
    expect(cluster.leases.peek('ccm', 'serverless-ccm-relay')?.spec?.holderIdentity).toBe('relay-0');

    await stop();
    stop = undefined;
    // Released on a graceful stop.
    expect(cluster.leases.peek('ccm', 'serverless-ccm-relay')?.spec?.holderIdentity).toBe('');
  });
});

describe("the relay's SQS connection", () => {
  it('goes through the proxy its environment names, and direct without one', async () => {
    const answered: string[] = [];
    const sqsStandIn = createServer((req, res) => {
      answered.push(String(req.headers['x-amz-target']));
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end('{"QueueUrls":[]}');
    });
    await new Promise<void>((resolve) => sqsStandIn.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(sqsStandIn.address() as AddressInfo).port}`;
    const proxy = await startFakeProxy();
    try {
      const client = (env: Record<string, string>) =>
        new SQSClient({
          region: 'eu-west-1',
          endpoint,
          credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
          requestHandler: sqsRequestHandler(env),
        });
      await client({ HTTP_PROXY: proxy.url }).send(new ListQueuesCommand({}));
      expect(proxy.seen).toEqual([`POST ${endpoint}/`]);

      await client({}).send(new ListQueuesCommand({}));
      await client({ HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' }).send(new ListQueuesCommand({}));
      expect(proxy.seen).toHaveLength(1);
      expect(answered).toEqual(['AmazonSQS.ListQueues', 'AmazonSQS.ListQueues', 'AmazonSQS.ListQueues']);
    } finally {
      await proxy.close();
      sqsStandIn.closeAllConnections();
      await new Promise((resolve) => sqsStandIn.close(resolve));
    }
  });
});
