import { beforeEach, describe, expect, it } from 'vitest';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import { FakeClock } from '../../shared/clock.ts';
import {
  AwsCallError,
  CredentialProviderError,
  InvalidRequestError,
  InvalidTokenError,
  UnsupportedRegistryError,
} from './errors.ts';
import { MemoryOutput, request, stdinWith } from './in-memory.ts';
import { type PluginDeps, runPlugin } from './plugin.ts';
import { API_VERSIONS, MAX_REQUEST_BYTES } from './request.ts';
import { encodeLogin, FakeEcr, FakeEcrPublic, FakeSts } from './testing/fakes.ts';

const NOW = Date.parse('2026-11-02T08:00:00Z');
const HOURS = 3600_000;
const PRIVATE_IMAGE = '111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1.4.2';
const SA_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbTphcGkifQ.c2lnbmF0dXJl';
const ROLE = 'arn:aws:iam::111122223333:role/team-api-ecr-pull';

const clock = new FakeClock(NOW);
const ecr = new FakeEcr({ authorizationToken: encodeLogin('ecr-password'), expiresAt: new Date(NOW + 12 * HOURS) });
const ecrPublic = new FakeEcrPublic({
  authorizationToken: encodeLogin('public-password'),
  expiresAt: new Date(NOW + 12 * HOURS),
});
const roleCredentials = {
  accessKeyId: 'ASIAROLEKEY',
  secretAccessKey: 'role-secret-key',
  sessionToken: 'role-session-token',
  expiration: new Date(NOW + HOURS),
};
const sts = new FakeSts(roleCredentials);
let deps: PluginDeps;

beforeEach(() => {
  clock.set(NOW);
  ecr.reset();
  ecrPublic.reset();
  sts.reset();
  deps = { ecr, ecrPublic, sts, clock };
});

/** One exchange: what kubelet would read on stdout, and the error the process would report. */
async function exchange(stdin: string, options: Partial<PluginDeps> = {}) {
  const stdout = new MemoryOutput();
  let error: Error | undefined;
  try {
    await runPlugin(stdinWith(stdin), stdout, { ...deps, ...options });
  } catch (err) {
    error = err as Error;
  }
  return { stdout: stdout.text, response: stdout.text ? JSON.parse(stdout.text) : undefined, error };
}

describe('answering kubelet', () => {
  it('answers a v1 request for a private registry with the registry-wide login and half the token lifetime', async () => {
    const { stdout, error } = await exchange(request(PRIVATE_IMAGE));

    expect(error).toBeUndefined();
    expect(JSON.parse(stdout)).toEqual({
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      kind: 'CredentialProviderResponse',
      cacheKeyType: 'Registry',
      cacheDuration: '6h0m0s',
      auth: { '111122223333.dkr.ecr.eu-west-1.amazonaws.com': { username: 'AWS', password: 'ecr-password' } },
    });
    expect(stdout.endsWith('}\n')).toBe(true);
    expect(ecr.calls).toEqual([
      { endpoint: { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false } },
    ]);
    expect(ecrPublic.calls).toEqual([]);
    expect(sts.calls).toEqual([]);
  });

  it.each(API_VERSIONS)('answers %s in the same apiVersion', async (apiVersion) => {
    const { response } = await exchange(request(PRIVATE_IMAGE, apiVersion));
    expect(response).toMatchObject({ apiVersion, kind: 'CredentialProviderResponse' });
  });

  it.each([
    [
      '111122223333.dkr.ecr.us-east-1.amazonaws.com',
      { region: 'us-east-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false },
    ],
    [
      '111122223333.dkr.ecr-fips.us-gov-east-1.amazonaws.com',
      { region: 'us-gov-east-1', dnsSuffix: 'amazonaws.com', fips: true, dualStack: false },
    ],
    [
      '111122223333.dkr-ecr.eu-central-1.on.aws',
      { region: 'eu-central-1', dnsSuffix: 'on.aws', fips: false, dualStack: true },
    ],
    [
      '111122223333.dkr-ecr-fips.us-west-2.on.aws',
      { region: 'us-west-2', dnsSuffix: 'on.aws', fips: true, dualStack: true },
    ],
    [
      '111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn',
      { region: 'cn-north-1', dnsSuffix: 'amazonaws.com.cn', fips: false, dualStack: false },
    ],
    [
      '111122223333.dkr-ecr.cn-northwest-1.on.amazonwebservices.com.cn',
      { region: 'cn-northwest-1', dnsSuffix: 'on.amazonwebservices.com.cn', fips: false, dualStack: true },
    ],
    [
      '111122223333.dkr.ecr.eusc-de-east-1.amazonaws.eu',
      { region: 'eusc-de-east-1', dnsSuffix: 'amazonaws.eu', fips: false, dualStack: false },
    ],
    [
      '111122223333.dkr.ecr.us-iso-east-1.c2s.ic.gov',
      { region: 'us-iso-east-1', dnsSuffix: 'c2s.ic.gov', fips: false, dualStack: false },
    ],
    [
      '111122223333.dkr.ecr.us-isob-east-1.sc2s.sgov.gov',
      { region: 'us-isob-east-1', dnsSuffix: 'sc2s.sgov.gov', fips: false, dualStack: false },
    ],
    [
      '111122223333.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk',
      { region: 'eu-isoe-west-1', dnsSuffix: 'cloud.adc-e.uk', fips: false, dualStack: false },
    ],
    [
      '111122223333.dkr.ecr.us-isof-south-1.csp.hci.ic.gov',
      { region: 'us-isof-south-1', dnsSuffix: 'csp.hci.ic.gov', fips: false, dualStack: false },
    ],
  ])('gets the token for %s from ECR at %o and keys auth by that host', async (host, endpoint) => {
    const { response, error } = await exchange(request(`${host}/team/api@sha256:${'a'.repeat(64)}`));

    expect(error).toBeUndefined();
    expect(ecr.calls).toEqual([{ endpoint }]);
    expect(response.auth).toEqual({ [host]: { username: 'AWS', password: 'ecr-password' } });
  });

  it.each(['public.ecr.aws', 'ecr-public.aws.com'])('gets the token for %s from ECR Public', async (host) => {
    const { response, error } = await exchange(
      request(`${host}/nginx/nginx:1.27`, 'credentialprovider.kubelet.k8s.io/v1alpha1'),
    );

    expect(error).toBeUndefined();
    expect(response).toEqual({
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1alpha1',
      kind: 'CredentialProviderResponse',
      cacheKeyType: 'Registry',
      cacheDuration: '6h0m0s',
      auth: { [host]: { username: 'AWS', password: 'public-password' } },
    });
    expect(ecrPublic.calls).toEqual([{}]);
    expect(ecr.calls).toEqual([]);
  });

  it('halves what is left of the token, not its full lifetime', async () => {
    clock.advance(11 * HOURS);
    const { response } = await exchange(request(PRIVATE_IMAGE));
    expect(response.cacheDuration).toBe('30m0s');
  });

  it('leaves cacheDuration out when ECR gives no expiry', async () => {
    ecr.answer = { authorizationToken: encodeLogin('ecr-password') };
    const { response, error } = await exchange(request(PRIVATE_IMAGE));
    expect(error).toBeUndefined();
    expect(response).not.toHaveProperty('cacheDuration');
    expect(response.auth).toBeDefined();
  });

  it('leaves cacheDuration out when the token has already expired by our clock', async () => {
    clock.advance(13 * HOURS);
    const { response } = await exchange(request(PRIVATE_IMAGE));
    expect(response).not.toHaveProperty('cacheDuration');
  });

  it('ignores request fields it does not know (newer kubelets)', async () => {
    const { error } = await exchange(request(PRIVATE_IMAGE, undefined, { futureField: { a: 1 } }));
    expect(error).toBeUndefined();
  });
});

describe('service-account tokens', () => {
  const withServiceAccount = (annotations: Record<string, string> = {}, image = PRIVATE_IMAGE) =>
    request(image, 'credentialprovider.kubelet.k8s.io/v1', {
      serviceAccountToken: SA_TOKEN,
      serviceAccountAnnotations: annotations,
    });

  it('assumes the annotated role with the token and pulls with that role', async () => {
    const { response, error } = await exchange(withServiceAccount({ 'eks.amazonaws.com/ecr-role-arn': ROLE }));

    expect(error).toBeUndefined();
    expect(sts.calls).toEqual([
      {
        roleArn: ROLE,
        webIdentityToken: SA_TOKEN,
        roleSessionName: `ecr-credential-provider-${NOW / 1000}`,
        region: 'eu-west-1',
        dnsSuffix: 'amazonaws.com',
        fips: false,
        dualStack: false,
      },
    ]);
    expect(ecr.calls).toEqual([
      {
        endpoint: { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false },
        credentials: roleCredentials,
      },
    ]);
    expect(response.auth['111122223333.dkr.ecr.eu-west-1.amazonaws.com'].password).toBe('ecr-password');
  });

  it('calls STS in us-east-1 for ECR Public', async () => {
    await exchange(withServiceAccount({ 'eks.amazonaws.com/ecr-role-arn': ROLE }, 'public.ecr.aws/nginx/nginx:1'));
    expect(sts.calls[0]?.region).toBe('us-east-1');
    expect(ecrPublic.calls).toEqual([{ credentials: roleCredentials }]);
  });

  it('falls back to AWS_ECR_ROLE_ARN when the service account names no role', async () => {
    const envRole = 'arn:aws:iam::444455556666:role/cluster-pull';
    await exchange(withServiceAccount({ unrelated: 'x' }), { defaultRoleArn: envRole });
    expect(sts.calls.map((call) => call.roleArn)).toEqual([envRole]);
  });

  it('prefers the annotation over AWS_ECR_ROLE_ARN', async () => {
    await exchange(withServiceAccount({ 'eks.amazonaws.com/ecr-role-arn': ROLE }), {
      defaultRoleArn: 'arn:aws:iam::444455556666:role/cluster-pull',
    });
    expect(sts.calls.map((call) => call.roleArn)).toEqual([ROLE]);
  });

  it('uses the default credential chain when there is a token but no role', async () => {
    const { error } = await exchange(withServiceAccount({}));
    expect(error).toBeUndefined();
    expect(sts.calls).toEqual([]);
    expect(ecr.calls).toEqual([
      { endpoint: { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false } },
    ]);
  });

  it('uses the default credential chain when there is a role but no token', async () => {
    await exchange(
      request(PRIVATE_IMAGE, undefined, { serviceAccountAnnotations: { 'eks.amazonaws.com/ecr-role-arn': ROLE } }),
      { defaultRoleArn: ROLE },
    );
    expect(sts.calls).toEqual([]);
    expect(ecr.calls[0]).not.toHaveProperty('credentials');
  });

  it('refuses a role annotation that is not an IAM role ARN', async () => {
    const { error, stdout } = await exchange(withServiceAccount({ 'eks.amazonaws.com/ecr-role-arn': 'team-api' }));
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error?.message).toBe(
      'role "team-api" from annotation eks.amazonaws.com/ecr-role-arn is not an IAM role ARN',
    );
    expect(stdout).toBe('');
    expect(sts.calls).toEqual([]);
  });

  it('reports an STS refusal with the role, and never the token', async () => {
    // Some services echo what they were given; make sure that would not leak the token.
    sts.failNext(
      new AwsServiceError('AccessDenied', `Not authorized to perform sts:AssumeRoleWithWebIdentity ${SA_TOKEN}`, 403),
    );
    const { error, stdout } = await exchange(withServiceAccount({ 'eks.amazonaws.com/ecr-role-arn': ROLE }));

    expect(error).toBeInstanceOf(AwsCallError);
    expect(error?.message).toMatch(
      new RegExp(
        `^assuming role ${ROLE} \\(from annotation eks.amazonaws.com/ecr-role-arn\\) with the service account token in eu-west-1: AccessDenied: `,
      ),
    );
    expect(error?.message).toContain('trust policy');
    expect(error?.message).not.toContain(SA_TOKEN);
    expect(error?.message).toContain('[redacted]');
    expect(stdout).toBe('');
    expect(ecr.calls).toEqual([]);
  });
});

describe('refusing requests', () => {
  it.each([
    ['malformed JSON', '{"apiVersion": "credentialprovider.kubelet.k8s.io/v1", ', /stdin is not valid JSON/],
    ['empty stdin', '', /stdin was empty/],
    ['a JSON array', '[]', /expected a JSON object/],
    ['a JSON string', '"image"', /expected a JSON object/],
    [
      'an unknown apiVersion',
      request(PRIVATE_IMAGE, 'credentialprovider.kubelet.k8s.io/v2'),
      /apiVersion "credentialprovider.kubelet.k8s.io\/v2" is not one of credentialprovider.kubelet.k8s.io\/v1, /,
    ],
    ['another API group', request(PRIVATE_IMAGE, 'kubelet.config.k8s.io/v1'), /apiVersion "kubelet.config.k8s.io\/v1"/],
    [
      'the wrong kind',
      JSON.stringify({ apiVersion: API_VERSIONS[0], kind: 'CredentialProviderResponse', image: PRIVATE_IMAGE }),
      /kind "CredentialProviderResponse" is not CredentialProviderRequest/,
    ],
    ['no kind', JSON.stringify({ apiVersion: API_VERSIONS[0], image: PRIVATE_IMAGE }), /kind is missing/],
    ['an empty image', request(''), /image is empty/],
    ['a blank image', request('   '), /image is empty/],
    [
      'no image',
      JSON.stringify({ apiVersion: API_VERSIONS[0], kind: 'CredentialProviderRequest' }),
      /image is missing/,
    ],
    ['a non-string image', request(42 as unknown as string), /image \(a number\) is not a string/],
    [
      'annotations that are not strings',
      request(PRIVATE_IMAGE, undefined, { serviceAccountAnnotations: { a: 1 } }),
      /serviceAccountAnnotations must map strings to strings/,
    ],
  ])('refuses %s before calling AWS', async (_name, stdin, message) => {
    const { error, stdout } = await exchange(stdin);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error?.message).toMatch(/^reading the request: /);
    expect(error?.message).toMatch(message);
    expect(stdout).toBe('');
    expect(ecr.calls).toEqual([]);
  });

  it('does not quote malformed JSON, which may hold a service-account token', async () => {
    const { error } = await exchange(`{"serviceAccountToken":"${SA_TOKEN}" oops`);
    expect(error?.message).toBe('reading the request: stdin is not valid JSON');
  });

  it('does not quote a service-account token of the wrong type', async () => {
    const { error } = await exchange(request(PRIVATE_IMAGE, undefined, { serviceAccountToken: [SA_TOKEN] }));
    expect(error?.message).toBe('reading the request: serviceAccountToken must be a string');
  });

  it.each([
    ['a list', ['eks.amazonaws.com/ecr-role-arn']],
    ['a string', 'eks.amazonaws.com/ecr-role-arn=arn:aws:iam::111122223333:role/pull'],
    ['a map with a null value', { 'eks.amazonaws.com/ecr-role-arn': null }],
  ])('refuses annotations given as %s', async (_name, annotations) => {
    const { error } = await exchange(request(PRIVATE_IMAGE, undefined, { serviceAccountAnnotations: annotations }));
    expect(error?.message).toBe('reading the request: serviceAccountAnnotations must map strings to strings');
  });

  it('names every problem of a request at once, in field order', async () => {
    const { error } = await exchange(
      JSON.stringify({ kind: 'CredentialProviderRequest', image: 7, serviceAccountToken: 1 }),
    );
    expect(error?.message).toBe(
      `reading the request: apiVersion is missing (expected one of ${API_VERSIONS.join(', ')}); ` +
        'image (a number) is not a string; serviceAccountToken must be a string',
    );
  });

  it('accepts null token and annotations, fields it does not know, and an image with blanks around it', async () => {
    const { response, error } = await exchange(
      request(` ${PRIVATE_IMAGE}\n`, undefined, {
        serviceAccountToken: null,
        serviceAccountAnnotations: null,
        imagePullPolicy: 'Always',
      }),
    );
    expect(error).toBeUndefined();
    expect(Object.keys(response.auth)).toEqual(['111122223333.dkr.ecr.eu-west-1.amazonaws.com']);
    expect(sts.calls).toEqual([]);
  });

  it('refuses more than 1 MiB on stdin', async () => {
    const { error } = await exchange(' '.repeat(MAX_REQUEST_BYTES + 1));
    expect(error?.message).toMatch(/more than 1048576 bytes on stdin/);
  });

  it.each(['quay.io/team/app:1', 'nginx:1.27', '111122223333.dkr.ecr.us-east-1.example.com/app'])(
    'refuses %s, which is not on ECR',
    async (image) => {
      const { error, stdout } = await exchange(request(image));
      expect(error).toBeInstanceOf(UnsupportedRegistryError);
      expect(error?.message).toMatch(/not ECR|not an ECR registry/);
      expect(stdout).toBe('');
      expect(ecr.calls).toEqual([]);
    },
  );
});

describe('AWS failures', () => {
  it.each([
    [
      'access denied',
      new AwsServiceError(
        'AccessDeniedException',
        'User: arn:aws:sts::111122223333:assumed-role/node/i-0 is not authorized',
        400,
      ),
      /^getting an ECR authorization token in eu-west-1 for 111122223333.dkr.ecr.eu-west-1.amazonaws.com: AccessDeniedException: User: .* is not authorized \(the credentials in use lack ecr:GetAuthorizationToken/,
    ],
    [
      'throttling that outlasted the SDK retries',
      new AwsServiceError('ThrottlingException', 'Rate exceeded', 400),
      /: ThrottlingException: Rate exceeded$/,
    ],
    [
      'no credentials on the node',
      Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' }),
      /CredentialsProviderError: Could not load credentials from any providers \(no AWS credentials found/,
    ],
    [
      'a network failure',
      Object.assign(new Error('connect ETIMEDOUT 10.0.0.1:443'), { code: 'ETIMEDOUT' }),
      /: ETIMEDOUT: connect ETIMEDOUT 10.0.0.1:443$/,
    ],
  ])('reports %s', async (_name, awsError, message) => {
    ecr.failNext(awsError);
    const { error, stdout } = await exchange(request(PRIVATE_IMAGE));

    expect(error).toBeInstanceOf(AwsCallError);
    expect(error?.message).toMatch(message);
    expect(error?.cause).toBe(awsError);
    expect(stdout).toBe('');
  });

  it('reports ECR Public failures as such', async () => {
    ecrPublic.failNext(
      new AwsServiceError('AccessDeniedException', 'not authorized to perform: sts:GetServiceBearerToken'),
    );
    const { error } = await exchange(request('public.ecr.aws/nginx/nginx:1'));
    expect(error?.message).toMatch(
      /^getting an ECR Public authorization token in us-east-1 for public.ecr.aws: AccessDeniedException: .*sts:GetServiceBearerToken/,
    );
  });

  it('refuses an answer without authorization data', async () => {
    ecr.answer = undefined;
    const { error, stdout } = await exchange(request(PRIVATE_IMAGE));
    expect(error).toBeInstanceOf(InvalidTokenError);
    expect(error?.message).toMatch(/: AWS returned no authorization data$/);
    expect(stdout).toBe('');
  });

  it('refuses a token without a colon, without printing it', async () => {
    const token = Buffer.from('AWSsecret-password-without-colon').toString('base64');
    ecr.answer = { authorizationToken: token, expiresAt: new Date(NOW + HOURS) };
    const { error, stdout } = await exchange(request(PRIVATE_IMAGE));

    expect(error).toBeInstanceOf(InvalidTokenError);
    expect(error?.message).toBe('decoding the ECR authorization token: no "user:password" separator');
    expect(stdout).toBe('');
  });

  it('blanks out any credential an unexpected error would carry', async () => {
    ecr.failNext(new Error(`boom ${encodeLogin('ecr-password')} ${SA_TOKEN}`));
    const { error } = await exchange(
      request(PRIVATE_IMAGE, undefined, {
        serviceAccountToken: SA_TOKEN,
        serviceAccountAnnotations: { 'eks.amazonaws.com/ecr-role-arn': ROLE },
      }),
    );
    expect(error).toBeInstanceOf(CredentialProviderError);
    expect(error?.message).not.toContain(SA_TOKEN);
    expect(error?.message).toContain('[redacted]');
  });
});
