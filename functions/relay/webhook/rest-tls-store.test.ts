import { afterEach, describe, expect, it } from 'vitest';
import {
  FAKE_API_SERVER_CA_DATA,
  type FakeApiServer,
  type RecordedRequest,
  startFakeApiServer,
  status,
} from '../../../shared/k8s/fakes/api-server.ts';
import { KubernetesRestClient } from '../../../shared/k8s/rest-client.ts';
import { RestTlsStore } from './rest-tls-store.ts';

/**
 * The REST TLS store against an HTTPS server holding one Secret and the two webhook configurations: the
 * requests RBAC allows (deploy/relay/rbac-webhook.yaml), base64 both ways, 409 on a stale write, and the
 * guarded JSON Patch of the caBundles.
 */

const SECRET_PATH = '/api/v1/namespaces/kube-system/secrets/webhook-tls';
const MUTATING = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/ipam';
const VALIDATING = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/ipam';

interface Webhook {
  name: string;
  clientConfig: { caBundle?: string };
}

function apiServer() {
  let secret: { metadata: { resourceVersion: string }; data: Record<string, string> } | undefined;
  let revision = 0;
  const configurations: Record<string, { webhooks: Webhook[] }> = {
    [MUTATING]: { webhooks: [{ name: 'mpod.vpc.k8s.aws', clientConfig: {} }] },
    [VALIDATING]: { webhooks: [{ name: 'vpod.vpc.k8s.aws', clientConfig: { caBundle: 'b2xk' } }] },
  };
  const respond = (r: RecordedRequest) => {
    if (r.path === SECRET_PATH && r.method === 'GET') {
      return secret ? { status: 200, body: secret } : { status: 404, body: status(404, 'NotFound', 'not found') };
    }
    if (r.path === '/api/v1/namespaces/kube-system/secrets' && r.method === 'POST') {
      if (secret) return { status: 409, body: status(409, 'AlreadyExists', 'exists') };
      secret = {
        ...JSON.parse(r.body),
        metadata: { ...JSON.parse(r.body).metadata, resourceVersion: `${++revision}` },
      };
      return { status: 201, body: secret };
    }
    if (r.path === SECRET_PATH && r.method === 'PUT') {
      const body = JSON.parse(r.body);
      if (body.metadata.resourceVersion !== secret?.metadata.resourceVersion) {
        return { status: 409, body: status(409, 'Conflict', 'the object has been modified') };
      }
      secret = { ...body, metadata: { ...body.metadata, resourceVersion: `${++revision}` } };
      return { status: 200, body: secret };
    }
    const configuration = configurations[r.path];
    if (configuration && r.method === 'GET') return { status: 200, body: configuration };
    if (configuration && r.method === 'PATCH') {
      for (const op of JSON.parse(r.body) as { op: string; path: string; value: string }[]) {
        const [, , index] = op.path.split('/');
        const webhook = configuration.webhooks[Number(index)]!;
        if (op.op === 'test' && webhook.name !== op.value) {
          return { status: 422, body: status(422, 'Invalid', 'test failed') };
        }
        if (op.op === 'add') webhook.clientConfig.caBundle = op.value;
      }
      return { status: 200, body: configuration };
    }
    return { status: 403, body: status(403, 'Forbidden', `${r.method} ${r.path}`) };
  };
  return { respond, configurations, secret: () => secret };
}

let server: FakeApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function storeFor(respond: (r: RecordedRequest) => { status: number; body?: unknown }) {
  server = await startFakeApiServer(respond);
  const client = new KubernetesRestClient({ server: server.url, caData: FAKE_API_SERVER_CA_DATA, token: 't' });
  return new RestTlsStore(client, { namespace: 'kube-system', secret: 'webhook-tls', configuration: 'ipam' });
}

describe('RestTlsStore', () => {
  it('creates, reads and updates the Secret as PEM text, with 409 on a stale write', async () => {
    const api = apiServer();
    const store = await storeFor(api.respond);

    expect(await store.getSecret()).toBeUndefined();
    const created = await store.createSecret({
      annotations: { a: '1' },
      data: { 'tls.crt': 'CERT', 'tls.key': 'KEY' },
    });
    expect(created).toEqual({
      resourceVersion: '1',
      annotations: { a: '1' },
      data: { 'tls.crt': 'CERT', 'tls.key': 'KEY' },
    });
    expect(api.secret()).toMatchObject({
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': Buffer.from('CERT').toString('base64') },
    });
    await expect(store.createSecret(created)).rejects.toMatchObject({ statusCode: 409 });

    const updated = await store.updateSecret({ ...created, data: { ...created.data, 'ca.crt': 'CA' } });
    expect(updated.resourceVersion).toBe('2');
    expect((await store.getSecret())?.data['ca.crt']).toBe('CA');
    await expect(store.updateSecret(created)).rejects.toMatchObject({ statusCode: 409, reason: 'Conflict' });
  });

  it('reads and writes the caBundle of every webhook of both configurations', async () => {
    const api = apiServer();
    const store = await storeFor(api.respond);

    expect(await store.caBundles()).toEqual([
      { configuration: 'MutatingWebhookConfiguration', webhook: 'mpod.vpc.k8s.aws', caBundle: '' },
      { configuration: 'ValidatingWebhookConfiguration', webhook: 'vpod.vpc.k8s.aws', caBundle: 'old' },
    ]);
    await store.setCaBundles('NEW CA');
    expect((await store.caBundles()).map((b) => b.caBundle)).toEqual(['NEW CA', 'NEW CA']);
    const patches = server!.requests.filter((r) => r.method === 'PATCH');
    expect(patches.map((r) => [r.path, r.headers['content-type']])).toEqual([
      [MUTATING, 'application/json-patch+json'],
      [VALIDATING, 'application/json-patch+json'],
    ]);
  });

  it('fails the patch when the configuration changed between the read and the write', async () => {
    const api = apiServer();
    const store = await storeFor((r) => {
      const answer = api.respond(r);
      // Re-applied with another webhook at index 0 right after the store read it.
      if (r.method === 'GET' && r.path === MUTATING) {
        const read = structuredClone(answer.body);
        api.configurations[MUTATING]!.webhooks[0]!.name = 'other.example.com';
        return { status: 200, body: read };
      }
      return answer;
    });

    await expect(store.setCaBundles('NEW CA')).rejects.toMatchObject({ statusCode: 422 });
    expect(api.configurations[MUTATING]!.webhooks[0]!.clientConfig.caBundle).toBeUndefined();
  });
});
