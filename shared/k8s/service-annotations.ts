/**
 * The Service annotations users already write for the AWS cloud provider and the AWS Load Balancer
 * Controller. The service controller parses them (functions/service/annotations.ts) and the relay
 * forwards a change of any of them (functions/relay/controllers/service-reads.ts): one list, so the two never
 * disagree on a name.
 * https://kubernetes.io/docs/reference/labels-annotations-taints/#service-beta-kubernetes-io-aws-load-balancer-type
 */
export const ANNOTATION_PREFIX = 'service.beta.kubernetes.io/aws-load-balancer-';

const a = (suffix: string) => `${ANNOTATION_PREFIX}${suffix}`;

export const ANNOTATION = {
  type: a('type'),
  internal: a('internal'),
  scheme: a('scheme'),
  name: a('name'),
  subnets: a('subnets'),
  eipAllocations: a('eip-allocations'),
  privateIpv4Addresses: a('private-ipv4-addresses'),
  nlbTargetType: a('nlb-target-type'),
  sslCert: a('ssl-cert'),
  sslPorts: a('ssl-ports'),
  sslNegotiationPolicy: a('ssl-negotiation-policy'),
  alpnPolicy: a('alpn-policy'),
  ipAddressType: a('ip-address-type'),
  backendProtocol: a('backend-protocol'),
  proxyProtocol: a('proxy-protocol'),
  healthcheckProtocol: a('healthcheck-protocol'),
  healthcheckPort: a('healthcheck-port'),
  healthcheckPath: a('healthcheck-path'),
  healthcheckInterval: a('healthcheck-interval'),
  healthcheckTimeout: a('healthcheck-timeout'),
  healthcheckHealthyThreshold: a('healthcheck-healthy-threshold'),
  healthcheckUnhealthyThreshold: a('healthcheck-unhealthy-threshold'),
  targetGroupAttributes: a('target-group-attributes'),
  attributes: a('attributes'),
  crossZone: a('cross-zone-load-balancing-enabled'),
  accessLogEnabled: a('access-log-enabled'),
  accessLogBucket: a('access-log-s3-bucket-name'),
  accessLogPrefix: a('access-log-s3-bucket-prefix'),
  accessLogEmitInterval: a('access-log-emit-interval'),
  additionalResourceTags: a('additional-resource-tags'),
  securityGroups: a('security-groups'),
  extraSecurityGroups: a('extra-security-groups'),
  targetNodeLabels: a('target-node-labels'),
  connectionIdleTimeout: a('connection-idle-timeout'),
  connectionDrainingEnabled: a('connection-draining-enabled'),
  connectionDrainingTimeout: a('connection-draining-timeout'),
  /** The AWS Load Balancer Controller's Services only (functions/service/lbc/options.ts). */
  manageBackendSecurityGroupRules: a('manage-backend-security-group-rules'),
  sourceRanges: 'service.beta.kubernetes.io/load-balancer-source-ranges',
} as const;

/**
 * `listener-attributes.<protocol>-<port>` (the AWS Load Balancer Controller's Services): one annotation per listener,
 * so a prefix rather than a name.
 */
export const LISTENER_ATTRIBUTES_PREFIX = a('listener-attributes.');
