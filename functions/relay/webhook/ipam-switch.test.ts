import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IPV4_RESOURCE, POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../../../shared/k8s/ipam-names.ts';
import { silentLog } from '../../../shared/observability/log.ts';
import { loadRelayConfig } from '../config.ts';
import type { KubeObject } from '../kinds.ts';
import { restClients } from '../kube-clients.ts';
import { wire } from '../main.ts';
import { FakeCluster, type FakeKubeApi, restConfigFor, startFakeKubeApi } from '../testing/fake-kube-api.ts';
import { makeVpcCniConfigMap, reconcilerQueues } from '../testing/objects.ts';
import { issueCertificate } from './certificates.ts';
import { MUTATING_WEBHOOK, VALIDATING_WEBHOOK } from './names.ts';
import { eventually, post, review } from './testing/webhook.ts';

/**
 * The webhooks follow the same switch as the IPAM controller (`enable-windows-ipam` in kube-system/amazon-vpc-cni,
 * read by shared/k8s/ipam-flags.ts): while it is off no Node advertises the address resource, so a Pod asking for
 * one would never be scheduled. Run as the relay process runs them (main.ts `wire`), reading the ConfigMap through
 * the relay's REST client from a Kubernetes API server.
 */

const NAME = 'serverless-ccm-relay-webhook.kube-system.svc';
const CONFIGMAP_KEY = `${VPC_CNI_CONFIGMAP.namespace}/${VPC_CNI_CONFIGMAP.name}`;

let api: FakeKubeApi | undefined;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await api?.close();
  api = undefined;
});

async function relayWithWebhooks(cluster: FakeCluster, before: (api: FakeKubeApi) => void = () => {}) {
  api = await startFakeKubeApi(cluster);
  before(api);
  const directory = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  const tls = await issueCertificate({ dnsNames: [NAME], now: Date.now(), lifetimeMs: 86_400_000 });
  writeFileSync(join(directory, 'tls.crt'), tls.cert);
  writeFileSync(join(directory, 'tls.key'), tls.key);
  const { sqs, urls } = reconcilerQueues();
  const config = loadRelayConfig({
    IPAM_QUEUE_URL: urls.ipam,
    RELAY_NAMESPACE: 'kube-system',
    RELAY_WEBHOOK_ENABLED: 'true',
    RELAY_WEBHOOK_TLS: 'cert-manager',
    RELAY_WEBHOOK_CERT_DIR: directory,
  });
  const { relay, operations, webhooks } = await wire(
    { ...config, RELAY_PORT: 0, RELAY_WEBHOOK_PORT: 0 },
    { kube: restClients(restConfigFor(api)), sqs, log: silentLog, identity: 'relay-0' },
  );
  cleanups.push(async () => {
    await webhooks?.close();
    await relay.stop(1_000);
    await operations.close();
  });
  const port = webhooks!.port()!;
  const send = async (path: string, request: Record<string, unknown>) => {
    const answer = await post(port, path, review(request), { ca: tls.ca, servername: NAME });
    expect(answer.status).toBe(200);
    return JSON.parse(answer.body).response as { allowed: boolean; patch?: string; status?: { message: string } };
  };
  return {
    /** The mutating webhook's answer for a new Pod that selects Windows Nodes. */
    mutate: () =>
      send(MUTATING_WEBHOOK.path, {
        uid: 'u1',
        operation: 'CREATE',
        object: { spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'app' }] } },
      }),
    /** The validating webhook's answer for a new Pod that brings its own address annotation. */
    validate: () =>
      send(VALIDATING_WEBHOOK.path, {
        uid: 'u2',
        operation: 'CREATE',
        userInfo: { username: 'alice' },
        object: { metadata: { name: 'p', annotations: { [POD_IP_ANNOTATION]: '10.0.1.9/24' } } },
      }),
  };
}

const patched = (response: { patch?: string }) =>
  response.patch ? JSON.stringify(JSON.parse(Buffer.from(response.patch, 'base64').toString())) : undefined;

describe('admission webhooks: only while Windows IPAM is on', () => {
  it.each([
    ['no ConfigMap', undefined],
    ['enable-windows-ipam missing', {}],
    ['enable-windows-ipam "false"', { 'enable-windows-ipam': 'false' }],
    ['enable-windows-ipam unreadable ("yes")', { 'enable-windows-ipam': 'yes' }],
  ])('%s: a Windows Pod passes untouched, and its annotation is not policed', async (_case, data) => {
    const cluster = new FakeCluster();
    if (data) cluster.apply('ConfigMap', makeVpcCniConfigMap(data));
    const webhooks = await relayWithWebhooks(cluster);

    const mutated = await webhooks.mutate();
    expect(mutated.allowed).toBe(true);
    expect(mutated.patch).toBeUndefined();
    expect((await webhooks.validate()).allowed).toBe(true);
  });

  it.each([['true'], ['True'], ['1']])(
    'enable-windows-ipam "%s" (as the controller reads it): the request is added and the annotation refused',
    async (value) => {
      const cluster = new FakeCluster();
      cluster.apply('ConfigMap', makeVpcCniConfigMap({ 'enable-windows-ipam': value }));
      const webhooks = await relayWithWebhooks(cluster);

      expect(patched(await webhooks.mutate())).toContain(IPV4_RESOURCE);
      expect(await webhooks.validate()).toMatchObject({ allowed: false, status: { code: 403 } });
    },
  );

  it('a ConfigMap it may not read yet (403): Pods pass as if IPAM were off, until a list succeeds', async () => {
    const cluster = new FakeCluster();
    cluster.apply('ConfigMap', makeVpcCniConfigMap({ 'enable-windows-ipam': 'true' }));
    const fail = (api: FakeKubeApi) => api.failNext((request) => request.kind === 'ConfigMap' && !request.watch, 403);
    const webhooks = await relayWithWebhooks(cluster, fail);

    expect((await webhooks.mutate()).patch).toBeUndefined();
    expect((await webhooks.validate()).allowed).toBe(true);
    await eventually(async () => (await webhooks.mutate()).patch !== undefined, 'mutation once the list succeeds');
  });

  it('follows the ConfigMap as it changes: on, then off, then deleted', async () => {
    const cluster = new FakeCluster();
    cluster.apply('ConfigMap', makeVpcCniConfigMap({ 'enable-windows-ipam': 'false' }));
    const webhooks = await relayWithWebhooks(cluster);
    expect((await webhooks.mutate()).patch).toBeUndefined();

    cluster.mutate<KubeObject & { data?: Record<string, string> }>('ConfigMap', CONFIGMAP_KEY, (cm) => {
      cm.data = { 'enable-windows-ipam': 'true' };
    });
    await eventually(async () => (await webhooks.mutate()).patch !== undefined, 'mutation once IPAM is on');
    expect((await webhooks.validate()).allowed).toBe(false);

    cluster.mutate<KubeObject & { data?: Record<string, string> }>('ConfigMap', CONFIGMAP_KEY, (cm) => {
      cm.data = { 'enable-windows-ipam': 'false' };
    });
    await eventually(async () => (await webhooks.mutate()).patch === undefined, 'no mutation once IPAM is off');
    expect((await webhooks.validate()).allowed).toBe(true);

    cluster.mutate<KubeObject & { data?: Record<string, string> }>('ConfigMap', CONFIGMAP_KEY, (cm) => {
      cm.data = { 'enable-windows-ipam': 'true' };
    });
    await eventually(async () => (await webhooks.mutate()).patch !== undefined, 'mutation once IPAM is on again');
    cluster.remove('ConfigMap', CONFIGMAP_KEY);
    await eventually(async () => (await webhooks.mutate()).patch === undefined, 'no mutation once it is deleted');
  });
});
