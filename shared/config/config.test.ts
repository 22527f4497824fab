import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

const base = { CLUSTER_NAME: 'prod-eu', AWS_REGION: 'eu-west-1' };

describe('loadConfig', () => {
  it('applies defaults', () => {
    expect(loadConfig(base)).toMatchObject({
      CLUSTER_NAME: 'prod-eu',
      NODE_IP_FAMILIES: ['ipv4'],
      KUBERNETES_AUTH_MODE: 'kubeconfig',
    });
  });

  it('parses the IP family list', () => {
    expect(loadConfig({ ...base, NODE_IP_FAMILIES: 'ipv6, ipv4' }).NODE_IP_FAMILIES).toEqual(['ipv6', 'ipv4']);
  });

  it.each([
    [{ AWS_REGION: 'eu-west-1' }, /CLUSTER_NAME: is required/],
    [{ ...base, AWS_REGION: 'europe' }, /AWS_REGION \(got "europe"\): must be an AWS region/],
    [{ ...base, NODE_IP_FAMILIES: 'ipv5' }, /NODE_IP_FAMILIES.*ipv4 or ipv6/],
    [
      { ...base, KUBERNETES_AUTH_MODE: 'token' },
      /KUBERNETES_TOKEN_SECRET_ID: is required when KUBERNETES_AUTH_MODE=token/,
    ],
    [{ ...base, KUBERNETES_AUTH_MODE: 'eks' }, /KUBERNETES_API_ENDPOINT: is required when KUBERNETES_AUTH_MODE=eks/],
    [{ ...base, NODE_QUEUE_URL: 'not a url' }, /NODE_QUEUE_URL/],
    [{ ...base, CLUSTER_NAME: 'has spaces' }, /CLUSTER_NAME \(got "has spaces"\)/],
  ])('refuses %j naming the setting', (env, pattern) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(pattern);
  });
});
