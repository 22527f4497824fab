import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { clusterTagKey } from '../shared/aws/ownership.ts';
import {
  allow,
  explicitActions,
  ownedRequestCondition,
  ownedResourceCondition,
  protectedTagKeys,
  requireActions,
} from './iam.ts';

/**
 * The Ingress controller's grants that stacks/iam.ts's helpers cannot express (stacks/ingress.ts has them all).
 *
 * Every resource the controller makes for an IngressGroup carries both this project's ownership tag,
 * `kubernetes.io/cluster/<cluster>=owned`, which every write it is granted requires, and the AWS Load Balancer
 * Controller's tracking tags (`elbv2.k8s.aws/cluster=<cluster>`, `ingress.k8s.aws/stack`, `ingress.k8s.aws/resource`),
 * so that a cluster can move from that controller to this one, and back, without a manifest changing. Two grants
 * follow from that move, and nothing else here is looser than the service controller's:
 *
 * - adoption: a load balancer, listener, rule, target group or security group the AWS Load Balancer Controller made
 *   carries its tracking tag but not ours, so every write we are granted is denied on it. The one write allowed on
 *   it is tagging it ours (`adoptionTagging`): AddTags / CreateTags, only on resources tagged
 *   `elbv2.k8s.aws/cluster=<this cluster>`, only with our `owned` tag in the request, and only the two cluster tag
 *   keys. Be honest about what that allows: anything the reference controller made for this cluster can become ours,
 *   which is the point; nothing of another cluster, and nothing untagged.
 * - tag removal keeps the tracking tags as well as the ownership tags (`ingressTagRemoval`): removing one would hide
 *   the resource from the group that owns it, here and in the reference controller.
 *
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/tagging-resources-during-creation.html
 */

/** The reference controller's cluster tag: `elbv2.k8s.aws/cluster=<cluster>` on everything it tracks. */
export const REFERENCE_CLUSTER_TAG = 'elbv2.k8s.aws/cluster';

/** Its other tracking tags: the group's stack and the resource's ID in it. */
export const REFERENCE_TRACKING_TAGS = [REFERENCE_CLUSTER_TAG, 'ingress.k8s.aws/stack', 'ingress.k8s.aws/resource'];

/** The tagging actions adoption may use: ELBv2's AddTags and EC2's CreateTags (the managed security groups). */
export const ADOPTION_ACTIONS: ReadonlySet<string> = new Set(['elasticloadbalancing:AddTags', 'ec2:CreateTags']);

/** The only tag keys adoption may write: ours and the reference's cluster tag. */
export function adoptionTagKeys(clusterName: string): string[] {
  return [clusterTagKey(clusterName), REFERENCE_CLUSTER_TAG];
}

/**
 * Tagging ours what the reference controller made for this cluster: the resource carries
 * `elbv2.k8s.aws/cluster=<clusterName>`, the request tags it `kubernetes.io/cluster/<clusterName>=owned`, and it
 * names no other key than `adoptionTagKeys` (`ForAllValues:StringEquals` on `aws:TagKeys`, and `Null: false` so
 * that a request must name them). `policy-rules.ts` accepts this shape for `ADOPTION_ACTIONS` and nothing else.
 */
export function adoptionTagging(props: {
  clusterName: string;
  /** One of ADOPTION_ACTIONS. */
  action: string;
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const [action] = explicitActions([props.action]);
  if (!action || !ADOPTION_ACTIONS.has(action)) {
    throw new Error(`adoptionTagging is only for ${[...ADOPTION_ACTIONS].join(', ')}, not ${props.action}`);
  }
  if (props.resources.length === 0 || props.resources.includes('*')) {
    throw new Error('adoptionTagging needs the ARNs of the resources, not "*"');
  }
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions: [action],
    resources: [...props.resources],
    conditions: {
      StringEquals: {
        [`aws:ResourceTag/${REFERENCE_CLUSTER_TAG}`]: props.clusterName,
        ...ownedRequestCondition(props.clusterName).StringEquals,
      },
      'ForAllValues:StringEquals': { 'aws:TagKeys': adoptionTagKeys(props.clusterName) },
      Null: { 'aws:TagKeys': 'false' },
    },
  });
}

/** The keys no Ingress tag removal may name: the ownership tags of iam.ts and the reference's tracking tags. */
export function ingressProtectedTagKeys(clusterName: string): string[] {
  return [...protectedTagKeys(clusterName), ...REFERENCE_TRACKING_TAGS];
}

/**
 * Removing tags from resources this cluster owns, never an ownership tag nor one of `trackingTags` (the reference's
 * tracking tags of the resources concerned): `ingressTagRemoval`'s shape for any set of tracking tags (the service
 * role's, serving the reference's Services, keeps `service.k8s.aws/*`).
 */
export function trackedTagRemoval(props: {
  clusterName: string;
  actions: readonly string[];
  resources: readonly string[];
  trackingTags: readonly string[];
  sid?: string;
}): PolicyStatement {
  const statement = ingressTagRemoval(props);
  const keys = [...new Set([...protectedTagKeys(props.clusterName), ...props.trackingTags])];
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions: statement.actions,
    resources: statement.resources,
    conditions: {
      ...ownedResourceCondition(props.clusterName),
      'ForAllValues:StringNotEquals': { 'aws:TagKeys': keys },
      Null: { 'aws:TagKeys': 'false' },
    },
  });
}

/**
 * Removing tags an Ingress no longer asks for, from resources this cluster owns; never an ownership or tracking tag.
 * The shape of iam.ts's `ownedTagRemoval` (which `policy-rules.ts` checks), with the tracking tags added.
 */
export function ingressTagRemoval(props: {
  clusterName: string;
  /** `ec2:DeleteTags` or `elasticloadbalancing:RemoveTags`. */
  actions: readonly string[];
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    (a) => a === 'ec2:DeleteTags' || a === 'elasticloadbalancing:RemoveTags',
    (others) => `ingressTagRemoval is only for ec2:DeleteTags and elasticloadbalancing:RemoveTags, not ${others}`,
  );
  if (props.resources.length === 0 || props.resources.includes('*')) {
    throw new Error('ingressTagRemoval needs the ARNs of the resources, not "*"');
  }
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: {
      ...ownedResourceCondition(props.clusterName),
      'ForAllValues:StringNotEquals': { 'aws:TagKeys': ingressProtectedTagKeys(props.clusterName) },
      Null: { 'aws:TagKeys': 'false' },
    },
  });
}

/**
 * Actions with no resource-level permissions that are not Describe calls, and so are granted on `*`: listing the
 * account's ACM certificates (certificate discovery) and its regional web ACLs (`wafv2-acl-name`). Both only read.
 * `policy-rules.ts` accepts `Resource: "*"` for these besides the Describe calls.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awscertificatemanager.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awswafv2.html
 */
export const UNSCOPED_LISTS: ReadonlySet<string> = new Set(['acm:ListCertificates', 'wafv2:ListWebACLs']);

/** One of UNSCOPED_LISTS, on `*`. */
export function unscopedList(actions: readonly string[], sid: string): PolicyStatement {
  const named = explicitActions(actions);
  requireActions(
    named,
    (a) => UNSCOPED_LISTS.has(a),
    (others) => `unscopedList is only for ${[...UNSCOPED_LISTS].join(', ')}; ${others} must name its resources`,
  );
  return allow(named, ['*'], sid);
}
