import { clusterTagKey } from '../shared/aws/ownership.ts';
import {
  isTaggedWriteAction,
  LISTENER_TAG_BACKFILL_ACTION,
  NLB_LISTENER_ARN,
  OWNED_CREATE_ACTIONS,
  protectedTagKeys,
  SHARED_RESOURCE_WRITES,
  TAG_ON_CREATE,
  TAG_REMOVAL_ACTIONS,
  TAGGED_CREATE_ACTIONS,
  VPC_ARN,
} from './iam.ts';
import { AUTOSCALING_LIFECYCLE_WRITES } from './iam-autoscaling.ts';
import { ADOPTION_ACTIONS, adoptionTagKeys, REFERENCE_CLUSTER_TAG, UNSCOPED_LISTS } from './iam-ingress.ts';
import { NETWORK_INTERFACE_ADDRESS_WRITES, NETWORK_INTERFACE_ARN } from './iam-ipam.ts';
import { TARGET_GROUP_ARN, TARGET_REGISTRATION_ACTIONS } from './iam-target-group-binding.ts';

/**
 * Least-privilege rules checked on the synthesized template, by the tests and by `npm run synth`:
 * they look at what CloudFormation will create, whichever construct produced it.
 *
 * - no Allow statement names a wildcard action (`*`, `sqs:*`, `ec2:Describe*`) or uses NotAction;
 * - `Resource: "*"` only for Describe calls, which support nothing narrower;
 * - every EC2 / ELBv2 write is conditioned on the cluster ownership tag being `owned` on the resource it
 *   acts on (Classic Load Balancer writes too: they share the `elasticloadbalancing` prefix, so
 *   `isTaggedWriteAction` counts every non-Describe Classic action); with these exceptions, each limited
 *   to the actions it exists for (stacks/iam.ts):
 *   - creates of a new resource (OWNED_CREATE_ACTIONS) may instead require the tag in the request
 *     (`aws:RequestTag`), and so may tagging, but only on create (`ec2:CreateAction` /
 *     `elasticloadbalancing:CreateAction` naming those creates or CreateListener, TAGGED_CREATE_ACTIONS):
 *     tags in a request alone would otherwise let a role claim any existing resource by tagging it ours;
 *   - adding and removing security group rules (SHARED_RESOURCE_WRITES) may accept `owned` or `shared`;
 *   - CreateSecurityGroup on the ARN of one named VPC needs no tag (the VPC is not ours to tag);
 *   - the listener tag backfill: AddTags on Network Load Balancer listener ARNs only, requiring our `owned`
 *     tag in the request and no tag of this cluster on the listener yet (see `listenerTagBackfill`);
 *   - assigning and unassigning secondary private addresses (NETWORK_INTERFACE_ADDRESS_WRITES) on network
 *     interface ARNs only, in one named VPC (`ArnEquals` `ec2:Vpc` = a single VPC ARN; see `addressWriteInVpc`):
 *     a Node's interface is the instance's and need not carry our tag;
 *   - adoption by the Ingress controller (ADOPTION_ACTIONS): tagging ours what the AWS Load Balancer Controller made
 *     for this cluster, only on resources tagged `elbv2.k8s.aws/cluster=<cluster>`, only with our `owned` tag in the
 *     request, and only the two cluster tag keys (see stacks/iam-ingress.ts `adoptionTagging`);
 *   - registering and deregistering targets (TARGET_REGISTRATION_ACTIONS) on target group ARNs only, any tags: a
 *     TargetGroupBinding's target group is the user's, never tagged ours (stacks/iam-target-group-binding.ts);
 * - `Resource: "*"` also for the two lists with no resource-level permissions (UNSCOPED_LISTS: ACM certificates, web
 *   ACLs), which only read;
 * - removing tags (TAG_REMOVAL_ACTIONS), besides the owned condition, must name the keys it removes and none
 *   of the ownership tags (`ForAllValues:StringNotEquals` on `aws:TagKeys` listing every `protectedTagKeys`
 *   key, and `Null` `aws:TagKeys` = `false`; see `keepsProtectedTagsCondition`);
 * - Auto Scaling: no write but the lifecycle actions (AUTOSCALING_LIFECYCLE_WRITES), and those only on Auto Scaling
 *   group ARNs tagged for this cluster (`aws:ResourceTag` `owned`, or `owned` and `shared`; see
 *   `lifecycleActionWrite`): completing another cluster's hook would let its instance go before its drain;
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
const DESCRIBE = /^(ec2|elasticloadbalancing|autoscaling):Describe[A-Za-z0-9]+$/;
const AUTOSCALING_WRITE = /^autoscaling:(?!Describe)/;
/** An Auto Scaling group's ARN, as text (`resourceText`): `...:autoscaling:<region>:<account>:autoScalingGroup:...`. */
const AUTOSCALING_GROUP_ARN = /:autoscaling:[^:]*:[^:]*:autoScalingGroup:/;

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

/** A resource as text: a string, or the Fn::Join CDK writes (references shown as `{ref}`). */
function resourceText(resource: unknown): string {
  if (typeof resource === 'string') return resource;
  const join = (resource as { 'Fn::Join'?: [string, unknown[]] } | undefined)?.['Fn::Join'];
  if (join) return join[1].map((part) => (typeof part === 'string' ? part : '{ref}')).join(join[0]);
  return JSON.stringify(resource);
}

const sameSet = (value: unknown, expected: readonly string[]) =>
  Array.isArray(value) && value.length === expected.length && expected.every((v) => value.includes(v));

/** Whether a statement allowing the EC2 / ELBv2 write `action` confines it to this cluster's resources. */
function confinedToCluster(action: string, statement: PolicyStatementJson, clusterName: string): boolean {
  const equals = statement.Condition?.StringEquals ?? {};
  const tag = clusterTagKey(clusterName);
  const resourceTag = equals[`aws:ResourceTag/${tag}`];
  if (resourceTag === 'owned') return true;
  if (SHARED_RESOURCE_WRITES.has(action) && sameSet(resourceTag, ['owned', 'shared'])) return true;
  const resources = list(statement.Resource).map(resourceText);
  const only = (pattern: RegExp) => resources.length > 0 && resources.every((r) => pattern.test(r));
  if (equals[`aws:RequestTag/${tag}`] === 'owned') {
    if (OWNED_CREATE_ACTIONS.has(action)) return true;
    const [service = ''] = action.split(':');
    const tagging = TAG_ON_CREATE[service as keyof typeof TAG_ON_CREATE];
    if (tagging?.action === action) {
      const creates = list(equals[tagging.createActionKey] as string | string[] | undefined);
      if (creates.length > 0 && creates.every((c) => TAGGED_CREATE_ACTIONS.has(`${service}:${c}`))) return true;
    }
    const untagged = statement.Condition?.Null?.[`aws:ResourceTag/${tag}`] === 'true';
    if (action === LISTENER_TAG_BACKFILL_ACTION && untagged && only(NLB_LISTENER_ARN)) return true;
  }
  if (action === 'ec2:CreateSecurityGroup' && only(VPC_ARN)) return true;
  if (ADOPTION_ACTIONS.has(action) && adoptsReferenceResources(statement, clusterName)) return true;
  if (NETWORK_INTERFACE_ADDRESS_WRITES.has(action) && only(NETWORK_INTERFACE_ARN) && inOneVpc(statement)) return true;
  if (TARGET_REGISTRATION_ACTIONS.has(action) && only(TARGET_GROUP_ARN)) return true;
  return false;
}

/**
 * The Ingress controller's adoption (stacks/iam-ingress.ts): on resources tagged by the reference controller for this
 * cluster, with our `owned` tag in the request, naming only the two cluster tag keys, and on named ARNs.
 */
function adoptsReferenceResources(statement: PolicyStatementJson, clusterName: string): boolean {
  const equals = statement.Condition?.StringEquals ?? {};
  const keys = list(
    statement.Condition?.['ForAllValues:StringEquals']?.['aws:TagKeys'] as string | string[] | undefined,
  );
  const named = statement.Condition?.Null?.['aws:TagKeys'];
  const allowed = adoptionTagKeys(clusterName);
  return (
    equals[`aws:ResourceTag/${REFERENCE_CLUSTER_TAG}`] === clusterName &&
    equals[`aws:RequestTag/${clusterTagKey(clusterName)}`] === 'owned' &&
    keys.length > 0 &&
    keys.every((k) => allowed.includes(k)) &&
    (named === 'false' || named === false) &&
    !list(statement.Resource).includes('*')
  );
}

/** The statement's condition limits it to one VPC: `ArnEquals` `ec2:Vpc` naming the ARN of a single VPC. */
function inOneVpc(statement: PolicyStatementJson): boolean {
  const vpcs = list(statement.Condition?.ArnEquals?.['ec2:Vpc'] as unknown);
  return vpcs.length === 1 && VPC_ARN.test(resourceText(vpcs[0]));
}

/** Whether a statement allowing an Auto Scaling write confines it to this cluster's groups. */
function onClusterGroups(action: string, statement: PolicyStatementJson, clusterName: string): boolean {
  if (!AUTOSCALING_LIFECYCLE_WRITES.has(action)) return false;
  const tag = statement.Condition?.StringEquals?.[`aws:ResourceTag/${clusterTagKey(clusterName)}`];
  const resources = list(statement.Resource).map(resourceText);
  return (
    (tag === 'owned' || sameSet(tag, ['owned', 'shared'])) &&
    resources.length > 0 &&
    resources.every((r) => AUTOSCALING_GROUP_ARN.test(r))
  );
}

/**
 * Whether a statement allowing tag removal keeps the ownership tags: every key removed must be none of them
 * (`ForAllValues:StringNotEquals` on `aws:TagKeys` naming all of them), and the request must name its keys
 * (`Null`: an EC2 DeleteTags without keys removes every tag, and `ForAllValues` alone would allow it).
 */
function keepsProtectedTags(statement: PolicyStatementJson, clusterName: string): boolean {
  const notEquals = list(
    statement.Condition?.['ForAllValues:StringNotEquals']?.['aws:TagKeys'] as string | string[] | undefined,
  );
  const named = statement.Condition?.Null?.['aws:TagKeys'];
  return protectedTagKeys(clusterName).every((k) => notEquals.includes(k)) && (named === 'false' || named === false);
}

export function policyViolations(template: Record<string, unknown>, clusterName: string): string[] {
  const violations: string[] = [];
  for (const { where, statement } of templateStatements(template)) {
    if (statement.Effect !== 'Allow') continue;
    if (statement.NotAction !== undefined) violations.push(`${where}: Allow with NotAction`);
    const actions = list(statement.Action);
    for (const action of actions) {
      if (action.includes('*')) violations.push(`${where}: allows the wildcard action "${action}"`);
      if (isTaggedWriteAction(action) && !confinedToCluster(action, statement, clusterName)) {
        violations.push(
          `${where}: allows the write "${action}" without the ${clusterTagKey(clusterName)}=owned condition`,
        );
      }
      if (AUTOSCALING_WRITE.test(action) && !onClusterGroups(action, statement, clusterName)) {
        violations.push(
          `${where}: allows the Auto Scaling write "${action}" other than a lifecycle action on groups tagged ${clusterTagKey(clusterName)}`,
        );
      }
      if (TAG_REMOVAL_ACTIONS.has(action) && !keepsProtectedTags(statement, clusterName)) {
        violations.push(
          `${where}: allows "${action}" without protecting the tags ${protectedTagKeys(clusterName).join(', ')} (ForAllValues:StringNotEquals and Null false on aws:TagKeys)`,
        );
      }
    }
    if (list(statement.Resource).includes('*')) {
      const broad = actions.filter((a) => !DESCRIBE.test(a) && !UNSCOPED_LISTS.has(a));
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
