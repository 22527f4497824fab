import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.ts';
import { clientSettings } from './clients.ts';

const config = loadConfig({ CLUSTER_NAME: 'prod-eu', AWS_REGION: 'eu-west-1' });

describe('clientSettings', () => {
  it('is the region and adaptive retries, with the SDK default handler when no proxy is set', () => {
    expect(clientSettings(config, { NO_PROXY: '169.254.169.254' })).toEqual({
      region: 'eu-west-1',
      retryMode: 'adaptive',
    });
  });

  it('sends both schemes through the proxy the environment names, keeping connections alive', () => {
    const { requestHandler } = clientSettings(config, { https_proxy: 'http://proxy:3128', NO_PROXY: '.internal' });
    if (!requestHandler) throw new Error('no request handler');

    expect(requestHandler.httpsAgent).toBeInstanceOf(HttpsAgent);
    expect(requestHandler.httpAgent).toBeInstanceOf(HttpAgent);
    expect((requestHandler.httpsAgent as HttpsAgent & { keepAlive: boolean }).keepAlive).toBe(true);
  });
});
