import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { analyzeEntries } from '../test/helpers/code-usage.ts';
import {
  CLASSIC_ELB_READ_ACTIONS,
  CLASSIC_ELB_WRITE_ACTIONS,
  CLASSIC_LOAD_BALANCER_ARN,
  classicLoadBalancerStatements,
} from './iam-classic-elb.ts';
import { policyViolations } from './policy-rules.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLASSIC = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/*';
const TAG = 'kubernetes.io/cluster/prod-eu';
const statements = () => classicLoadBalancerStatements({ clusterName: 'prod-eu', loadBalancers: CLASSIC });
const json = () => statements().map((s) => s.toStatementJson());
const actionsOf = (list: { Action?: string | string[] }[]) =>
  [...new Set(list.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action ?? ''])))].sort();

describe('classicLoadBalancerStatements', () => {
  it('grants exactly the Classic ELB calls ElbAdapter makes, every port method counted', () => {
    const usage = analyzeEntries(ROOT, { classic: 'test/fixtures/code/elb-port-every-method.ts' }).get('classic');
    const called = [...(usage?.awsActions ?? [])].sort();
    // CreateLoadBalancer carries tags, so it is also authorized as AddTags.
    expect(called).toContain('elasticloadbalancing:CreateLoadBalancer');
    expect(actionsOf(json())).toEqual(called);
  }, 120_000);

  it('creates only what the request tags owned, and tags only while creating', () => {
    const [, create, tagOnCreate] = json();
    expect(create).toEqual({
      Sid: 'ClassicLoadBalancerCreate',
      Effect: 'Allow',
      Action: 'elasticloadbalancing:CreateLoadBalancer',
      Resource: CLASSIC,
      Condition: { StringEquals: { [`aws:RequestTag/${TAG}`]: 'owned' } },
    });
    expect(tagOnCreate).toEqual({
      Sid: 'ClassicLoadBalancerTagOnCreate',
      Effect: 'Allow',
      Action: 'elasticloadbalancing:AddTags',
      Resource: CLASSIC,
      Condition: {
        StringEquals: {
          'elasticloadbalancing:CreateAction': ['CreateLoadBalancer'],
          [`aws:RequestTag/${TAG}`]: 'owned',
        },
      },
    });
  });

  it('writes only on load balancers tagged owned, and never removes the ownership tags', () => {
    const [, , , writes, removal] = json();
    expect(writes).toMatchObject({
      Action: [...CLASSIC_ELB_WRITE_ACTIONS],
      Resource: CLASSIC,
      Condition: { StringEquals: { [`aws:ResourceTag/${TAG}`]: 'owned' } },
    });
    expect(removal).toMatchObject({
      Action: 'elasticloadbalancing:RemoveTags',
      Resource: CLASSIC,
      Condition: {
        StringEquals: { [`aws:ResourceTag/${TAG}`]: 'owned' },
        'ForAllValues:StringNotEquals': { 'aws:TagKeys': expect.arrayContaining([TAG, 'kubernetes.io/service-name']) },
        Null: { 'aws:TagKeys': 'false' },
      },
    });
  });

  it('reads on * (Describe* have no resource-level permissions)', () => {
    expect(json()[0]).toEqual({
      Sid: 'ClassicElbDescribe',
      Effect: 'Allow',
      Action: [...CLASSIC_ELB_READ_ACTIONS],
      Resource: '*',
    });
  });

  it('passes the template rules, on a role as CDK writes it', () => {
    const stack = new Stack(new App(), 'Classic', { env: { region: 'eu-west-1', account: '111122223333' } });
    const role = new Role(stack, 'Service', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    const arn = stack.formatArn({ service: 'elasticloadbalancing', resource: 'loadbalancer', resourceName: '*' });
    for (const s of classicLoadBalancerStatements({ clusterName: 'prod-eu', loadBalancers: arn })) role.addToPolicy(s);
    expect(policyViolations(Template.fromStack(stack).toJSON(), 'prod-eu')).toEqual([]);
    // ... which do look: the same statements for another cluster are refused.
    expect(policyViolations(Template.fromStack(stack).toJSON(), 'other').length).toBeGreaterThan(0);
  });

  it.each([
    'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/*/*',
    'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/*/*',
    '*',
  ])('refuses %s as the Classic load balancers', (resource) => {
    expect(CLASSIC_LOAD_BALANCER_ARN.test(resource)).toBe(false);
    expect(() => classicLoadBalancerStatements({ clusterName: 'prod-eu', loadBalancers: resource })).toThrow(
      /takes Classic load balancer ARNs/,
    );
  });
});
