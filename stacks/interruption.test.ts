import { beforeAll, describe, expect, it } from 'vitest';
import { EC2_EVENT_PATTERNS, INTERRUPTION_EVENT_PATTERNS } from '../shared/events/ec2-event-patterns.ts';
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
 * The interruption controller in the stack (CCM_INTERRUPTION): what it adds when on, and that a stage without
 * it synthesizes exactly as before (no queue, no function, no extra rules, the router unchanged).
 */

const BASE_ENV = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};
const ON = { ...BASE_ENV, CCM_INTERRUPTION: 'true', CCM_INTERRUPTION_ACTIONS: 'rebalance-recommendation=drain' };
const PREFIX = `${STAGE}-serverless-ccm`;

const synth = offlineSynth('interruption');

const patterns = (template: Json) =>
  ofType(template, 'AWS::Events::Rule')
    .map(([, r]) => r.EventPattern)
    .filter(Boolean);

/** The wire form of a shared pattern, as the template holds it. */
const wire = (p: { source: readonly string[]; 'detail-type': readonly string[]; detail?: unknown }) => ({
  source: [...p.source],
  'detail-type': [...p['detail-type']],
  ...(p.detail ? { detail: p.detail } : {}),
});

let off: Json;
let on: Json;
beforeAll(async () => {
  off = await synth(BASE_ENV);
  on = await synth(ON);
}, 120_000);

describe('a stage without the interruption controller', () => {
  it('synthesizes exactly the same template with CCM_INTERRUPTION=false as with it unset', async () => {
    expect(JSON.stringify(await synth({ ...BASE_ENV, CCM_INTERRUPTION: 'false' }))).toBe(JSON.stringify(off));
  });

  it('has no interruption queue, function, rules or grants, and the router sends no notices', () => {
    expect(() => queueId(off, `${PREFIX}-interruption.fifo`)).toThrow(/no AWS::SQS::Queue/);
    expect(() => functionId(off, `${PREFIX}-interruption`)).toThrow(/no AWS::Lambda::Function/);
    expect(patterns(off)).toEqual(Object.values(EC2_EVENT_PATTERNS).map(wire));
    expect(env(off, `${PREFIX}-ec2-events`)).not.toHaveProperty('INTERRUPTION_QUEUE_URL');
    expect(JSON.stringify(off)).not.toMatch(/autoscaling|InterruptionQueueUrl/);
  });
});

describe('a stage with CCM_INTERRUPTION=true', () => {
  it('adds the interruption FIFO queue with its DLQ after 1000 receives', () => {
    const queue = props(on, queueId(on, `${PREFIX}-interruption.fifo`));
    expect(queue).toMatchObject({ FifoQueue: true, ContentBasedDeduplication: false, VisibilityTimeout: 360 });
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-interruption-dlq.fifo`), 'Arn'] },
      maxReceiveCount: 1000,
    });
  });

  it('feeds the function from it in batches of 10 with partial batch responses', () => {
    const fn = functionId(on, `${PREFIX}-interruption`);
    const mappings = ofType(on, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => refId(m.FunctionName) === fn);
    expect(mappings.map(([, m]) => m)).toEqual([
      expect.objectContaining({
        EventSourceArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-interruption.fifo`), 'Arn'] },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 10 },
      }),
    ]);
  });

  it('configures the function from the stage', () => {
    expect(env(on, `${PREFIX}-interruption`)).toMatchObject({
      CLUSTER_NAME: 'prod-eu',
      INTERRUPTION_ACTIONS: 'rebalance-recommendation=drain',
      INTERRUPTION_OUT_OF_SERVICE_TAINT: 'false',
      INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'true',
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: '5',
    });
  });

  it('adds the rules for lifecycle hooks and capacity reservation warnings, allowed to send to the events queue', () => {
    expect(patterns(on)).toEqual(
      [...Object.values(EC2_EVENT_PATTERNS), ...Object.values(INTERRUPTION_EVENT_PATTERNS)].map(wire),
    );
    const eventsQueue = queueId(on, `${PREFIX}-ec2-events`);
    const policy = ofType(on, 'AWS::SQS::QueuePolicy').find(([, p]) =>
      (p.Queues as unknown[]).some((q) => refId(q) === eventsQueue),
    );
    if (!policy) throw new Error('no policy on the EC2 events queue');
    const allow = (policy[1].PolicyDocument as { Statement: PolicyStatementJson[] }).Statement.find(
      (s) => s.Sid === 'EventBridgeRules',
    );
    const sources = ((allow?.Condition?.ArnEquals?.['aws:SourceArn'] ?? []) as unknown[]).map(refId);
    expect(sources.sort()).toEqual(
      ofType(on, 'AWS::Events::Rule')
        .filter(([, r]) => r.EventPattern)
        .map(([id]) => id)
        .sort(),
    );
  });

  it('lets the router send notices to the interruption queue, and tells it where', () => {
    const interruptionQueue = queueId(on, `${PREFIX}-interruption.fifo`);
    expect(refId(env(on, `${PREFIX}-ec2-events`).INTERRUPTION_QUEUE_URL)).toBe(interruptionQueue);
    const send = roleStatements(on, `${PREFIX}-ec2-events`).find((s) => s.Sid === 'SendKeys');
    expect(send?.Action).toBe('sqs:SendMessage');
    expect(((send?.Resource ?? []) as unknown[]).map(refId).sort()).toEqual(
      [queueId(on, `${PREFIX}-node-lifecycle.fifo`), interruptionQueue].sort(),
    );
  });

  it('completes and heartbeats lifecycle actions only on Auto Scaling groups tagged for the cluster', () => {
    const statements = roleStatements(on, `${PREFIX}-interruption`);
    const hooks = statements.find((s) => s.Sid === 'LifecycleActions');
    expect(hooks).toMatchObject({
      Action: ['autoscaling:CompleteLifecycleAction', 'autoscaling:RecordLifecycleActionHeartbeat'],
      Condition: { StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': ['owned', 'shared'] } },
    });
    expect(JSON.stringify(hooks?.Resource)).toContain(':autoScalingGroup:*:autoScalingGroupName/*');
    const onEverything = statements.filter((s) => s.Resource === '*').flatMap((s) => s.Action);
    expect(onEverything.sort()).toEqual(['autoscaling:DescribeLifecycleHooks', 'ec2:DescribeInstances']);
    expect(policyViolations(on, 'prod-eu')).toEqual([]);
  });

  it('alarms on its DLQ and on the age of its queue, and outputs the queue URL', () => {
    const watched = ofType(on, 'AWS::CloudWatch::Alarm').map(([, a]) =>
      refId((a.Dimensions as { Value: unknown }[])[0]?.Value),
    );
    expect(watched).toContain(queueId(on, `${PREFIX}-interruption-dlq.fifo`));
    expect(watched).toContain(queueId(on, `${PREFIX}-interruption.fifo`));
    const outputs = on.Outputs as Record<string, { Value: unknown }>;
    expect(refId(outputs.InterruptionQueueUrl?.Value)).toBe(queueId(on, `${PREFIX}-interruption.fifo`));
  });

  it('is no queue the relay or the resync sends to: only the router knows the notices', () => {
    const interruptionQueue = queueId(on, `${PREFIX}-interruption.fifo`);
    const relay = ofType(on, 'AWS::IAM::Role').filter(([id]) => id.startsWith('RelayRole'));
    expect(JSON.stringify(relay)).not.toContain(interruptionQueue);
    expect(JSON.stringify(roleStatements(on, `${PREFIX}-resync`))).not.toContain(interruptionQueue);
  });
});
