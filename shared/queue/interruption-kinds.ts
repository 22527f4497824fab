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
