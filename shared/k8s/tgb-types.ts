import type { LabelSelector, ObjectMeta } from './types.ts';

/**
 * TargetGroupBinding (`elbv2.k8s.aws/v1beta1`, namespaced, status subresource), as the AWS Load Balancer Controller
 * defines it, so manifests written for it apply unchanged (CRD: deploy/crds/targetgroupbindings.yaml).
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/spec/
 */

export const TGB_API_VERSION = 'elbv2.k8s.aws/v1beta1';
export const TGB_GROUP = 'elbv2.k8s.aws';
export const TGB_PLURAL = 'targetgroupbindings';

/** The finalizer the reference puts on every binding it acts on; kept, so a binding moves between the two as is. */
export const TGB_FINALIZER = 'elbv2.k8s.aws/resources';

/** The readiness gate condition type prefix: `target-health.elbv2.k8s.aws/<binding name>`. */
export const READINESS_GATE_PREFIX = 'target-health.elbv2.k8s.aws/';
/** The prefix the reference's older releases injected; a gate of this prefix is read as the current one. */
export const LEGACY_READINESS_GATE_PREFIX = 'target-health.alb.ingress.k8s.aws/';
/** A namespace with this label set to `enabled` gets readiness gates injected into new Pods. */
export const READINESS_GATE_INJECT_LABEL = 'elbv2.k8s.aws/pod-readiness-gate-inject';

/**
 * Labels the reference (and our Ingress and service controllers: stack-bindings.ts) puts on the bindings it makes
 * for its own Services and Ingress groups (`ingress.k8s.aws/stack` for an explicit group, `-stack-namespace` and
 * `-stack-name` for one Ingress's implicit group): such a binding's targets are registered by the controller of that
 * Service or Ingress; the binding controller only keeps its Pods' readiness conditions.
 */
export const STACK_LABELS = [
  'service.k8s.aws/stack-name',
  'service.k8s.aws/stack-namespace',
  'ingress.k8s.aws/stack',
  'ingress.k8s.aws/stack-name',
  'ingress.k8s.aws/stack-namespace',
];

export type TgbTargetType = 'instance' | 'ip';
export type TgbIpAddressType = 'ipv4' | 'ipv6';

export interface TgbNetworkingPeer {
  ipBlock?: { cidr: string };
  securityGroup?: { groupID: string };
}

export interface TgbNetworkingPort {
  /** TCP when absent. */
  protocol?: 'TCP' | 'UDP';
  /** A number, or the name of a port of the target (a Pod's container port, or the Service port's name); absent: every port. */
  port?: number | string;
}

export interface TgbNetworkingIngressRule {
  from: TgbNetworkingPeer[];
  ports: TgbNetworkingPort[];
}

export interface TargetGroupBindingSpec {
  serviceRef: { name: string; port: number | string };
  targetGroupARN?: string;
  targetGroupName?: string;
  targetType?: TgbTargetType;
  targetGroupProtocol?: string;
  ipAddressType?: TgbIpAddressType;
  vpcID?: string;
  nodeSelector?: LabelSelector;
  networking?: { ingress?: TgbNetworkingIngressRule[] };
  multiClusterTargetGroup?: boolean;
  iamRoleArnToAssume?: string;
  assumeRoleExternalId?: string;
}

export interface TgbCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface TargetGroupBindingStatus {
  observedGeneration?: number;
  conditions?: TgbCondition[];
}

export interface TargetGroupBinding {
  apiVersion?: typeof TGB_API_VERSION;
  kind?: 'TargetGroupBinding';
  metadata: ObjectMeta;
  spec: TargetGroupBindingSpec;
  status?: TargetGroupBindingStatus;
}

/** The fields the controller fills in from the target group when the binding leaves them out (once; then immutable). */
export type TgbInferredFields = Partial<
  Pick<TargetGroupBindingSpec, 'targetGroupARN' | 'targetType' | 'ipAddressType' | 'vpcID'>
>;
