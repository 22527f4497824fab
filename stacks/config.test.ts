import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { functionSetting, loadStageConfig, STAGE_SETTINGS, StageConfigError, stageEnvironment } from './config.ts';

const base = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};

describe('loadStageConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadStageConfig(base);
    expect(config).toMatchObject({
      clusterName: 'prod-eu',
      region: 'eu-west-1',
      kubernetes: { authMode: 'eks', eksClusterName: 'prod-eu', createAccessEntries: true },
      nodeIpFamilies: ['ipv4'],
      logLevel: 'INFO',
      logRetentionDays: 30,
      nodeIndexTtlSeconds: 60,
      ec2Events: { retentionSeconds: 900, ageAlarmSeconds: 300 },
      alarms: { queueAgeSeconds: 900 },
      relay: {
        identity: 'pod-identity',
        namespace: 'kube-system',
        serviceAccount: 'serverless-ccm-relay',
        createPodIdentityAssociation: true,
      },
    });
    expect(config.functions.node).toEqual({
      memoryMb: 512,
      timeoutSeconds: 60,
      maxConcurrency: 5,
      maxReceiveCount: 100,
    });
    expect(config.functions['ec2-events'].maxReceiveCount).toBe(3);
    expect(config.vpc).toBeUndefined();
  });

  it('reads per-function settings under CCM_<NAME>_...', () => {
    const config = loadStageConfig({
      ...base,
      CCM_NODE_LIFECYCLE_MEMORY_MB: '1024',
      CCM_NODE_LIFECYCLE_TIMEOUT_SECONDS: '120',
      CCM_NODE_LIFECYCLE_RESERVED_CONCURRENCY: '20',
      CCM_NODE_LIFECYCLE_MAX_CONCURRENCY: '10',
      CCM_NODE_LIFECYCLE_MAX_RECEIVE_COUNT: '50',
    });
    expect(config.functions['node-lifecycle']).toEqual({
      memoryMb: 1024,
      timeoutSeconds: 120,
      reservedConcurrency: 20,
      maxConcurrency: 10,
      maxReceiveCount: 50,
    });
    expect(config.functions.node.memoryMb).toBe(512);
  });

  it('takes the IRSA issuer from the OIDC provider ARN', () => {
    const config = loadStageConfig({
      ...base,
      CCM_RELAY_IDENTITY: 'irsa',
      CCM_RELAY_OIDC_PROVIDER_ARN: 'arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123',
    });
    expect(config.relay).toMatchObject({
      identity: 'irsa',
      oidcIssuer: 'oidc.eks.eu-west-1.amazonaws.com/id/ABC123',
      createPodIdentityAssociation: false,
    });
  });

  it('parses VPC subnet and security group lists', () => {
    const config = loadStageConfig({
      ...base,
      CCM_VPC_SUBNET_IDS: 'subnet-0123abcd, subnet-0456ef01',
      CCM_VPC_SECURITY_GROUP_IDS: 'sg-0123abcd',
    });
    expect(config.vpc).toEqual({
      subnetIds: ['subnet-0123abcd', 'subnet-0456ef01'],
      securityGroupIds: ['sg-0123abcd'],
    });
  });

  it('configures the service controller only with CCM_VPC_ID, with the runtime defaults', () => {
    expect(loadStageConfig(base).services).toBeUndefined();
    expect(loadStageConfig({ ...base, CCM_VPC_ID: 'vpc-0123456789abcdef0' }).services).toEqual({
      vpcId: 'vpc-0123456789abcdef0',
      defaultLoadBalancerType: 'nlb',
      provisioningRequeueSeconds: 60,
      cleanupRequeueSeconds: 60,
      replacementGraceSeconds: 360,
      lbcServices: false,
    });
    expect(
      loadStageConfig({
        ...base,
        CCM_VPC_ID: 'vpc-0123abcd',
        CCM_LOAD_BALANCER_CLASS: 'example.com/nlb',
        CCM_SERVICE_NODE_PORT_RANGE: '20000-22767',
        CCM_SERVICE_EXTERNAL_MANAGED_TAGS: ' cost-center , team,',
        CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'classic',
        CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS: '120',
        CCM_SERVICE_CLEANUP_REQUEUE_SECONDS: '30',
        CCM_SERVICE_REPLACEMENT_GRACE_SECONDS: '0',
        CCM_SERVICE_MAX_RECEIVE_COUNT: '300',
      }),
    ).toMatchObject({
      services: {
        vpcId: 'vpc-0123abcd',
        loadBalancerClass: 'example.com/nlb',
        nodePortRange: '20000-22767',
        externalManagedTags: ['cost-center', 'team'],
        defaultLoadBalancerType: 'classic',
        provisioningRequeueSeconds: 120,
        cleanupRequeueSeconds: 30,
        replacementGraceSeconds: 0,
      },
      functions: { service: { timeoutSeconds: 120, maxConcurrency: 10, maxReceiveCount: 300 } },
    });
  });

  it('gives the service controller room for long requeues', () => {
    expect(loadStageConfig(base).functions.service).toEqual({
      memoryMb: 512,
      timeoutSeconds: 120,
      maxConcurrency: 10,
      maxReceiveCount: 200,
    });
  });

  it('creates access entries only in eks mode', () => {
    const config = loadStageConfig({
      ...base,
      CCM_KUBERNETES_AUTH_MODE: 'token',
      CCM_KUBERNETES_TOKEN_SECRET_ID: 'ccm/token',
    });
    expect(config.kubernetes.createAccessEntries).toBe(false);
  });

  it.each([
    [{ CCM_CLUSTER_NAME: '' }, /- CCM_CLUSTER_NAME: is required/],
    [{ CCM_REGION: 'europe' }, /CCM_REGION \(got "europe"\): must be an AWS region/],
    [{ CCM_KUBERNETES_API_ENDPOINT: '' }, /CCM_KUBERNETES_API_ENDPOINT: is required/],
    [{ CCM_KUBERNETES_API_ENDPOINT: 'http://plain' }, /CCM_KUBERNETES_API_ENDPOINT \(got "http:\/\/plain"\)/],
    [{ CCM_KUBERNETES_AUTH_MODE: 'kubeconfig' }, /CCM_KUBERNETES_AUTH_MODE \(got "kubeconfig"\): must be eks/],
    [
      { CCM_KUBERNETES_AUTH_MODE: 'token' },
      /CCM_KUBERNETES_TOKEN_SECRET_ID: is required when CCM_KUBERNETES_AUTH_MODE=token/,
    ],
    [{ CCM_VPC_SUBNET_IDS: 'subnet-0123abcd' }, /CCM_VPC_SECURITY_GROUP_IDS: is required too/],
    [{ CCM_VPC_SUBNET_IDS: 'subnet-xyz', CCM_VPC_SECURITY_GROUP_IDS: 'sg-0123abcd' }, /CCM_VPC_SUBNET_IDS/],
    [{ CCM_RELAY_IDENTITY: 'irsa' }, /CCM_RELAY_OIDC_PROVIDER_ARN: is required when CCM_RELAY_IDENTITY=irsa/],
    [{ CCM_RELAY_IDENTITY: 'kiam' }, /CCM_RELAY_IDENTITY \(got "kiam"\): must be pod-identity .* or irsa/],
    [{ CCM_RELAY_NAMESPACE: 'Kube_System' }, /CCM_RELAY_NAMESPACE .*Kubernetes name/],
    [{ CCM_LOG_RETENTION_DAYS: '10' }, /CCM_LOG_RETENTION_DAYS \(got "10"\): must be one of/],
    [{ CCM_EKS_ACCESS_ENTRIES: 'maybe' }, /CCM_EKS_ACCESS_ENTRIES \(got "maybe"\): must be true or false/],
    [{ CCM_ALARM_TOPIC_ARN: 'my-topic' }, /CCM_ALARM_TOPIC_ARN .*ARN of an SNS topic/],
    [{ CCM_DASHBOARD: 'hidden' }, /CCM_DASHBOARD \(got "hidden"\): must be true or false/],
    [{ CCM_NODE_MEMORY_MB: '64' }, /CCM_NODE_MEMORY_MB \(got "64"\): must be at least 128/],
    [{ CCM_NODE_TIMEOUT_SECONDS: '1000' }, /CCM_NODE_TIMEOUT_SECONDS \(got "1000"\): must be at most 900/],
    [{ CCM_NODE_MAX_CONCURRENCY: '1' }, /CCM_NODE_MAX_CONCURRENCY \(got "1"\): must be at least 2/],
    [
      { CCM_NODE_RESERVED_CONCURRENCY: '3', CCM_NODE_MAX_CONCURRENCY: '5' },
      /CCM_NODE_MAX_CONCURRENCY \(got "5"\): must not exceed CCM_NODE_RESERVED_CONCURRENCY \(3\)/,
    ],
    [{ CCM_NODE_MAX_RECEIVE_COUNT: 'lots' }, /CCM_NODE_MAX_RECEIVE_COUNT \(got "lots"\): must be a whole number/],
    [
      { CCM_EC2_EVENTS_RETENTION_SECONDS: '300', CCM_EC2_EVENTS_AGE_ALARM_SECONDS: '120' },
      /CCM_EC2_EVENTS_RETENTION_SECONDS \(got "300"\): must be at least 540/,
    ],
    [
      { CCM_EC2_EVENTS_AGE_ALARM_SECONDS: '900' },
      /CCM_EC2_EVENTS_AGE_ALARM_SECONDS \(got "900"\): must be below CCM_EC2_EVENTS_RETENTION_SECONDS/,
    ],
    [{ CCM_NODE_LIFECYLE_MEMORY_MB: '256' }, /CCM_NODE_LIFECYLE_MEMORY_MB \(got "256"\): is not a setting/],
    [{ CCM_VPC_ID: 'vpc-xyz' }, /CCM_VPC_ID \(got "vpc-xyz"\): must be a VPC ID such as vpc-0123456789abcdef0/],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_LOAD_BALANCER_CLASS: 'not a class' },
      /CCM_LOAD_BALANCER_CLASS \(got "not a class"\): must be a label-style name/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_NODE_PORT_RANGE: '32767-30000' },
      /CCM_SERVICE_NODE_PORT_RANGE \(got "32767-30000"\): must be a range of ports/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS: '1' },
      /CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS \(got "1"\): must be at least 5 seconds/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_CLEANUP_REQUEUE_SECONDS: '3600' },
      /CCM_SERVICE_CLEANUP_REQUEUE_SECONDS \(got "3600"\): cannot exceed 900 seconds/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_REPLACEMENT_GRACE_SECONDS: '-1' },
      /CCM_SERVICE_REPLACEMENT_GRACE_SECONDS \(got "-1"\): must be 0 or more seconds/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_EXTERNAL_MANAGED_TAGS: 'team,cost#center' },
      /CCM_SERVICE_EXTERNAL_MANAGED_TAGS \(got "team,cost#center"\): each tag key must be letters, digits/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_EXTERNAL_MANAGED_TAGS: `team,${'k'.repeat(129)}` },
      /CCM_SERVICE_EXTERNAL_MANAGED_TAGS \(got "team,k+"\): each tag key must be at most 128 characters/,
    ],
    [
      { CCM_VPC_ID: 'vpc-0123abcd', CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'alb' },
      /CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE \(got "alb"\): must be nlb \(Network Load Balancer\) or classic/,
    ],
    [
      { CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'classic' },
      /CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE \(got "classic"\): has no effect without CCM_VPC_ID/,
    ],
    [
      { CCM_SERVICE_EXTERNAL_MANAGED_TAGS: 'team' },
      /CCM_SERVICE_EXTERNAL_MANAGED_TAGS \(got "team"\): has no effect without CCM_VPC_ID/,
    ],
    [
      { CCM_LOAD_BALANCER_CLASS: 'example.com/nlb' },
      /CCM_LOAD_BALANCER_CLASS \(got "example.com\/nlb"\): has no effect without CCM_VPC_ID/,
    ],
    [
      { CCM_SERVICE_CLEANUP_REQUEUE_SECONDS: '120' },
      /CCM_SERVICE_CLEANUP_REQUEUE_SECONDS \(got "120"\): has no effect without CCM_VPC_ID/,
    ],
  ])('refuses %j, naming the setting', (overrides, message) => {
    const env = { ...base, ...overrides };
    expect(() => loadStageConfig(env)).toThrow(StageConfigError);
    expect(() => loadStageConfig(env)).toThrow(message);
  });

  it('lists every problem at once', () => {
    try {
      loadStageConfig({ CCM_REGION: 'nowhere', CCM_NODE_MEMORY_MB: '1' });
      expect.unreachable();
    } catch (err) {
      const problems = (err as StageConfigError).problems.map((p) => p.split(' ')[0]?.replace(/:$/, ''));
      expect(problems).toEqual(
        expect.arrayContaining(['CCM_CLUSTER_NAME', 'CCM_REGION', 'CCM_KUBERNETES_API_ENDPOINT', 'CCM_NODE_MEMORY_MB']),
      );
    }
  });

  it('ignores variables without the CCM_ prefix and empty values', () => {
    expect(() =>
      loadStageConfig({ ...base, AWS_REGION: 'nowhere', LOG_LEVEL: 'LOUD', CCM_LOG_LEVEL: '' }),
    ).not.toThrow();
  });

  it('names every function setting after its function', () => {
    expect(functionSetting('node-lifecycle', 'maxReceiveCount')).toBe('CCM_NODE_LIFECYCLE_MAX_RECEIVE_COUNT');
    expect(STAGE_SETTINGS).toContain('CCM_EC2_EVENTS_TIMEOUT_SECONDS');
  });
});

describe('stageEnvironment', () => {
  const root = mkdtempSync(join(tmpdir(), 'ccm-stage-env-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('layers the .env files as SST does: later files win, even over the shell', () => {
    writeFileSync(join(root, '.env'), 'CCM_CLUSTER_NAME=from-env\nCCM_LOG_LEVEL=DEBUG\n');
    writeFileSync(join(root, '.env.prod'), 'CCM_CLUSTER_NAME=from-stage\n');
    writeFileSync(join(root, '.env.prod.local'), 'CCM_REGION=eu-central-1\n');
    writeFileSync(join(root, '.env.dev'), 'CCM_CLUSTER_NAME=from-dev\n');
    const env = stageEnvironment(root, 'prod', { CCM_REGION: 'eu-west-1', CCM_LOG_LEVEL: 'WARN', OTHER: 'kept' });
    expect(env).toMatchObject({
      CCM_CLUSTER_NAME: 'from-stage',
      CCM_REGION: 'eu-central-1',
      CCM_LOG_LEVEL: 'DEBUG',
      OTHER: 'kept',
    });
  });

  it('reads only the shared files when the stage is not known yet', () => {
    expect(stageEnvironment(root, undefined, {}).CCM_CLUSTER_NAME).toBe('from-env');
  });
});
