/**
 * The webhooks the relay serves for Windows IP address management, named and routed as the VPC
 * resource controller's are (users' tooling and docs know these names). deploy/relay/webhook.yaml
 * registers them; functions/relay/manifests.test.ts checks the two agree.
 */
export const MUTATING_WEBHOOK = { name: 'mpod.vpc.k8s.aws', path: '/mutate-v1-pod' } as const;
export const VALIDATING_WEBHOOK = { name: 'vpod.vpc.k8s.aws', path: '/validate-v1-pod' } as const;

export type WebhookName = typeof MUTATING_WEBHOOK.name | typeof VALIDATING_WEBHOOK.name;
