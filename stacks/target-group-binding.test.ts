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
 * The TargetGroupBinding controller in the stack (CCM_TARGET_GROUP_BINDING) and the service role serving the AWS Load
 * Balancer Controller's Services (CCM_LBC_SERVICES): what each adds when on, what the roles may do in AWS, and that a
 * stage without them synthesizes exactly as before.
 */

const VPC_ID = 'vpc-0123456789abcdef0';
const BASE_ENV = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};
const ON = { ...BASE_ENV, CCM_TARGET_GROUP_BINDING: 'true', CCM_TGB_READINESS_REQUEUE_SECONDS: '15' };
const ON_IN_VPC = { ...ON, CCM_VPC_ID: VPC_ID };
const SERVICES = { ...BASE_ENV, CCM_VPC_ID: VPC_ID };
const LBC_SERVICES = { ...SERVICES, CCM_LBC_SERVICES: 'true' };
/** The binding controller beside the Ingress controller and the service controller serving the reference's Services. */
const WITH_LOAD_BALANCERS = { ...ON_IN_VPC, CCM_INGRESS: 'true', CCM_LBC_SERVICES: 'true' };
const PREFIX = `${STAGE}-serverless-ccm`;
const FUNCTION = `${PREFIX}-target-group-binding`;
const QUEUE = `${PREFIX}-target-group-binding.fifo`;
const CLUSTER_TAG = 'aws:ResourceTag/kubernetes.io/cluster/prod-eu';

const synth = offlineSynth('tgb');

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
let onInVpc: Json;
let services: Json;
let lbcServices: Json;
let withLoadBalancers: Json;
beforeAll(async () => {
  [off, on, onInVpc, services, lbcServices, withLoadBalancers] = await Promise.all([
    synth(BASE_ENV),
    synth(ON),
    synth(ON_IN_VPC),
    synth(SERVICES),
    synth(LBC_SERVICES),
    synth(WITH_LOAD_BALANCERS),
  ]);
}, 240_000);

describe('the stage settings', () => {
  it('leave the controller off by default; on, with the readiness requeue and the VPC when the stage has one', () => {
    expect(loadStageConfig(BASE_ENV).targetGroupBinding).toBeUndefined();
    expect(loadStageConfig({ ...BASE_ENV, CCM_TARGET_GROUP_BINDING: 'true' }).targetGroupBinding).toEqual({
      readinessRequeueSeconds: 10,
    });
    expect(loadStageConfig(ON_IN_VPC).targetGroupBinding).toEqual({ vpcId: VPC_ID, readinessRequeueSeconds: 15 });
    expect(loadStageConfig(SERVICES).services?.lbcServices).toBe(false);
    expect(loadStageConfig(LBC_SERVICES).services?.lbcServices).toBe(true);
  });

  it.each([
    [
      'CCM_TGB_READINESS_REQUEUE_SECONDS without CCM_TARGET_GROUP_BINDING',
      { CCM_TGB_READINESS_REQUEUE_SECONDS: '15' },
      /CCM_TGB_READINESS_REQUEUE_SECONDS \(got "15"\): has no effect without CCM_TARGET_GROUP_BINDING=true/,
    ],
    [
      'a readiness requeue of 0',
      { CCM_TARGET_GROUP_BINDING: 'true', CCM_TGB_READINESS_REQUEUE_SECONDS: '0' },
      /CCM_TGB_READINESS_REQUEUE_SECONDS \(got "0"\): must be at least 1 second/,
    ],
    [
      'CCM_LBC_SERVICES without CCM_VPC_ID',
      { CCM_LBC_SERVICES: 'true' },
      /CCM_LBC_SERVICES \(got "true"\): has no effect without CCM_VPC_ID/,
    ],
    [
      'CCM_TARGET_GROUP_BINDING that is no boolean',
      { CCM_TARGET_GROUP_BINDING: 'maybe' },
      /CCM_TARGET_GROUP_BINDING \(got "maybe"\): must be true or false/,
    ],
  ])('refuse %s', (_, settings, problem) => {
    expect(() => loadStageConfig({ ...BASE_ENV, ...settings })).toThrow(problem);
  });
});

describe('a stage without the binding controller', () => {
  it('synthesizes exactly the same template with CCM_TARGET_GROUP_BINDING=false as with it unset', async () => {
    expect(JSON.stringify(await synth({ ...BASE_ENV, CCM_TARGET_GROUP_BINDING: 'false' }))).toBe(JSON.stringify(off));
  });

  it('has no queue, function or output for it, the producers send it nothing, and nothing registers targets', () => {
    expect(() => queueId(off, QUEUE)).toThrow(/no AWS::SQS::Queue/);
    expect(() => functionId(off, FUNCTION)).toThrow(/no AWS::Lambda::Function/);
    expect(env(off, `${PREFIX}-resync`)).not.toHaveProperty('TARGET_GROUP_BINDING_QUEUE_URL');
    expect(JSON.stringify(off)).not.toMatch(/TargetGroupBindingQueueUrl|RegisterTargets|DeregisterTargets/);
  });
});

describe('a stage with CCM_TARGET_GROUP_BINDING=true', () => {
  it('adds its FIFO queue with its DLQ after 1000 receives, and a 60 s function fed 10 keys a batch, 5 at once', () => {
    const queue = props(on, queueId(on, QUEUE));
    expect(queue).toMatchObject({ FifoQueue: true, VisibilityTimeout: 6 * 60, SqsManagedSseEnabled: true });
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [queueId(on, `${PREFIX}-target-group-binding-dlq.fifo`), 'Arn'] },
      maxReceiveCount: 1000,
    });
    expect(props(on, functionId(on, FUNCTION))).toMatchObject({ Timeout: 60, MemorySize: 512 });
    const fn = functionId(on, FUNCTION);
    const mappings = ofType(on, 'AWS::Lambda::EventSourceMapping').filter(([, m]) => refId(m.FunctionName) === fn);
    expect(mappings.map(([, m]) => m)).toEqual([
      expect.objectContaining({
        EventSourceArn: { 'Fn::GetAtt': [queueId(on, QUEUE), 'Arn'] },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 5 },
      }),
    ]);
  });

  it('gives the function the settings its Lambda reads, which it reads back as the stage meant them', () => {
    expect(env(on, FUNCTION)).not.toHaveProperty('VPC_ID');
    const variables = env(onInVpc, FUNCTION) as Record<string, string>;
    expect(variables).toMatchObject({ VPC_ID: VPC_ID, TGB_READINESS_REQUEUE_SECONDS: '15' });
    const config = loadConfig({ ...variables, AWS_REGION: 'eu-west-1' });
    expect(config.TGB_READINESS_REQUEUE_SECONDS).toBe(15);
    expect(config.VPC_ID).toBe(VPC_ID);
  });

  it('has the resync send binding keys to its queue, the relay allowed to, and its URL as an output', () => {
    const queue = queueId(on, QUEUE);
    expect(env(on, `${PREFIX}-resync`).TARGET_GROUP_BINDING_QUEUE_URL).toEqual({ Ref: queue });
    const relayRole = refId((on.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
    const relay = (props(on, relayRole).Policies as { PolicyDocument: { Statement: PolicyStatementJson[] } }[])
      .flatMap((p) => p.PolicyDocument.Statement)
      .flatMap((s) => list(s.Resource));
    expect(relay).toContainEqual({ 'Fn::GetAtt': [queue, 'Arn'] });
    expect((on.Outputs as Record<string, { Value: unknown }>).TargetGroupBindingQueueUrl?.Value).toEqual({
      Ref: queue,
    });
  });
});

describe('the stack bindings of the Ingress and service controllers', () => {
  it('are kept when the binding controller is deployed beside them: both functions read it back on', () => {
    for (const name of [`${PREFIX}-ingress`, `${PREFIX}-service`]) {
      const variables = env(withLoadBalancers, name) as Record<string, string>;
      expect(variables.STACK_TARGET_GROUP_BINDINGS).toBe('true');
      expect(loadConfig({ ...variables, AWS_REGION: 'eu-west-1' }).STACK_TARGET_GROUP_BINDINGS).toBe(true);
    }
  });

  it('are not without it (the Ingress stage without it: stacks/ingress.test.ts)', () => {
    expect(env(services, `${PREFIX}-service`)).not.toHaveProperty('STACK_TARGET_GROUP_BINDINGS');
    expect(env(lbcServices, `${PREFIX}-service`)).not.toHaveProperty('STACK_TARGET_GROUP_BINDINGS');
  });

  it('ask nothing more of AWS: the roles are those of the same stage without the binding controller', async () => {
    const without = await synth({ ...SERVICES, CCM_INGRESS: 'true', CCM_LBC_SERVICES: 'true' });
    for (const name of [`${PREFIX}-ingress`, `${PREFIX}-service`]) {
      expect(roleStatements(withLoadBalancers, name)).toEqual(roleStatements(without, name));
    }
    expect(policyViolations(withLoadBalancers, 'prod-eu')).toEqual([]);
  }, 120_000);
});

describe('what the binding controller may do in AWS', () => {
  const statements = () => roleStatements(onInVpc, FUNCTION);
  const awsActions = (s: PolicyStatementJson[]) =>
    actionsOf(s).filter((a) => a.startsWith('ec2:') || a.startsWith('elasticloadbalancing:'));

  it('passes the least-privilege rules, with and without a VPC', () => {
    expect(policyViolations(on, 'prod-eu')).toEqual([]);
    expect(policyViolations(onInVpc, 'prod-eu')).toEqual([]);
  });

  it('reads target groups, target health, instances, interfaces and groups; writes targets and rules, nothing else', () => {
    expect(awsActions(statements())).toEqual([
      'ec2:AuthorizeSecurityGroupIngress',
      'ec2:DescribeInstances',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSecurityGroups',
      'ec2:RevokeSecurityGroupIngress',
      'elasticloadbalancing:DeregisterTargets',
      'elasticloadbalancing:DescribeTargetGroups',
      'elasticloadbalancing:DescribeTargetHealth',
      'elasticloadbalancing:RegisterTargets',
    ]);
  });

  it('registers and deregisters targets on target group ARNs only, whatever their tags (the user owns them)', () => {
    const registration = statements().find((s) => list(s.Action).includes('elasticloadbalancing:RegisterTargets'));
    expect(registration).toEqual({
      Sid: 'TargetRegistration',
      Effect: 'Allow',
      Action: ['elasticloadbalancing:RegisterTargets', 'elasticloadbalancing:DeregisterTargets'],
      Resource: expect.anything(),
    });
    expect(list(registration?.Resource).map(arnText)).toEqual([
      'arn:{ref}:elasticloadbalancing:eu-west-1:{ref}:targetgroup/*/*',
    ]);
  });

  it('changes rules only on groups tagged for this cluster, in its VPC when the stage names one', () => {
    const rules = statements().find((s) => list(s.Action).includes('ec2:AuthorizeSecurityGroupIngress'));
    expect(rules?.Condition).toEqual({
      StringEquals: { [CLUSTER_TAG]: ['owned', 'shared'] },
      ArnEquals: { 'ec2:Vpc': expect.anything() },
    });
    expect(arnText(rules?.Condition?.ArnEquals?.['ec2:Vpc'])).toBe(`arn:{ref}:ec2:eu-west-1:{ref}:vpc/${VPC_ID}`);
    const anyVpc = roleStatements(on, FUNCTION).find((s) => list(s.Action).includes('ec2:RevokeSecurityGroupIngress'));
    expect(anyVpc?.Condition).toEqual({ StringEquals: { [CLUSTER_TAG]: ['owned', 'shared'] } });
  });

  it('the rules refuse target registration granted on anything but target groups', () => {
    const broken = structuredClone(onInVpc);
    const role = refId(props(broken, functionId(broken, FUNCTION)).Role);
    const policies = props(broken, role).Policies as { PolicyDocument: { Statement: PolicyStatementJson[] } }[];
    const registration = policies
      .flatMap((p) => p.PolicyDocument.Statement)
      .find((s) => list(s.Action).includes('elasticloadbalancing:RegisterTargets'))!;
    registration.Resource = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/*/*';
    expect(policyViolations(broken, 'prod-eu')).toEqual(
      expect.arrayContaining([expect.stringMatching(/allows the write "elasticloadbalancing:RegisterTargets"/)]),
    );
  });
});

describe('the service role with CCM_LBC_SERVICES=true', () => {
  const statements = () => roleStatements(lbcServices, `${PREFIX}-service`);

  it('passes the least-privilege rules, and tells its function to serve those Services', () => {
    expect(policyViolations(lbcServices, 'prod-eu')).toEqual([]);
    expect(env(lbcServices, `${PREFIX}-service`).SERVICE_LBC_SERVICES).toBe('true');
    expect(env(services, `${PREFIX}-service`)).not.toHaveProperty('SERVICE_LBC_SERVICES');
  });

  it('may tag ours only what the reference tagged for this cluster, only with the cluster tags; not without it', () => {
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
    const loadBalancers = adoption.find((s) => s.Action === 'elasticloadbalancing:AddTags');
    expect(list(loadBalancers?.Resource).map(arnText)).toEqual([
      'arn:{ref}:elasticloadbalancing:eu-west-1:{ref}:loadbalancer/net/*/*',
      'arn:{ref}:elasticloadbalancing:eu-west-1:{ref}:targetgroup/*/*',
      'arn:{ref}:elasticloadbalancing:eu-west-1:{ref}:listener/net/*/*/*',
    ]);
    expect(roleStatements(services, `${PREFIX}-service`).filter((s) => s.Sid?.endsWith('Adoption'))).toEqual([]);
  });

  it('never removes an ownership tag nor one of the reference’s tracking tags', () => {
    // The Network Load Balancer's resources and the groups (the Classic ELBs' own removal is not the reference's).
    const removals = statements().filter(
      (s) => s.Sid === 'LoadBalancerTagRemoval' || s.Sid === 'SecurityGroupTagRemoval',
    );
    expect(removals).toHaveLength(2);
    for (const s of removals) {
      expect(s.Condition?.['ForAllValues:StringNotEquals']?.['aws:TagKeys']).toEqual(
        expect.arrayContaining([
          'kubernetes.io/cluster/prod-eu',
          'elbv2.k8s.aws/cluster',
          'service.k8s.aws/stack',
          'service.k8s.aws/resource',
        ]),
      );
    }
  });
});
