/**
 * The webhooks the relay serves for Windows IP address management, named and routed as the VPC
 * resource controller's are (users' tooling and docs know these names). deploy/relay/webhook.yaml
 * registers them; functions/relay/manifests.test.ts checks the two agree.
 */
export const MUTATING_WEBHOOK = { name: 'mpod.vpc.k8s.aws', path: '/mutate-v1-pod' } as const;
export const VALIDATING_WEBHOOK = { name: 'vpod.vpc.k8s.aws', path: '/validate-v1-pod' } as const;

/**
 * The TargetGroupBinding webhooks, named as the AWS Load Balancer Controller's (deploy/relay/webhook-tgb.yaml). The
 * binding validator keeps the reference's path; the readiness gate mutator cannot (the IPAM mutator above serves
 * `/mutate-v1-pod` on the same server), and a path is only ever read from the webhook configuration.
 */
export const TGB_VALIDATING_WEBHOOK = {
  name: 'vtargetgroupbinding.elbv2.k8s.aws',
  path: '/validate-elbv2-k8s-aws-v1beta1-targetgroupbinding',
} as const;
export const POD_READINESS_WEBHOOK = { name: 'mpod.elbv2.k8s.aws', path: '/mutate-v1-pod-readiness-gate' } as const;

export type WebhookName =
  | typeof MUTATING_WEBHOOK.name
  | typeof VALIDATING_WEBHOOK.name
  | typeof TGB_VALIDATING_WEBHOOK.name
  | typeof POD_READINESS_WEBHOOK.name;
