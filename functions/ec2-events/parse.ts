import { formatIssues, parseBody } from '../../shared/parse-body.ts';
import * as z from '../../shared/zod.ts';

/**
 * EventBridge EC2 events, parsed through a registry keyed by (source, detail-type), as Karpenter's
 * interruption controller does. Instance IDs come from `detail`, never from `resources` (spot
 * warnings have carried an ARN with a zone and no account there).
 * References:
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/automating-ec2-auto-scaling-with-eventbridge.html (lifecycle actions)
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html (capacity reservations)
 * https://docs.aws.amazon.com/health/latest/ug/cloudwatch-events-health.html
 */
const instanceId = z.string().check(z.regex(/^i-[0-9a-f]{8,17}$/, 'must be an instance ID (i-...)'));
const nonEmpty = () => z.string().check(z.minLength(1));

const Envelope = z.object({
  version: z.string(),
  id: nonEmpty(),
  'detail-type': z.string(),
  source: z.string(),
  account: z.optional(z.string()),
  time: z.string(),
  region: z.string(),
  resources: z._default(z.array(z.string()), []),
  detail: z.unknown(),
});

export type Ec2Event =
  | { type: 'state-change'; id: string; time: string; instanceIds: string[]; state: string }
  | { type: 'spot-interruption'; id: string; time: string; instanceIds: string[]; action: string }
  | { type: 'rebalance-recommendation'; id: string; time: string; instanceIds: string[] }
  | {
      type: 'scheduled-change';
      id: string;
      time: string;
      instanceIds: string[];
      eventTypeCode?: string;
      /** When the scheduled change starts (ISO 8601): the deadline to be off the instance by. */
      startTime?: string;
    }
  | {
      type: 'asg-lifecycle-termination';
      id: string;
      time: string;
      instanceIds: string[];
      autoScalingGroupName: string;
      lifecycleHookName: string;
      /** Optional here because CompleteLifecycleAction accepts the instance ID instead of the token. */
      lifecycleActionToken?: string;
    }
  | {
      type: 'capacity-reservation-interruption';
      id: string;
      time: string;
      instanceIds: string[];
      action: string;
      /** `instance-termination-time` (ISO 8601), 2 minutes after the warning per the docs. */
      terminationTime?: string;
    };

/**
 * A date as AWS writes it in event details (ISO 8601 in EC2 events, RFC 1123 such as
 * `Sun, 15 Nov 2026 10:00:00 GMT` in Health events), as ISO 8601; refused when it is no date.
 */
const eventDate = z.pipe(
  z.string(),
  z.transform((text: string, ctx) => {
    const ms = Date.parse(text);
    if (Number.isNaN(ms)) {
      ctx.issues.push({ code: 'custom', message: `must be a date, got ${JSON.stringify(text)}`, input: text });
      return z.NEVER;
    }
    return new Date(ms).toISOString();
  }),
);

type Parser = (detail: unknown, envelope: z.infer<typeof Envelope>) => Ec2Event;

const registry = new Map<string, Parser>([
  [
    'aws.ec2|EC2 Instance State-change Notification',
    (detail, e) => {
      const d = z
        .object({
          'instance-id': instanceId,
          state: z.enum(['pending', 'running', 'stopping', 'stopped', 'shutting-down', 'terminated']),
        })
        .parse(detail);
      return { type: 'state-change', id: e.id, time: e.time, instanceIds: [d['instance-id']], state: d.state };
    },
  ],
  [
    'aws.ec2|EC2 Spot Instance Interruption Warning',
    (detail, e) => {
      const d = z.object({ 'instance-id': instanceId, 'instance-action': z.string() }).parse(detail);
      return {
        type: 'spot-interruption',
        id: e.id,
        time: e.time,
        instanceIds: [d['instance-id']],
        action: d['instance-action'],
      };
    },
  ],
  [
    'aws.ec2|EC2 Instance Rebalance Recommendation',
    (detail, e) => {
      const d = z.object({ 'instance-id': instanceId }).parse(detail);
      return { type: 'rebalance-recommendation', id: e.id, time: e.time, instanceIds: [d['instance-id']] };
    },
  ],
  [
    'aws.health|AWS Health Event',
    (detail, e) => {
      const d = z
        .object({
          service: z.literal('EC2'),
          eventTypeCategory: z.literal('scheduledChange'),
          eventTypeCode: z.optional(z.string()),
          startTime: z.optional(eventDate),
          affectedEntities: z.array(z.object({ entityValue: z.string() })).check(z.minLength(1)),
        })
        .parse(detail);
      const instanceIds = d.affectedEntities.map((a) => a.entityValue).filter((v) => instanceId.safeParse(v).success);
      return {
        type: 'scheduled-change',
        id: e.id,
        time: e.time,
        instanceIds,
        eventTypeCode: d.eventTypeCode,
        ...(d.startTime ? { startTime: d.startTime } : {}),
      };
    },
  ],
  [
    // Sent when an instance enters Terminating:Wait because the group has a termination lifecycle hook.
    // https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html
    'aws.autoscaling|EC2 Instance-terminate Lifecycle Action',
    (detail, e) => {
      const d = z
        .object({
          LifecycleActionToken: z.optional(nonEmpty()),
          AutoScalingGroupName: nonEmpty(),
          LifecycleHookName: nonEmpty(),
          EC2InstanceId: instanceId,
          LifecycleTransition: z.literal('autoscaling:EC2_INSTANCE_TERMINATING'),
        })
        .parse(detail);
      return {
        type: 'asg-lifecycle-termination',
        id: e.id,
        time: e.time,
        instanceIds: [d.EC2InstanceId],
        autoScalingGroupName: d.AutoScalingGroupName,
        lifecycleHookName: d.LifecycleHookName,
        ...(d.LifecycleActionToken ? { lifecycleActionToken: d.LifecycleActionToken } : {}),
      };
    },
  ],
  [
    // Instances in an interruptible Capacity Reservation, 2 minutes before the owner reclaims the capacity.
    // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html
    'aws.ec2|EC2 Capacity Reservation Instance Interruption Warning',
    (detail, e) => {
      const d = z
        .object({
          'instance-id': instanceId,
          'instance-action': z.string(),
          'instance-termination-time': z.optional(eventDate),
        })
        .parse(detail);
      return {
        type: 'capacity-reservation-interruption',
        id: e.id,
        time: e.time,
        instanceIds: [d['instance-id']],
        action: d['instance-action'],
        ...(d['instance-termination-time'] ? { terminationTime: d['instance-termination-time'] } : {}),
      };
    },
  ],
]);

export type ParsedEc2Event = { ok: true; event: Ec2Event } | { ok: false; error: string; unsupported?: boolean };

export function parseEc2Event(body: string): ParsedEc2Event {
  const envelope = parseBody(body, Envelope, 'an EventBridge event');
  if (!envelope.ok) return envelope;
  const e = envelope.value;
  const parser = registry.get(`${e.source}|${e['detail-type']}`);
  if (!parser) return { ok: false, unsupported: true, error: `unsupported event ${e.source} / ${e['detail-type']}` };
  try {
    return { ok: true, event: parser(e.detail, e) };
  } catch (err) {
    const detail = err instanceof z.$ZodError ? formatIssues(err) : String(err);
    return { ok: false, error: `${e['detail-type']} ${e.id}: bad detail: ${detail}` };
  }
}
