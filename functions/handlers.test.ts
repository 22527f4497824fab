import { afterEach, describe, expect, it, vi } from 'vitest';

const good = { CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' };

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

function stubEnv(env: Record<string, string | undefined>) {
  for (const key of [
    'CLUSTER_NAME',
    'AWS_REGION',
    'NODE_QUEUE_URL',
    'NODE_LIFECYCLE_QUEUE_URL',
    'ROUTE_QUEUE_URL',
    'SERVICE_QUEUE_URL',
    'INTERRUPTION_ACTIONS',
  ]) {
    vi.stubEnv(key, undefined);
  }
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
}

describe('Lambda handlers start up', () => {
  it.each(['./node/handler.ts', './node-lifecycle/handler.ts', './interruption/handler.ts'])(
    '%s loads with a valid configuration',
    async (path) => {
      stubEnv(good);
      const module = await import(path);
      expect(typeof module.handler).toBe('function');
    },
  );

  it.each(['./node/handler.ts', './node-lifecycle/handler.ts', './ec2-events/handler.ts', './interruption/handler.ts'])(
    '%s refuses to start without CLUSTER_NAME, naming it',
    async (path) => {
      stubEnv({ AWS_REGION: 'eu-west-1' });
      await expect(import(path)).rejects.toThrow(/CLUSTER_NAME: is required/);
    },
  );

  it('resync refuses to start without any queue to feed, and loads with one', async () => {
    stubEnv(good);
    await expect(import('./resync/handler.ts')).rejects.toThrow(/resync needs at least one queue/);
    vi.resetModules();
    stubEnv({ ...good, NODE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/node.fifo' });
    expect(typeof (await import('./resync/handler.ts')).handler).toBe('function');
  });

  it('ec2-events refuses to start without the lifecycle queue URL', async () => {
    stubEnv(good);
    await expect(import('./ec2-events/handler.ts')).rejects.toThrow(/NODE_LIFECYCLE_QUEUE_URL: is required/);
  });

  it('interruption refuses to start with an unknown action, naming the setting', async () => {
    stubEnv({ ...good, INTERRUPTION_ACTIONS: 'spot-interruption=ignore' });
    await expect(import('./interruption/handler.ts')).rejects.toThrow(
      /INTERRUPTION_ACTIONS \(got "spot-interruption=ignore"\): "ignore" for spot-interruption must be drain or taint-only/,
    );
  });
});
