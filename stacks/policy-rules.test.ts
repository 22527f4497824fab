import { describe, expect, it } from 'vitest';
import { CLASSIC_ELB_WRITE_ACTIONS } from './iam-classic-elb.ts';
import { type PolicyStatementJson, policyViolations } from './policy-rules.ts';

/**
 * The template rules on hand-written statements, one role each, for the cases the control plane's own
 * templates (control-plane.test.ts) do not reach: what must be refused, and the exceptions' edges.
 */

const TAG = 'kubernetes.io/cluster/prod-eu';
const OWNED = { StringEquals: { [`aws:ResourceTag/${TAG}`]: 'owned' } };
const OWNED_REQUEST = { [`aws:RequestTag/${TAG}`]: 'owned' };

/** `arn:${Partition}:<service>:eu-west-1:${AccountId}:<rest>` as CDK writes it. */
const arn = (service: string, rest: string) => ({
  'Fn::Join': [
    '',
    ['arn:', { Ref: 'AWS::Partition' }, `:${service}:eu-west-1:`, { Ref: 'AWS::AccountId' }, `:${rest}`],
  ],
});
const SG = arn('ec2', 'security-group/*');
const LB = arn('elasticloadbalancing', 'loadbalancer/net/*/*');
const NLB_LISTENER = arn('elasticloadbalancing', 'listener/net/*/*/*');

function violations(...statements: Omit<PolicyStatementJson, 'Effect'>[]): string[] {
  const template = {
    Resources: {
      Role: {
        Type: 'AWS::IAM::Role',
        Properties: {
          Policies: [
            { PolicyName: 'Access', PolicyDocument: { Statement: statements.map((s) => ({ Effect: 'Allow', ...s })) } },
          ],
        },
      },
    },
  };
  return policyViolations(template, 'prod-eu');
}

const unconditioned = (action: string) => new RegExp(`allows the write "${action}" without the ${TAG}=owned`);

describe('policyViolations: ownership of EC2 / ELBv2 writes', () => {
  it('accepts a write on resources tagged owned', () => {
    expect(
      violations({ Action: ['ec2:DeleteSecurityGroup', 'ec2:CreateTags'], Resource: SG, Condition: OWNED }),
    ).toEqual([]);
  });

  describe('the owned tag in the request', () => {
    it.each([
      'ec2:CreateSecurityGroup',
      'elasticloadbalancing:CreateLoadBalancer',
      'elasticloadbalancing:CreateTargetGroup',
    ])('is enough for %s, which creates a new resource', (action) => {
      expect(violations({ Action: action, Resource: LB, Condition: { StringEquals: OWNED_REQUEST } })).toEqual([]);
    });

    it.each([
      // Listeners and routes go on a resource that exists: the request's tags say nothing about whose it is.
      'elasticloadbalancing:CreateListener',
      'ec2:CreateRoute',
      'elasticloadbalancing:DeleteLoadBalancer',
      // Tagging with our tag alone would let the role claim any existing resource as the cluster's.
      'ec2:CreateTags',
      'elasticloadbalancing:AddTags',
    ])('is not enough for %s', (action) => {
      expect(violations({ Action: action, Resource: LB, Condition: { StringEquals: OWNED_REQUEST } })).toEqual([
        expect.stringMatching(unconditioned(action)),
      ]);
    });

    it('allows tagging while creating one of those resources', () => {
      expect(
        violations(
          {
            Action: 'ec2:CreateTags',
            Resource: SG,
            Condition: { StringEquals: { 'ec2:CreateAction': ['CreateSecurityGroup'], ...OWNED_REQUEST } },
          },
          {
            Action: 'elasticloadbalancing:AddTags',
            Resource: LB,
            Condition: {
              StringEquals: {
                'elasticloadbalancing:CreateAction': ['CreateLoadBalancer', 'CreateTargetGroup'],
                ...OWNED_REQUEST,
              },
            },
          },
          {
            // CreateListener tags the listener it makes: AddTags on create names it.
            Action: 'elasticloadbalancing:AddTags',
            Resource: NLB_LISTENER,
            Condition: { StringEquals: { 'elasticloadbalancing:CreateAction': 'CreateListener', ...OWNED_REQUEST } },
          },
        ),
      ).toEqual([]);
    });

    it.each([
      ['another create action', { 'ec2:CreateAction': ['CreateSecurityGroup', 'RunInstances'], ...OWNED_REQUEST }],
      [
        'the other service’s create action key',
        { 'elasticloadbalancing:CreateAction': 'CreateSecurityGroup', ...OWNED_REQUEST },
      ],
      ['no owned tag in the request', { 'ec2:CreateAction': 'CreateSecurityGroup' }],
    ])('refuses tag-on-create with %s', (_, equals) => {
      expect(violations({ Action: 'ec2:CreateTags', Resource: SG, Condition: { StringEquals: equals } })).toEqual([
        expect.stringMatching(unconditioned('ec2:CreateTags')),
      ]);
    });
  });

  describe('owned or shared', () => {
    const shared = (values: string[]) => ({ StringEquals: { [`aws:ResourceTag/${TAG}`]: values } });

    it.each(['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'])('is accepted for %s', (action) => {
      expect(violations({ Action: action, Resource: SG, Condition: shared(['shared', 'owned']) })).toEqual([]);
    });

    it.each(['ec2:DeleteSecurityGroup', 'ec2:CreateTags', 'elasticloadbalancing:DeleteLoadBalancer'])(
      'is refused for %s',
      (action) => {
        expect(violations({ Action: action, Resource: SG, Condition: shared(['owned', 'shared']) })).toEqual([
          expect.stringMatching(unconditioned(action)),
        ]);
      },
    );

    it.each([[['owned', 'shared', 'anything']], [['shared']]])('must be exactly owned and shared, not %j', (values) => {
      expect(
        violations({ Action: 'ec2:AuthorizeSecurityGroupIngress', Resource: SG, Condition: shared(values) }),
      ).toHaveLength(1);
    });
  });

  describe('CreateSecurityGroup on its VPC', () => {
    it('needs no tag on one named VPC', () => {
      expect(
        violations({ Action: 'ec2:CreateSecurityGroup', Resource: arn('ec2', 'vpc/vpc-0123456789abcdef0') }),
      ).toEqual([]);
    });

    it.each([
      ['every VPC', arn('ec2', 'vpc/*')],
      ['a security group', SG],
    ])('is refused on %s', (_, resource) => {
      expect(violations({ Action: 'ec2:CreateSecurityGroup', Resource: resource })).toEqual([
        expect.stringMatching(unconditioned('ec2:CreateSecurityGroup')),
      ]);
    });

    it('is refused on *, twice over', () => {
      expect(violations({ Action: 'ec2:CreateSecurityGroup', Resource: '*' })).toEqual([
        expect.stringMatching(unconditioned('ec2:CreateSecurityGroup')),
        expect.stringMatching(/grants ec2:CreateSecurityGroup on every resource/),
      ]);
    });

    it('does not excuse another action on the VPC', () => {
      expect(violations({ Action: 'ec2:CreateRoute', Resource: arn('ec2', 'vpc/vpc-0123456789abcdef0') })).toEqual([
        expect.stringMatching(unconditioned('ec2:CreateRoute')),
      ]);
    });
  });

  describe('listener writes', () => {
    const BACKFILL = {
      StringEquals: OWNED_REQUEST,
      Null: { [`aws:ResourceTag/${TAG}`]: 'true' },
    };

    it('need the owned tag on the listener itself', () => {
      expect(
        violations(
          {
            Sid: 'Owned',
            Action: ['elasticloadbalancing:ModifyListener', 'elasticloadbalancing:DeleteListener'],
            Resource: NLB_LISTENER,
            Condition: OWNED,
          },
          {
            Sid: 'Untagged',
            Action: ['elasticloadbalancing:ModifyListener', 'elasticloadbalancing:DeleteListener'],
            Resource: NLB_LISTENER,
          },
        ),
      ).toEqual([
        expect.stringMatching(unconditioned('elasticloadbalancing:ModifyListener')),
        expect.stringMatching(unconditioned('elasticloadbalancing:DeleteListener')),
      ]);
    });

    it('accept the tag backfill: AddTags on Network Load Balancer listeners without our tag, tagging them owned', () => {
      expect(
        violations({ Action: 'elasticloadbalancing:AddTags', Resource: NLB_LISTENER, Condition: BACKFILL }),
      ).toEqual([]);
    });

    it.each([
      ['without the owned tag in the request', NLB_LISTENER, { Null: BACKFILL.Null }],
      ['without the "no tag of ours yet" condition', NLB_LISTENER, { StringEquals: OWNED_REQUEST }],
      ['on Application Load Balancer listeners', arn('elasticloadbalancing', 'listener/app/*/*/*'), BACKFILL],
      ['on load balancers', [NLB_LISTENER, LB], BACKFILL],
      ['on every resource', '*', BACKFILL],
    ])('refuse the backfill %s', (_, resource, condition) => {
      expect(
        violations({ Action: 'elasticloadbalancing:AddTags', Resource: resource, Condition: condition }),
      ).toContainEqual(expect.stringMatching(unconditioned('elasticloadbalancing:AddTags')));
    });

    it('the backfill conditions excuse no other write', () => {
      expect(
        violations({
          Action: ['elasticloadbalancing:ModifyListener', 'elasticloadbalancing:DeleteListener'],
          Resource: NLB_LISTENER,
          Condition: BACKFILL,
        }),
      ).toHaveLength(2);
    });
  });

  describe('secondary addresses of network interfaces in one VPC', () => {
    const ENI = arn('ec2', 'network-interface/*');
    const VPC = arn('ec2', 'vpc/vpc-0123456789abcdef0');
    const IN_VPC = { ArnEquals: { 'ec2:Vpc': VPC } };
    const ADDRESS_WRITES = ['ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'];

    it('need no tag on network interfaces in one named VPC', () => {
      expect(violations({ Action: ADDRESS_WRITES, Resource: ENI, Condition: IN_VPC })).toEqual([]);
    });

    it.each([
      ['without the VPC condition', ENI, undefined],
      ['in every VPC', ENI, { ArnEquals: { 'ec2:Vpc': arn('ec2', 'vpc/*') } }],
      ['in either of two VPCs', ENI, { ArnEquals: { 'ec2:Vpc': [VPC, arn('ec2', 'vpc/vpc-0fedcba9876543210')] } }],
      ['on instances', arn('ec2', 'instance/*'), IN_VPC],
      ['on every resource', '*', IN_VPC],
    ])('are refused %s', (_, resource, condition) => {
      expect(
        violations({ Action: ADDRESS_WRITES, Resource: resource, ...(condition ? { Condition: condition } : {}) }),
      ).toEqual(expect.arrayContaining(ADDRESS_WRITES.map((a) => expect.stringMatching(unconditioned(a)))));
    });

    it.each(['ec2:DeleteNetworkInterface', 'ec2:CreateTags', 'ec2:AssignIpv6Addresses'])(
      'excuse no other write on the interfaces: %s',
      (action) => {
        expect(violations({ Action: action, Resource: ENI, Condition: IN_VPC })).toEqual([
          expect.stringMatching(unconditioned(action)),
        ]);
      },
    );

    it('accept the owned tag and the VPC together for deleting and tagging', () => {
      expect(
        violations({
          Action: ['ec2:DeleteNetworkInterface', 'ec2:CreateTags'],
          Resource: ENI,
          Condition: { ...OWNED, ...IN_VPC },
        }),
      ).toEqual([]);
    });
  });
});

describe('policyViolations: Classic Load Balancer writes', () => {
  // `loadbalancer/<name>`: the Classic API's ARN, with the same service prefix and some action names as ELBv2.
  const CLASSIC = arn('elasticloadbalancing', 'loadbalancer/*');
  const classicWrites = CLASSIC_ELB_WRITE_ACTIONS.filter((a) => a !== 'elasticloadbalancing:AddTags');

  it.each(classicWrites)('accepts %s on Classic load balancers tagged owned', (action) => {
    expect(violations({ Action: action, Resource: CLASSIC, Condition: OWNED })).toEqual([]);
  });

  it.each([...classicWrites, 'elasticloadbalancing:AddTags', 'elasticloadbalancing:CreateLoadBalancer'])(
    'refuses %s without the ownership condition',
    (action) => {
      expect(violations({ Action: action, Resource: CLASSIC })).toEqual([expect.stringMatching(unconditioned(action))]);
    },
  );

  it.each(classicWrites)('refuses %s with only the tag in the request (the load balancer exists)', (action) => {
    expect(violations({ Action: action, Resource: CLASSIC, Condition: { StringEquals: OWNED_REQUEST } })).toEqual([
      expect.stringMatching(unconditioned(action)),
    ]);
  });

  it('refuses a Classic write on every resource even when owned', () => {
    expect(
      violations({ Action: 'elasticloadbalancing:ConfigureHealthCheck', Resource: '*', Condition: OWNED }),
    ).toEqual([expect.stringMatching(/grants elasticloadbalancing:ConfigureHealthCheck on every resource/)]);
  });
});

describe('policyViolations: removing tags', () => {
  const TG = arn('elasticloadbalancing', 'targetgroup/*/*');
  const PROTECTED = [TAG, 'kubernetes.io/service-name', 'serverless-ccm/security-group-role'];
  const KEEPS = {
    'ForAllValues:StringNotEquals': { 'aws:TagKeys': PROTECTED },
    Null: { 'aws:TagKeys': 'false' },
  };
  const unprotected = (action: string) => new RegExp(`allows "${action}" without protecting the tags ${TAG}`);

  it.each([
    ['ec2:DeleteTags', SG],
    ['elasticloadbalancing:RemoveTags', [LB, TG, NLB_LISTENER]],
  ])('accepts %s on owned resources that keeps the ownership tags', (action, resource) => {
    expect(violations({ Action: action, Resource: resource, Condition: { ...OWNED, ...KEEPS } })).toEqual([]);
  });

  it.each([
    ['no tag key condition at all', OWNED],
    // ForAllValues is true when the request names no keys: EC2 DeleteTags without keys removes every tag.
    [
      'no Null check (a request without keys)',
      { ...OWNED, 'ForAllValues:StringNotEquals': KEEPS['ForAllValues:StringNotEquals'] },
    ],
    ['Null true', { ...OWNED, ...KEEPS, Null: { 'aws:TagKeys': 'true' } }],
    [
      'one protected key missing',
      { ...OWNED, ...KEEPS, 'ForAllValues:StringNotEquals': { 'aws:TagKeys': PROTECTED.slice(0, 2) } },
    ],
    [
      // True as soon as one removed key is unprotected: the ownership tags could go along with it.
      'ForAnyValue instead of ForAllValues',
      { ...OWNED, Null: KEEPS.Null, 'ForAnyValue:StringNotEquals': { 'aws:TagKeys': PROTECTED } },
    ],
    [
      'another cluster’s tag',
      {
        ...OWNED,
        ...KEEPS,
        'ForAllValues:StringNotEquals': { 'aws:TagKeys': ['kubernetes.io/cluster/other', ...PROTECTED.slice(1)] },
      },
    ],
  ])('refuses DeleteTags with %s', (_, condition) => {
    expect(violations({ Action: 'ec2:DeleteTags', Resource: SG, Condition: condition })).toEqual([
      expect.stringMatching(unprotected('ec2:DeleteTags')),
    ]);
  });

  it('still needs the owned tag on the resource', () => {
    expect(violations({ Action: 'elasticloadbalancing:RemoveTags', Resource: LB, Condition: KEEPS })).toEqual([
      expect.stringMatching(unconditioned('elasticloadbalancing:RemoveTags')),
    ]);
  });

  it('is refused on *', () => {
    expect(violations({ Action: 'ec2:DeleteTags', Resource: '*', Condition: { ...OWNED, ...KEEPS } })).toEqual([
      expect.stringMatching(/grants ec2:DeleteTags on every resource/),
    ]);
  });
});

describe('policyViolations: Auto Scaling', () => {
  const GROUPS = arn('autoscaling', 'autoScalingGroup:*:autoScalingGroupName/*');
  const CLUSTER = { StringEquals: { [`aws:ResourceTag/${TAG}`]: ['owned', 'shared'] } };
  const HOOKS = ['autoscaling:CompleteLifecycleAction', 'autoscaling:RecordLifecycleActionHeartbeat'];
  const refused = (action: string) => new RegExp(`allows the Auto Scaling write "${action}" other than a lifecycle`);

  it('accepts lifecycle actions on groups tagged for the cluster (owned, or owned and shared), and Describe on *', () => {
    expect(violations({ Action: HOOKS, Resource: GROUPS, Condition: CLUSTER })).toEqual([]);
    expect(violations({ Action: HOOKS, Resource: GROUPS, Condition: OWNED })).toEqual([]);
    expect(violations({ Action: 'autoscaling:DescribeLifecycleHooks', Resource: '*' })).toEqual([]);
  });

  it.each([
    ['without a condition', { Resource: GROUPS }],
    [
      'on another cluster’s groups',
      { Resource: GROUPS, Condition: { StringEquals: { 'aws:ResourceTag/x': 'owned' } } },
    ],
    ['on a resource that is no Auto Scaling group', { Resource: SG, Condition: CLUSTER }],
  ])('refuses a lifecycle action %s', (_, statement) => {
    expect(violations({ Action: 'autoscaling:CompleteLifecycleAction', ...statement })).toEqual([
      expect.stringMatching(refused('autoscaling:CompleteLifecycleAction')),
    ]);
  });

  it('refuses a lifecycle action on *, for the tag alone does not name the resource type', () => {
    expect(
      violations({ Action: 'autoscaling:RecordLifecycleActionHeartbeat', Resource: '*', Condition: CLUSTER }),
    ).toEqual([
      expect.stringMatching(refused('autoscaling:RecordLifecycleActionHeartbeat')),
      expect.stringMatching(/grants autoscaling:RecordLifecycleActionHeartbeat on every resource/),
    ]);
  });

  it('refuses any other Auto Scaling write, even on the cluster’s groups', () => {
    expect(
      violations({ Action: 'autoscaling:TerminateInstanceInAutoScalingGroup', Resource: GROUPS, Condition: CLUSTER }),
    ).toEqual([expect.stringMatching(refused('autoscaling:TerminateInstanceInAutoScalingGroup'))]);
  });
});
