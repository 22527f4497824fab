import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { describe, expect, it } from 'vitest';
import { proxyAgents, proxyEnv } from './proxy.ts';

describe('proxyEnv', () => {
  it('keeps the proxy variables that are set, in either case, and nothing else', () => {
    expect(
      proxyEnv({
        HTTPS_PROXY: 'http://proxy:3128',
        http_proxy: 'http://proxy:8080',
        NO_PROXY: '169.254.169.254,.internal',
        no_proxy: '',
        AWS_REGION: 'eu-west-1',
        PATH: '/usr/bin',
      }),
    ).toEqual({
      HTTPS_PROXY: 'http://proxy:3128',
      http_proxy: 'http://proxy:8080',
      NO_PROXY: '169.254.169.254,.internal',
    });
  });

  it('is undefined when no proxy is set: NO_PROXY alone or empty values change nothing', () => {
    expect(proxyEnv({})).toBeUndefined();
    expect(proxyEnv({ NO_PROXY: '*' })).toBeUndefined();
    expect(proxyEnv({ HTTPS_PROXY: '', https_proxy: '' })).toBeUndefined();
  });
});

describe('proxyAgents', () => {
  it('is an agent of each scheme', () => {
    const { httpAgent, httpsAgent } = proxyAgents({ HTTPS_PROXY: 'http://proxy:3128' });
    expect(httpsAgent).toBeInstanceOf(HttpsAgent);
    expect(httpAgent).toBeInstanceOf(HttpAgent);
    expect(httpAgent).not.toBeInstanceOf(HttpsAgent);
  });
});
