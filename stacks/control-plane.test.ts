import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App as CdkApp, Stack as CdkStack } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricName } from '../shared/observability/metrics.ts';
import { stubCode } from './code.ts';
import { loadStageConfig, StageConfigError } from './config.ts';
import { checkedName } from './context.ts';
import { checkRuntimeEnvironment } from './function.ts';
import { allow, ownedResourceWrite } from './iam.ts';
import { type PolicyStatementJson, policyViolations, templateStatements } from './policy-rules.ts';
import { reconciler } from './reconciler.ts';
import { type OfflineSynthResult, synthesizeOffline } from './synth.ts';

/**
 * The control plane synthesized in-process, exactly as `npm run synth` and `sst deploy` build it,
 * with a stub code package per function instead of the esbuild bundles (bundling takes seconds and
 * is not what these tests are about). Assertions are on the CloudFormation template.
 */

const BASE_ENV = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};
const STAGE = 'test';
const PREFIX = `${STAGE}-serverless-ccm`;

const work = mkdtempSync(join(tmpdir(), 'ccm-stacks-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let synths = 0;

async function synth(env: Record<string, string>, stage = STAGE): Promise<OfflineSynthResult> {
  const dir = join(work, String(synths++));
  // The project root stays the repository's: SST keeps generated types and a debug log open for
  // the process's life under <root>/.sst (gitignored), as it does for `npm run synth`.
  return synthesizeOffline({ stage, env, outdir: join(dir, 'cdk.out'), code: stubCode(join(dir, 'code')) });
}

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

/** The template's resources of one type, by logical ID. */
function ofType(template: Json, type: string): [string, Json][] {
  return Object.entries(template.Resources as Record<string, Resource>)
    .filter(([, r]) => r.Type === type)
    .map(([id, r]) => [id, r.Properties ?? {}]);
}

function resource(template: Json, id: string): Resource {
  const r = (template.Resources as Record<string, Resource>)[id];
  if (!r) throw new Error(`no resource ${id}`);
  return r;
}

/** `{ "Fn::GetAtt": [id, "Arn"] }` or `{ Ref: id }` -> id. */
function refId(value: unknown): string {
  const v = value as { 'Fn::GetAtt'?: [string, string]; Ref?: string };
  const id = v['Fn::GetAtt']?.[0] ?? v.Ref;
  if (!id) throw new Error(`not a reference: ${JSON.stringify(value)}`);
  return id;
}

/** The EventBridge rules matching events (the resync's schedule rule has no pattern). */
function eventRules(template: Json): [string, Json][] {
  return ofType(template, 'AWS::Events::Rule').filter(([, r]) => r.EventPattern !== undefined);
}

function queueIdNamed(template: Json, name: string): string {
  const found = ofType(template, 'AWS::SQS::Queue').find(([, p]) => p.QueueName === name);
  if (!found) throw new Error(`no queue named ${name}`);
  return found[0];
}

function functionIdNamed(template: Json, name: string): string {
  const found = ofType(template, 'AWS::Lambda::Function').find(([, p]) => p.FunctionName === name);
  if (!found) throw new Error(`no function named ${name}`);
  return found[0];
}

/** The statements of the resource policy on one queue. */
function queuePolicyStatements(template: Json, queueId: string): PolicyStatementJson[] {
  const policy = ofType(template, 'AWS::SQS::QueuePolicy').find(([, p]) =>
    (p.Queues as unknown[]).some((q) => refId(q) === queueId),
  );
  if (!policy) throw new Error(`no queue policy on ${queueId}`);
  return (policy[1].PolicyDocument as { Statement: PolicyStatementJson[] }).Statement;
}

/** The Allow statements of a role's inline policies. */
function roleStatements(template: Json, roleId: string): PolicyStatementJson[] {
  const policies = (resource(template, roleId).Properties.Policies ?? []) as {
    PolicyDocument: { Statement: PolicyStatementJson[] };
  }[];
  return policies.flatMap((p) => p.PolicyDocument.Statement);
}

const actionsOf = (statements: PolicyStatementJson[]) =>
  statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action ?? ''])).sort();

const FIFO_QUEUES = [`${PREFIX}-node.fifo`, `${PREFIX}-node-lifecycle.fifo`];

describe('the control plane stack (defaults: EKS, Pod Identity)', () => {
  let result: OfflineSynthResult;
  let template: Json;
  beforeAll(async () => {
    result = await synth(BASE_ENV);
    template = result.template;
  }, 60_000);

  it('is one stack named after the stage', () => {
    expect(result.stack.stackName).toBe(`${PREFIX}-control-plane`);
    expect(result.assembly.stacks).toHaveLength(1);
  });

  describe('reconciler queues', () => {
    it.each(FIFO_QUEUES)('%s is high-throughput FIFO, encrypted, with a FIFO DLQ', (name) => {
      const queue = resource(template, queueIdNamed(template, name)).Properties;
      expect(queue).toMatchObject({
        FifoQueue: true,
        ContentBasedDeduplication: false,
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
        SqsManagedSseEnabled: true,
        RedrivePolicy: { maxReceiveCount: 100 },
      });
      const dlq = resource(template, refId((queue.RedrivePolicy as Json).deadLetterTargetArn)).Properties;
      expect(dlq).toMatchObject({
        FifoQueue: true,
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
        QueueName: name.replace('.fifo', '-dlq.fifo'),
      });
    });

    it('keeps messages invisible for at least 6x the consuming function’s timeout', () => {
      for (const [, mapping] of ofType(template, 'AWS::Lambda::EventSourceMapping')) {
        const queue = resource(template, refId(mapping.EventSourceArn)).Properties;
        const fn = resource(template, refId(mapping.FunctionName)).Properties;
        expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * (fn.Timeout as number));
      }
    });

    it('encrypts every queue and denies every request not made over TLS', () => {
      const queues = ofType(template, 'AWS::SQS::Queue');
      expect(queues).toHaveLength(6);
      for (const [id, queue] of queues) {
        expect(queue.SqsManagedSseEnabled, id).toBe(true);
        expect(queuePolicyStatements(template, id), id).toContainEqual({
          Effect: 'Deny',
          Principal: { AWS: '*' },
          Action: 'sqs:*',
          Resource: { 'Fn::GetAtt': [id, 'Arn'] },
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        });
      }
    });
  });

  describe('event source mappings', () => {
    it('feed each function from its queue in batches of 10, reporting batch item failures', () => {
      const mappings = ofType(template, 'AWS::Lambda::EventSourceMapping');
      expect(mappings).toHaveLength(3);
      for (const [id, mapping] of mappings) {
        expect(mapping, id).toMatchObject({
          BatchSize: 10,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          ScalingConfig: { MaximumConcurrency: 5 },
        });
        expect(mapping.MaximumBatchingWindowInSeconds, id).toBeUndefined();
      }
      const pairs = mappings.map(([, m]) => [
        resource(template, refId(m.FunctionName)).Properties.FunctionName,
        resource(template, refId(m.EventSourceArn)).Properties.QueueName,
      ]);
      expect(pairs.sort()).toEqual([
        [`${PREFIX}-ec2-events`, `${PREFIX}-ec2-events`],
        [`${PREFIX}-node`, `${PREFIX}-node.fifo`],
        [`${PREFIX}-node-lifecycle`, `${PREFIX}-node-lifecycle.fifo`],
      ]);
    });
  });

  describe('functions', () => {
    it('are Node.js 22 on arm64, one code package each, configured from the stage', () => {
      const functions = ofType(template, 'AWS::Lambda::Function');
      expect(functions.map(([, f]) => f.FunctionName).sort()).toEqual([
        `${PREFIX}-ec2-events`,
        `${PREFIX}-node`,
        `${PREFIX}-node-lifecycle`,
        `${PREFIX}-resync`,
      ]);
      const keys = new Set<string>();
      for (const [id, fn] of functions) {
        expect(fn, id).toMatchObject({
          Runtime: 'nodejs22.x',
          Architectures: ['arm64'],
          Handler: 'index.handler',
          MemorySize: 512,
        });
        keys.add((fn.Code as { S3Key: string }).S3Key);
        expect(fn.ReservedConcurrentExecutions, id).toBeUndefined();
        expect(fn.VpcConfig, id).toBeUndefined();
        expect((fn.LoggingConfig as Json).LogGroup, id).toBeDefined();
      }
      expect(keys.size).toBe(4);
    });

    it('give each function the environment its start-up check needs', () => {
      const env = (name: string) =>
        (resource(template, functionIdNamed(template, name)).Properties.Environment as { Variables: Json }).Variables;
      for (const name of ['node', 'node-lifecycle', 'ec2-events']) {
        expect(env(`${PREFIX}-${name}`), name).toMatchObject({
          CLUSTER_NAME: 'prod-eu',
          KUBERNETES_AUTH_MODE: 'eks',
          KUBERNETES_API_ENDPOINT: BASE_ENV.CCM_KUBERNETES_API_ENDPOINT,
          EKS_CLUSTER_NAME: 'prod-eu',
          NODE_IP_FAMILIES: 'ipv4',
          LOG_LEVEL: 'INFO',
          AWS_CALL_METRICS: 'operation',
        });
        expect(env(`${PREFIX}-${name}`).AWS_REGION, 'reserved by Lambda').toBeUndefined();
      }
      expect(refId(env(`${PREFIX}-ec2-events`).NODE_LIFECYCLE_QUEUE_URL)).toBe(
        queueIdNamed(template, `${PREFIX}-node-lifecycle.fifo`),
      );
    });

    it('deploys nothing else that runs code (no SST custom-resource handler)', () => {
      expect(ofType(template, 'AWS::Lambda::Function')).toHaveLength(4);
      expect(ofType(template, 'AWS::IAM::Role')).toHaveLength(5);
    });
  });

  describe('EC2 events', () => {
    it('has one rule per event type with exactly these patterns', () => {
      const patterns = eventRules(template).map(([, r]) => r.EventPattern);
      expect(patterns).toHaveLength(4);
      expect(patterns).toEqual(
        expect.arrayContaining([
          { source: ['aws.ec2'], 'detail-type': ['EC2 Instance State-change Notification'] },
          { source: ['aws.ec2'], 'detail-type': ['EC2 Spot Instance Interruption Warning'] },
          { source: ['aws.ec2'], 'detail-type': ['EC2 Instance Rebalance Recommendation'] },
          {
            source: ['aws.health'],
            'detail-type': ['AWS Health Event'],
            detail: { service: ['EC2'], eventTypeCategory: ['scheduledChange'] },
          },
        ]),
      );
    });

    it('sends them to a short-lived, encrypted standard queue with its own DLQ', () => {
      const eventsQueue = queueIdNamed(template, `${PREFIX}-ec2-events`);
      for (const [id, rule] of eventRules(template)) {
        expect(rule.State, id).toBe('ENABLED');
        expect(rule.EventBusName, id).toBeUndefined(); // the default bus
        expect(
          (rule.Targets as Json[]).map((t) => refId(t.Arn)),
          id,
        ).toEqual([eventsQueue]);
      }
      const queue = resource(template, eventsQueue).Properties;
      expect(queue.FifoQueue).toBeUndefined();
      expect(queue).toMatchObject({ MessageRetentionPeriod: 900, SqsManagedSseEnabled: true, VisibilityTimeout: 180 });
      expect(resource(template, refId((queue.RedrivePolicy as Json).deadLetterTargetArn)).Properties.QueueName).toBe(
        `${PREFIX}-ec2-events-dlq`,
      );
    });

    it('lets only these rules send to the queue, and only SendMessage', () => {
      const eventsQueue = queueIdNamed(template, `${PREFIX}-ec2-events`);
      const rules = eventRules(template).map(([id]) => ({ 'Fn::GetAtt': [id, 'Arn'] }));
      const allows = queuePolicyStatements(template, eventsQueue).filter((s) => s.Effect === 'Allow');
      expect(allows).toEqual([
        {
          Sid: 'EventBridgeRules',
          Effect: 'Allow',
          Principal: { Service: 'events.amazonaws.com' },
          Action: 'sqs:SendMessage',
          Resource: { 'Fn::GetAtt': [eventsQueue, 'Arn'] },
          Condition: { ArnEquals: { 'aws:SourceArn': rules } },
        },
      ]);
    });
  });

  describe('IAM', () => {
    it('allows no wildcard action anywhere (no "*", no "service:*", no "service:Prefix*")', () => {
      const allowed = templateStatements(template).filter((s) => s.statement.Effect === 'Allow');
      expect(allowed.length).toBeGreaterThan(10);
      for (const { where, statement } of allowed) {
        expect(statement.NotAction, where).toBeUndefined();
        for (const action of actionsOf([statement])) expect(action, where).not.toContain('*');
      }
    });

    it('passes every least-privilege rule (Resource "*" only for Describe, tagged writes, no managed policies)', () => {
      expect(policyViolations(template, 'prod-eu')).toEqual([]);
    });

    it('grants no EC2 or ELBv2 write yet, so none without the ownership condition', () => {
      const writes = templateStatements(template)
        .filter((s) => s.statement.Effect === 'Allow')
        .flatMap((s) => actionsOf([s.statement]))
        .filter((a) => /^(ec2|elasticloadbalancing):/.test(a) && !a.includes(':Describe'));
      expect(writes).toEqual([]);
    });

    it.each([
      [
        'node',
        [
          'ec2:DescribeAvailabilityZones',
          'ec2:DescribeInstances',
          'eks:DescribeCluster',
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'sqs:ChangeMessageVisibility',
          'sqs:DeleteMessage',
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
        ],
      ],
      [
        'node-lifecycle',
        [
          'ec2:DescribeInstances',
          'eks:DescribeCluster',
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'sqs:ChangeMessageVisibility',
          'sqs:DeleteMessage',
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
        ],
      ],
      [
        'ec2-events',
        [
          'eks:DescribeCluster',
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'sqs:DeleteMessage',
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
          'sqs:SendMessage',
        ],
      ],
    ])('the %s role may call exactly what the function calls', (name, expected) => {
      const fn = resource(template, functionIdNamed(template, `${PREFIX}-${name}`)).Properties;
      const roleId = refId(fn.Role);
      expect(actionsOf(roleStatements(template, roleId))).toEqual(expected);
      expect(resource(template, roleId).Properties.ManagedPolicyArns).toBeUndefined();
    });

    it('scopes queue access to the function’s own queue, and the router’s sends to the lifecycle queue', () => {
      const cases: [string, string, string][] = [
        ['node', 'sqs:ReceiveMessage', `${PREFIX}-node.fifo`],
        ['node-lifecycle', 'sqs:ChangeMessageVisibility', `${PREFIX}-node-lifecycle.fifo`],
        ['ec2-events', 'sqs:ReceiveMessage', `${PREFIX}-ec2-events`],
        ['ec2-events', 'sqs:SendMessage', `${PREFIX}-node-lifecycle.fifo`],
      ];
      for (const [name, action, queueName] of cases) {
        const roleId = refId(resource(template, functionIdNamed(template, `${PREFIX}-${name}`)).Properties.Role);
        const statement = roleStatements(template, roleId).find((s) => actionsOf([s]).includes(action));
        expect(statement?.Resource, `${name} ${action}`).toEqual({
          'Fn::GetAtt': [queueIdNamed(template, queueName), 'Arn'],
        });
      }
    });

    it('makes every function role an EKS access entry in its own Kubernetes group', () => {
      const entries = ofType(template, 'AWS::EKS::AccessEntry');
      expect(entries.map(([, e]) => e.KubernetesGroups).sort()).toEqual([
        ['serverless-ccm:ec2-events'],
        ['serverless-ccm:node'],
        ['serverless-ccm:node-lifecycle'],
        ['serverless-ccm:resync'],
      ]);
      for (const [, entry] of entries) expect(entry).toMatchObject({ ClusterName: 'prod-eu', Type: 'STANDARD' });
      // A fixed username per function (the relay's validating webhook names the IPAM controller by it).
      expect(entries.map(([, e]) => e.Username).sort()).toEqual(
        entries.map(([, e]) => (e.KubernetesGroups as string[])[0]).sort(),
      );
    });
  });

  describe('resync', () => {
    it('runs on a schedule and may only send to the reconciler queues', () => {
      const schedules = ofType(template, 'AWS::Events::Rule').filter(([, r]) => r.ScheduleExpression !== undefined);
      expect(schedules).toHaveLength(1);
      const [, schedule] = schedules[0]!;
      expect(schedule.ScheduleExpression).toBe('rate(5 minutes)');
      const fnId = functionIdNamed(template, `${PREFIX}-resync`);
      expect((schedule.Targets as Json[]).map((t) => refId(t.Arn))).toEqual([fnId]);
      const roleId = refId(resource(template, fnId).Properties.Role);
      const send = roleStatements(template, roleId).find((st) => actionsOf([st]).includes('sqs:SendMessage'));
      expect(send?.Resource).toEqual(
        FIFO_QUEUES.map((name) => ({ 'Fn::GetAtt': [queueIdNamed(template, name), 'Arn'] })),
      );
      const env = (resource(template, fnId).Properties.Environment as { Variables: Json }).Variables;
      expect(refId(env.NODE_QUEUE_URL)).toBe(queueIdNamed(template, `${PREFIX}-node.fifo`));
      expect(refId(env.NODE_LIFECYCLE_QUEUE_URL)).toBe(queueIdNamed(template, `${PREFIX}-node-lifecycle.fifo`));
    });

    it('may describe instances, for the node sweep, and make no other EC2 call', () => {
      const roleId = refId(resource(template, functionIdNamed(template, `${PREFIX}-resync`)).Properties.Role);
      const ec2 = roleStatements(template, roleId).filter((st) => actionsOf([st]).some((a) => a.startsWith('ec2:')));
      expect(ec2).toEqual([{ Sid: 'Ec2Describe', Effect: 'Allow', Action: 'ec2:DescribeInstances', Resource: '*' }]);
    });
  });

  describe('relay role', () => {
    it('can only send messages to the reconciler queues', () => {
      const roleId = refId((template.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
      expect(roleStatements(template, roleId)).toEqual([
        {
          Sid: 'SendKeys',
          Effect: 'Allow',
          Action: 'sqs:SendMessage',
          Resource: FIFO_QUEUES.map((name) => ({ 'Fn::GetAtt': [queueIdNamed(template, name), 'Arn'] })),
        },
      ]);
      expect(resource(template, roleId).Properties.ManagedPolicyArns).toBeUndefined();
    });

    it('is assumable only through Pod Identity, for the relay service account of this cluster', () => {
      const roleId = refId((template.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
      expect(resource(template, roleId).Properties.AssumeRolePolicyDocument).toEqual({
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 'pods.eks.amazonaws.com' },
            Action: ['sts:AssumeRole', 'sts:TagSession'],
            Condition: {
              StringEquals: {
                'aws:RequestTag/eks-cluster-name': 'prod-eu',
                'aws:RequestTag/kubernetes-namespace': 'kube-system',
                'aws:RequestTag/kubernetes-service-account': 'serverless-ccm-relay',
              },
            },
          },
        ],
      });
      expect(ofType(template, 'AWS::EKS::PodIdentityAssociation').map(([, a]) => a)).toEqual([
        {
          ClusterName: 'prod-eu',
          Namespace: 'kube-system',
          ServiceAccount: 'serverless-ccm-relay',
          RoleArn: { 'Fn::GetAtt': [roleId, 'Arn'] },
          Tags: expect.any(Array),
        },
      ]);
    });
  });

  describe('alarms and dashboard', () => {
    const alarmsOn = (metric: string) =>
      ofType(template, 'AWS::CloudWatch::Alarm')
        .filter(([, a]) => a.MetricName === metric)
        .map(([, a]) => a);

    it('alarms when any DLQ holds a message', () => {
      const alarms = alarmsOn('ApproximateNumberOfMessagesVisible');
      const dlqs = [`${PREFIX}-node-dlq.fifo`, `${PREFIX}-node-lifecycle-dlq.fifo`, `${PREFIX}-ec2-events-dlq`];
      expect(alarms.map((a) => refId((a.Dimensions as Json[])[0]?.Value)).sort()).toEqual(
        dlqs.map((name) => queueIdNamed(template, name)).sort(),
      );
      for (const alarm of alarms) {
        expect(alarm).toMatchObject({
          Namespace: 'AWS/SQS',
          Statistic: 'Maximum',
          Threshold: 0,
          ComparisonOperator: 'GreaterThanThreshold',
          TreatMissingData: 'notBreaching',
        });
      }
    });

    it('alarms when a queue’s oldest message is older than its threshold', () => {
      const thresholds = Object.fromEntries(
        alarmsOn('ApproximateAgeOfOldestMessage').map((a) => [
          resource(template, refId((a.Dimensions as Json[])[0]?.Value)).Properties.QueueName,
          a.Threshold,
        ]),
      );
      expect(thresholds).toEqual({
        [`${PREFIX}-node.fifo`]: 900,
        [`${PREFIX}-node-lifecycle.fifo`]: 900,
        [`${PREFIX}-ec2-events`]: 300,
      });
    });

    it('has a dashboard of the EMF metrics and queue age', () => {
      const { name, metrics, searches } = dashboard(template);
      expect(name).toBe(`${PREFIX}-control-plane`);
      for (const metric of [MetricName.Reconciles, MetricName.ReconcileErrors, MetricName.AwsCalls]) {
        expect(searches).toContainEqual(
          expect.stringMatching(`^SEARCH\\('\\{ServerlessCCM,.*\\} MetricName="${metric}"'`),
        );
      }
      expect(searches).toContainEqual(
        expect.stringContaining(`{ServerlessCCM,awsService,operation,service} MetricName="AwsCalls"`),
      );
      const queueAge = metrics.filter((m) => m[0] === 'AWS/SQS' && m[1] === 'ApproximateAgeOfOldestMessage');
      expect(queueAge).toHaveLength(3);
    });

    it('with CCM_AWS_CALL_METRICS=service, counts AWS calls by AWS service, on the dashboard too', async () => {
      const { template: lean } = await synth({ ...BASE_ENV, CCM_AWS_CALL_METRICS: 'service' });
      const env = (
        resource(lean, functionIdNamed(lean, `${PREFIX}-node`)).Properties.Environment as { Variables: Json }
      ).Variables;
      expect(env.AWS_CALL_METRICS).toBe('service');
      const { searches } = dashboard(lean);
      expect(searches).toContainEqual(
        expect.stringContaining(`{ServerlessCCM,awsService,service} MetricName="AwsCalls"`),
      );
      // Throttles keep the operation: rare, and the operation is the point.
      expect(searches).toContainEqual(
        expect.stringContaining(`{ServerlessCCM,awsService,operation,service} MetricName="AwsThrottles"`),
      );
    });

    it('with CCM_DASHBOARD=false, has no dashboard and no Dashboard output, and keeps every alarm', async () => {
      const { template: bare } = await synth({ ...BASE_ENV, CCM_DASHBOARD: 'false' });
      expect(ofType(bare, 'AWS::CloudWatch::Dashboard')).toEqual([]);
      expect(Object.keys(bare.Outputs as Json)).not.toContain('Dashboard');
      expect(Object.keys(template.Outputs as Json)).toContain('Dashboard');
      expect(ofType(bare, 'AWS::CloudWatch::Alarm').length).toBe(ofType(template, 'AWS::CloudWatch::Alarm').length);
    });
  });

  it('outputs the queue URLs and the relay role ARN', () => {
    const outputs = template.Outputs as Record<string, { Value: unknown }>;
    expect(refId(outputs.NodeQueueUrl?.Value)).toBe(queueIdNamed(template, `${PREFIX}-node.fifo`));
    expect(refId(outputs.NodeLifecycleQueueUrl?.Value)).toBe(queueIdNamed(template, `${PREFIX}-node-lifecycle.fifo`));
    expect(refId(outputs.Ec2EventsQueueUrl?.Value)).toBe(queueIdNamed(template, `${PREFIX}-ec2-events`));
    expect(outputs.RelayRoleArn?.Value).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^RelayRole/), 'Arn'] });
    expect(outputs.RelayServiceAccount?.Value).toBe('kube-system/serverless-ccm-relay');
  });
});

describe('the control plane stack (token auth, IRSA, VPC, per-function settings)', () => {
  let template: Json;
  beforeAll(async () => {
    ({ template } = await synth({
      ...BASE_ENV,
      CCM_KUBERNETES_AUTH_MODE: 'token',
      CCM_KUBERNETES_TOKEN_SECRET_ID: 'ccm/prod-eu',
      CCM_KUBERNETES_TOKEN_SECRET_KMS_KEY_ARN: 'arn:aws:kms:eu-west-1:111122223333:key/abcd',
      CCM_VPC_SUBNET_IDS: 'subnet-0123abcd,subnet-0456ef01',
      CCM_VPC_SECURITY_GROUP_IDS: 'sg-0123abcd',
      CCM_RELAY_IDENTITY: 'irsa',
      CCM_RELAY_NAMESPACE: 'serverless-ccm',
      CCM_RELAY_OIDC_PROVIDER_ARN: 'arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC123',
      CCM_NODE_MEMORY_MB: '1024',
      CCM_NODE_TIMEOUT_SECONDS: '120',
      CCM_NODE_RESERVED_CONCURRENCY: '10',
      CCM_NODE_MAX_CONCURRENCY: '4',
      CCM_NODE_MAX_RECEIVE_COUNT: '40',
      CCM_ALARM_TOPIC_ARN: 'arn:aws:sns:eu-west-1:111122223333:oncall',
    }));
  }, 60_000);

  it('applies per-function memory, timeout, concurrency and receive count', () => {
    const fn = resource(template, functionIdNamed(template, `${PREFIX}-node`)).Properties;
    expect(fn).toMatchObject({ MemorySize: 1024, Timeout: 120, ReservedConcurrentExecutions: 10 });
    const queue = resource(template, queueIdNamed(template, `${PREFIX}-node.fifo`)).Properties;
    expect(queue).toMatchObject({ VisibilityTimeout: 720, RedrivePolicy: { maxReceiveCount: 40 } });
    const mapping = ofType(template, 'AWS::Lambda::EventSourceMapping').find(
      ([, m]) => refId(m.EventSourceArn) === queueIdNamed(template, `${PREFIX}-node.fifo`),
    );
    expect(mapping?.[1].ScalingConfig).toEqual({ MaximumConcurrency: 4 });
  });

  it('reads the token secret (decrypting only through Secrets Manager) instead of describing the cluster', () => {
    const roleId = refId(resource(template, functionIdNamed(template, `${PREFIX}-node`)).Properties.Role);
    const statements = roleStatements(template, roleId);
    expect(actionsOf(statements)).not.toContain('eks:DescribeCluster');
    expect(statements.find((s) => s.Sid === 'KubernetesToken')?.Resource).toEqual({
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':secretsmanager:eu-west-1:',
          { Ref: 'AWS::AccountId' },
          ':secret:ccm/prod-eu-??????',
        ],
      ],
    });
    expect(statements.find((s) => s.Sid === 'KubernetesTokenKey')).toEqual({
      Sid: 'KubernetesTokenKey',
      Effect: 'Allow',
      Action: 'kms:Decrypt',
      Resource: 'arn:aws:kms:eu-west-1:111122223333:key/abcd',
      Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } },
    });
    expect(ofType(template, 'AWS::EKS::AccessEntry')).toEqual([]);
  });

  it('runs the functions in the VPC with only the managed policy Lambda needs for it', () => {
    for (const [id, fn] of ofType(template, 'AWS::Lambda::Function')) {
      expect(fn.VpcConfig, id).toEqual({
        SubnetIds: ['subnet-0123abcd', 'subnet-0456ef01'],
        SecurityGroupIds: ['sg-0123abcd'],
      });
      const arns = JSON.stringify(resource(template, refId(fn.Role)).Properties.ManagedPolicyArns);
      expect(arns).toContain(':iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole');
    }
    expect(policyViolations(template, 'prod-eu')).toEqual([]);
  });

  it('trusts only the relay service account’s IRSA token', () => {
    const roleId = refId((template.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
    const issuer = 'oidc.eks.eu-west-1.amazonaws.com/id/ABC123';
    expect(resource(template, roleId).Properties.AssumeRolePolicyDocument).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { Federated: `arn:aws:iam::111122223333:oidc-provider/${issuer}` },
          Action: 'sts:AssumeRoleWithWebIdentity',
          Condition: {
            StringEquals: {
              [`${issuer}:sub`]: 'system:serviceaccount:serverless-ccm:serverless-ccm-relay',
              [`${issuer}:aud`]: 'sts.amazonaws.com',
            },
          },
        },
      ],
    });
    expect(actionsOf(roleStatements(template, roleId))).toEqual(['sqs:SendMessage']);
    expect(ofType(template, 'AWS::EKS::PodIdentityAssociation')).toEqual([]);
  });

  it('notifies the configured topic on alarm and recovery', () => {
    const alarms = ofType(template, 'AWS::CloudWatch::Alarm');
    expect(alarms).toHaveLength(6);
    for (const [id, alarm] of alarms) {
      expect(alarm.AlarmActions, id).toEqual(['arn:aws:sns:eu-west-1:111122223333:oncall']);
      expect(alarm.OKActions, id).toEqual(['arn:aws:sns:eu-west-1:111122223333:oncall']);
    }
  });
});

describe('the control plane stack with the route controller (CCM_CLUSTER_CIDRS set)', () => {
  let template: Json;
  beforeAll(async () => {
    ({ template } = await synth({
      ...BASE_ENV,
      CCM_CLUSTER_CIDRS: '100.64.0.0/16,fd00:64::/56',
      CCM_ROUTE_TABLE_ID: 'rtb-0123456789abcdef0',
      CCM_ROUTE_TABLE_LIMIT: '100',
    }));
  }, 60_000);

  it('is absent without cluster CIDRs', async () => {
    const { template: plain } = await synth(BASE_ENV);
    expect(() => functionIdNamed(plain, `${PREFIX}-route`)).toThrow(/no function/);
  });

  it('adds a FIFO queue with a DLQ and a function configured from the stage', () => {
    const queue = resource(template, queueIdNamed(template, `${PREFIX}-route.fifo`)).Properties;
    expect(queue).toMatchObject({ FifoQueue: true, SqsManagedSseEnabled: true });
    expect(queue.RedrivePolicy).toBeDefined();
    const fn = resource(template, functionIdNamed(template, `${PREFIX}-route`)).Properties as {
      Environment: { Variables: Record<string, string> };
    };
    expect(fn.Environment.Variables).toMatchObject({
      CLUSTER_CIDRS: '100.64.0.0/16,fd00:64::/56',
      ROUTE_TABLE_ID: 'rtb-0123456789abcdef0',
      ROUTE_TABLE_LIMIT: '100',
    });
  });

  it('grants route and source/dest-check writes only on resources this cluster owns', () => {
    const roleId = refId(resource(template, functionIdNamed(template, `${PREFIX}-route`)).Properties.Role);
    const statements = roleStatements(template, roleId);
    for (const action of [
      'ec2:CreateRoute',
      'ec2:ReplaceRoute',
      'ec2:DeleteRoute',
      'ec2:ModifyInstanceAttribute',
      'ec2:ModifyNetworkInterfaceAttribute',
    ]) {
      const statement = statements.find((s) => actionsOf([s]).includes(action));
      expect(statement?.Condition, action).toEqual({
        StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' },
      });
    }
    expect(actionsOf(statements)).toContain('ec2:DescribeRouteTables');
    expect(policyViolations(template, 'prod-eu')).toEqual([]);
  });

  it('lets the relay send route keys', () => {
    const relayPolicies = ofType(template, 'AWS::IAM::Role').filter(([id]) => id.startsWith('RelayRole'));
    const text = JSON.stringify(relayPolicies);
    expect(text).toContain(queueIdNamed(template, `${PREFIX}-route.fifo`));
  });
});

describe('the control plane stack with the service controller (CCM_VPC_ID set)', () => {
  const VPC_ID = 'vpc-0123456789abcdef0';
  const ARN = (rest: string) => `arn:{AWS::Partition}:${rest}`;
  const SG = ARN('ec2:eu-west-1:{AWS::AccountId}:security-group/*');
  const VPC = ARN(`ec2:eu-west-1:{AWS::AccountId}:vpc/${VPC_ID}`);
  const LB = ARN('elasticloadbalancing:eu-west-1:{AWS::AccountId}:loadbalancer/net/*/*');
  const TG = ARN('elasticloadbalancing:eu-west-1:{AWS::AccountId}:targetgroup/*/*');
  const LISTENER = ARN('elasticloadbalancing:eu-west-1:{AWS::AccountId}:listener/net/*/*/*');
  const OWNED = { StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' } };
  const OWNED_REQUEST = { 'aws:RequestTag/kubernetes.io/cluster/prod-eu': 'owned' };

  /** An ARN as CloudFormation will resolve it, references written `{AWS::AccountId}`. */
  const text = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(text);
    const join = (value as { 'Fn::Join'?: [string, unknown[]] } | undefined)?.['Fn::Join'];
    if (!join) return value;
    return join[1].map((p) => (typeof p === 'string' ? p : `{${(p as { Ref: string }).Ref}}`)).join(join[0]);
  };

  let template: Json;
  let statements: PolicyStatementJson[];
  beforeAll(async () => {
    ({ template } = await synth({
      ...BASE_ENV,
      CCM_VPC_ID: VPC_ID,
      CCM_LOAD_BALANCER_CLASS: 'example.com/nlb',
      CCM_SERVICE_NODE_PORT_RANGE: '30000-32767',
      CCM_SERVICE_EXTERNAL_MANAGED_TAGS: 'cost-center, team',
      CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'classic',
      CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS: '90',
    }));
    statements = roleStatements(
      template,
      refId(resource(template, functionIdNamed(template, `${PREFIX}-service`)).Properties.Role),
    );
  }, 60_000);

  it('is absent without CCM_VPC_ID', async () => {
    const { template: plain } = await synth(BASE_ENV);
    expect(() => functionIdNamed(plain, `${PREFIX}-service`)).toThrow(/no function/);
    expect(() => queueIdNamed(plain, `${PREFIX}-service.fifo`)).toThrow(/no queue/);
  });

  it('adds a FIFO queue with a DLQ, sized for long requeues', () => {
    const queue = resource(template, queueIdNamed(template, `${PREFIX}-service.fifo`)).Properties;
    expect(queue).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: false,
      SqsManagedSseEnabled: true,
      VisibilityTimeout: 720,
      RedrivePolicy: { maxReceiveCount: 200 },
    });
    const dlq = resource(template, refId((queue.RedrivePolicy as Json).deadLetterTargetArn)).Properties;
    expect(dlq).toMatchObject({ FifoQueue: true, QueueName: `${PREFIX}-service-dlq.fifo` });
    const mapping = ofType(template, 'AWS::Lambda::EventSourceMapping').find(
      ([, m]) => refId(m.EventSourceArn) === queueIdNamed(template, `${PREFIX}-service.fifo`),
    );
    expect(mapping?.[1]).toMatchObject({
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
    });
    expect(refId(mapping?.[1].FunctionName)).toBe(functionIdNamed(template, `${PREFIX}-service`));
  });

  it('configures the function from the stage', () => {
    const fn = resource(template, functionIdNamed(template, `${PREFIX}-service`)).Properties as {
      Timeout: number;
      Environment: { Variables: Record<string, string> };
    };
    expect(fn.Timeout).toBe(120);
    expect(fn.Environment.Variables).toMatchObject({
      CLUSTER_NAME: 'prod-eu',
      VPC_ID: VPC_ID,
      LOAD_BALANCER_CLASS: 'example.com/nlb',
      SERVICE_NODE_PORT_RANGE: '30000-32767',
      SERVICE_EXTERNAL_MANAGED_TAGS: 'cost-center,team',
      SERVICE_DEFAULT_LOAD_BALANCER_TYPE: 'classic',
      SERVICE_PROVISIONING_REQUEUE_SECONDS: '90',
      SERVICE_CLEANUP_REQUEUE_SECONDS: '60',
      SERVICE_REPLACEMENT_GRACE_SECONDS: '360',
    });
  });

  it('sets the optional settings only when configured', async () => {
    const { template: minimal } = await synth({ ...BASE_ENV, CCM_VPC_ID: VPC_ID });
    const variables = (
      resource(minimal, functionIdNamed(minimal, `${PREFIX}-service`)).Properties as {
        Environment: { Variables: Record<string, string> };
      }
    ).Environment.Variables;
    expect(variables.VPC_ID).toBe(VPC_ID);
    // The default is always stated, so the function never depends on its own default agreeing.
    expect(variables.SERVICE_DEFAULT_LOAD_BALANCER_TYPE).toBe('nlb');
    for (const name of ['LOAD_BALANCER_CLASS', 'SERVICE_NODE_PORT_RANGE', 'SERVICE_EXTERNAL_MANAGED_TAGS']) {
      expect(variables[name], name).toBeUndefined();
    }
  });

  it('may call exactly what functions/service calls', () => {
    expect([...new Set(actionsOf(statements))]).toEqual([
      'ec2:AuthorizeSecurityGroupIngress',
      'ec2:CreateSecurityGroup',
      'ec2:CreateTags',
      'ec2:DeleteSecurityGroup',
      'ec2:DeleteTags',
      'ec2:DescribeAvailabilityZones',
      'ec2:DescribeInstances',
      'ec2:DescribeRouteTables',
      'ec2:DescribeSecurityGroups',
      'ec2:DescribeSubnets',
      'ec2:RevokeSecurityGroupIngress',
      'eks:DescribeCluster',
      'elasticloadbalancing:AddListenerCertificates',
      'elasticloadbalancing:AddTags',
      'elasticloadbalancing:ApplySecurityGroupsToLoadBalancer',
      'elasticloadbalancing:AttachLoadBalancerToSubnets',
      'elasticloadbalancing:ConfigureHealthCheck',
      'elasticloadbalancing:CreateListener',
      'elasticloadbalancing:CreateLoadBalancer',
      'elasticloadbalancing:CreateLoadBalancerListeners',
      'elasticloadbalancing:CreateLoadBalancerPolicy',
      'elasticloadbalancing:CreateTargetGroup',
      'elasticloadbalancing:DeleteListener',
      'elasticloadbalancing:DeleteLoadBalancer',
      'elasticloadbalancing:DeleteLoadBalancerListeners',
      'elasticloadbalancing:DeleteLoadBalancerPolicy',
      'elasticloadbalancing:DeleteTargetGroup',
      'elasticloadbalancing:DeregisterInstancesFromLoadBalancer',
      'elasticloadbalancing:DeregisterTargets',
      'elasticloadbalancing:DescribeInstanceHealth',
      'elasticloadbalancing:DescribeListenerAttributes',
      'elasticloadbalancing:DescribeListenerCertificates',
      'elasticloadbalancing:DescribeListeners',
      'elasticloadbalancing:DescribeLoadBalancerAttributes',
      'elasticloadbalancing:DescribeLoadBalancerPolicies',
      'elasticloadbalancing:DescribeLoadBalancers',
      'elasticloadbalancing:DescribeTags',
      'elasticloadbalancing:DescribeTargetGroupAttributes',
      'elasticloadbalancing:DescribeTargetGroups',
      'elasticloadbalancing:DescribeTargetHealth',
      'elasticloadbalancing:DetachLoadBalancerFromSubnets',
      'elasticloadbalancing:ModifyListener',
      'elasticloadbalancing:ModifyListenerAttributes',
      'elasticloadbalancing:ModifyLoadBalancerAttributes',
      'elasticloadbalancing:ModifyTargetGroup',
      'elasticloadbalancing:ModifyTargetGroupAttributes',
      'elasticloadbalancing:RegisterInstancesWithLoadBalancer',
      'elasticloadbalancing:RegisterTargets',
      'elasticloadbalancing:RemoveListenerCertificates',
      'elasticloadbalancing:RemoveTags',
      'elasticloadbalancing:SetIpAddressType',
      'elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer',
      'elasticloadbalancing:SetLoadBalancerPoliciesOfListener',
      'elasticloadbalancing:SetSecurityGroups',
      'elasticloadbalancing:SetSubnets',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
    ]);
  });

  /** Every statement granting `action`, as [resources, condition]. */
  // The Network Load Balancer statements; the Classic ELB ones (Sid Classic*, built and checked by
  // stacks/iam-classic-elb.ts and its tests) are looked at on their own below.
  const isClassic = (s: (typeof statements)[number]) => String(s.Sid ?? '').startsWith('Classic');
  const grants = (action: string) =>
    statements
      .filter((s) => !isClassic(s) && actionsOf([s]).includes(action))
      .map((s) => {
        const arnEquals = s.Condition?.ArnEquals as Record<string, unknown> | undefined;
        const condition = arnEquals
          ? { ...s.Condition, ArnEquals: Object.fromEntries(Object.entries(arnEquals).map(([k, v]) => [k, text(v)])) }
          : s.Condition;
        return [text(s.Resource), condition] as const;
      })
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

  it('Classic ELB: describes on "*", creates tagged owned, every other write only on owned load balancers', () => {
    const classic = statements.filter(isClassic);
    expect(classic.map((s) => s.Sid).sort()).toEqual([
      'ClassicElbDescribe',
      'ClassicLoadBalancerCreate',
      'ClassicLoadBalancerTagOnCreate',
      'ClassicLoadBalancerTagRemoval',
      'ClassicLoadBalancerWrites',
    ]);
    for (const statement of classic) {
      if (statement.Sid === 'ClassicElbDescribe') expect(statement.Resource).toBe('*');
      else expect(JSON.stringify(statement.Condition)).toContain('kubernetes.io/cluster/');
    }
  });

  it('reads with Describe calls only, on "*" (they take no resource)', () => {
    const reads = actionsOf(statements).filter((a) => a.includes(':Describe') && a !== 'eks:DescribeCluster');
    for (const action of reads) {
      const granting = statements.filter((s) => actionsOf([s]).includes(action));
      expect(granting.length, action).toBeGreaterThan(0);
      for (const statement of granting)
        expect([text(statement.Resource), statement.Condition], action).toEqual(['*', undefined]);
    }
  });

  it.each([
    ['elasticloadbalancing:CreateLoadBalancer', [LB, TG]],
    ['elasticloadbalancing:CreateTargetGroup', [LB, TG]],
  ])('creates %s only when the request tags it owned', (action, resources) => {
    expect(grants(action)).toEqual([[resources, { StringEquals: OWNED_REQUEST }]]);
  });

  it('creates security groups tagged owned, in the configured VPC only', () => {
    expect(grants('ec2:CreateSecurityGroup')).toEqual([
      [SG, { StringEquals: OWNED_REQUEST }],
      // The VPC half of the call: the VPC is not ours to tag, so it is named instead.
      [VPC, undefined],
    ]);
  });

  it('tags on create only, and otherwise only what is already owned', () => {
    expect(grants('ec2:CreateTags')).toEqual([
      [SG, OWNED],
      [SG, { StringEquals: { 'ec2:CreateAction': ['CreateSecurityGroup'], ...OWNED_REQUEST } }],
    ]);
    expect(grants('elasticloadbalancing:AddTags')).toEqual(
      [
        [LB, OWNED],
        [TG, OWNED],
        [LISTENER, OWNED],
        // Listeners earlier versions created untagged: only with our tag, only those without any tag of ours.
        [
          LISTENER,
          {
            StringEquals: OWNED_REQUEST,
            Null: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'true' },
          },
        ],
        [LISTENER, { StringEquals: { 'elasticloadbalancing:CreateAction': ['CreateListener'], ...OWNED_REQUEST } }],
        [
          [LB, TG],
          {
            StringEquals: {
              'elasticloadbalancing:CreateAction': ['CreateLoadBalancer', 'CreateTargetGroup'],
              ...OWNED_REQUEST,
            },
          },
        ],
      ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    );
  });

  it.each([
    ['ec2:DeleteSecurityGroup', SG],
    ['elasticloadbalancing:DeleteLoadBalancer', LB],
    ['elasticloadbalancing:SetSecurityGroups', LB],
    ['elasticloadbalancing:SetSubnets', LB],
    ['elasticloadbalancing:SetIpAddressType', LB],
    ['elasticloadbalancing:ModifyLoadBalancerAttributes', LB],
    ['elasticloadbalancing:CreateListener', LB],
    ['elasticloadbalancing:ModifyTargetGroup', TG],
    ['elasticloadbalancing:ModifyTargetGroupAttributes', TG],
    ['elasticloadbalancing:DeleteTargetGroup', TG],
    ['elasticloadbalancing:RegisterTargets', TG],
    ['elasticloadbalancing:DeregisterTargets', TG],
    // The listener's own tag: listeners are tagged on create (and old untagged ones backfilled first).
    ['elasticloadbalancing:ModifyListener', LISTENER],
    ['elasticloadbalancing:DeleteListener', LISTENER],
    // Authorized on the listener itself, not on a certificate (the service authorization reference).
    ['elasticloadbalancing:ModifyListenerAttributes', LISTENER],
    ['elasticloadbalancing:AddListenerCertificates', LISTENER],
    ['elasticloadbalancing:RemoveListenerCertificates', LISTENER],
  ])('changes or deletes with %s only what is tagged owned', (action, resources) => {
    expect(grants(action)).toEqual([[resources, OWNED]]);
  });

  describe('removing tags', () => {
    /** Only from what is owned, only naming its keys, and never one of the ownership tags. */
    const KEEPS_OWNERSHIP = {
      StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' },
      'ForAllValues:StringNotEquals': {
        'aws:TagKeys': [
          'kubernetes.io/cluster/prod-eu',
          'kubernetes.io/service-name',
          'serverless-ccm/security-group-role',
        ],
      },
      Null: { 'aws:TagKeys': 'false' },
    };

    it('ec2:DeleteTags: from our security groups only, never the ownership or role tags', () => {
      expect(grants('ec2:DeleteTags')).toEqual([[SG, KEEPS_OWNERSHIP]]);
    });

    it('elasticloadbalancing:RemoveTags: from our load balancers, target groups and listeners only, the same way', () => {
      expect(grants('elasticloadbalancing:RemoveTags')).toEqual([[[LB, TG, LISTENER], KEEPS_OWNERSHIP]]);
    });

    it('is one statement each, which the template rules would refuse without the tag key protection', () => {
      const removal = statements.filter(
        (s) => s.Sid === 'SecurityGroupTagRemoval' || s.Sid === 'LoadBalancerTagRemoval',
      );
      expect(removal).toHaveLength(2);
      const unprotected = structuredClone(template);
      for (const policy of ofType(unprotected, 'AWS::IAM::Role').flatMap(
        ([, role]) => (role.Policies ?? []) as { PolicyDocument: { Statement: PolicyStatementJson[] } }[],
      )) {
        for (const statement of policy.PolicyDocument.Statement) {
          if (statement.Sid?.endsWith('TagRemoval') && statement.Condition) {
            delete statement.Condition['ForAllValues:StringNotEquals'];
          }
        }
      }
      expect(policyViolations(unprotected, 'prod-eu')).toEqual([
        expect.stringMatching(/allows "ec2:DeleteTags" without protecting the tags kubernetes.io\/cluster\/prod-eu/),
        expect.stringMatching(/allows "elasticloadbalancing:RemoveTags" without protecting the tags/),
        // The Classic ELB statement (ClassicLoadBalancerTagRemoval) is held to the same rule.
        expect.stringMatching(/allows "elasticloadbalancing:RemoveTags" without protecting the tags/),
      ]);
    });
  });

  it.each(['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'])(
    '%s: on groups owned by or shared with the cluster (the Nodes’), in its VPC',
    (action) => {
      expect(grants(action)).toEqual([
        [
          SG,
          {
            StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': ['owned', 'shared'] },
            ArnEquals: { 'ec2:Vpc': VPC },
          },
        ],
      ]);
    },
  );

  it('passes every least-privilege rule', () => {
    expect(policyViolations(template, 'prod-eu')).toEqual([]);
  });

  it('lets the relay send Service keys, outputs the queue and adds an access entry', () => {
    const queueId = queueIdNamed(template, `${PREFIX}-service.fifo`);
    const relayId = refId((template.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
    expect(roleStatements(template, relayId)[0]?.Resource).toContainEqual({ 'Fn::GetAtt': [queueId, 'Arn'] });
    expect(refId((template.Outputs as Record<string, { Value: unknown }>).ServiceQueueUrl?.Value)).toBe(queueId);
    expect(ofType(template, 'AWS::EKS::AccessEntry').map(([, e]) => e.KubernetesGroups)).toContainEqual([
      'serverless-ccm:service',
    ]);
  });

  it('fails synthesis for a bad CCM_VPC_ID, naming it', async () => {
    await expect(synth({ ...BASE_ENV, CCM_VPC_ID: 'vpc-12' })).rejects.toThrow(StageConfigError);
    await expect(synth({ ...BASE_ENV, CCM_VPC_ID: 'my-vpc' })).rejects.toThrow(
      /CCM_VPC_ID \(got "my-vpc"\): must be a VPC ID such as vpc-0123456789abcdef0/,
    );
  });
});

describe('write permissions for later reconcilers', () => {
  // The route and service controllers' writes are tested with their stages above; this test-only stack shows the
  // pipeline any write takes (ownedResourceWrite -> reconciler -> role policy) and that the template check catches
  // one that skips it.
  function testStack(permissions: ReturnType<typeof allow>[]): Json {
    const app = new CdkApp({ outdir: mkdtempSync(join(work, 'writes-')) });
    const stack = new CdkStack(app, 'Writes', { env: { region: 'eu-west-1' } });
    const config = loadStageConfig(BASE_ENV);
    reconciler(
      stack,
      { stage: STAGE, config, code: stubCode(join(work, 'writes-code')), name: (s) => `${PREFIX}-${s}` },
      'node',
      { description: 'test', permissions },
    );
    return app.synth().getStackByName('Writes').template;
  }

  it('keeps the ownership condition a write is granted with', () => {
    const template = testStack([
      ownedResourceWrite({
        clusterName: 'prod-eu',
        actions: ['ec2:CreateRoute', 'ec2:DeleteRoute'],
        resources: ['arn:aws:ec2:eu-west-1:111122223333:route-table/*'],
        sid: 'Routes',
      }),
    ]);
    const [[roleId] = ['']] = ofType(template, 'AWS::IAM::Role');
    expect(roleStatements(template, roleId).find((s) => s.Sid === 'Routes')?.Condition).toEqual({
      StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' },
    });
    expect(policyViolations(template, 'prod-eu')).toEqual([]);
  });

  it('reports a write granted without it, and a write conditioned on another cluster', () => {
    const template = testStack([
      allow(['ec2:CreateRoute'], ['arn:aws:ec2:eu-west-1:111122223333:route-table/*'], 'Unconditioned'),
      ownedResourceWrite({ clusterName: 'other', actions: ['ec2:DeleteRoute'], resources: ['*'] }),
    ]);
    const violations = policyViolations(template, 'prod-eu');
    expect(violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /allows the write "ec2:CreateRoute" without the kubernetes.io\/cluster\/prod-eu=owned condition/,
        ),
        expect.stringMatching(/allows the write "ec2:DeleteRoute" without/),
        expect.stringMatching(/grants ec2:DeleteRoute on every resource/),
      ]),
    );
  });
});

/** The stage's dashboard: its name, the metrics of its widgets and their search expressions. */
function dashboard(template: Json) {
  const [[, resource] = ['', {}]] = ofType(template, 'AWS::CloudWatch::Dashboard');
  // The body is a Fn::Join of JSON text around region and queue-name references.
  const parts = (resource.DashboardBody as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
  const body = JSON.parse(parts.map((p) => (typeof p === 'string' ? p : 'ref')).join('')) as {
    widgets: { properties: { metrics?: unknown[][] } }[];
  };
  const metrics = body.widgets.flatMap((w) => w.properties.metrics ?? []);
  const searches = metrics.map((m) => (m.at(-1) as { expression?: string }).expression).filter(Boolean);
  return { name: resource.DashboardName, metrics, searches };
}

describe('bad stage configuration', () => {
  it('fails synthesis with a message naming the setting', async () => {
    const { CCM_CLUSTER_NAME: _, ...withoutCluster } = BASE_ENV;
    await expect(synth({ ...withoutCluster, CCM_NODE_TIMEOUT_SECONDS: 'soon' })).rejects.toThrow(StageConfigError);
    await expect(synth({ ...withoutCluster, CCM_NODE_TIMEOUT_SECONDS: 'soon' })).rejects.toThrow(
      /CCM_CLUSTER_NAME: is required[\s\S]*CCM_NODE_TIMEOUT_SECONDS \(got "soon"\): must be a whole number/,
    );
  });

  it('fails synthesis for a stage whose names AWS would refuse', async () => {
    await expect(synth(BASE_ENV, 'a-stage-name-far-too-long-for-lambda')).rejects.toThrow(
      /stage "a-stage-name-far-too-long-for-lambda" is too long: the function name .* AWS allows 64/,
    );
    expect(() => checkedName('queue', 'q'.repeat(81), 's')).toThrow(/AWS allows 80/);
  });

  it('refuses an environment larger than Lambda accepts', () => {
    expect(() =>
      checkRuntimeEnvironment('node', { CLUSTER_NAME: 'c1', KUBERNETES_CA_DATA: 'QUJD'.repeat(1100) }, 'eu-west-1'),
    ).toThrow(/function node: its environment is about \d+ bytes, Lambda allows 4096/);
  });

  it('refuses an environment a function would refuse at start-up', () => {
    expect(() =>
      checkRuntimeEnvironment(
        'node',
        { CLUSTER_NAME: 'c1', KUBERNETES_AUTH_MODE: 'token', KUBERNETES_API_ENDPOINT: 'https://k' },
        'eu-west-1',
      ),
    ).toThrow(/function node would refuse to start .*KUBERNETES_TOKEN_SECRET_ID: is required/s);
  });
});
