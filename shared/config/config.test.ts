import { describe, expect, it } from 'vitest';
import { ConfigError, configSchema, loadConfig, parseEnvironment } from './config.ts';

const base = { CLUSTER_NAME: 'prod-eu', AWS_REGION: 'eu-west-1' };

describe('loadConfig', () => {
  it('applies defaults', () => {
    expect(loadConfig(base)).toMatchObject({
      CLUSTER_NAME: 'prod-eu',
      NODE_IP_FAMILIES: ['ipv4'],
      KUBERNETES_AUTH_MODE: 'kubeconfig',
    });
  });

  it('reads AWS_CALL_METRICS: by operation unless service is asked for; anything else names the setting', () => {
    expect(loadConfig(base).AWS_CALL_METRICS).toBe('operation');
    expect(loadConfig({ ...base, AWS_CALL_METRICS: 'service' }).AWS_CALL_METRICS).toBe('service');
    expect(() => loadConfig({ ...base, AWS_CALL_METRICS: 'verbose' })).toThrow(/AWS_CALL_METRICS \(got "verbose"\)/);
  });

  it('parses the IP family list', () => {
    expect(loadConfig({ ...base, NODE_IP_FAMILIES: 'ipv6, ipv4' }).NODE_IP_FAMILIES).toEqual(['ipv6', 'ipv4']);
  });

  it('reads the route settings, with the default route table limit', () => {
    const config = loadConfig({
      ...base,
      ROUTE_TABLE_ID: 'rtb-0123456789abcdef0',
      CLUSTER_CIDRS: '10.244.0.0/16, fd00:10:244::/56',
      ROUTE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/route.fifo',
    });
    expect(config).toMatchObject({
      ROUTE_TABLE_ID: 'rtb-0123456789abcdef0',
      CLUSTER_CIDRS: ['10.244.0.0/16', 'fd00:10:244::/56'],
      ROUTE_TABLE_LIMIT: 50,
    });
    expect(loadConfig({ ...base, ROUTE_TABLE_LIMIT: '200' }).ROUTE_TABLE_LIMIT).toBe(200);
    // Unset: discovered by tag; only the route controller requires cluster CIDRs (at its start-up).
    const unset = loadConfig(base);
    expect(unset.ROUTE_TABLE_ID).toBeUndefined();
    expect(unset.CLUSTER_CIDRS).toBeUndefined();
  });

  it('reads the service controller settings, with their defaults', () => {
    const config = loadConfig({
      ...base,
      VPC_ID: 'vpc-0123456789abcdef0',
      LOAD_BALANCER_CLASS: 'example.com/nlb',
      SERVICE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/service.fifo',
    });
    expect(config).toMatchObject({
      VPC_ID: 'vpc-0123456789abcdef0',
      LOAD_BALANCER_CLASS: 'example.com/nlb',
      SERVICE_PROVISIONING_REQUEUE_SECONDS: 60,
      SERVICE_CLEANUP_REQUEUE_SECONDS: 60,
    });
    expect(
      loadConfig({ ...base, SERVICE_PROVISIONING_REQUEUE_SECONDS: '30' }).SERVICE_PROVISIONING_REQUEUE_SECONDS,
    ).toBe(30);
    expect(loadConfig(base).LOAD_BALANCER_CLASS).toBeUndefined();
    expect(loadConfig({ ...base, SERVICE_NODE_PORT_RANGE: '20000-22767' }).SERVICE_NODE_PORT_RANGE).toEqual({
      from: 20000,
      to: 22767,
    });
    expect(loadConfig(base).SERVICE_NODE_PORT_RANGE).toBeUndefined();
  });

  it('reads the default load balancer type: nlb unless classic is asked for; anything else names the setting', () => {
    expect(loadConfig(base).SERVICE_DEFAULT_LOAD_BALANCER_TYPE).toBe('nlb');
    expect(
      loadConfig({ ...base, SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'classic' }).SERVICE_DEFAULT_LOAD_BALANCER_TYPE,
    ).toBe('classic');
    expect(() => loadConfig({ ...base, SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'elb' })).toThrow(
      /SERVICE_DEFAULT_LOAD_BALANCER_TYPE \(got "elb"\): must be nlb \(Network Load Balancer\) or classic/,
    );
  });

  it.each([
    [{ ...base, VPC_ID: 'vpc-xyz' }, /VPC_ID \(got "vpc-xyz"\): must be a VPC ID/],
    [
      { ...base, LOAD_BALANCER_CLASS: 'bad class' },
      /LOAD_BALANCER_CLASS \(got "bad class"\): must be a label-style name/,
    ],
    [{ ...base, SERVICE_QUEUE_URL: 'service.fifo' }, /SERVICE_QUEUE_URL/],
    [
      { ...base, SERVICE_PROVISIONING_REQUEUE_SECONDS: '1' },
      /SERVICE_PROVISIONING_REQUEUE_SECONDS \(got "1"\): must be at least 5/,
    ],
    [
      { ...base, SERVICE_PROVISIONING_REQUEUE_SECONDS: '3600' },
      /SERVICE_PROVISIONING_REQUEUE_SECONDS.*cannot exceed 900/,
    ],
    [
      { ...base, SERVICE_CLEANUP_REQUEUE_SECONDS: 'soon' },
      /SERVICE_CLEANUP_REQUEUE_SECONDS.*must be a number of seconds/,
    ],
    [{ ...base, SERVICE_NODE_PORT_RANGE: '30000' }, /SERVICE_NODE_PORT_RANGE \(got "30000"\): must be a port range/],
    [{ ...base, SERVICE_NODE_PORT_RANGE: '32767-30000' }, /SERVICE_NODE_PORT_RANGE.*low-high/],
  ])('refuses service controller setting %j, naming it', (env, pattern) => {
    expect(() => loadConfig(env)).toThrow(pattern);
  });

  it.each([
    [{ AWS_REGION: 'eu-west-1' }, /CLUSTER_NAME: is required/],
    [{ ...base, CLUSTER_CIDRS: '10.244.0.0' }, /CLUSTER_CIDRS.*"10\.244\.0\.0" is not a CIDR block/],
    [
      { ...base, CLUSTER_CIDRS: '10.244.0.0/16,10.300.0.0/16' },
      /CLUSTER_CIDRS.*"10\.300\.0\.0" is not an IPv4 or IPv6/,
    ],
    [{ ...base, CLUSTER_CIDRS: '10.244.1.0/16' }, /CLUSTER_CIDRS.*host bits set \(did you mean 10\.244\.0\.0\/16\?\)/],
    [{ ...base, CLUSTER_CIDRS: ' , ' }, /CLUSTER_CIDRS.*at least one CIDR block/],
    [{ ...base, ROUTE_TABLE_ID: 'rtb-xyz' }, /ROUTE_TABLE_ID \(got "rtb-xyz"\): must be a route table ID/],
    [{ ...base, ROUTE_TABLE_LIMIT: '0' }, /ROUTE_TABLE_LIMIT \(got "0"\): must be at least 1/],
    [{ ...base, ROUTE_TABLE_LIMIT: '5000' }, /ROUTE_TABLE_LIMIT.*cannot exceed 1000/],
    [{ ...base, ROUTE_TABLE_LIMIT: 'fifty' }, /ROUTE_TABLE_LIMIT.*must be the number of routes/],
    [{ ...base, ROUTE_QUEUE_URL: 'route.fifo' }, /ROUTE_QUEUE_URL/],
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

describe('the interruption controller settings', () => {
  it('default to no overrides, no out-of-service taint, load balancer exclusion and passes 5 s apart', () => {
    expect(loadConfig(base)).toMatchObject({
      INTERRUPTION_ACTIONS: {},
      INTERRUPTION_OUT_OF_SERVICE_TAINT: false,
      INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: true,
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: 5,
    });
  });

  it('read the kinds named, leaving the others unset (the controller keeps their defaults)', () => {
    const config = loadConfig({
      ...base,
      INTERRUPTION_ACTIONS: ' spot-interruption=taint-only , rebalance-recommendation = drain,',
      INTERRUPTION_OUT_OF_SERVICE_TAINT: 'true',
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: '10',
    });
    expect(config.INTERRUPTION_ACTIONS).toEqual({
      'spot-interruption': 'taint-only',
      'rebalance-recommendation': 'drain',
    });
    expect(config.INTERRUPTION_OUT_OF_SERVICE_TAINT).toBe(true);
    expect(config.INTERRUPTION_DRAIN_REQUEUE_SECONDS).toBe(10);
  });

  it.each([
    ['spot=drain', /INTERRUPTION_ACTIONS \(got "spot=drain"\): "spot" is no interruption kind/],
    ['spot-interruption=evict', /INTERRUPTION_ACTIONS.*"evict" for spot-interruption must be drain or taint-only/],
    ['spot-interruption', /INTERRUPTION_ACTIONS.*"spot-interruption" must be kind=action/],
    ['spot-interruption=drain=now', /INTERRUPTION_ACTIONS.*must be kind=action/],
    ['instance-stopping=drain,instance-stopping=taint-only', /INTERRUPTION_ACTIONS.*instance-stopping is named twice/],
  ])('refuses INTERRUPTION_ACTIONS=%s, naming it', (value, pattern) => {
    expect(() => loadConfig({ ...base, INTERRUPTION_ACTIONS: value })).toThrow(pattern);
  });

  it.each([
    [
      { INTERRUPTION_OUT_OF_SERVICE_TAINT: 'maybe' },
      /INTERRUPTION_OUT_OF_SERVICE_TAINT \(got "maybe"\): must be true or false/,
    ],
    [
      { INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'sometimes' },
      /INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS \(got "sometimes"\): must be true or false/,
    ],
    [{ INTERRUPTION_DRAIN_REQUEUE_SECONDS: '0' }, /INTERRUPTION_DRAIN_REQUEUE_SECONDS.*at least 1/],
    [{ INTERRUPTION_DRAIN_REQUEUE_SECONDS: '120' }, /INTERRUPTION_DRAIN_REQUEUE_SECONDS.*cannot exceed 60/],
    [{ INTERRUPTION_DRAIN_REQUEUE_SECONDS: '2.5' }, /INTERRUPTION_DRAIN_REQUEUE_SECONDS.*whole number/],
  ])('refuses %j, naming it', (env, pattern) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(pattern);
  });
});

describe('loadConfig against the whole object schema', () => {
  /** The outcome of a parse: the configuration, or the lines of its ConfigError. */
  const outcome = (parse: () => unknown) => {
    try {
      return { config: parse() };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return { problems: err.problems };
    }
  };

  // loadConfig reads the settings one at a time and makes only the schemas of those set; configSchema() is the
  // z.object the stacks check against. Both must read every environment alike, problems and their order included.
  it.each([
    ['the minimum', base],
    [
      'every setting set',
      {
        ...base,
        NODE_IP_FAMILIES: 'ipv6,ipv4',
        KUBERNETES_AUTH_MODE: 'token',
        KUBERNETES_API_ENDPOINT: 'https://api.example.com',
        KUBERNETES_CA_DATA: 'Y2E=',
        KUBERNETES_TOKEN_SECRET_ID: 'ccm-token',
        EKS_CLUSTER_NAME: 'prod',
        NODE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/node.fifo',
        ROUTE_TABLE_ID: 'rtb-0123456789abcdef0',
        CLUSTER_CIDRS: '10.244.0.0/16',
        ROUTE_TABLE_LIMIT: '100',
        VPC_ID: 'vpc-0123456789abcdef0',
        LOAD_BALANCER_CLASS: 'example.com/nlb',
        SERVICE_NODE_PORT_RANGE: '30000-32767',
        SERVICE_EXTERNAL_MANAGED_TAGS: 'team, cost-center',
        SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'classic',
        INTERRUPTION_ACTIONS: 'spot-interruption=taint-only',
        INTERRUPTION_OUT_OF_SERVICE_TAINT: 'true',
        INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'false',
        IPAM_COOLDOWN_SECONDS: '0',
        LOG_LEVEL: 'DEBUG',
        UNRELATED: 'ignored',
      },
    ],
    ['empty values as unset', { ...base, ROUTE_TABLE_LIMIT: '', LOG_LEVEL: '' }],
    ['nothing set', {}],
    [
      'several bad settings',
      { AWS_REGION: 'europe', ROUTE_TABLE_LIMIT: '0', CLUSTER_CIDRS: '10.244.1.0/16,x', LOG_LEVEL: 'LOUD' },
    ],
    ['a rule across settings', { ...base, KUBERNETES_AUTH_MODE: 'eks' }],
    ['a rule across settings with a bad setting', { ...base, KUBERNETES_AUTH_MODE: 'eks', ROUTE_TABLE_LIMIT: 'x' }],
  ])('%s', (_name, env: Record<string, string>) => {
    expect(outcome(() => loadConfig(env))).toEqual(outcome(() => parseEnvironment(configSchema(), env)));
  });

  it('gives every parse its own copy of a default', () => {
    const first = loadConfig(base);
    first.NODE_IP_FAMILIES.push('ipv6');
    first.INTERRUPTION_ACTIONS['spot-interruption'] = 'drain';
    expect(loadConfig(base)).toMatchObject({ NODE_IP_FAMILIES: ['ipv4'], INTERRUPTION_ACTIONS: {} });
  });
});
