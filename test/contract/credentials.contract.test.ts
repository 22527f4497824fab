import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { CreateClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsPorts } from '../../functions/credential-provider/aws-ports.ts';
import { type AwsPorts, choosePorts } from '../../functions/credential-provider/choose-ports.ts';
import { startFakeAwsServer } from '../../functions/credential-provider/testing/fake-aws-server.ts';
import { FakeClock } from '../../shared/clock.ts';
import { loadConfig } from '../../shared/config/config.ts';
import { eksToken } from '../../shared/k8s/eks-token.ts';
import { FakeAccessDeps } from '../../shared/k8s/fakes/access.ts';
import { FAKE_API_SERVER_CA_DATA } from '../../shared/k8s/fakes/api-server.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from '../../shared/k8s/fakes/server.ts';
import {
  awsKubernetesAccessDeps,
  createKubernetesPort,
  type KubernetesAccessDeps,
} from '../../shared/k8s/lambda-access.ts';
import {
  EMULATOR_AVAILABLE,
  EMULATOR_CREDENTIALS,
  EMULATOR_REGION,
  EMULATOR_SKIPPED_MESSAGE,
  type Emulator,
  startEmulator,
} from '../helpers/emulator.ts';
import { differenceRow, hasTest } from './difference-rows.ts';

/**
 * The credential calls the project makes, through its real adapters, against an AWS API emulator (moto
 * server) and against the fakes the modules' own tests use:
 * - the kubelet credential provider, both ways it calls AWS (the SDK clients of `aws-ports.ts` and the direct
 *   calls of `direct.ts`): ECR and ECR Public GetAuthorizationToken, STS AssumeRoleWithWebIdentity; its fake is
 *   `fake-aws-server.ts`;
 * - the Lambdas' way into the cluster (`shared/k8s/lambda-access.ts`): Secrets Manager GetSecretValue,
 *   EKS DescribeCluster and the presigned STS GetCallerIdentity of the EKS token; its fake is
 *   `FakeAccessDeps`. (The token's signature itself is checked against the SigV4 specification in
 *   lambda-access.test.ts.)
 * Auto Scaling, which the interruption controller calls, has a contract of its own: autoscaling.contract.test.ts.
 * Where the emulator answers differently from AWS, the test names the row of docs/emulator-differences.md
 * and is expected to fail on the emulator (CONTRACT_SHOW_DIFFERENCES=1 runs it as a plain test).
 */

/** Keys of docs/emulator-differences.md rows, by the test that shows them. */
const EMULATOR_DIFFERS = {
  ecrExpiry: 'ecr.token-expiry',
  ecrPublic: 'ecr-public.get-authorization-token',
  eksCa: 'eks.cluster-ca',
  presigned: 'sts.presigned-get-caller-identity',
} as const;

const HOUR = 3_600_000;
const SA_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06a3ViZWxldCJ9.c2ln';
const ROLE_ARN = 'arn:aws:iam::123456789012:role/ecr-pull';

if (!EMULATOR_AVAILABLE) console.warn(EMULATOR_SKIPPED_MESSAGE);

/** The process environment for one describe block, put back afterwards. */
function withEnvironment(values: () => Record<string, string>) {
  const saved = { ...process.env };
  beforeAll(() => {
    for (const key of Object.keys(process.env)) if (key.startsWith('AWS_')) delete process.env[key];
    Object.assign(process.env, { AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: '/nonexistent', ...values() });
  });
  afterAll(() => {
    process.env = saved;
  });
}

function itExpecting(onEmulator: boolean) {
  const expectFailure = onEmulator && !process.env.CONTRACT_SHOW_DIFFERENCES;
  return (row: string, name: string, test: () => Promise<void>) =>
    (expectFailure ? it.fails : it)(onEmulator ? `${name} [emulator differs: ${row}]` : name, test);
}

/** The two adapters, built once the environment is set (the direct calls read it when they are made). */
const ADAPTERS = {
  'SDK clients': async () => createAwsPorts({ userAgent: 'contract-test', maxAttempts: 1 }),
  'direct calls': async () => {
    const chosen = choosePorts(process.env, { userAgent: 'contract-test' }, () => {
      throw new Error('the direct calls should serve this environment without the SDK');
    });
    const refused = await chosen.sdkBecause();
    if (refused) throw new Error(`the direct calls refused the contract environment: ${refused}`);
    return chosen;
  },
} satisfies Record<string, () => Promise<AwsPorts>>;

function credentialProviderContract(on: 'emulator' | 'fake', adapter: keyof typeof ADAPTERS) {
  const onEmulator = on === 'emulator';
  let endpoint = '';
  let stop: () => Promise<void> = async () => undefined;
  let ports: AwsPorts;
  describe.skipIf(onEmulator && !EMULATOR_AVAILABLE)(`credential provider ${adapter} over the ${on}`, () => {
    beforeAll(async () => {
      if (onEmulator) {
        const emulator = await startEmulator();
        [endpoint, stop] = [emulator.endpoint, () => emulator.stop()];
      } else {
        const server = await startFakeAwsServer();
        [endpoint, stop] = [server.url, () => server.close()];
      }
    });
    afterAll(async () => stop());
    // How the binary is pointed at a non-AWS endpoint: the SDK's own settings, nothing test-only.
    withEnvironment(() => ({
      AWS_ENDPOINT_URL_ECR: endpoint,
      AWS_ENDPOINT_URL_ECR_PUBLIC: endpoint,
      AWS_ENDPOINT_URL_STS: endpoint,
      AWS_ACCESS_KEY_ID: EMULATOR_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: EMULATOR_CREDENTIALS.secretAccessKey,
    }));
    beforeAll(async () => {
      ports = await ADAPTERS[adapter]();
    });
    const itUnless = itExpecting(onEmulator);
    const ecr = { region: EMULATOR_REGION, dnsSuffix: 'amazonaws.com', fips: false, dualStack: false };
    const login = (token: string) => Buffer.from(token, 'base64').toString('utf8');

    it('ECR: GetAuthorizationToken answers base64 of "AWS:<password>"', async () => {
      const token = await ports.ecr.getAuthorizationToken(ecr);
      expect(login(token!.authorizationToken)).toMatch(/^AWS:.+/);
    });

    itUnless(EMULATOR_DIFFERS.ecrExpiry, 'ECR: the token is valid for 12 hours', async () => {
      const token = await ports.ecr.getAuthorizationToken(ecr);
      const remaining = token!.expiresAt!.getTime() - Date.now();
      expect(remaining).toBeGreaterThan(11 * HOUR);
      expect(remaining).toBeLessThanOrEqual(12 * HOUR);
    });

    it('STS: AssumeRoleWithWebIdentity answers temporary credentials, which ECR accepts', async () => {
      const region = EMULATOR_REGION;
      const role = {
        roleArn: ROLE_ARN,
        webIdentityToken: SA_TOKEN,
        roleSessionName: 'kubelet-pull',
        region,
        dnsSuffix: 'amazonaws.com',
        fips: false,
        dualStack: false,
      };
      const credentials = await ports.sts.assumeRoleWithWebIdentity(role);
      expect(credentials.accessKeyId).toMatch(/^ASIA/);
      expect(credentials.secretAccessKey).not.toBe('');
      expect(credentials.sessionToken).toBeDefined();
      expect(credentials.expiration!.getTime()).toBeGreaterThan(Date.now());
      expect(credentials.expiration!.getTime()).toBeLessThanOrEqual(Date.now() + 12 * HOUR);
      const token = await ports.ecr.getAuthorizationToken(ecr, credentials);
      expect(login(token!.authorizationToken)).toMatch(/^AWS:.+/);
    });

    itUnless(EMULATOR_DIFFERS.ecrPublic, 'ECR Public: GetAuthorizationToken answers a 12-hour token', async () => {
      const token = await ports.ecrPublic.getAuthorizationToken();
      expect(login(token!.authorizationToken)).toMatch(/^AWS:.+/);
      expect(token!.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 11 * HOUR);
    });
  });
}

for (const adapter of Object.keys(ADAPTERS) as (keyof typeof ADAPTERS)[]) {
  credentialProviderContract('emulator', adapter);
  credentialProviderContract('fake', adapter);
}

interface AccessBackend {
  deps: KubernetesAccessDeps;
  putSecret(name: string, value: string): Promise<void>;
  /** A cluster DescribeCluster knows (its endpoint and CA are the backend's). */
  putCluster(name: string): Promise<void>;
}

function lambdaAccessContract(on: 'emulator' | 'fake') {
  const onEmulator = on === 'emulator';
  let emulator: Emulator | undefined;
  let api: FakeKubernetesServer;
  let backend: AccessBackend;
  const config = (env: Record<string, string>) =>
    loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: EMULATOR_REGION, KUBERNETES_API_ENDPOINT: api.url, ...env });

  describe.skipIf(onEmulator && !EMULATOR_AVAILABLE)(`Lambda access to the cluster over the ${on}`, () => {
    beforeAll(async () => {
      const fake = new FakeKubernetes(new FakeClock());
      fake.putNode({ metadata: { name: 'n1' } });
      api = await startFakeKubernetesServer(fake, { authenticate: (token) => token === 'sa-token' });
      if (onEmulator) emulator = await startEmulator();
      backend = onEmulator ? emulatorAccess(emulator!) : fakeAccess();
    });
    afterAll(async () => {
      await api?.close();
      await emulator?.stop();
    });
    // The Lambda's SDK clients find the emulator the way any AWS-compatible endpoint is configured.
    withEnvironment(() => ({
      ...(emulator ? { AWS_ENDPOINT_URL: emulator.endpoint } : {}),
      AWS_ACCESS_KEY_ID: EMULATOR_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: EMULATOR_CREDENTIALS.secretAccessKey,
    }));
    const ctx: AccessContext = {
      onEmulator,
      itUnless: itExpecting(onEmulator),
      backend: () => backend,
      api: () => api,
      emulator: () => emulator,
      config,
    };
    tokenModeTests(ctx);
    eksTests(ctx);
  });
}

lambdaAccessContract('emulator');
lambdaAccessContract('fake');

/** What the Lambda access tests get from the describe they run in. */
interface AccessContext {
  onEmulator: boolean;
  itUnless: ReturnType<typeof itExpecting>;
  backend: () => AccessBackend;
  api: () => FakeKubernetesServer;
  emulator: () => Emulator | undefined;
  config: (env: Record<string, string>) => ReturnType<typeof loadConfig>;
}

function tokenModeTests({ onEmulator, backend: backendOf, api: apiOf, emulator: emulatorOf, config }: AccessContext) {
  const tokenMode = (secretId: string) =>
    config({ KUBERNETES_AUTH_MODE: 'token', KUBERNETES_TOKEN_SECRET_ID: secretId });
  it('token mode: reads the token and CA from the secret and reaches the API server with them', async () => {
    await backendOf().putSecret('ccm/kubernetes', JSON.stringify({ token: 'sa-token', ca: FAKE_API_SERVER_CA_DATA }));
    const kubernetes = createKubernetesPort(tokenMode('ccm/kubernetes'), backendOf().deps);
    await expect(kubernetes.getNode('n1')).resolves.toMatchObject({ metadata: { name: 'n1' } });
    expect(apiOf().requests.at(-1)?.headers.authorization).toBe('Bearer sa-token');
  });

  it('token mode: a missing secret fails naming the secret and ResourceNotFoundException', async () => {
    const kubernetes = createKubernetesPort(tokenMode('ccm/missing'), backendOf().deps);
    await expect(kubernetes.getNode('n1')).rejects.toThrow(
      /reading Secrets Manager secret "ccm\/missing": ResourceNotFoundException/,
    );
  });

  // FakeAccessDeps holds text only; the binary case is the adapter's.
  it.runIf(onEmulator)('token mode: a binary secret is refused by name, never echoed', async () => {
    await new SecretsManagerClient(emulatorOf()!.clientConfig).send(
      new CreateSecretCommand({ Name: 'ccm/binary', SecretBinary: Buffer.from('sa-token') }),
    );
    const kubernetes = createKubernetesPort(tokenMode('ccm/binary'), backendOf().deps);
    await expect(kubernetes.getNode('n1')).rejects.toThrow(/"ccm\/binary" has no SecretString/);
  });
}

function eksTests({ onEmulator, itUnless, backend: backendOf, emulator: emulatorOf, config }: AccessContext) {
  itUnless(EMULATOR_DIFFERS.eksCa, 'EKS: DescribeCluster answers the https endpoint and a base64 PEM CA', async () => {
    await backendOf().putCluster('prod');
    const access = await backendOf().deps.describeCluster('prod');
    expect(access.endpoint).toMatch(/^https:\/\//);
    expect(Buffer.from(access.caData, 'base64').toString('utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it('EKS: DescribeCluster of an unknown cluster fails with ResourceNotFoundException', async () => {
    await expect(backendOf().deps.describeCluster('nope')).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
  });

  it('EKS mode: a failed DescribeCluster names the cluster', async () => {
    const kubernetes = createKubernetesPort(
      config({ KUBERNETES_AUTH_MODE: 'eks', EKS_CLUSTER_NAME: 'absent' }),
      backendOf().deps,
    );
    await expect(kubernetes.getNode('n1')).rejects.toThrow(/describing EKS cluster "absent"/);
  });

  // No fake answers a presigned STS URL: lambda-access.test.ts checks the signature against SigV4 instead.
  if (onEmulator) {
    itUnless(
      EMULATOR_DIFFERS.presigned,
      "STS: the EKS token's presigned GetCallerIdentity answers the signer's identity",
      async () => {
        const sts = createAwsPorts({ userAgent: 'contract-test', maxAttempts: 1 }).sts;
        const role = {
          roleArn: ROLE_ARN,
          webIdentityToken: SA_TOKEN,
          roleSessionName: 'eks-token',
          region: 'eu-west-1',
          dnsSuffix: 'amazonaws.com',
          fips: false,
          dualStack: false,
        };
        const credentials = await sts.assumeRoleWithWebIdentity(role);
        const token = await eksToken({ clusterName: 'prod', region: EMULATOR_REGION, credentials, now: Date.now() });
        const presigned = new URL(Buffer.from(token.slice('k8s-aws-v1.'.length), 'base64url').toString());
        const answer = await getAsAuthenticator(emulatorOf()!.endpoint, presigned, 'prod');
        expect(answer).toContain('<GetCallerIdentityResult>');
        expect(answer).toContain('<Arn>arn:aws:sts::123456789012:assumed-role/ecr-pull/eks-token</Arn>');
      },
    );
  }
}

function emulatorAccess(emulator: Emulator): AccessBackend {
  return {
    deps: awsKubernetesAccessDeps(loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: EMULATOR_REGION })),
    async putSecret(name, value) {
      await new SecretsManagerClient(emulator.clientConfig).send(
        new CreateSecretCommand({ Name: name, SecretString: value }),
      );
    },
    async putCluster(name) {
      const eks = new EKSClient(emulator.clientConfig);
      await eks.send(
        new CreateClusterCommand({ name, roleArn: 'arn:aws:iam::123456789012:role/eks', resourcesVpcConfig: {} }),
      );
    },
  };
}

function fakeAccess(): AccessBackend {
  const deps = new FakeAccessDeps({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
  return {
    deps,
    async putSecret(name, value) {
      deps.secretId = name;
      deps.secretValues = [value];
    },
    async putCluster(name) {
      deps.clusterName = name;
      deps.cluster = { endpoint: `https://${name}.gr7.eu-west-1.eks.amazonaws.com`, caData: FAKE_API_SERVER_CA_DATA };
    },
  };
}

/**
 * What the EKS authenticator does with a token: GET the presigned URL with the `x-k8s-aws-id` header. Sent
 * to the emulator with the real STS host in the Host header, as the signature names it.
 */
function getAsAuthenticator(endpoint: string, presigned: URL, clusterName: string): Promise<string> {
  const target = new URL(endpoint);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${presigned.pathname}${presigned.search}`,
        headers: { host: presigned.host, 'x-k8s-aws-id': clusterName },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the rows of the differences table (docs) for this suite', () => {
  const source = readFileSync(import.meta.filename, 'utf8');
  it.each(Object.values(EMULATOR_DIFFERS))('%s has its row, naming tests of this file', (key) => {
    const row = differenceRow(key);
    expect(row?.file).toBe('credentials.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
