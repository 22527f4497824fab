import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config/config.ts';
import { loadRelayConfig, queuesOf, regionFor } from './config.ts';
import { WATCHED_KINDS } from './kinds.ts';

const NODE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/ccm-node.fifo';
const IPAM = 'https://sqs.eu-west-1.amazonaws.com/123456789012/ccm-ipam.fifo';

describe('loadRelayConfig', () => {
  it('takes defaults that match client-go and the manifests', () => {
    const config = loadRelayConfig({ NODE_QUEUE_URL: NODE, IPAM_QUEUE_URL: IPAM });
    expect(config).toMatchObject({
      RELAY_LEASE_NAME: 'serverless-ccm-relay',
      RELAY_KINDS: [...WATCHED_KINDS],
      RELAY_LEADER_ELECT: true,
      RELAY_LEASE_DURATION_SECONDS: 15,
      RELAY_RENEW_DEADLINE_SECONDS: 10,
      RELAY_RETRY_PERIOD_SECONDS: 2,
      RELAY_PAGE_SIZE: 500,
      RELAY_PORT: 8080,
      RELAY_MIGRATION_COMPONENT: 'cloud-controller-manager',
      RELAY_WEBHOOK_ENABLED: false,
      RELAY_WEBHOOK_PORT: 9443,
      RELAY_WEBHOOK_TLS: 'self-signed',
      RELAY_WEBHOOK_SERVICE: 'serverless-ccm-relay-webhook',
      RELAY_WEBHOOK_SECRET: 'serverless-ccm-webhook-tls',
      RELAY_WEBHOOK_CONFIGURATION: 'serverless-ccm-ipam-webhook',
      RELAY_WEBHOOK_CONTROLLER_USERNAMES: ['system:serviceaccount:kube-system:serverless-ccm', 'serverless-ccm:ipam'],
    });
    expect(queuesOf(config)).toEqual({ node: NODE, ipam: IPAM });
    expect(regionFor(config)).toBe('eu-west-1');
  });

  it('reads kinds and switches', () => {
    const config = loadRelayConfig({ NODE_QUEUE_URL: NODE, RELAY_KINDS: 'Node, Pod', RELAY_LEADER_ELECT: 'false' });
    expect(config.RELAY_KINDS).toEqual(['Node', 'Pod']);
    expect(config.RELAY_LEADER_ELECT).toBe(false);
  });

  it.each<[Record<string, string>, string]>([
    [{}, '(queues): set at least one of NODE_QUEUE_URL'],
    [
      { NODE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/standard' },
      'NODE_QUEUE_URL (got "https://sqs.eu-west-1.amazonaws.com/1/standard"): must be a FIFO queue',
    ],
    [{ NODE_QUEUE_URL: 'not a url' }, 'NODE_QUEUE_URL (got "not a url"): must be an SQS queue URL'],
    [{ NODE_QUEUE_URL: 'http://localhost:4566/000000000000/node.fifo' }, 'AWS_REGION: is required'],
    [{ NODE_QUEUE_URL: NODE, RELAY_KINDS: 'Node,Secret' }, 'RELAY_KINDS.1'],
    [
      { NODE_QUEUE_URL: NODE, RELAY_RENEW_DEADLINE_SECONDS: '15' },
      'RELAY_RENEW_DEADLINE_SECONDS (got "15"): must be shorter than RELAY_LEASE_DURATION_SECONDS',
    ],
    [
      { NODE_QUEUE_URL: NODE, RELAY_NAMESPACE: 'Kube_System' },
      'RELAY_NAMESPACE (got "Kube_System"): must be a Kubernetes namespace name',
    ],
    [{ NODE_QUEUE_URL: NODE, RELAY_LEADER_ELECT: 'yes' }, 'RELAY_LEADER_ELECT (got "yes"): must be true or false'],
    [{ NODE_QUEUE_URL: NODE, RELAY_PORT: 'http' }, 'RELAY_PORT (got "http"): must be a port number'],
    [
      { NODE_QUEUE_URL: NODE, RELAY_WEBHOOK_ENABLED: 'true', RELAY_WEBHOOK_PORT: '8080' },
      'RELAY_WEBHOOK_PORT (got "8080"): must differ from RELAY_PORT',
    ],
    [
      { NODE_QUEUE_URL: NODE, RELAY_WEBHOOK_TLS: 'acme' },
      'RELAY_WEBHOOK_TLS (got "acme"): must be self-signed or cert-manager',
    ],
    [{ NODE_QUEUE_URL: NODE, RELAY_WEBHOOK_CONTROLLER_USERNAMES: ' , ' }, 'must name at least one username'],
    [{ NODE_QUEUE_URL: NODE, RELAY_WEBHOOK_CONTROLLER_USERNAMES: 'a,*' }, 'a lone * would let everyone'],
    [
      { NODE_QUEUE_URL: NODE, RELAY_WEBHOOK_ENABLED: 'true', RELAY_WEBHOOK_IPAM: 'false' },
      'RELAY_WEBHOOK_ENABLED (got "true"): serves no webhook',
    ],
    [
      {
        NODE_QUEUE_URL: NODE,
        RELAY_WEBHOOK_TGB: 'true',
        RELAY_WEBHOOK_TGB_CONFIGURATION: 'serverless-ccm-ipam-webhook',
      },
      'RELAY_WEBHOOK_TGB_CONFIGURATION (got "serverless-ccm-ipam-webhook"): must differ from RELAY_WEBHOOK_CONFIGURATION',
    ],
  ])('refuses %j, naming the setting', (env, message) => {
    expect(() => loadRelayConfig(env)).toThrow(ConfigError);
    expect(() => loadRelayConfig(env)).toThrow(message);
  });

  it('serves the IPAM webhooks alone by default; the TargetGroupBinding pair when asked, with its own configurations', () => {
    expect(loadRelayConfig({ NODE_QUEUE_URL: NODE })).toMatchObject({
      RELAY_WEBHOOK_IPAM: true,
      RELAY_WEBHOOK_TGB: false,
      RELAY_WEBHOOK_TGB_CONFIGURATION: 'serverless-ccm-tgb-webhook',
    });
    const tgbOnly = { NODE_QUEUE_URL: NODE, RELAY_WEBHOOK_ENABLED: 'true', RELAY_WEBHOOK_IPAM: 'false' };
    expect(loadRelayConfig({ ...tgbOnly, RELAY_WEBHOOK_TGB: 'true' })).toMatchObject({
      RELAY_WEBHOOK_IPAM: false,
      RELAY_WEBHOOK_TGB: true,
    });
  });

  it('reads the webhook settings', () => {
    const config = loadRelayConfig({
      NODE_QUEUE_URL: NODE,
      RELAY_WEBHOOK_ENABLED: 'true',
      RELAY_WEBHOOK_TLS: 'cert-manager',
      RELAY_WEBHOOK_CONTROLLER_USERNAMES:
        'system:serviceaccount:kube-system:serverless-ccm, arn:aws:sts::123456789012:assumed-role/ipam/*',
    });
    expect(config).toMatchObject({
      RELAY_WEBHOOK_ENABLED: true,
      RELAY_WEBHOOK_TLS: 'cert-manager',
      RELAY_WEBHOOK_CONTROLLER_USERNAMES: [
        'system:serviceaccount:kube-system:serverless-ccm',
        'arn:aws:sts::123456789012:assumed-role/ipam/*',
      ],
    });
  });

  it('accepts a local SQS endpoint with an explicit region', () => {
    const config = loadRelayConfig({
      NODE_QUEUE_URL: 'http://localhost:4566/000000000000/node.fifo',
      AWS_REGION: 'us-east-1',
    });
    expect(regionFor(config)).toBe('us-east-1');
  });
});
