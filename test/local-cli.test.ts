import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'bin/local.ts', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeout: 60_000,
  });

describe('npm start (bin/local.ts)', () => {
  it('refuses to run against a real cluster without the cluster name, saying what to pass', () => {
    const result = cli(['--real', '--region', 'eu-west-1']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('refusing to start against a real cluster');
    expect(result.stderr).toContain('CLUSTER_NAME: is required');
    expect(result.stderr).toContain('--cluster-name');
    expect(result.stdout).toBe('');
  });

  it('refuses a bad VPC or cluster CIDR for the real-mode route and service controllers, naming the setting', () => {
    const result = cli([
      '--real',
      '--region',
      'eu-west-1',
      '--cluster-name',
      'prod',
      '--vpc-id',
      'vpc-nope',
      '--cluster-cidrs',
      '10.0.0.1/8',
    ]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('VPC_ID');
    expect(result.stderr).toContain('CLUSTER_CIDRS');
  });

  it('refuses a bad flag value with the usage', () => {
    const result = cli(['--nodes', 'two']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--nodes must be an integer >= 3 (got "two")');
  });

  it('converges the simulated cluster and exits 0, with plain lines when not on a terminal', () => {
    const result = cli(['--nodes', '4', '--speed', '0', '--ec2-latency-ms', '0']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('nodes initialized            4');
    expect(result.stdout).toContain('converged: every Node initialized');
    expect(result.stdout).not.toContain('\x1b[2J');
  });
});
