/**
 * The kinds of interruption notice (interruption.ts), in a module of their own without schemas: the configuration
 * names them (INTERRUPTION_ACTIONS), and every function loads the configuration, while only the EC2 events router
 * and the interruption controller parse notices. Importing interruption.ts from the configuration built its zod
 * schemas at every function's cold start.
 */
export const INTERRUPTION_KINDS = [
  'spot-interruption',
  'rebalance-recommendation',
  'scheduled-maintenance',
  'asg-lifecycle-termination',
  'capacity-reservation-interruption',
  'instance-stopping',
] as const;
export type InterruptionKind = (typeof INTERRUPTION_KINDS)[number];

/**
 * What an interruption message may carry: the kinds above, which interrupt, and `instance-running`, which ends an
 * interruption (the instance behind an interrupted Node runs again, after a stop or a reboot). Not in
 * INTERRUPTION_KINDS: there is no action to configure for it.
 */
export const NOTICE_KINDS = [...INTERRUPTION_KINDS, 'instance-running'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];
