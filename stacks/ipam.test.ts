import { beforeAll, describe, expect, it } from 'vitest';
import { loadStageConfig } from './config.ts';
import { type PolicyStatementJson, policyViolations } from './policy-rules.ts';
import {
  env,
  functionId,
  type Json,
  offlineSynth,
  ofType,
  props,
  queueId,
  refId,
  roleStatements,
  STAGE,
} from './template-queries.ts';

/**
 * The Windows IP address manager in the stack (CCM_IPAM): what it adds when on, and that a stage without it
 * synthesizes exactly as before (no queue, no function, nothing new for the relay or the resync).
 */

const VPC_ID = 'vpc-0123456789abcdef0';
const BASE_ENV = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
  CCM_VPC_ID: VPC_ID,
};
const ON = { ...BASE_ENV, CCM_IPAM: 'true', CCM_IPAM_COOLDOWN_SECONDS: '45' };
const PREFIX = `${STAGE}-serverless-ccm`;
const OWNED = { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' };

const synth = offlineSynth('ipam');

/** An ARN CDK wrote as `Fn::Join`, with the partition and account references shown as `{ref}`. */
function arnText(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (!join) throw new Error(`not an ARN: ${JSON.stringify(value)}`);
  return join[1].map((part) => (typeof part === 'string' ? part : '{ref}')).join(join[0]);
}

const INTERFACES = 'arn:{ref}:ec2:eu-west-1:{ref}:network-interface/*';
const VPC = `arn:{ref}:ec2:eu-west-1:{ref}:vpc/${VPC_ID}`;

let off: Json;
let on: Json;
beforeAll(async () => {
  off = await synth(BASE_ENV);
  on = await synth(ON);
}, 120_000);

describe('the stage settings', () => {
  it('leave the manager off by default, with a 30 s cooldown when on', () => {
    expect(loadStageConfig(BASE_ENV).ipam).toBeUndefined();
    expect(loadStageConfig({ ...BASE_ENV, CCM_IPAM: 'true' }).ipam).toEqual({ vpcId: VPC_ID, cooldownSeconds: 30 });
  });

  it('need the cluster VPC with CCM_IPAM=true', () => {
    const { CCM_VPC_ID: _, ...withoutVpc } = ON;
    expect(() => loadStageConfig(withoutVpc)).toThrow(/CCM_VPC_ID: is required when CCM_IPAM=true/);
  });

  it.each([
    [
      'CCM_IPAM_COOLDOWN_SECONDS without CCM_IPAM',
      { CCM_IPAM_COOLDOWN_SECONDS: '45' },
      /CCM_IPAM_COOLDOWN_SECONDS \(got "45"\): has no effect without CCM_IPAM=true/,
    ],
    [
      'a cooldown the function would refuse',
      { CCM_IPAM: 'true', CCM_IPAM_COOLDOWN_SECONDS: '601' },
      /CCM_IPAM_COOLDOWN_SECONDS \(got "601"\)/,
    ],
    ['CCM_IPAM that is no boolean', { CCM_IPAM: 'yes please' }, /CCM_IPAM \(got "yes please"\): must be true or false/],
  ])('refuse %s', (_, settings, problem) => {
    expect(() => loadStageConfig({ ...BASE_ENV, ...settings })).toThrow(problem);
  });
});

describe('a stage without the IP address manager', () => {
  it('synthesizes exactly the same template with CCM_IPAM=false as with it unset', async () => {
    expect(JSON.stringify(await synth({ ...BASE_ENV, CCM_IPAM: 'false' }))).toBe(JSON.stringify(off));
  });

  it('has no ipam queue, function or output, and the resync sends it nothing', () => {
    expect(() => queueId(off, `${PREFIX}-ipam.fifo`)).toThrow(/no AWS::SQS::Queue/);
    expect(() => functionId(off, `${PREFIX}-ipam`)).toThrow(/no AWS::Lambda::Function/);
    expect(env(off, `${PREFIX}-resync`)).not.toHaveProperty('IPAM_QUEUE_URL');
    expect(JSON.stringify(off)).not.toMatch(/IpamQueueUrl|AssignPrivateIpAddresses|DeleteNetworkInterface/);
  });
});

describe('a stage with CCM_IPAM=true', () => {
  it('adds the ipam FIFO queue with its DLQ after 100 receives', () => {
    const queue = props(on, queueId(on, `${PREFIX}-ipam.fifo`));
    expect(queue).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: false,
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      SqsManagedSseEnabled: true,
      VisibilityTimeout: 360,
    });
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-ipam-dlq.fifo`), 'Arn'] },
      maxReceiveCount: 100,
    });
    expect(props(on, queueId(on, `${PREFIX}-ipam-dlq.fifo`))).toMatchObject({
      FifoQueue: true,
      MessageRetentionPeriod: 1_209_600,
    });
  });

  it('feeds the function from it in batches of 10 with partial batch responses', () => {
    const fn = functionId(on, `${PREFIX}-ipam`);
    const mappings = ofType(on, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => refId(m.FunctionName) === fn);
    expect(mappings.map(([, m]) => m)).toEqual([
      expect.objectContaining({
        EventSourceArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-ipam.fifo`), 'Arn'] },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 5 },
      }),
    ]);
  });

  it('configures the function from the stage, with the Kubernetes access every function gets', () => {
    expect(env(on, `${PREFIX}-ipam`)).toEqual({
      CLUSTER_NAME: 'prod-eu',
      NODE_IP_FAMILIES: 'ipv4',
      LOG_LEVEL: 'INFO',
      AWS_CALL_METRICS: 'operation',
      KUBERNETES_AUTH_MODE: 'eks',
      KUBERNETES_API_ENDPOINT: BASE_ENV.CCM_KUBERNETES_API_ENDPOINT,
      EKS_CLUSTER_NAME: 'prod-eu',
      VPC_ID,
      IPAM_COOLDOWN_SECONDS: '45',
    });
  });

  it('reads EC2 with Describe calls only on *', () => {
    const statements = roleStatements(on, `${PREFIX}-ipam`);
    const onEverything = statements.filter((s) => s.Resource === '*').flatMap((s) => s.Action);
    expect(onEverything.sort()).toEqual([
      'ec2:DescribeInstanceTypes',
      'ec2:DescribeInstances',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSubnets',
    ]);
  });

  it('assigns and unassigns secondary addresses only on network interfaces in the cluster VPC', () => {
    const addresses = roleStatements(on, `${PREFIX}-ipam`).find((s) => s.Sid === 'PodAddresses');
    expect(addresses).toMatchObject({
      Effect: 'Allow',
      Action: ['ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
    });
    expect(arnText(addresses?.Resource)).toBe(INTERFACES);
    expect(Object.keys(addresses?.Condition ?? {})).toEqual(['ArnEquals']);
    expect(arnText(addresses?.Condition?.ArnEquals?.['ec2:Vpc'])).toBe(VPC);
  });

  it('deletes and tags network interfaces only when they are the cluster’s own and in its VPC', () => {
    const cleanup = roleStatements(on, `${PREFIX}-ipam`).find((s) => s.Sid === 'NetworkInterfaceCleanup');
    expect(cleanup).toMatchObject({
      Effect: 'Allow',
      Action: ['ec2:DeleteNetworkInterface', 'ec2:CreateTags'],
      Condition: { StringEquals: OWNED },
    });
    expect(arnText(cleanup?.Resource)).toBe(INTERFACES);
    expect(Object.keys(cleanup?.Condition ?? {}).sort()).toEqual(['ArnEquals', 'StringEquals']);
    expect(arnText(cleanup?.Condition?.ArnEquals?.['ec2:Vpc'])).toBe(VPC);
  });

  it('removes tags only from the cluster’s own network interfaces, never the ownership tags', () => {
    const removal = roleStatements(on, `${PREFIX}-ipam`).find((s) => s.Sid === 'NetworkInterfaceTagRemoval');
    expect(removal).toMatchObject({
      Effect: 'Allow',
      Action: 'ec2:DeleteTags',
      Condition: {
        StringEquals: OWNED,
        'ForAllValues:StringNotEquals': { 'aws:TagKeys': expect.arrayContaining(['kubernetes.io/cluster/prod-eu']) },
        Null: { 'aws:TagKeys': 'false' },
      },
    });
    expect(arnText(removal?.Resource)).toBe(INTERFACES);
    // DeleteTags has no ec2:Vpc: a condition on it would deny every call.
    expect(removal?.Condition).not.toHaveProperty('ArnEquals');
  });

  it('passes the least-privilege rules', () => {
    expect(policyViolations(on, 'prod-eu')).toEqual([]);
  });

  it('lets the relay and the resync send keys to the queue, tells the resync where, and outputs its URL', () => {
    const ipamQueue = queueId(on, `${PREFIX}-ipam.fifo`);
    expect(refId(env(on, `${PREFIX}-resync`).IPAM_QUEUE_URL)).toBe(ipamQueue);
    const resyncSend = roleStatements(on, `${PREFIX}-resync`).find((s) => s.Sid === 'SendKeys');
    expect(resyncSend?.Action).toBe('sqs:SendMessage');
    expect(((resyncSend?.Resource ?? []) as unknown[]).map(refId)).toContain(ipamQueue);

    const relay = ofType(on, 'AWS::IAM::Role').find(([id]) => id.startsWith('RelayRole'));
    const relaySend = ((relay?.[1].Policies ?? []) as { PolicyDocument: { Statement: PolicyStatementJson[] } }[])
      .flatMap((p) => p.PolicyDocument.Statement)
      .find((s) => s.Sid === 'SendKeys');
    expect(((relaySend?.Resource ?? []) as unknown[]).map(refId)).toContain(ipamQueue);

    const outputs = on.Outputs as Record<string, { Value: unknown }>;
    expect(refId(outputs.IpamQueueUrl?.Value)).toBe(ipamQueue);
  });

  it('alarms on its DLQ and on the age of its queue', () => {
    const watched = ofType(on, 'AWS::CloudWatch::Alarm').map(([, a]) =>
      refId((a.Dimensions as { Value: unknown }[])[0]?.Value),
    );
    expect(watched).toContain(queueId(on, `${PREFIX}-ipam-dlq.fifo`));
    expect(watched).toContain(queueId(on, `${PREFIX}-ipam.fifo`));
  });
});
