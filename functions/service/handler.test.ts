import { afterEach, describe, expect, it, vi } from 'vitest';

const good = {
  CLUSTER_NAME: 'prod',
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'x',
  AWS_SECRET_ACCESS_KEY: 'y',
  VPC_ID: 'vpc-0123456789abcdef0',
};

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

function stubEnv(env: Record<string, string | undefined>) {
  for (const key of ['CLUSTER_NAME', 'AWS_REGION', 'VPC_ID', 'LOAD_BALANCER_CLASS']) vi.stubEnv(key, undefined);
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
}

describe('service Lambda handler', () => {
  it('loads with a valid configuration', async () => {
    stubEnv(good);
    const module = await import('./handler.ts');
    expect(typeof module.handler).toBe('function');
  });

  it('refuses to start without VPC_ID, naming it', async () => {
    stubEnv({ ...good, VPC_ID: undefined });
    await expect(import('./handler.ts')).rejects.toThrow(/VPC_ID: is required by the service controller/);
  });

  it('refuses to start with a malformed LOAD_BALANCER_CLASS', async () => {
    stubEnv({ ...good, LOAD_BALANCER_CLASS: 'not a class' });
    await expect(import('./handler.ts')).rejects.toThrow(/LOAD_BALANCER_CLASS \(got "not a class"\)/);
  });
});
