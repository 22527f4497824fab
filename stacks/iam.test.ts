import { describe, expect, it } from 'vitest';
import { BACKEND_ROLE_TAG } from '../shared/load-balancers/security-groups.ts';
import {
  allow,
  clusterResourceCondition,
  clusterResourceWrite,
  createSecurityGroupInVpc,
  ec2Describe,
  elbv2Describe,
  explicitActions,
  isTaggedWriteAction,
  listenerTagBackfill,
  ownedResourceCondition,
  ownedResourceCreate,
  ownedResourceWrite,
  ownedTagRemoval,
  protectedTagKeys,
  SECURITY_GROUP_ROLE_TAG,
  tagOnCreate,
} from './iam.ts';

const SG = 'arn:aws:ec2:eu-west-1:111122223333:security-group/*';
const VPC = 'arn:aws:ec2:eu-west-1:111122223333:vpc/vpc-0123456789abcdef0';
const LB = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/*/*';
const TG = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/*/*';
const LISTENER = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:listener/net/*/*/*';

describe('ownedResourceWrite', () => {
  it('conditions the write on the cluster ownership tag being owned', () => {
    const statement = ownedResourceWrite({
      clusterName: 'prod-eu',
      actions: ['ec2:CreateRoute', 'ec2:DeleteRoute', 'ec2:ReplaceRoute'],
      resources: ['arn:aws:ec2:eu-west-1:111122223333:route-table/*'],
      sid: 'Routes',
    });
    expect(statement.toStatementJson()).toEqual({
      Sid: 'Routes',
      Effect: 'Allow',
      Action: ['ec2:CreateRoute', 'ec2:DeleteRoute', 'ec2:ReplaceRoute'],
      Resource: 'arn:aws:ec2:eu-west-1:111122223333:route-table/*',
      Condition: { StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' } },
    });
  });

  it('applies to ELBv2 writes too', () => {
    const json = ownedResourceWrite({
      clusterName: 'c1',
      actions: ['elasticloadbalancing:DeleteLoadBalancer'],
      resources: ['*'],
    }).toStatementJson();
    expect(json.Condition).toEqual(ownedResourceCondition('c1'));
  });

  it.each([
    [['ec2:*'], /must be named in full/],
    [['ec2:Create*'], /must be named in full/],
    [['ec2:DescribeRouteTables', 'ec2:CreateRoute'], /ec2:DescribeRouteTables should be granted on their own/],
    [['sqs:SendMessage'], /for EC2\/ELBv2 writes/],
    [['ec2:DeleteTags'], /cannot grant ec2:DeleteTags: removing tags must keep the ownership tags/],
    [['elasticloadbalancing:RemoveTags'], /cannot grant elasticloadbalancing:RemoveTags/],
  ])('refuses %j', (actions, message) => {
    expect(() => ownedResourceWrite({ clusterName: 'c1', actions, resources: ['*'] })).toThrow(message);
  });
});

describe('ownedTagRemoval', () => {
  it('removes tags from owned resources only, naming the keys, never an ownership tag', () => {
    expect(
      ownedTagRemoval({
        sid: 'TagRemoval',
        clusterName: 'prod-eu',
        actions: ['elasticloadbalancing:RemoveTags'],
        resources: [LB, TG, LISTENER],
      }).toStatementJson(),
    ).toEqual({
      Sid: 'TagRemoval',
      Effect: 'Allow',
      Action: 'elasticloadbalancing:RemoveTags',
      Resource: [LB, TG, LISTENER],
      Condition: {
        StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'owned' },
        // Every key removed must be none of these; ForAllValues alone would also pass a request without keys.
        'ForAllValues:StringNotEquals': {
          'aws:TagKeys': [
            'kubernetes.io/cluster/prod-eu',
            'kubernetes.io/service-name',
            'serverless-ccm/security-group-role',
          ],
        },
        // EC2 DeleteTags without keys removes every tag: refused.
        Null: { 'aws:TagKeys': 'false' },
      },
    });
  });

  it('protects the keys the service controller marks its resources with', () => {
    expect(protectedTagKeys('c1')).toEqual([
      'kubernetes.io/cluster/c1',
      'kubernetes.io/service-name',
      BACKEND_ROLE_TAG,
    ]);
    expect(SECURITY_GROUP_ROLE_TAG).toBe(BACKEND_ROLE_TAG);
  });

  it.each([
    [['ec2:CreateTags'], /only for ec2:DeleteTags, elasticloadbalancing:RemoveTags; ec2:CreateTags/],
    [['ec2:DeleteTags', 'ec2:DeleteSecurityGroup'], /ec2:DeleteSecurityGroup must be granted otherwise/],
    [['ec2:*'], /named in full/],
  ])('refuses %j', (actions, message) => {
    expect(() => ownedTagRemoval({ clusterName: 'c1', actions, resources: [SG] })).toThrow(message);
  });

  it.each([[[]], [['*']], [[SG, '*']]])('refuses the resources %j', (resources) => {
    expect(() => ownedTagRemoval({ clusterName: 'c1', actions: ['ec2:DeleteTags'], resources })).toThrow(
      /needs the ARNs of the resources, not "\*"/,
    );
  });
});

describe('explicitActions', () => {
  it.each(['*', 'sqs:*', 'ec2:Describe*', 'ec2:*Route', 'ec2', ''])('refuses %j', (action) => {
    expect(() => explicitActions([action])).toThrow(/named in full/);
  });

  it('refuses an empty list', () => {
    expect(() => explicitActions([])).toThrow(/at least one action/);
  });

  it('keeps full names', () => {
    expect(explicitActions(['sqs:SendMessage', 'ec2:DescribeInstances'])).toEqual([
      'sqs:SendMessage',
      'ec2:DescribeInstances',
    ]);
  });
});

describe('isTaggedWriteAction', () => {
  it.each([
    ['ec2:CreateRoute', true],
    ['ec2:ModifyInstanceAttribute', true],
    ['ec2:AssignPrivateIpAddresses', true],
    ['elasticloadbalancing:RegisterTargets', true],
    // Classic Load Balancer writes share the prefix: they need the ownership condition too.
    ['elasticloadbalancing:RegisterInstancesWithLoadBalancer', true],
    ['elasticloadbalancing:SetLoadBalancerPoliciesOfListener', true],
    ['elasticloadbalancing:DescribeInstanceHealth', false],
    ['ec2:DescribeInstances', false],
    ['ec2:GetConsoleOutput', false],
    ['elasticloadbalancing:DescribeTargetHealth', false],
    ['sqs:SendMessage', false],
    ['eks:DescribeCluster', false],
  ])('%s -> %s', (action, expected) => {
    expect(isTaggedWriteAction(action)).toBe(expected);
  });
});

describe('ec2Describe and allow', () => {
  it('lists each Describe call on *', () => {
    expect(ec2Describe('DescribeInstances', 'DescribeInstanceTypes').toStatementJson()).toEqual({
      Sid: 'Ec2Describe',
      Effect: 'Allow',
      Action: ['ec2:DescribeInstances', 'ec2:DescribeInstanceTypes'],
      Resource: '*',
    });
  });

  it('refuses a wildcard in a plain grant', () => {
    expect(() => allow(['sqs:*'], ['arn:aws:sqs:eu-west-1:111122223333:q'])).toThrow(/named in full/);
  });
});

describe('elbv2Describe', () => {
  it('lists each ELBv2 Describe call on *', () => {
    expect(elbv2Describe('DescribeLoadBalancers', 'DescribeTags').toStatementJson()).toEqual({
      Sid: 'Elbv2Describe',
      Effect: 'Allow',
      Action: ['elasticloadbalancing:DescribeLoadBalancers', 'elasticloadbalancing:DescribeTags'],
      Resource: '*',
    });
  });
});

describe('clusterResourceWrite (owned or shared)', () => {
  it('accepts the cluster tag with either value, in the one VPC', () => {
    const json = clusterResourceWrite({
      sid: 'Rules',
      clusterName: 'prod-eu',
      actions: ['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'],
      resources: [SG],
      vpcArn: VPC,
    }).toStatementJson();
    expect(json).toEqual({
      Sid: 'Rules',
      Effect: 'Allow',
      Action: ['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'],
      Resource: SG,
      Condition: {
        StringEquals: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': ['owned', 'shared'] },
        ArnEquals: { 'ec2:Vpc': VPC },
      },
    });
    expect(json.Condition.StringEquals).toEqual(clusterResourceCondition('prod-eu').StringEquals);
  });

  it.each([
    [['ec2:DeleteSecurityGroup']],
    [['ec2:AuthorizeSecurityGroupIngress', 'ec2:CreateTags']],
    [['elasticloadbalancing:DeleteLoadBalancer']],
  ])('refuses anything but adding and removing rules: %j', (actions) => {
    expect(() => clusterResourceWrite({ clusterName: 'c1', actions, resources: [SG], vpcArn: VPC })).toThrow(
      /only for ec2:AuthorizeSecurityGroupIngress, ec2:RevokeSecurityGroupIngress; .* must require the owned tag/,
    );
  });
});

describe('ownedResourceCreate', () => {
  it('requires the owned cluster tag in the request', () => {
    expect(
      ownedResourceCreate({
        clusterName: 'prod-eu',
        actions: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
        resources: [LB, TG],
      }).toStatementJson(),
    ).toEqual({
      Effect: 'Allow',
      Action: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
      Resource: [LB, TG],
      Condition: { StringEquals: { 'aws:RequestTag/kubernetes.io/cluster/prod-eu': 'owned' } },
    });
  });

  it.each([
    // Acts on an existing load balancer / route table: the request's tags must not decide.
    'elasticloadbalancing:CreateListener',
    'ec2:CreateRoute',
    'ec2:CreateTags',
    'elasticloadbalancing:DeleteLoadBalancer',
  ])('refuses %s', (action) => {
    expect(() => ownedResourceCreate({ clusterName: 'c1', actions: [action], resources: [LB] })).toThrow(
      /for actions that create a new resource/,
    );
  });
});

describe('tagOnCreate', () => {
  it('lets EC2 tag a security group only while creating it, with our tag', () => {
    expect(
      tagOnCreate({
        clusterName: 'prod-eu',
        createActions: ['ec2:CreateSecurityGroup'],
        resources: [SG],
      }).toStatementJson(),
    ).toEqual({
      Effect: 'Allow',
      Action: 'ec2:CreateTags',
      Resource: SG,
      Condition: {
        StringEquals: {
          'ec2:CreateAction': ['CreateSecurityGroup'],
          'aws:RequestTag/kubernetes.io/cluster/prod-eu': 'owned',
        },
      },
    });
  });

  it('uses AddTags and elasticloadbalancing:CreateAction for ELBv2', () => {
    const json = tagOnCreate({
      clusterName: 'prod-eu',
      createActions: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
      resources: [LB, TG],
    }).toStatementJson();
    expect(json.Action).toBe('elasticloadbalancing:AddTags');
    expect(json.Condition.StringEquals['elasticloadbalancing:CreateAction']).toEqual([
      'CreateLoadBalancer',
      'CreateTargetGroup',
    ]);
  });

  it('lets ELBv2 tag a listener only while creating it (CreateListener tags it owned)', () => {
    expect(
      tagOnCreate({
        clusterName: 'prod-eu',
        createActions: ['elasticloadbalancing:CreateListener'],
        resources: [LISTENER],
      }).toStatementJson(),
    ).toEqual({
      Effect: 'Allow',
      Action: 'elasticloadbalancing:AddTags',
      Resource: LISTENER,
      Condition: {
        StringEquals: {
          'elasticloadbalancing:CreateAction': ['CreateListener'],
          'aws:RequestTag/kubernetes.io/cluster/prod-eu': 'owned',
        },
      },
    });
  });

  it.each([
    [['ec2:CreateSecurityGroup', 'elasticloadbalancing:CreateLoadBalancer'], /of one of ec2, elasticloadbalancing/],
    [['sqs:CreateQueue'], /of one of ec2, elasticloadbalancing/],
    [['ec2:RunInstances'], /ec2:RunInstances is not a create that tags owned/],
    // CreateRule is one (its rule is tagged in the call, authorized on the listener's owned tag); a trust store is not.
    [['elasticloadbalancing:CreateTrustStore'], /is not a create that tags owned/],
    [['ec2:CreateRoute'], /is not a create that tags owned/],
  ])('refuses %j', (createActions, message) => {
    expect(() => tagOnCreate({ clusterName: 'c1', createActions, resources: [SG] })).toThrow(message);
  });
});

describe('createSecurityGroupInVpc', () => {
  it('grants the VPC half of CreateSecurityGroup on one named VPC, untagged', () => {
    expect(createSecurityGroupInVpc([VPC], 'InVpc').toStatementJson()).toEqual({
      Sid: 'InVpc',
      Effect: 'Allow',
      Action: 'ec2:CreateSecurityGroup',
      Resource: VPC,
    });
  });

  it.each(['arn:aws:ec2:eu-west-1:111122223333:vpc/*', SG, '*'])('refuses %s', (arn) => {
    expect(() => createSecurityGroupInVpc([arn])).toThrow(/ARNs of single VPCs/);
  });
});

describe('listenerTagBackfill', () => {
  it('tags Network Load Balancer listeners without our tag, only with our owned tag in the request', () => {
    expect(
      listenerTagBackfill({ clusterName: 'prod-eu', resources: [LISTENER], sid: 'Backfill' }).toStatementJson(),
    ).toEqual({
      Sid: 'Backfill',
      Effect: 'Allow',
      Action: 'elasticloadbalancing:AddTags',
      Resource: LISTENER,
      Condition: {
        StringEquals: { 'aws:RequestTag/kubernetes.io/cluster/prod-eu': 'owned' },
        Null: { 'aws:ResourceTag/kubernetes.io/cluster/prod-eu': 'true' },
      },
    });
  });

  it.each(['arn:aws:elasticloadbalancing:eu-west-1:111122223333:listener/app/*/*/*', LB, TG, '*'])(
    'refuses the resource %s',
    (arn) => {
      expect(() => listenerTagBackfill({ clusterName: 'c1', resources: [arn] })).toThrow(
        /Network Load Balancer listener ARNs/,
      );
    },
  );

  it('refuses no resource at all', () => {
    expect(() => listenerTagBackfill({ clusterName: 'c1', resources: [] })).toThrow(/needs the listener ARNs/);
  });
});
