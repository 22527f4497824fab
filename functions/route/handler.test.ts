import { afterEach, describe, expect, it, vi } from 'vitest';

const good = {
  CLUSTER_NAME: 'prod',
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'x',
  AWS_SECRET_ACCESS_KEY: 'y',
  CLUSTER_CIDRS: '10.244.0.0/16',
};

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

function stubEnv(env: Record<string, string | undefined>) {
  for (const key of ['CLUSTER_NAME', 'AWS_REGION', 'CLUSTER_CIDRS', 'ROUTE_TABLE_ID']) vi.stubEnv(key, undefined);
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
}

describe('route Lambda handler', () => {
  it('loads with a valid configuration', async () => {
    stubEnv(good);
    const module = await import('./handler.ts');
    expect(typeof module.handler).toBe('function');
  });

  it('refuses to start without CLUSTER_CIDRS, naming it', async () => {
    stubEnv({ ...good, CLUSTER_CIDRS: undefined });
    await expect(import('./handler.ts')).rejects.toThrow(/CLUSTER_CIDRS: is required by the route controller/);
  });

  it('refuses to start with a malformed ROUTE_TABLE_ID', async () => {
    stubEnv({ ...good, ROUTE_TABLE_ID: 'table-1' });
    await expect(import('./handler.ts')).rejects.toThrow(/ROUTE_TABLE_ID \(got "table-1"\)/);
  });
});
