/**
 * The EC2 events the control plane listens to, as EventBridge event patterns in their wire form (what
 * PutRule takes and what a CloudFormation `AWS::Events::Rule` holds as `EventPattern`). One place for
 * both users: the stack's rules (stacks/ec2-events.ts) and the local plumbing `npm run events:create`
 * makes (scripts/local-events.ts), so a local run hears exactly what the deployed router hears.
 *
 * Each pattern names its source and detail-type exactly; state changes are not filtered by state
 * because the router decides what each state means (docs/architecture.md "How events flow").
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html
 * https://docs.aws.amazon.com/health/latest/ug/cloudwatch-events-health.html
 */
export interface Ec2EventPattern {
  readonly source: readonly string[];
  readonly 'detail-type': readonly string[];
  readonly detail?: Readonly<Record<string, readonly string[]>>;
}

/** One rule per event type, by the rule's ID (the stack's construct ID, the local rule's name suffix). */
export const EC2_EVENT_PATTERNS = {
  StateChange: { source: ['aws.ec2'], 'detail-type': ['EC2 Instance State-change Notification'] },
  SpotInterruption: { source: ['aws.ec2'], 'detail-type': ['EC2 Spot Instance Interruption Warning'] },
  RebalanceRecommendation: { source: ['aws.ec2'], 'detail-type': ['EC2 Instance Rebalance Recommendation'] },
  ScheduledChange: {
    source: ['aws.health'],
    'detail-type': ['AWS Health Event'],
    detail: { service: ['EC2'], eventTypeCategory: ['scheduledChange'] },
  },
} as const satisfies Record<string, Ec2EventPattern>;

export type Ec2EventRuleId = keyof typeof EC2_EVENT_PATTERNS;

/** The rules in a fixed order: the stack's construct order and the order local rules are made in. */
export const EC2_EVENT_RULE_IDS = Object.keys(EC2_EVENT_PATTERNS) as Ec2EventRuleId[];

/**
 * The events only the interruption controller (functions/interruption) needs besides those above, kept apart so
 * that a stage without it keeps exactly the rules above: the stack adds these only with CCM_INTERRUPTION=true
 * (stacks/ec2-events.ts), and the local plumbing reads only EC2_EVENT_PATTERNS. The router parses both
 * (functions/ec2-events/parse.ts).
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/automating-ec2-auto-scaling-with-eventbridge.html
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html
 */
export const INTERRUPTION_EVENT_PATTERNS = {
  AsgTerminateLifecycleAction: {
    source: ['aws.autoscaling'],
    'detail-type': ['EC2 Instance-terminate Lifecycle Action'],
  },
  CapacityReservationInterruption: {
    source: ['aws.ec2'],
    'detail-type': ['EC2 Capacity Reservation Instance Interruption Warning'],
  },
} as const satisfies Record<string, Ec2EventPattern>;
