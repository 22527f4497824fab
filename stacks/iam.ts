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

/** Reads: verbs that never change anything. Everything else on EC2 or ELBv2 is a write. */
const READ_VERBS = /^(Describe|Get|List)/;
/** The services whose resources carry the cluster ownership tag (REFERENCE.md "Ownership and tags"). */
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
 */
export function ownedResourceWrite(props: {
  clusterName: string;
  actions: readonly string[];
  /** ARN patterns; `*` only where the action has no resource-level permissions. */
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  const reads = actions.filter((a) => !isTaggedWriteAction(a));
  if (reads.length > 0) {
    throw new Error(`ownedResourceWrite is for EC2/ELBv2 writes; ${reads.join(', ')} should be granted on their own`);
  }
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: ownedResourceCondition(props.clusterName),
  });
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
