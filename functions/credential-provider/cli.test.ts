import { beforeEach, describe, expect, it } from 'vitest';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import { FakeClock } from '../../shared/clock.ts';
import { runCommand } from './cli.ts';
import { MemoryOutput, request, stdinWith } from './in-memory.ts';
import type { PluginDeps } from './plugin.ts';
import { encodeLogin, FakeEcr, FakeEcrPublic, FakeSts } from './testing/fakes.ts';

const NOW = Date.parse('2026-11-02T08:00:00Z');
const IMAGE = '111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1.4.2';
const SA_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXNlcnZpY2UtYWNjb3VudA.c2lnbmF0dXJl';

const ecr = new FakeEcr({ authorizationToken: encodeLogin('ecr-password'), expiresAt: new Date(NOW + 12 * 3600_000) });
const ecrPublic = new FakeEcrPublic(undefined);
const sts = new FakeSts({ accessKeyId: 'ASIA', secretAccessKey: 'role-secret' });
let depsBuilt = 0;

beforeEach(() => {
  ecr.reset();
  ecrPublic.reset();
  sts.reset();
  depsBuilt = 0;
});

/** The process as kubelet sees it: exit code, stdout, stderr. */
async function invoke(args: string[], stdin = '') {
  const stdout = new MemoryOutput();
  const stderr = new MemoryOutput();
  const deps = (): PluginDeps => {
    depsBuilt++;
    return { ecr, ecrPublic, sts, clock: new FakeClock(NOW) };
  };
  const code = await runCommand({ args, stdin: stdinWith(stdin), stdout, stderr }, { version: '1.2.3', deps });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('runCommand', () => {
  it('answers a request: exit 0, the response on stdout, nothing on stderr', async () => {
    const { code, stdout, stderr } = await invoke([], request(IMAGE));
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toMatchObject({ kind: 'CredentialProviderResponse', cacheDuration: '6h0m0s' });
  });

  it('prints the version without touching AWS configuration', async () => {
    const { code, stdout, stderr } = await invoke(['--version']);
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: 'ecr-credential-provider 1.2.3\n', stderr: '' });
    expect(depsBuilt).toBe(0);
  });

  it('prints usage for --help', async () => {
    const { code, stdout } = await invoke(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: ecr-credential-provider/);
    expect(depsBuilt).toBe(0);
  });

  it.each([['--verbose'], ['get-credentials'], ['--version', 'extra']])(
    'refuses unexpected arguments %j (a kubelet config `args` mistake)',
    async (...args) => {
      const { code, stdout, stderr } = await invoke(args, request(IMAGE));
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/^ecr-credential-provider: unexpected argument ".*"; see --help\n$/);
      expect(ecr.calls).toEqual([]);
    },
  );

  it.each([
    ['a bad apiVersion', request(IMAGE, 'credentialprovider.kubelet.k8s.io/v2'), /apiVersion/],
    ['malformed JSON', '{', /not valid JSON/],
    ['an image not on ECR', request('quay.io/a/b:1'), /not an ECR registry/],
  ])('fails on %s: exit 1, one line on stderr, nothing on stdout', async (_name, stdin, message) => {
    const { code, stdout, stderr } = await invoke([], stdin);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^ecr-credential-provider: [^\n]+\n$/);
    expect(stderr).toMatch(message);
  });

  it.each([
    [
      'access denied',
      new AwsServiceError('AccessDeniedException', 'User is not authorized\nto perform ecr:GetAuthorizationToken'),
    ],
    ['throttling', new AwsServiceError('ThrottlingException', 'Rate exceeded')],
  ])('turns %s into exit 1 and one stderr line, even from a multi-line AWS message', async (_name, awsError) => {
    ecr.failNext(awsError);
    const { code, stdout, stderr } = await invoke([], request(IMAGE));
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.split('\n')).toHaveLength(2); // one line and its newline
    expect(stderr).toContain(
      `getting an ECR authorization token in eu-west-1 for 111122223333.dkr.ecr.eu-west-1.amazonaws.com: ${awsError.name}: `,
    );
  });

  it('never prints the service-account token or the password on stderr', async () => {
    ecr.failNext(new Error(`echo ${SA_TOKEN}`));
    const { stderr } = await invoke(
      [],
      request(IMAGE, undefined, {
        serviceAccountToken: SA_TOKEN,
        serviceAccountAnnotations: {},
      }),
    );
    expect(stderr).not.toContain(SA_TOKEN);
    expect(stderr).not.toContain('ecr-password');
  });
});
