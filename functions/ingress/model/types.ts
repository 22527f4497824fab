import type {
  HealthCheck,
  RuleAction,
  RuleCondition,
  TargetGroupIpAddressType,
  TargetGroupProtocolVersion,
  TargetType,
} from '../../../shared/aws/elbv2-port.ts';
import type { GroupId } from '../../../shared/ingress/membership.ts';
import type { Ingress } from '../../../shared/k8s/ingress-types.ts';
import type { ServicePortSpec } from '../../../shared/k8s/types.ts';

/**
 * The model of one IngressGroup: what its Application Load Balancer should be, built from the group's members
 * before anything is read from AWS (build.ts), and applied by the pass (../apply/). Target groups are named by
 * their resource ID in actions, since their ARNs are known only once they exist.
 */

/** A forward target before ARNs are known: a target group of the model, or one the user names. */
export type TargetGroupRef = { resourceId: string } | { arn: string } | { name: string };

export type ModelAction =
  | {
      type: 'forward';
      targetGroups: { ref: TargetGroupRef; weight: number }[];
      stickiness: { enabled: boolean; durationSeconds?: number };
    }
  | Exclude<RuleAction, { type: 'forward' }>;

export interface ModelRule {
  /** In AWS's normal form (legacy `Values` never used; values as AWS echoes them). */
  conditions: RuleCondition[];
  actions: ModelAction[];
  /** `namespace/name` of the member whose rule it is. */
  member: string;
}

export interface ModelListener {
  port: number;
  protocol: 'HTTP' | 'HTTPS';
  /** HTTPS: the policy (the reference's default ELBSecurityPolicy-2016-08 when no member sets one). */
  sslPolicy?: string;
  /** HTTPS: the default certificate first, then the others (served by SNI), without duplicates. */
  certificateArns: string[];
  defaultActions: ModelAction[];
  /** In final order: the first gets priority 1. Empty on an HTTP listener that redirects to HTTPS. */
  rules: ModelRule[];
  attributes: Record<string, string>;
  /** Where clients may connect from: CIDR blocks (IPv4 and, for dualstack, IPv6). */
  inboundCidrs: string[];
  prefixLists: string[];
}

export interface ModelTargetGroup {
  /** The reference's resource ID, `<ingress namespace>/<ingress name>-<service name>:<service port>`. */
  resourceId: string;
  /** The reference's name, `k8s-<namespace>-<service>-<hash>`. */
  name: string;
  targetType: TargetType;
  protocol: 'HTTP' | 'HTTPS';
  protocolVersion: TargetGroupProtocolVersion;
  /** The node port (instance targets) or the target port (IP targets; 1 when the target port is named). */
  port: number;
  ipAddressType: TargetGroupIpAddressType;
  healthCheck: HealthCheck;
  attributes: Record<string, string>;
  /** The user's tags (Service's over Ingress's, class params' over both); tracking tags are added by the pass. */
  tags: Record<string, string>;
  service: { namespace: string; name: string; port: ServicePortSpec };
  /** `namespace/name` of the member it was built for. */
  member: string;
}

export interface ModelLoadBalancer {
  /** The reference's name, `k8s-<group>-<hash>` or `k8s-<namespace>-<name>-<hash>`, or `load-balancer-name`. */
  name: string;
  scheme: 'internet-facing' | 'internal';
  ipAddressType: 'ipv4' | 'dualstack' | 'dualstack-without-public-ipv4';
  /** Undefined: discovered by role tags. */
  subnets?: { ids: string[] } | { tags: Record<string, string[]> } | { names: string[] };
  /** Kept in line (set ones only; AWS's defaults for the rest are left as they are). */
  attributes: Record<string, string>;
  /** The user's tags (class params' over annotations'); tracking tags are added by the pass. */
  tags: Record<string, string>;
  /** The user's security groups (IDs or `Name` tags) instead of a managed one. */
  securityGroups?: string[];
  /** With user security groups: attach the shared backend group too and keep the target rules. */
  manageBackendSecurityGroupRules: boolean;
  /** The managed frontend group's name (the reference's: as the ALB's, hashed without the scheme). */
  securityGroupName: string;
  /** `none`: disassociate; undefined: leave as it is. */
  wafv2AclArn?: string;
  wafv2AclName?: string;
}

export interface IngressGroupModel {
  group: GroupId;
  loadBalancer: ModelLoadBalancer;
  listeners: ModelListener[];
  targetGroups: ModelTargetGroup[];
}

/** Why a member or the group could not be built, named as the user wrote it. */
export interface Problem {
  /** The annotation, field or object at fault (`alb.ingress.kubernetes.io/listen-ports`, `spec.rules[0]`...). */
  at: string;
  message: string;
}

export interface MemberOutcome {
  ingress: Ingress;
  /** `namespace/name`. */
  key: string;
  order: number;
  /**
   * `built`: its rules and target groups are in the model. `kept`: it could not be built (problems) or disagrees
   * with an earlier member on a setting the group shares (conflicts): the pass keeps the rules it last had.
   */
  state: 'built' | 'kept';
  problems: Problem[];
  /** Settings it uses that are not supported, or are ignored: a Warning each, never silently dropped. */
  warnings: Problem[];
}

export interface GroupBuild {
  group: GroupId;
  /** Active members in group order (built and kept). */
  members: MemberOutcome[];
  /** Members leaving the group: their rules go, then their finalizer. */
  leaving: Ingress[];
  /** Undefined when no member is active: everything the group's stack owns is deleted. */
  model?: IngressGroupModel;
}

/** What the model needs to look up beyond the group's Ingresses. */
export interface ModelReads {
  service(namespace: string, name: string): Promise<import('../../../shared/k8s/types.ts').Service | undefined>;
  /**
   * Certificates whose SubjectAlternativeNames cover a host (exact, or a one-level wildcard), ISSUED only:
   * certificate ARN -> its names. Called only when an HTTPS listener has no certificate given.
   */
  certificates(): Promise<{ arn: string; names: string[] }[]>;
}

/** The controller's settings the model reads (the reference's flags, with their defaults). */
export interface ModelSettings {
  clusterName: string;
  /** `--default-ssl-policy`. */
  defaultSslPolicy: string;
  /** `--default-target-type`. */
  defaultTargetType: TargetType;
  /** `--default-tags`: win over every other tag. */
  defaultTags: Record<string, string>;
  /** Tag keys another tool manages on our resources: never removed. */
  externalManagedTags: string[];
}
