import { loadAllYaml } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { type LocalWebhooks, podReview, postReview, startLocalWebhooks } from '../bin/real-webhooks.ts';
import { ClientNodeListWatch } from '../functions/relay/client-node-source.ts';
import {
  FakeCluster,
  type FakeKubeApi,
  kubeConfigFor,
  startFakeKubeApi,
} from '../functions/relay/testing/fake-kube-api.ts';
import { IPV4_RESOURCE, POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../shared/k8s/ipam-names.ts';
import { silentLog } from '../shared/observability/log.ts';

/**
 * `npm start -- --real --ipam --webhook-port PORT`: the IP address manager's Pod admission webhooks served from this
 * machine through the relay's own entry point, with the webhook configurations to apply naming them by URL. The
 * API server here is the relay's stand-in, whose list/watch the webhooks read the VPC CNI ConfigMap through; the
 * reviews are posted as the API server posts them, trusting only the printed caBundle.
 */

let api: FakeKubeApi | undefined;
let webhooks: LocalWebhooks | undefined;

afterEach(async () => {
  await webhooks?.close();
  await api?.close();
  webhooks = undefined;
  api = undefined;
});

const CONTROLLER = 'kubernetes-admin';

async function serve(apiServer?: string) {
  const cluster = new FakeCluster();
  cluster.apply('ConfigMap', { metadata: { ...VPC_CNI_CONFIGMAP }, data: { 'enable-windows-ipam': 'true' } });
  api = await startFakeKubeApi(cluster);
  webhooks = await startLocalWebhooks({
    port: 0,
    host: '127.0.0.1',
    apiServer: apiServer ?? api.url,
    controllerUsernames: [CONTROLLER],
    source: new ClientNodeListWatch(kubeConfigFor(api)),
    log: silentLog,
  });
  return webhooks;
}

interface Configuration {
  kind: string;
  metadata: { name: string };
  webhooks: { name: string; clientConfig: { url?: string; caBundle?: string; service?: unknown } }[];
}

const windowsPod = (annotations: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'iis-0', namespace: 'win', annotations },
  spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'iis', image: 'iis' }] },
});

const review = (request: { operation: string } & Record<string, unknown>) =>
  podReview({ uid: 'r-1', namespace: 'win', ...request });

type Answer = { response: { uid: string; allowed: boolean; patch?: string; status?: { message?: string } } };

describe('npm start -- --real --ipam --webhook-port: the Pod admission webhooks, locally', () => {
  it('prints both webhook configurations by URL with the caBundle, and serves them there', async () => {
    const w = await serve();
    const configurations = loadAllYaml(w.configurations) as Configuration[];
    expect(configurations.map((c) => c.kind)).toEqual([
      'MutatingWebhookConfiguration',
      'ValidatingWebhookConfiguration',
    ]);
    const hooks = configurations.flatMap((c) => c.webhooks);
    expect(hooks.map((h) => [h.name, h.clientConfig.url])).toEqual([
      ['mpod.vpc.k8s.aws', `${w.base}/mutate-v1-pod`],
      ['vpod.vpc.k8s.aws', `${w.base}/validate-v1-pod`],
    ]);
    for (const h of hooks) expect(h.clientConfig).not.toHaveProperty('service');
    const ca = Buffer.from(hooks[0]!.clientConfig.caBundle!, 'base64').toString('utf8');

    // The mutating webhook, as the API server calls it: a Pod for Windows Nodes asks for one VPC address.
    const mutate = async () =>
      (await postReview(hooks[0]!.clientConfig.url!, review({ operation: 'CREATE', object: windowsPod() }), ca))
        .body as Answer;
    let answer = await mutate();
    const deadline = Date.now() + 5_000;
    // The webhooks act once they have read the ConfigMap turning Windows IPAM on.
    while (answer.response.patch === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      answer = await mutate();
    }
    expect(answer.response).toMatchObject({ uid: 'r-1', allowed: true });
    const patch = JSON.parse(Buffer.from(answer.response.patch!, 'base64').toString('utf8'));
    expect(patch).toEqual([
      {
        op: 'add',
        path: '/spec/containers/0/resources',
        value: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } },
      },
    ]);

    // The validating one: only the identity the local IP address manager runs as writes a Pod's address.
    const update = (username: string) =>
      review({
        operation: 'UPDATE',
        userInfo: { username },
        oldObject: windowsPod(),
        object: windowsPod({ [POD_IP_ANNOTATION]: '10.0.10.7/24' }),
      });
    const stranger = (await postReview(hooks[1]!.clientConfig.url!, update('someone'), ca)).body as Answer;
    expect(stranger.response.allowed).toBe(false);
    const controller = (await postReview(hooks[1]!.clientConfig.url!, update(CONTROLLER), ca)).body as Answer;
    expect(controller.response.allowed).toBe(true);
    expect(w.describe()).toMatch(/: \d+ admission reviews answered$/);
    expect(Number(w.describe().match(/(\d+) admission reviews/)![1])).toBeGreaterThanOrEqual(3);
  });

  it('says the API server can reach it when both are on this machine', async () => {
    const w = await serve();
    expect(w.reachability).toMatch(/^answers at https:\/\/127\.0\.0\.1:\d+ from this machine/);
  });

  it("says the API server cannot reach it when the URL is this machine's loopback address and the API server is elsewhere", async () => {
    // An address, not a name: nothing here depends on a DNS lookup.
    const w = await serve('https://203.0.113.10');
    expect(w.reachability).toMatch(
      /^cannot be reached by the API server \(https:\/\/203\.0\.113\.10\): 127\.0\.0\.1 is this machine's loopback address; pass --webhook-host/,
    );
  });
});
