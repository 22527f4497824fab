import { createHash, createHmac } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { loadConfig } from '../config/config.ts';
import { type AwsCredentials, EKS_TOKEN_REFRESH_MS, eksToken, stsHostname } from './eks-token.ts';
import { KubernetesApiError } from './errors.ts';
import { FakeAccessDeps } from './fakes/access.ts';
import { FAKE_API_SERVER_CA_DATA, status } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from './fakes/server.ts';
import { createKubernetesPort } from './lambda-access.ts';

// The example credentials of the AWS Signature Version 4 documentation.
const CREDENTIALS: AwsCredentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session+token/with=specials',
};
const SIGNING_TIME = Date.parse('2026-11-02T08:00:00Z');

function decodeToken(token: string): URL {
  expect(token.startsWith('k8s-aws-v1.')).toBe(true);
  const encoded = token.slice('k8s-aws-v1.'.length);
  expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/); // base64url, no padding
  return new URL(Buffer.from(encoded, 'base64url').toString('utf8'));
}

/** RFC 3986 encoding, as SigV4's canonical query string wants it. */
const uriEncode = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The signature recomputed here from the SigV4 specification, independently of @smithy/signature-v4:
 * a GET of `/` with the query minus X-Amz-Signature, signed headers host and x-k8s-aws-id, and the
 * hash of an empty payload.
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
 */
function expectedSignature(url: URL, clusterName: string, credentials: AwsCredentials, region: string): string {
  const params = [...url.searchParams.entries()].filter(([k]) => k !== 'X-Amz-Signature');
  const canonicalQuery = params
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonicalRequest = [
    'GET',
    '/',
    canonicalQuery,
    `host:${url.host}\nx-k8s-aws-id:${clusterName}\n`,
    'host;x-k8s-aws-id',
    createHash('sha256').update('').digest('hex'),
  ].join('\n');
  const amzDate = url.searchParams.get('X-Amz-Date')!;
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${region}/sts/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  let key: Buffer = createHmac('sha256', `AWS4${credentials.secretAccessKey}`).update(day).digest();
  for (const part of [region, 'sts', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

describe('eksToken', () => {
  const input = { clusterName: 'prod-eu', region: 'eu-west-1', credentials: CREDENTIALS, now: SIGNING_TIME };

  it('is k8s-aws-v1. and an unpadded base64url presigned STS GetCallerIdentity URL', async () => {
    const url = decodeToken(await eksToken(input));

    expect(url.origin).toBe('https://sts.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/');
    const q = url.searchParams;
    expect(q.get('Action')).toBe('GetCallerIdentity');
    expect(q.get('Version')).toBe('2011-06-15');
    expect(q.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(q.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20261102/eu-west-1/sts/aws4_request');
    expect(q.get('X-Amz-Date')).toBe('20261102T080000Z');
    expect(q.get('X-Amz-Expires')).toBe('60');
    expect(q.get('X-Amz-SignedHeaders')).toBe('host;x-k8s-aws-id');
    expect(q.get('X-Amz-Security-Token')).toBe(CREDENTIALS.sessionToken);
    expect(q.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    // The cluster name is a signed header, never a query parameter.
    expect([...q.keys()].some((k) => k.toLowerCase() === 'x-k8s-aws-id')).toBe(false);
  });

  it('carries the SigV4 signature of the request with the x-k8s-aws-id header', async () => {
    const url = decodeToken(await eksToken(input));

    expect(url.searchParams.get('X-Amz-Signature')).toBe(expectedSignature(url, 'prod-eu', CREDENTIALS, 'eu-west-1'));
  });

  it('is deterministic for fixed credentials and time', async () => {
    expect(await eksToken(input)).toBe(await eksToken({ ...input, now: new Date(SIGNING_TIME) }));
  });

  it('changes signature when the cluster name changes, and only the signature', async () => {
    const a = decodeToken(await eksToken(input));
    const b = decodeToken(await eksToken({ ...input, clusterName: 'prod-us' }));

    expect(b.searchParams.get('X-Amz-Signature')).not.toBe(a.searchParams.get('X-Amz-Signature'));
    a.searchParams.delete('X-Amz-Signature');
    b.searchParams.delete('X-Amz-Signature');
    expect(b.toString()).toBe(a.toString());
  });

  it('changes when the signing time changes', async () => {
    expect(await eksToken({ ...input, now: SIGNING_TIME + 1000 })).not.toBe(await eksToken(input));
  });

  it('leaves out X-Amz-Security-Token for long-term credentials', async () => {
    const { sessionToken: _, ...longTerm } = CREDENTIALS;
    const url = decodeToken(await eksToken({ ...input, credentials: longTerm }));

    expect(url.searchParams.has('X-Amz-Security-Token')).toBe(false);
    expect(url.searchParams.get('X-Amz-Signature')).toBe(expectedSignature(url, 'prod-eu', longTerm, 'eu-west-1'));
  });

  it('names the real regional STS host even when an STS endpoint override is set', async () => {
    const saved = process.env.AWS_ENDPOINT_URL_STS;
    process.env.AWS_ENDPOINT_URL_STS = 'http://127.0.0.1:4566';
    try {
      expect(decodeToken(await eksToken(input)).host).toBe('sts.eu-west-1.amazonaws.com');
    } finally {
      if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_STS;
      else process.env.AWS_ENDPOINT_URL_STS = saved;
    }
  });

  it.each([
    ['us-east-1', 'sts.us-east-1.amazonaws.com'],
    ['cn-north-1', 'sts.cn-north-1.amazonaws.com.cn'],
  ])('uses the STS host of %s', (region, host) => {
    expect(stsHostname(region)).toBe(host);
  });
});

const tokenSecret = (token: string, ca = FAKE_API_SERVER_CA_DATA) => JSON.stringify({ token, ca });

describe('createKubernetesPort', () => {
  let server: FakeKubernetesServer;
  let accepted: Set<string>;
  let deps: FakeAccessDeps;

  // FakeKubernetes over HTTPS, whose authenticator accepts the bearer tokens in `accepted` (401 otherwise).
  beforeEach(async () => {
    accepted = new Set();
    const fake = new FakeKubernetes(new FakeClock(SIGNING_TIME));
    for (const name of ['n1', 'n2', 'a', 'b', 'c']) fake.putNode({ metadata: { name } });
    server = await startFakeKubernetesServer(fake, {
      authenticate: (token) => token !== undefined && accepted.has(token),
    });
    deps = new FakeAccessDeps(CREDENTIALS, { now: SIGNING_TIME });
  });

  afterEach(async () => {
    await server.close();
  });

  const authorizations = () => server.requests.map((r) => r.headers.authorization);

  describe('token mode', () => {
    const tokenConfig = () =>
      loadConfig({
        CLUSTER_NAME: 'prod',
        AWS_REGION: 'eu-west-1',
        KUBERNETES_AUTH_MODE: 'token',
        KUBERNETES_API_ENDPOINT: server.url,
        KUBERNETES_TOKEN_SECRET_ID: 'ccm/kubernetes',
      });

    it('reads the secret once per container', async () => {
      accepted.add('sa-token');
      deps.secretValues = [tokenSecret('sa-token')];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await kubernetes.getNode('n1');
      await kubernetes.getNode('n2');

      expect(deps.secretReads).toBe(1);
      expect(authorizations()).toEqual(['Bearer sa-token', 'Bearer sa-token']);
    });

    it('on 401 reads the secret again once and retries the request with the new token', async () => {
      accepted.add('new-token');
      deps.secretValues = [tokenSecret('old-token'), tokenSecret('new-token')];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      const node = await kubernetes.getNode('n1');

      expect(node?.metadata.name).toBe('n1');
      expect(deps.secretReads).toBe(2);
      expect(authorizations()).toEqual(['Bearer old-token', 'Bearer new-token']);

      await kubernetes.getNode('n2');
      expect(deps.secretReads).toBe(2);
    });

    it('surfaces a second 401 as KubernetesApiError 401', async () => {
      deps.secretValues = [tokenSecret('revoked'), tokenSecret('still-revoked')];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      const err = await kubernetes.getNode('n1').catch((e: unknown) => e);

      expect(err).toBeInstanceOf(KubernetesApiError);
      expect(err).toMatchObject({ statusCode: 401, reason: 'Unauthorized' });
      expect(deps.secretReads).toBe(2);
      expect(authorizations()).toEqual(['Bearer revoked', 'Bearer still-revoked']);
    });

    it('shares one re-read among concurrent requests rejected with the same token', async () => {
      accepted.add('new-token');
      deps.secretValues = [tokenSecret('old-token'), tokenSecret('new-token')];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await Promise.all([kubernetes.getNode('a'), kubernetes.getNode('b'), kubernetes.getNode('c')]);

      expect(deps.secretReads).toBe(2);
    });

    it('does not retry other errors', async () => {
      accepted.add('sa-token');
      deps.secretValues = [tokenSecret('sa-token')];
      server.intercept = () => ({ status: 403, body: status(403, 'Forbidden', 'nodes is forbidden') });
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await expect(kubernetes.listNodes()).rejects.toMatchObject({ statusCode: 403 });
      expect(server.requests).toHaveLength(1);
      expect(deps.secretReads).toBe(1);
    });

    it('names the secret and the missing field when token is absent', async () => {
      deps.secretValues = [JSON.stringify({ ca: FAKE_API_SERVER_CA_DATA })];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await expect(kubernetes.getNode('n1')).rejects.toThrow(
        /Secrets Manager secret "ccm\/kubernetes" has no "token" field/,
      );
      expect(server.requests).toHaveLength(0);
    });

    it('does not echo a secret that is not JSON', async () => {
      deps.secretValues = ['hunter2-not-json'];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      const err = (await kubernetes.getNode('n1').catch((e: unknown) => e)) as Error;

      expect(err.message).toMatch(/Secrets Manager secret "ccm\/kubernetes" is not a JSON object/);
      expect(err.message).not.toContain('hunter2');
    });

    it('names the secret and "ca" when neither the secret nor KUBERNETES_CA_DATA has a CA', async () => {
      deps.secretValues = [JSON.stringify({ token: 't' })];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await expect(kubernetes.getNode('n1')).rejects.toThrow(/"ccm\/kubernetes" has no "ca" field/);
    });

    it('accepts a CA pasted as PEM rather than base64', async () => {
      accepted.add('sa-token');
      deps.secretValues = [tokenSecret('sa-token', Buffer.from(FAKE_API_SERVER_CA_DATA, 'base64').toString('utf8'))];
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await expect(kubernetes.getNode('n1')).resolves.toBeDefined();
    });

    it('reads the secret again on the next request after a failed read', async () => {
      accepted.add('sa-token');
      const kubernetes = createKubernetesPort(tokenConfig(), deps);

      await expect(kubernetes.getNode('n1')).rejects.toThrow(/reading Secrets Manager secret "ccm\/kubernetes"/);
      deps.secretValues = [tokenSecret('sa-token')];
      await expect(kubernetes.getNode('n1')).resolves.toBeDefined();
    });
  });

  describe('eks mode', () => {
    const eksConfig = (env: Record<string, string> = {}) =>
      loadConfig({
        CLUSTER_NAME: 'prod',
        AWS_REGION: 'eu-west-1',
        KUBERNETES_AUTH_MODE: 'eks',
        KUBERNETES_API_ENDPOINT: server.url,
        KUBERNETES_CA_DATA: FAKE_API_SERVER_CA_DATA,
        ...env,
      });
    const tokenAt = (time: number, clusterName = 'prod') =>
      eksToken({ clusterName, region: 'eu-west-1', credentials: CREDENTIALS, now: time });

    it('sends an EKS token for EKS_CLUSTER_NAME and keeps it for 14 minutes', async () => {
      const first = await tokenAt(SIGNING_TIME, 'prod-eks');
      const second = await tokenAt(SIGNING_TIME + EKS_TOKEN_REFRESH_MS, 'prod-eks');
      accepted = new Set([first, second]);
      const kubernetes = createKubernetesPort(eksConfig({ EKS_CLUSTER_NAME: 'prod-eks' }), deps);

      await kubernetes.getNode('n1');
      deps.clock.advance(EKS_TOKEN_REFRESH_MS - 1);
      await kubernetes.getNode('n1');
      deps.clock.advance(1);
      await kubernetes.getNode('n1');

      expect(authorizations()).toEqual([`Bearer ${first}`, `Bearer ${first}`, `Bearer ${second}`]);
      expect(deps.describeCalls).toBe(0);
    });

    it('mints a new token on 401 and retries once', async () => {
      const kubernetes = createKubernetesPort(eksConfig(), deps);
      await expect(kubernetes.getNode('n1')).rejects.toMatchObject({ statusCode: 401 });
      expect(deps.credentialCalls).toBe(2);

      deps.clock.advance(1000);
      accepted.add(await tokenAt(deps.clock.now()));
      server.requests.length = 0;
      await expect(kubernetes.getNode('n1')).resolves.toBeDefined();
      expect(server.requests).toHaveLength(2);
      expect(deps.credentialCalls).toBe(3);
    });

    it('takes a missing CA from one DescribeCluster per container', async () => {
      accepted.add(await tokenAt(SIGNING_TIME));
      deps.cluster = { endpoint: 'https://unused.example.invalid', caData: FAKE_API_SERVER_CA_DATA };
      const kubernetes = createKubernetesPort(eksConfig({ KUBERNETES_CA_DATA: '' }), deps);

      await kubernetes.getNode('n1');
      deps.clock.advance(EKS_TOKEN_REFRESH_MS);
      accepted.add(await tokenAt(deps.clock.now()));
      await kubernetes.getNode('n1');

      expect(deps.describeCalls).toBe(1);
      expect(server.requests).toHaveLength(2);
    });

    it('names the cluster when DescribeCluster fails, and tries again next time', async () => {
      const kubernetes = createKubernetesPort(eksConfig({ KUBERNETES_CA_DATA: '' }), deps);

      await expect(kubernetes.getNode('n1')).rejects.toThrow(/describing EKS cluster "prod"/);
      await expect(kubernetes.getNode('n1')).rejects.toThrow(/describing EKS cluster "prod"/);
      expect(deps.describeCalls).toBe(2);
    });
  });

  describe('kubeconfig mode', () => {
    it('uses the default kubeconfig', async () => {
      accepted.add('from-kubeconfig');
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromOptions({
        clusters: [{ name: 'c', server: server.url, caData: FAKE_API_SERVER_CA_DATA, skipTLSVerify: false }],
        users: [{ name: 'u', token: 'from-kubeconfig' }],
        contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
        currentContext: 'ctx',
      });
      const config = loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1' });
      deps.loadDefaultKubeConfig = () => kubeConfig;
      const kubernetes = createKubernetesPort(config, deps);

      await expect(kubernetes.getNode('n1')).resolves.toMatchObject({ metadata: { name: 'n1' } });
      expect(authorizations()).toEqual(['Bearer from-kubeconfig']);
    });
  });
});
