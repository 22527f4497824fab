import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { explicitActions, inVpcCondition, requireActions } from './iam.ts';

/**
 * The Windows IP address manager's EC2 grants that the ownership tag cannot express (stacks/ipam.ts has them all).
 *
 * It hands Pods secondary private addresses of a Windows Node's primary network interface, and gives them back:
 * AssignPrivateIpAddresses and UnassignPrivateIpAddresses on that interface. The interface is the instance's, made
 * by EC2 when the instance launched, and carries the tags the instance's launch gave it, which need not include
 * `kubernetes.io/cluster/<cluster>`; the calls name no instance, so no condition can ask for the instance's tag
 * either. What IAM can say is where the interface is: `ec2:Vpc`, the ARN of the interface's VPC. So these two are
 * allowed on network interfaces in the cluster's VPC only, untagged. Be honest about what that allows: adding or
 * removing secondary addresses of any interface in that VPC, not only the Nodes'; the controller only changes the
 * primary interface of an instance it read as a Windows Node of this cluster (functions/ipam).
 *
 * AWS's reference lists both on the `network-interface` resource (required), with the condition keys
 * `aws:ResourceTag/${TagKey}`, `ec2:Subnet` and `ec2:Vpc` among others.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/MultipleIP.html
 */

/** The address writes allowed on an interface by its VPC alone, and only through `addressWriteInVpc`. */
export const NETWORK_INTERFACE_ADDRESS_WRITES: ReadonlySet<string> = new Set([
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
]);

/** `arn:<partition>:ec2:<region>:<account>:network-interface/*`: the network interfaces of one account and region. */
export const NETWORK_INTERFACE_ARN = /^arn:[^:]+:ec2:[^:]*:[^:]*:network-interface\/\*$/;

/** Assigning and unassigning secondary private addresses, only on network interfaces in the cluster's VPC. */
export function addressWriteInVpc(props: {
  actions: readonly string[];
  /** Network interface ARN patterns (`NETWORK_INTERFACE_ARN`). */
  resources: readonly string[];
  /** The ARN of the cluster's VPC. */
  vpcArn: string;
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    (a) => NETWORK_INTERFACE_ADDRESS_WRITES.has(a),
    (others) =>
      `addressWriteInVpc is only for ${[...NETWORK_INTERFACE_ADDRESS_WRITES].join(', ')}; ${others} must require the owned tag (ownedResourceWrite)`,
  );
  const bad = props.resources.filter((arn) => !NETWORK_INTERFACE_ARN.test(arn));
  if (props.resources.length === 0 || bad.length > 0) {
    throw new Error(`addressWriteInVpc takes network interface ARNs, not ${bad.join(', ') || 'none'}`);
  }
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: inVpcCondition(props.vpcArn),
  });
}
