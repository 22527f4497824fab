import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../shared/config/config.ts';
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
 * The Ingress controller in the stack (CCM_INGRESS): what it adds when on, what it may do in AWS (Application Load
 * Balancers only, ours or the reference controller's to adopt, WAF only with CCM_INGRESS_WAF), and that a stage
 * without it synthesizes exactly as before.
 */

const VPC_ID = 'vpc-0123456789abcdef0';
const BASE_ENV = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
  CCM_VPC_ID: VPC_ID,
};
const ON = {
  ...BASE_ENV,
  CCM_INGRESS: 'true',
  CCM_INGRESS_DEFAULT_TAGS: 'team=web,cost-center=42',
  CCM_INGRESS_DEFAULT_TARGET_TYPE: 'ip',
  CCM_SERVICE_EXTERNAL_MANAGED_TAGS: 'budget',
};
const WITH_WAF = { ...ON, CCM_INGRESS_WAF: 'true' };
const PREFIX = `${STAGE}-serverless-ccm`;
const FUNCTION = `${PREFIX}-ingress`;
const OWNED = { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' };
const WAF_ACTIONS = [
  'elasticloadbalancing:SetWebAcl',
  'wafv2:AssociateWebACL',
  'wafv2:DisassociateWebACL',
  'wafv2:GetWebACLForResource',
  'wafv2:ListWebACLs',
];

const synth = offlineSynth('ingress');

/** An ARN CDK wrote as `Fn::Join`, with the partition and account references shown as `{ref}`. */
function arnText(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (!join) throw new Error(`not an ARN: ${JSON.stringify(value)}`);
  return join[1].map((part) => (typeof part === 'string' ? part : '{ref}')).join(join[0]);
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const actionsOf = (statements: PolicyStatementJson[]) => [...new Set(statements.flatMap((s) => list(s.Action)))].sort();

let off: Json;
let on: Json;
let waf: Json;
beforeAll(async () => {
  off = await synth(BASE_ENV);
  on = await synth(ON);
  waf = await synth(WITH_WAF);
}, 180_000);

describe('the stage settings', () => {
  it('leave the controller off by default; on, the reference controller’s defaults and no WAF', () => {
    expect(loadStageConfig(BASE_ENV).ingress).toBeUndefined();
    expect(loadStageConfig({ ...BASE_ENV, CCM_INGRESS: 'true' }).ingress).toEqual({
      vpcId: VPC_ID,
      waf: false,
      defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
      defaultTargetType: 'instance',
      defaultTags: {},
    });
    expect(loadStageConfig(WITH_WAF).ingress).toMatchObject({
      waf: true,
      defaultTargetType: 'ip',
      defaultTags: { team: 'web', 'cost-center': '42' },
    });
  });

  it.each([
    [
      'CCM_INGRESS without CCM_VPC_ID',
      { CCM_VPC_ID: '', CCM_INGRESS: 'true' },
      /CCM_VPC_ID: is required when CCM_INGRESS=true/,
    ],
    [
      'CCM_INGRESS_WAF without CCM_INGRESS',
      { CCM_INGRESS_WAF: 'true' },
      /CCM_INGRESS_WAF \(got "true"\): has no effect without CCM_INGRESS=true/,
    ],
    [
      'CCM_INGRESS_DEFAULT_TAGS without CCM_INGRESS',
      { CCM_INGRESS_DEFAULT_TAGS: 'team=web' },
      /CCM_INGRESS_DEFAULT_TAGS \(got "team=web"\): has no effect without CCM_INGRESS=true/,
    ],
    [
      'a target type the function would refuse',
      { CCM_INGRESS: 'true', CCM_INGRESS_DEFAULT_TARGET_TYPE: 'pod' },
      /CCM_INGRESS_DEFAULT_TARGET_TYPE \(got "pod"\): must be instance \(Node ports\) or ip/,
    ],
    [
      'a tracking tag among the default tags',
      { CCM_INGRESS: 'true', CCM_INGRESS_DEFAULT_TAGS: 'elbv2.k8s.aws/cluster=other' },
      /CCM_INGRESS_DEFAULT_TAGS.*is a tag the controller sets itself/,
    ],
    [
      'a default tag another tool manages',
      { CCM_INGRESS: 'true', CCM_INGRESS_DEFAULT_TAGS: 'budget=1', CCM_SERVICE_EXTERNAL_MANAGED_TAGS: 'budget' },
      /CCM_INGRESS_DEFAULT_TAGS \(got "budget=1"\): budget: also in CCM_SERVICE_EXTERNAL_MANAGED_TAGS/,
    ],
    ['CCM_INGRESS that is no boolean', { CCM_INGRESS: 'maybe' }, /CCM_INGRESS \(got "maybe"\): must be true or false/],
  ])('refuse %s', (_, settings, problem) => {
    expect(() => loadStageConfig({ ...BASE_ENV, ...settings })).toThrow(problem);
  });
});

describe('a stage without the Ingress controller', () => {
  it('synthesizes exactly the same template with CCM_INGRESS=false as with it unset', async () => {
    expect(JSON.stringify(await synth({ ...BASE_ENV, CCM_INGRESS: 'false' }))).toBe(JSON.stringify(off));
  });

  it('has no ingress queue, function or output, the producers send it nothing, and nothing grants ACM or WAF', () => {
    expect(() => queueId(off, `${PREFIX}-ingress.fifo`)).toThrow(/no AWS::SQS::Queue/);
    expect(() => functionId(off, FUNCTION)).toThrow(/no AWS::Lambda::Function/);
    expect(env(off, `${PREFIX}-resync`)).not.toHaveProperty('INGRESS_QUEUE_URL');
    expect(JSON.stringify(off)).not.toMatch(/IngressQueueUrl|acm:|wafv2:|SetWebAcl|listener-rule|loadbalancer\/app/);
  });
});

describe('a stage with CCM_INGRESS=true', () => {
  it('adds the ingress FIFO queue with its DLQ after 200 receives, and a 180 s function', () => {
    const queue = props(on, queueId(on, `${PREFIX}-ingress.fifo`));
    expect(queue).toMatchObject({ FifoQueue: true, VisibilityTimeout: 6 * 180, SqsManagedSseEnabled: true });
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-ingress-dlq.fifo`), 'Arn'] },
      maxReceiveCount: 200,
    });
    expect(props(on, functionId(on, FUNCTION))).toMatchObject({ Timeout: 180, MemorySize: 512 });
  });

  it('feeds the function from it in batches of 10 with partial batch responses, 5 batches at most', () => {
    const fn = functionId(on, FUNCTION);
    const mappings = ofType(on, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => refId(m.FunctionName) === fn);
    expect(mappings.map(([, m]) => m)).toEqual([
      expect.objectContaining({
        EventSourceArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-ingress.fifo`), 'Arn'] },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 5 },
      }),
    ]);
  });

  it('gives the function the settings its Lambda reads, which it reads back as the stage meant them', () => {
    const variables = env(on, FUNCTION) as Record<string, string>;
    expect(variables).toMatchObject({
      VPC_ID: VPC_ID,
      INGRESS_DEFAULT_SSL_POLICY: 'ELBSecurityPolicy-2016-08',
      INGRESS_DEFAULT_TARGET_TYPE: 'ip',
      INGRESS_DEFAULT_TAGS: 'team=web,cost-center=42',
      SERVICE_EXTERNAL_MANAGED_TAGS: 'budget',
      SERVICE_PROVISIONING_REQUEUE_SECONDS: '60',
      SERVICE_CLEANUP_REQUEUE_SECONDS: '60',
      SERVICE_REPLACEMENT_GRACE_SECONDS: '360',
    });
    const config = loadConfig({ ...variables, AWS_REGION: 'eu-west-1' });
    expect(config.INGRESS_DEFAULT_TAGS).toEqual({ team: 'web', 'cost-center': '42' });
    expect(config.INGRESS_DEFAULT_TARGET_TYPE).toBe('ip');
    // No binding controller in this stage: no stack bindings (with it: stacks/target-group-binding.test.ts).
    expect(config.STACK_TARGET_GROUP_BINDINGS).toBe(false);
    expect(variables).not.toHaveProperty('STACK_TARGET_GROUP_BINDINGS');
  });

  it('has the resync send IngressGroup keys to its queue, the relay allowed to, and its URL as an output', () => {
    const queue = queueId(on, `${PREFIX}-ingress.fifo`);
    expect(env(on, `${PREFIX}-resync`).INGRESS_QUEUE_URL).toEqual({ Ref: queue });
    const relayRole = refId((on.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
    const relay = (props(on, relayRole).Policies as { PolicyDocument: { Statement: PolicyStatementJson[] } }[])
      .flatMap((p) => p.PolicyDocument.Statement)
      .flatMap((s) => list(s.Resource));
    expect(relay).toContainEqual({ 'Fn::GetAtt': [queue, 'Arn'] });
    expect((on.Outputs as Record<string, { Value: unknown }>).IngressQueueUrl?.Value).toEqual({ Ref: queue });
  });
});

describe('what the Ingress controller may do in AWS', () => {
  const statements = () => roleStatements(on, FUNCTION);
  const elbv2Writes = (s: PolicyStatementJson[]) =>
    s.filter((x) => list(x.Action).some((a) => a.startsWith('elasticloadbalancing:') && !a.includes(':Describe')));

  it('passes the least-privilege rules, with and without WAF', () => {
    expect(policyViolations(on, 'prod-eu')).toEqual([]);
    expect(policyViolations(waf, 'prod-eu')).toEqual([]);
  });

  it('writes only to Application Load Balancers, their listeners and rules, and target groups', () => {
    const resources = elbv2Writes(statements()).flatMap((s) => list(s.Resource).map(arnText));
    expect(resources.length).toBeGreaterThan(0);
    for (const resource of resources) {
      expect(resource).toMatch(
        /^arn:\{ref\}:elasticloadbalancing:eu-west-1:\{ref\}:(loadbalancer\/app\/\*\/\*|listener\/app\/\*\/\*\/\*|listener-rule\/app\/\*\/\*\/\*\/\*|targetgroup\/\*\/\*)$/,
      );
    }
  });

  it('changes rules and listeners only when they carry our owned tag', () => {
    const rules = statements().find((s) => s.Sid === 'RuleWrites');
    expect(rules).toMatchObject({
      Action: expect.arrayContaining([
        'elasticloadbalancing:ModifyRule',
        'elasticloadbalancing:DeleteRule',
        'elasticloadbalancing:SetRulePriorities',
      ]),
      Condition: { StringEquals: OWNED },
    });
    const listeners = statements().find((s) => s.Sid === 'ListenerWrites');
    expect(listeners).toMatchObject({
      Action: expect.arrayContaining(['elasticloadbalancing:CreateRule', 'elasticloadbalancing:DeleteListener']),
      Condition: { StringEquals: OWNED },
    });
  });

  it('may tag ours only what the reference controller tagged for this cluster, only with the cluster tags', () => {
    const adoption = statements().filter((s) => s.Sid?.endsWith('Adoption'));
    expect(adoption.map((s) => s.Action).sort()).toEqual(['ec2:CreateTags', 'elasticloadbalancing:AddTags']);
    for (const s of adoption) {
      expect(s.Condition).toEqual({
        StringEquals: {
          'aws:ResourceTag/elbv2.k8s.aws/cluster': 'prod-eu',
          'aws:RequestTag/kubernetes.io/cluster/prod-eu': 'owned',
        },
        'ForAllValues:StringEquals': { 'aws:TagKeys': ['kubernetes.io/cluster/prod-eu', 'elbv2.k8s.aws/cluster'] },
        Null: { 'aws:TagKeys': 'false' },
      });
    }
  });

  it('never removes an ownership or tracking tag', () => {
    const removals = statements().filter((s) =>
      list(s.Action).some((a) => a === 'elasticloadbalancing:RemoveTags' || a === 'ec2:DeleteTags'),
    );
    expect(removals).toHaveLength(2);
    for (const s of removals) {
      expect(s.Condition?.['ForAllValues:StringNotEquals']?.['aws:TagKeys']).toEqual(
        expect.arrayContaining([
          'kubernetes.io/cluster/prod-eu',
          'elbv2.k8s.aws/cluster',
          'ingress.k8s.aws/stack',
          'ingress.k8s.aws/resource',
        ]),
      );
    }
  });

  it('reads ACM certificates; lists them on "*", describes them by ARN', () => {
    const acm = statements().filter((s) => list(s.Action).some((a) => a.startsWith('acm:')));
    expect(acm.map((s) => [s.Action, list(s.Resource).map(arnText)])).toEqual([
      ['acm:ListCertificates', ['*']],
      ['acm:DescribeCertificate', ['arn:{ref}:acm:eu-west-1:{ref}:certificate/*']],
    ]);
  });

  it('has no WAF grant without CCM_INGRESS_WAF, and exactly the WAF calls with it', () => {
    expect(actionsOf(statements()).filter((a) => WAF_ACTIONS.includes(a))).toEqual([]);
    const withWaf = roleStatements(waf, FUNCTION);
    expect(actionsOf(withWaf).filter((a) => !actionsOf(statements()).includes(a))).toEqual(WAF_ACTIONS);
    expect(withWaf.find((s) => list(s.Action).includes('elasticloadbalancing:SetWebAcl'))).toMatchObject({
      Condition: { StringEquals: OWNED },
    });
    const association = withWaf.find((s) => list(s.Action).includes('wafv2:AssociateWebACL'));
    expect(list(association?.Resource).map(arnText)).toEqual([
      'arn:{ref}:wafv2:eu-west-1:{ref}:regional/webacl/*/*',
      'arn:{ref}:elasticloadbalancing:eu-west-1:{ref}:loadbalancer/app/*/*',
    ]);
  });
});
