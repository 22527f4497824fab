import type { Elbv2Port, TargetGroup } from '../../shared/aws/elbv2-port.ts';
import type { TargetGroupBinding, TgbInferredFields, TgbTargetType } from '../../shared/k8s/tgb-types.ts';

/**
 * A binding's target group, found by `targetGroupARN` (it wins when both are set) or by `targetGroupName`, and the
 * binding checked against it: the fields it leaves out are filled from the target group once, the fields it sets must
 * agree with it. Pure but for the one lookup.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/spec/
 */

/** A problem with the binding itself, naming the field: a False condition and a Warning, and nothing written. */
export interface SpecProblem {
  field: string;
  message: string;
  /** The condition's reason. */
  reason: 'InvalidSpec' | 'TargetGroupNotFound' | 'Unsupported';
}

export type Lookup = { group: TargetGroup } | { problem: SpecProblem };

export async function findTargetGroup(
  binding: TargetGroupBinding,
  elbv2: Pick<Elbv2Port, 'describeTargetGroupsByArn' | 'findTargetGroups'>,
): Promise<Lookup> {
  const { targetGroupARN: arn, targetGroupName: name } = binding.spec;
  if (arn) {
    const [group] = await elbv2.describeTargetGroupsByArn([arn]);
    if (group) return { group };
    return notFound('spec.targetGroupARN', `target group ${arn} does not exist`);
  }
  if (name) {
    const [group] = await elbv2.findTargetGroups([name]);
    if (group) return { group };
    return notFound('spec.targetGroupName', `no target group is named ${name}`);
  }
  return {
    problem: {
      field: 'spec.targetGroupARN',
      message: 'neither spec.targetGroupARN nor spec.targetGroupName is set',
      reason: 'InvalidSpec',
    },
  };
}

function notFound(field: string, message: string): Lookup {
  return { problem: { field, message, reason: 'TargetGroupNotFound' } };
}

export interface CheckedBinding {
  /** The fields to fill in (empty: none missing). */
  fill: TgbInferredFields;
  problems: SpecProblem[];
  /** The target type in force: the binding's, or the target group's when it leaves it out. */
  targetType: TgbTargetType;
}

/** The binding's set fields against its target group and the cluster's VPC (when the stage names one). */
export function checkBinding(binding: TargetGroupBinding, group: TargetGroup, clusterVpcId?: string): CheckedBinding {
  const { spec } = binding;
  const problems: SpecProblem[] = [];
  const invalid = (field: string, message: string) => problems.push({ field, message, reason: 'InvalidSpec' });
  if (!spec.serviceRef?.name) invalid('spec.serviceRef.name', 'spec.serviceRef.name is not set');
  const port = spec.serviceRef?.port;
  if (port === undefined || port === '' || (typeof port === 'number' && !(Number.isInteger(port) && port > 0))) {
    invalid('spec.serviceRef.port', `spec.serviceRef.port must be a port number or name (got ${String(port)})`);
  }
  if (spec.targetType && spec.targetType !== group.targetType) {
    invalid(
      'spec.targetType',
      `spec.targetType is ${spec.targetType} but target group ${group.name} has ${group.targetType} targets`,
    );
  }
  if (spec.ipAddressType && spec.ipAddressType !== group.ipAddressType) {
    invalid(
      'spec.ipAddressType',
      `spec.ipAddressType is ${spec.ipAddressType} but target group ${group.name} is ${group.ipAddressType}`,
    );
  }
  if (spec.vpcID && group.vpcId && spec.vpcID !== group.vpcId) {
    invalid('spec.vpcID', `spec.vpcID is ${spec.vpcID} but target group ${group.name} is in ${group.vpcId}`);
  }
  if (clusterVpcId && group.vpcId && group.vpcId !== clusterVpcId) {
    invalid(
      spec.vpcID ? 'spec.vpcID' : spec.targetGroupARN ? 'spec.targetGroupARN' : 'spec.targetGroupName',
      `target group ${group.name} is in ${group.vpcId}, not in the cluster's VPC ${clusterVpcId}`,
    );
  }
  if (spec.targetGroupProtocol && spec.targetGroupProtocol !== group.protocol) {
    invalid(
      'spec.targetGroupProtocol',
      `spec.targetGroupProtocol is ${spec.targetGroupProtocol} but target group ${group.name} is ${group.protocol}`,
    );
  }
  const targetType = spec.targetType ?? group.targetType;
  if (spec.nodeSelector && targetType === 'ip') {
    invalid('spec.nodeSelector', 'spec.nodeSelector applies to instance targets only, and the targets are ip');
  }
  if (spec.iamRoleArnToAssume || spec.assumeRoleExternalId) {
    problems.push({
      field: spec.iamRoleArnToAssume ? 'spec.iamRoleArnToAssume' : 'spec.assumeRoleExternalId',
      message: 'target groups of another account (an IAM role to assume) are not supported',
      reason: 'Unsupported',
    });
  }
  const fill: TgbInferredFields = {};
  if (!spec.targetGroupARN) fill.targetGroupARN = group.arn;
  if (!spec.targetType) fill.targetType = group.targetType;
  if (!spec.ipAddressType) fill.ipAddressType = group.ipAddressType;
  if (!spec.vpcID && group.vpcId) fill.vpcID = group.vpcId;
  return { fill, problems, targetType };
}
