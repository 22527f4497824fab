import { afterEach, describe, expect, it, vi } from 'vitest';

/** The binding controller's Lambda module: it loads with a valid environment and refuses a bad one, naming it. */

const good = { CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' };

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

function stubEnv(env: Record<string, string | undefined>) {
  for (const key of ['CLUSTER_NAME', 'AWS_REGION', 'TGB_READINESS_REQUEUE_SECONDS', 'VPC_ID'])
    vi.stubEnv(key, undefined);
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
}

describe('functions/target-group-binding/handler.ts', () => {
  it('loads with a valid configuration (no VPC needed)', async () => {
    stubEnv(good);
    const module = await import('./handler.ts');
    expect(typeof module.handler).toBe('function');
  });

  it('refuses a readiness requeue that is not a whole number of seconds, naming it', async () => {
    stubEnv({ ...good, TGB_READINESS_REQUEUE_SECONDS: 'soon' });
    await expect(import('./handler.ts')).rejects.toThrow(/TGB_READINESS_REQUEUE_SECONDS/);
  });

  it('refuses to start without CLUSTER_NAME, naming it', async () => {
    stubEnv({ AWS_REGION: 'eu-west-1' });
    await expect(import('./handler.ts')).rejects.toThrow(/CLUSTER_NAME: is required/);
  });
});
