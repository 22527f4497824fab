import { describe, expect, it } from 'vitest';
import { protectedTagKeys } from './iam.ts';
import {
  adoptionTagging,
  ingressProtectedTagKeys,
  ingressTagRemoval,
  REFERENCE_TRACKING_TAGS,
  unscopedList,
} from './iam-ingress.ts';
import { type PolicyStatementJson, policyViolations } from './policy-rules.ts';

/**
 * The Ingress controller's own IAM helpers, and the template rules (policy-rules.ts) on hand-written statements at the
 * edges of its two exceptions: adoption of what the AWS Load Balancer Controller made, and the two unscoped lists.
 */

const TAG = 'kubernetes.io/cluster/prod-eu';
const ALB = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/app/*/*';
const RULES = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:listener-rule/app/*/*/*/*';
const SG = 'arn:aws:ec2:eu-west-1:111122223333:security-group/*';

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

const ADOPTION_CONDITION = {
  StringEquals: { 'aws:ResourceTag/elbv2.k8s.aws/cluster': 'prod-eu', [`aws:RequestTag/${TAG}`]: 'owned' },
  'ForAllValues:StringEquals': { 'aws:TagKeys': [TAG, 'elbv2.k8s.aws/cluster'] },
  Null: { 'aws:TagKeys': 'false' },
};

describe('adoptionTagging', () => {
  it('tags ours only what the reference controller made for this cluster, with our two cluster tags and no other', () => {
    expect(
      adoptionTagging({
        sid: 'Adoption',
        clusterName: 'prod-eu',
        action: 'elasticloadbalancing:AddTags',
        resources: [ALB, RULES],
      }).toStatementJson(),
    ).toEqual({
      Sid: 'Adoption',
      Effect: 'Allow',
      Action: 'elasticloadbalancing:AddTags',
      Resource: [ALB, RULES],
      Condition: ADOPTION_CONDITION,
    });
  });

  it('is accepted by the template rules, for ELBv2 AddTags and EC2 CreateTags', () => {
    for (const action of ['elasticloadbalancing:AddTags', 'ec2:CreateTags']) {
      const json = adoptionTagging({ clusterName: 'prod-eu', action, resources: [SG] }).toStatementJson();
      expect(violations(json as PolicyStatementJson)).toEqual([]);
    }
  });

  it.each([
    ['elasticloadbalancing:ModifyRule', /only for elasticloadbalancing:AddTags, ec2:CreateTags/],
    ['elasticloadbalancing:*', /named in full/],
  ])('refuses %s', (action, message) => {
    expect(() => adoptionTagging({ clusterName: 'c1', action, resources: [ALB] })).toThrow(message);
  });

  it.each([[[]], [['*']]])('refuses the resources %j', (resources) => {
    expect(() => adoptionTagging({ clusterName: 'c1', action: 'elasticloadbalancing:AddTags', resources })).toThrow(
      /needs the ARNs/,
    );
  });
});

describe('policyViolations: adoption at its edges', () => {
  const adoption = (condition: Record<string, Record<string, unknown>>, resource: unknown = ALB) =>
    violations({ Action: 'elasticloadbalancing:AddTags', Resource: resource, Condition: condition });
  const refused = /allows the write "elasticloadbalancing:AddTags" without the kubernetes.io\/cluster\/prod-eu=owned/;

  it('accepts the exact shape', () => {
    expect(adoption(ADOPTION_CONDITION)).toEqual([]);
  });

  it.each([
    [
      'another cluster',
      {
        ...ADOPTION_CONDITION,
        StringEquals: { ...ADOPTION_CONDITION.StringEquals, 'aws:ResourceTag/elbv2.k8s.aws/cluster': 'other' },
      },
    ],
    [
      'no owned tag in the request',
      { ...ADOPTION_CONDITION, StringEquals: { 'aws:ResourceTag/elbv2.k8s.aws/cluster': 'prod-eu' } },
    ],
    [
      'another key besides ours',
      { ...ADOPTION_CONDITION, 'ForAllValues:StringEquals': { 'aws:TagKeys': [TAG, 'team'] } },
    ],
    [
      'keys not named',
      {
        StringEquals: ADOPTION_CONDITION.StringEquals,
        'ForAllValues:StringEquals': ADOPTION_CONDITION['ForAllValues:StringEquals'],
      },
    ],
    ['no key limit', { StringEquals: ADOPTION_CONDITION.StringEquals, Null: ADOPTION_CONDITION.Null }],
  ])('refuses adoption with %s', (_, condition) => {
    expect(adoption(condition)).toEqual([expect.stringMatching(refused)]);
  });

  it('refuses adoption on every resource', () => {
    expect(adoption(ADOPTION_CONDITION, '*')).toEqual(
      expect.arrayContaining([expect.stringMatching(refused), expect.stringMatching(/on every resource/)]),
    );
  });

  it('refuses anything but tagging under the adoption condition', () => {
    expect(
      violations({ Action: 'elasticloadbalancing:ModifyRule', Resource: RULES, Condition: ADOPTION_CONDITION }),
    ).toEqual([expect.stringMatching(/allows the write "elasticloadbalancing:ModifyRule" without/)]);
  });
});

describe('ingressTagRemoval', () => {
  it('keeps the ownership tags and the reference controller’s tracking tags', () => {
    const json = ingressTagRemoval({
      clusterName: 'prod-eu',
      actions: ['elasticloadbalancing:RemoveTags'],
      resources: [ALB, RULES],
    }).toStatementJson();
    expect(json.Condition).toEqual({
      StringEquals: { [`aws:ResourceTag/${TAG}`]: 'owned' },
      'ForAllValues:StringNotEquals': {
        'aws:TagKeys': [...protectedTagKeys('prod-eu'), ...REFERENCE_TRACKING_TAGS],
      },
      Null: { 'aws:TagKeys': 'false' },
    });
    expect(ingressProtectedTagKeys('prod-eu')).toEqual(
      expect.arrayContaining(['elbv2.k8s.aws/cluster', 'ingress.k8s.aws/stack', 'ingress.k8s.aws/resource', TAG]),
    );
    expect(violations(json as PolicyStatementJson)).toEqual([]);
  });

  it.each([
    [['elasticloadbalancing:AddTags'], [ALB], /only for ec2:DeleteTags and elasticloadbalancing:RemoveTags/],
    [['elasticloadbalancing:RemoveTags'], ['*'], /needs the ARNs/],
    [['elasticloadbalancing:RemoveTags'], [], /needs the ARNs/],
  ])('refuses %j on %j', (actions, resources, message) => {
    expect(() => ingressTagRemoval({ clusterName: 'c1', actions, resources })).toThrow(message);
  });
});

describe('unscopedList', () => {
  it('grants the two lists without resource-level permissions on "*", which the template rules accept', () => {
    const json = unscopedList(['acm:ListCertificates', 'wafv2:ListWebACLs'], 'Lists').toStatementJson();
    expect(json).toEqual({
      Sid: 'Lists',
      Effect: 'Allow',
      Action: ['acm:ListCertificates', 'wafv2:ListWebACLs'],
      Resource: '*',
    });
    expect(violations(json as PolicyStatementJson)).toEqual([]);
  });

  it('is refused for anything else, and the template rules refuse "*" for other reads', () => {
    expect(() => unscopedList(['acm:DescribeCertificate'], 'X')).toThrow(/acm:DescribeCertificate must name/);
    expect(violations({ Action: 'acm:DescribeCertificate', Resource: '*' })).toEqual([
      expect.stringMatching(/grants acm:DescribeCertificate on every resource/),
    ]);
    expect(violations({ Action: 'wafv2:AssociateWebACL', Resource: '*' })).toEqual([
      expect.stringMatching(/grants wafv2:AssociateWebACL on every resource/),
    ]);
  });
});
