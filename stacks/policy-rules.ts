import { clusterTagKey } from '../shared/aws/ownership.ts';
import { isTaggedWriteAction } from './iam.ts';

/**
 * Least-privilege rules checked on the synthesized template, by the tests and by `npm run synth`:
 * they look at what CloudFormation will create, whichever construct produced it.
 *
 * - no Allow statement names a wildcard action (`*`, `sqs:*`, `ec2:Describe*`) or uses NotAction;
 * - `Resource: "*"` only for Describe calls, which support nothing narrower;
 * - every EC2 / ELBv2 write is conditioned on the cluster ownership tag being `owned`;
 * - no managed policy but the one Lambda needs to run in a VPC.
 */

export interface PolicyStatementJson {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
  Principal?: unknown;
}

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

export interface LocatedStatement {
  /** `<logical ID> <where in it>`, for messages. */
  where: string;
  statement: PolicyStatementJson;
}

/** Matched against the ARN as JSON (a string, or the Fn::Join CDK writes for the partition). */
const ALLOWED_MANAGED_POLICIES = [/:iam::aws:policy\/service-role\/AWSLambdaVPCAccessExecutionRole"/];
const DESCRIBE = /^(ec2|elasticloadbalancing):Describe[A-Za-z0-9]+$/;

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function statementsOf(doc: unknown): PolicyStatementJson[] {
  return list((doc as { Statement?: PolicyStatementJson | PolicyStatementJson[] } | undefined)?.Statement);
}

/** Every policy statement in the template: role inline and trust policies, policies, queue policies. */
export function templateStatements(template: Record<string, unknown>): LocatedStatement[] {
  const resources = (template.Resources ?? {}) as Record<string, TemplateResource>;
  const found: LocatedStatement[] = [];
  for (const [id, r] of Object.entries(resources)) {
    const p = r.Properties ?? {};
    const add = (where: string, doc: unknown) => {
      for (const statement of statementsOf(doc)) found.push({ where: `${id} ${where}`, statement });
    };
    if (r.Type === 'AWS::IAM::Role') {
      add('trust policy', p.AssumeRolePolicyDocument);
      for (const inline of list(p.Policies as { PolicyName: string; PolicyDocument: unknown }[] | undefined)) {
        add(`policy ${inline.PolicyName}`, inline.PolicyDocument);
      }
    }
    if (['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy', 'AWS::SQS::QueuePolicy'].includes(r.Type)) {
      add('policy', p.PolicyDocument);
    }
  }
  return found;
}

function hasOwnershipCondition(statement: PolicyStatementJson, clusterName: string): boolean {
  const equals = statement.Condition?.StringEquals ?? {};
  const tag = clusterTagKey(clusterName);
  return [`aws:ResourceTag/${tag}`, `aws:RequestTag/${tag}`].some((key) => equals[key] === 'owned');
}

export function policyViolations(template: Record<string, unknown>, clusterName: string): string[] {
  const violations: string[] = [];
  for (const { where, statement } of templateStatements(template)) {
    if (statement.Effect !== 'Allow') continue;
    if (statement.NotAction !== undefined) violations.push(`${where}: Allow with NotAction`);
    const actions = list(statement.Action);
    for (const action of actions) {
      if (action.includes('*')) violations.push(`${where}: allows the wildcard action "${action}"`);
      if (isTaggedWriteAction(action) && !hasOwnershipCondition(statement, clusterName)) {
        violations.push(
          `${where}: allows the write "${action}" without the ${clusterTagKey(clusterName)}=owned condition`,
        );
      }
    }
    if (list(statement.Resource).includes('*')) {
      const broad = actions.filter((a) => !DESCRIBE.test(a));
      if (broad.length > 0) violations.push(`${where}: grants ${broad.join(', ')} on every resource ("*")`);
    }
  }
  const resources = (template.Resources ?? {}) as Record<string, TemplateResource>;
  for (const [id, r] of Object.entries(resources)) {
    if (r.Type !== 'AWS::IAM::Role') continue;
    for (const arn of list(r.Properties?.ManagedPolicyArns as unknown[] | undefined)) {
      const text = JSON.stringify(arn);
      if (!ALLOWED_MANAGED_POLICIES.some((allowed) => allowed.test(text))) {
        violations.push(`${id}: attaches the managed policy ${text}`);
      }
    }
  }
  return violations;
}
