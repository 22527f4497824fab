import { describe, expect, it } from 'vitest';
import {
  allow,
  ec2Describe,
  explicitActions,
  isTaggedWriteAction,
  ownedResourceCondition,
  ownedResourceWrite,
} from './iam.ts';

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
  ])('refuses %j', (actions, message) => {
    expect(() => ownedResourceWrite({ clusterName: 'c1', actions, resources: ['*'] })).toThrow(message);
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
