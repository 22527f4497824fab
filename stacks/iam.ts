import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { clusterTagKey } from '../shared/aws/ownership.ts';

/**
 * IAM statements for the control plane's functions. Every action is named in full: a wildcard
 * (`*`, `ec2:*`, `ec2:Describe*`) would grant whatever AWS adds to that prefix later.
 */

/** `service:Action`, letters and digits only: no wildcard of any kind. */
const EXPLICIT_ACTION = /^[a-z0-9-]+:[A-Za-z0-9]+$/;

export function explicitActions(actions: readonly string[]): string[] {
  if (actions.length === 0) throw new Error('an IAM statement needs at least one action');
  for (const action of actions) {
    if (!EXPLICIT_ACTION.test(action)) {
      throw new Error(`IAM action "${action}" must be named in full (service:Action), without wildcards`);
    }
  }
  return [...actions];
}

/** Throws `complaint` with the actions (comma separated) that `allowed` refuses, if there are any. */
export function requireActions(
  actions: readonly string[],
  allowed: (action: string) => boolean,
  complaint: (offending: string) => string,
): void {
  const offending = actions.filter((a) => !allowed(a));
  if (offending.length > 0) throw new Error(complaint(offending.join(', ')));
}

/** Reads: verbs that never change anything. Everything else on EC2 or ELBv2 is a write. */
const READ_VERBS = /^(Describe|Get|List)/;
/** The services whose resources carry the cluster ownership tag (docs/reference.md "AWS tags"). */
const TAGGED_SERVICES = new Set(['ec2', 'elasticloadbalancing']);

/** An EC2 or ELBv2 action that changes a resource, and so must be conditioned on our ownership tag. */
export function isTaggedWriteAction(action: string): boolean {
  const [service, verb = ''] = action.split(':');
  return TAGGED_SERVICES.has(service ?? '') && !READ_VERBS.test(verb);
}

/**
 * EC2 Describe* calls. They support no resource-level permissions, so the resource is `*`; the
 * action list stays explicit.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
export function ec2Describe(...operations: `Describe${string}`[]): PolicyStatement {
  return new PolicyStatement({
    sid: 'Ec2Describe',
    effect: Effect.ALLOW,
    actions: explicitActions(operations.map((op) => `ec2:${op}`)),
    resources: ['*'],
  });
}

/** ELBv2 Describe* calls: like EC2's, they support no resource-level permissions. */
export function elbv2Describe(...operations: `Describe${string}`[]): PolicyStatement {
  return new PolicyStatement({
    sid: 'Elbv2Describe',
    effect: Effect.ALLOW,
    actions: explicitActions(operations.map((op) => `elasticloadbalancing:${op}`)),
    resources: ['*'],
  });
}

/**
 * The condition that limits a write to resources tagged `kubernetes.io/cluster/<clusterName>=owned`:
 * never a resource of another cluster, never one merely `shared` with us.
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/access_tags.html#access_tags_control-resources
 */
export function ownedResourceCondition(clusterName: string): Record<string, Record<string, string>> {
  return { StringEquals: { [`aws:ResourceTag/${clusterTagKey(clusterName)}`]: 'owned' } };
}

/**
 * Writes to EC2 / ELBv2 resources this cluster owns. Every EC2 or ELBv2 write a reconciler is
 * granted goes through here (the template checks in `policy-rules.ts` fail any that does not).
 * With `vpcArn`, only to those in that VPC too (`inVpcCondition`; EC2 resources that have `ec2:Vpc`).
 */
export function ownedResourceWrite(props: {
  clusterName: string;
  actions: readonly string[];
  /** ARN patterns; `*` only where the action has no resource-level permissions. */
  resources: readonly string[];
  /** The ARN of the one VPC the resources must be in. */
  vpcArn?: string;
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    isTaggedWriteAction,
    (reads) => `ownedResourceWrite is for EC2/ELBv2 writes; ${reads} should be granted on their own`,
  );
  requireActions(
    actions,
    (a) => !TAG_REMOVAL_ACTIONS.has(a),
    (removals) =>
      `ownedResourceWrite cannot grant ${removals}: removing tags must keep the ownership tags (ownedTagRemoval)`,
  );
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: {
      ...ownedResourceCondition(props.clusterName),
      ...(props.vpcArn !== undefined ? inVpcCondition(props.vpcArn) : {}),
    },
  });
}

/**
 * The resource is in the one VPC named: `ec2:Vpc` is the ARN of the VPC of a network interface, security group,
 * subnet or route table. Only where the action has the key for that resource type: IAM evaluates a condition on a
 * key the request lacks as false, so the grant would deny everything (EC2's DeleteTags, for one, has no `ec2:Vpc`).
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
export function inVpcCondition(vpcArn: string): Record<string, Record<string, string>> {
  if (!VPC_ARN.test(vpcArn)) throw new Error(`the VPC condition takes the ARN of a single VPC, not ${vpcArn}`);
  return { ArnEquals: { 'ec2:Vpc': vpcArn } };
}

/** Any other explicit grant (SQS on one queue, a secret, a cluster). */
export function allow(actions: readonly string[], resources: readonly string[], sid?: string): PolicyStatement {
  return new PolicyStatement({
    ...(sid ? { sid } : {}),
    effect: Effect.ALLOW,
    actions: explicitActions(actions),
    resources: [...resources],
  });
}

/**
 * The only writes allowed on a resource merely `shared` with the cluster: adding and removing inbound
 * rules. The service controller allows its load balancers into the Nodes' security groups, which the
 * cluster's installer tags `kubernetes.io/cluster/<name>` with `owned` or `shared` (EKS, eksctl, kops and
 * Cluster API differ), and the Nodes' groups are not the controller's to own. It never deletes or retags
 * them; only the rules it adds (described `kubernetes.io/rule/nlb/...`) are revoked. `policy-rules.ts`
 * accepts the shared condition for these two actions and no other.
 */
export const SHARED_RESOURCE_WRITES: ReadonlySet<string> = new Set([
  'ec2:AuthorizeSecurityGroupIngress',
  'ec2:RevokeSecurityGroupIngress',
]);

/** The cluster tag with either value: the resource is this cluster's own, or shared with it. */
export function clusterResourceCondition(clusterName: string): Record<string, Record<string, string[]>> {
  return { StringEquals: { [`aws:ResourceTag/${clusterTagKey(clusterName)}`]: ['owned', 'shared'] } };
}

/**
 * Security group rule changes on groups tagged for this cluster (`owned` or `shared`), only in the
 * cluster's VPC (`ec2:Vpc`, the ARN of the group's VPC). Only `SHARED_RESOURCE_WRITES`.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
export function clusterResourceWrite(props: {
  clusterName: string;
  actions: readonly string[];
  resources: readonly string[];
  /** The ARN of the VPC the groups must be in. */
  vpcArn: string;
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    (a) => SHARED_RESOURCE_WRITES.has(a),
    (others) =>
      `clusterResourceWrite is only for ${[...SHARED_RESOURCE_WRITES].join(', ')}; ${others} must require the owned tag (ownedResourceWrite)`,
  );
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: { ...clusterResourceCondition(props.clusterName), ArnEquals: { 'ec2:Vpc': props.vpcArn } },
  });
}

/**
 * Actions that create a new resource and may be allowed on the tags of the request alone
 * (`aws:RequestTag/<cluster tag>=owned`): the resource does not exist yet, so it has no tags to check, and
 * requiring ours in the request means everything made this way is born `owned`. Not CreateListener or
 * CreateRoute: they act on an existing resource (a load balancer, a route table), whose own tag must decide.
 * CreateSecurityGroup also acts on its VPC, which is granted separately (`createSecurityGroupInVpc`).
 */
export const OWNED_CREATE_ACTIONS: ReadonlySet<string> = new Set([
  'ec2:CreateSecurityGroup',
  'elasticloadbalancing:CreateLoadBalancer',
  'elasticloadbalancing:CreateTargetGroup',
]);

/**
 * Creates whose new resource is born with our `owned` tag, so tagging as part of them (`tagOnCreate`) can
 * only tag what is being made: the owned creates, and CreateListener. CreateListener itself is authorized
 * on its load balancer's owned tag (ownedResourceWrite), but the listener it makes is tagged in the same
 * call, and AWS authorizes that tagging (AddTags) on the new listener, with `elasticloadbalancing:CreateAction`
 * naming CreateListener. CreateRule likewise: authorized on its listener's owned tag, its new rule tagged in the call.
 */
export const TAGGED_CREATE_ACTIONS: ReadonlySet<string> = new Set([
  ...OWNED_CREATE_ACTIONS,
  'elasticloadbalancing:CreateListener',
  'elasticloadbalancing:CreateRule',
]);

/** The request carries the cluster tag, `owned`: what it creates is this cluster's. */
export function ownedRequestCondition(clusterName: string): Record<string, Record<string, string>> {
  return { StringEquals: { [`aws:RequestTag/${clusterTagKey(clusterName)}`]: 'owned' } };
}

/** Creating resources, only when the request tags them `kubernetes.io/cluster/<clusterName>=owned`. */
export function ownedResourceCreate(props: {
  clusterName: string;
  actions: readonly string[];
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    (a) => OWNED_CREATE_ACTIONS.has(a),
    (others) =>
      `ownedResourceCreate is for actions that create a new resource (${[...OWNED_CREATE_ACTIONS].join(', ')}); ${others} must be conditioned on the tags of the resource it acts on`,
  );
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: ownedRequestCondition(props.clusterName),
  });
}

/**
 * The tagging action each service authorizes, besides the create action itself, when a create call
 * carries tags (tag on create), and the condition key naming that create action.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/supported-iam-actions-tagging.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/tagging-resources-during-creation.html
 */
export const TAG_ON_CREATE = {
  ec2: { action: 'ec2:CreateTags', createActionKey: 'ec2:CreateAction' },
  elasticloadbalancing: {
    action: 'elasticloadbalancing:AddTags',
    createActionKey: 'elasticloadbalancing:CreateAction',
  },
} as const;

/**
 * Tagging only as part of creating a resource (`<service>:CreateAction` is one of `createActions`) and only
 * with our `owned` tag in the request: it cannot tag anything that already exists.
 */
export function tagOnCreate(props: {
  clusterName: string;
  /** Full action names, all of one service, each in TAGGED_CREATE_ACTIONS. */
  createActions: readonly string[];
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const creates = explicitActions(props.createActions);
  const services = new Set(creates.map((a) => a.split(':')[0]));
  const [service] = [...services];
  if (services.size !== 1 || !(service && service in TAG_ON_CREATE)) {
    throw new Error(`tagOnCreate takes the create actions of one of ${Object.keys(TAG_ON_CREATE).join(', ')}`);
  }
  requireActions(
    creates,
    (a) => TAGGED_CREATE_ACTIONS.has(a),
    (others) => `tagOnCreate: ${others} is not a create that tags owned`,
  );
  const { action, createActionKey } = TAG_ON_CREATE[service as keyof typeof TAG_ON_CREATE];
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions: [action],
    resources: [...props.resources],
    conditions: {
      StringEquals: {
        [createActionKey]: creates.map((a) => a.split(':')[1] ?? ''),
        ...ownedRequestCondition(props.clusterName).StringEquals,
      },
    },
  });
}

/** `arn:<partition>:ec2:<region>:<account>:vpc/vpc-0123abcd`: one VPC, named by ID. */
export const VPC_ARN = /^arn:[^:]+:ec2:[^:]*:[^:]*:vpc\/vpc-(?:[0-9a-f]{8}|[0-9a-f]{17})$/;

/**
 * The VPC half of CreateSecurityGroup: with a VpcId, EC2 authorizes the call on the VPC too, and the VPC
 * carries no tag of ours (the cluster only lives in it). So it is granted on the one VPC named, untagged;
 * the new group itself must still be tagged `owned` (`ownedResourceCreate`). `policy-rules.ts` accepts an
 * unconditioned CreateSecurityGroup only on VPC ARNs like these.
 */
export function createSecurityGroupInVpc(vpcArns: readonly string[], sid?: string): PolicyStatement {
  if (vpcArns.length === 0) throw new Error('createSecurityGroupInVpc needs the VPC');
  const bad = vpcArns.filter((arn) => !VPC_ARN.test(arn));
  if (bad.length > 0) throw new Error(`createSecurityGroupInVpc takes the ARNs of single VPCs, not ${bad.join(', ')}`);
  return allow(['ec2:CreateSecurityGroup'], vpcArns, sid);
}

/** `arn:<partition>:elasticloadbalancing:<region>:<account>:listener/net/...`: Network Load Balancer listeners. */
export const NLB_LISTENER_ARN = /^arn:[^:]+:elasticloadbalancing:[^:]*:[^:]*:listener\/net\/.+$/;

/** The one listener write allowed without the owned tag on the listener (`listenerTagBackfill`). */
export const LISTENER_TAG_BACKFILL_ACTION = 'elasticloadbalancing:AddTags';

/** The listener does not carry the cluster tag at all (neither `owned` nor anything else). */
export function untaggedByClusterCondition(clusterName: string): Record<string, Record<string, string>> {
  return { Null: { [`aws:ResourceTag/${clusterTagKey(clusterName)}`]: 'true' } };
}

/**
 * Tagging a listener that carries no tag of this cluster yet, with our `owned` tag: the backfill of
 * listeners made untagged by versions that did not tag listeners on create. Listeners are now tagged on
 * create (`tagOnCreate` with CreateListener), and ModifyListener / DeleteListener / AddTags require the
 * owned tag on the listener itself (`aws:ResourceTag` is the listener's own tags, not its load balancer's),
 * so an old untagged listener could otherwise never be changed or deleted on its own.
 *
 * IAM cannot say "a listener of a load balancer we own": no condition key names the parent load balancer,
 * and the load balancer name in the listener ARN is the user's to choose (`name` annotation). So this is
 * the one write on a resource not already ours, as narrow as IAM allows: AddTags only, only on Network Load
 * Balancer listeners of this account and region, only when the request tags the listener `owned` for this
 * cluster, and only on listeners without this cluster's tag. Be honest about what it allows: the role could
 * tag any such listener ours and then change or delete it; that is what the previous unconditioned
 * ModifyListener / DeleteListener allowed in one step, now in two, and only with a visible tag left behind.
 * The controller only backfills listeners of load balancers it owns (shared/load-balancers/listeners.ts).
 * Once every listener of every Service is tagged (one resync after upgrading), this grant can be dropped.
 * The alternative, no backfill, would leave old listeners unchangeable: a port, certificate or target type
 * change would have to replace the whole load balancer (a new DNS name), as DeleteListener is denied too.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 */
export function listenerTagBackfill(props: {
  clusterName: string;
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  if (props.resources.length === 0) throw new Error('listenerTagBackfill needs the listener ARNs');
  const bad = props.resources.filter((arn) => !NLB_LISTENER_ARN.test(arn));
  if (bad.length > 0)
    throw new Error(`listenerTagBackfill takes Network Load Balancer listener ARNs, not ${bad.join(', ')}`);
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions: [LISTENER_TAG_BACKFILL_ACTION],
    resources: [...props.resources],
    conditions: { ...ownedRequestCondition(props.clusterName), ...untaggedByClusterCondition(props.clusterName) },
  });
}

/** The tag naming the Service (`<namespace>/<name>`) a load balancer, target group or security group is for. */
export const SERVICE_NAME_TAG = 'kubernetes.io/service-name';

/**
 * The tag marking the cluster's shared backend security group (`backend`); the same key as
 * shared/load-balancers/security-groups.ts `BACKEND_ROLE_TAG` (iam.test.ts checks that they agree).
 */
export const SECURITY_GROUP_ROLE_TAG = 'serverless-ccm/security-group-role';

/**
 * The tag keys that make a resource this cluster's and say what it is for: the cluster tag itself, the
 * Service it belongs to, and the backend security group's role. Removing one would hand the resource to no
 * one (garbage collection could no longer find it) or, for the cluster tag, take it out of the role's reach
 * for good, so no statement may allow removing them (`ownedTagRemoval`, checked in `policy-rules.ts`).
 */
export function protectedTagKeys(clusterName: string): string[] {
  return [clusterTagKey(clusterName), SERVICE_NAME_TAG, SECURITY_GROUP_ROLE_TAG];
}

/** The actions that remove tags: EC2's DeleteTags and ELBv2's RemoveTags. Granted only by `ownedTagRemoval`. */
export const TAG_REMOVAL_ACTIONS: ReadonlySet<string> = new Set(['ec2:DeleteTags', 'elasticloadbalancing:RemoveTags']);

/**
 * The request names the tag keys it removes (`aws:TagKeys`), and none of them is a protected key.
 *
 * How IAM evaluates it:
 * - `aws:TagKeys` is multivalued (every key in the request), so it needs a set operator. With
 *   `ForAllValues:StringNotEquals` and several policy values, each key in the request must equal none of
 *   them: one protected key among the removed keys makes the condition false, and the Allow does not apply.
 *   (`ForAnyValue:StringNotEquals` would be wrong: it is true as soon as one removed key is unprotected.)
 * - `ForAllValues` is also true when the request has no `aws:TagKeys` at all. EC2 DeleteTags without any
 *   `Tag` removes every user tag of the resource, ours included, and such a request has no tag keys; the
 *   `Null: false` on `aws:TagKeys` refuses it. (An explicit Deny with `ForAnyValue:StringEquals` on the
 *   protected keys would have the same hole: with no keys in the request it never matches.)
 * - `StringNotEquals` is case-sensitive, as EC2 and ELBv2 tag keys are: `Kubernetes.io/service-name` is
 *   another tag, which a Service may have set and the controller may remove.
 * Both actions support `aws:TagKeys` on the resource types granted (security groups; Network Load Balancers,
 * their listeners and target groups).
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition_examples-multi-valued-context-keys.html
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteTags.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 */
export function keepsProtectedTagsCondition(clusterName: string): Record<string, Record<string, string | string[]>> {
  return {
    'ForAllValues:StringNotEquals': { 'aws:TagKeys': protectedTagKeys(clusterName) },
    Null: { 'aws:TagKeys': 'false' },
  };
}

/**
 * Removing tags from resources this cluster owns (tags a Service no longer asks for), never the ownership
 * tags themselves (`keepsProtectedTagsCondition`). The only way tag removal is granted.
 */
export function ownedTagRemoval(props: {
  clusterName: string;
  /** Each in TAG_REMOVAL_ACTIONS. */
  actions: readonly string[];
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    (a) => TAG_REMOVAL_ACTIONS.has(a),
    (others) =>
      `ownedTagRemoval is only for ${[...TAG_REMOVAL_ACTIONS].join(', ')}; ${others} must be granted otherwise`,
  );
  if (props.resources.length === 0 || props.resources.includes('*')) {
    throw new Error('ownedTagRemoval needs the ARNs of the resources, not "*"');
  }
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: { ...ownedResourceCondition(props.clusterName), ...keepsProtectedTagsCondition(props.clusterName) },
  });
}
