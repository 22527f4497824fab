import { createHash } from 'node:crypto';
import { parseBody } from '../parse-body.ts';
import * as z from '../zod.ts';
import { INTERRUPTION_KINDS, type InterruptionKind, NOTICE_KINDS, type NoticeKind } from './interruption-kinds.ts';
import { messageGroupId } from './message.ts';

/**
 * The interruption notice: what the EC2 events router sends to the interruption FIFO queue when an instance
 * behind a Node is about to go away, and what the interruption controller (`functions/interruption`) consumes to
 * taint, cordon and drain that Node before its deadline (docs/keys.md, "The interruption notice"). Unlike a key
 * message it carries facts the controller cannot read back from AWS: the event's time and deadline, and for a
 * lifecycle hook the token to complete it with.
 *
 * Deadlines, from AWS's documentation:
 * - spot interruption: two minutes after the warning
 *   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html);
 * - capacity reservation interruption: the warning's `instance-termination-time`, else two minutes after it
 *   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html);
 * - scheduled maintenance: the Health event's `startTime`
 *   (https://docs.aws.amazon.com/health/latest/ug/cloudwatch-events-health.html);
 * - lifecycle hook: none here; the hook's heartbeat timeout is read from the hook (DescribeLifecycleHooks) by
 *   the controller, which can extend it with heartbeats
 *   (https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html);
 * - rebalance recommendation and instance stopping: none (a recommendation is no notice of termination; a
 *   stop has begun already);
 * - instance running: none, it is no interruption but the end of one (the instance behind an interrupted Node runs
 *   again): the controller lifts its load balancer exclusion once the Node is schedulable again.
 */
export { INTERRUPTION_KINDS, type InterruptionKind, NOTICE_KINDS, type NoticeKind };

/** A spot instance is interrupted two minutes after its warning. */
export const SPOT_NOTICE_MS = 120_000;

const instanceId = z.string().check(z.regex(/^i-[0-9a-f]{8,17}$/, 'must be an instance ID (i-...)'));
const isoTime = z.iso.datetime({ offset: true });
const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const nodeName = text(253).check(z.regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 name'));

const LifecycleHookRef = z.strictObject({
  autoScalingGroupName: text(255),
  lifecycleHookName: text(255),
  /** Optional: CompleteLifecycleAction and RecordLifecycleActionHeartbeat also take the instance ID. */
  lifecycleActionToken: z.optional(text(36)),
});

export const InterruptionNotice = z.strictObject({
  kind: z.enum(NOTICE_KINDS),
  /** The EventBridge event's `id`. */
  eventId: text(128),
  /** The EventBridge event's `time`. */
  eventTime: isoTime,
  /** When the instance goes away, if the event says (see above). */
  deadline: z.optional(isoTime),
  instanceId,
  /** Only for `asg-lifecycle-termination`: what CompleteLifecycleAction needs. */
  lifecycleHook: z.optional(LifecycleHookRef),
});
export type InterruptionNotice = z.infer<typeof InterruptionNotice>;

/**
 * The Node key plus the notice. `kind: 'Instance'` (name = the instance ID) is only for a lifecycle hook whose
 * instance is no Node the router knows: the hook must still be completed (else the instance waits out the
 * heartbeat timeout), whether or not the Node registers after the event: the controller completes it by instance
 * ID, with no Node to drain.
 * The router sends these for any instance of any group (it reads no EC2): the controller must complete only the
 * hooks of instances tagged `kubernetes.io/cluster/<name>`, and leave other tools' hooks alone.
 */
export const InterruptionMessage = z
  .strictObject({
    kind: z.enum(['Node', 'Instance']),
    name: nodeName,
    notice: InterruptionNotice,
  })
  .check(
    z.superRefine((m, ctx) => {
      const hook = m.notice.kind === 'asg-lifecycle-termination';
      if (hook !== Boolean(m.notice.lifecycleHook)) {
        ctx.addIssue({
          code: 'custom',
          path: ['notice', 'lifecycleHook'],
          message: 'is required for asg-lifecycle-termination notices and allowed for no other kind',
        });
      }
      if (m.kind === 'Instance' && (!hook || m.name !== m.notice.instanceId)) {
        ctx.addIssue({
          code: 'custom',
          path: ['kind'],
          message: 'Instance keys are only for lifecycle hooks, named by the notice instance ID',
        });
      }
    }),
  );
export type InterruptionMessage = z.infer<typeof InterruptionMessage>;

/**
 * The key of the message as a group: `Node//<name>` as on every other queue, or `Instance//<instance-id>`. An
 * `instance-running` notice has a group of its own, `Running//<name>` (hashed past 128 characters as keys are): the
 * controller may wait on it for hours (until someone uncordons the Node), and in the Node's group it would hold
 * back every notice behind it, a spot warning's two minutes included.
 */
export function interruptionGroupId(
  message: Pick<InterruptionMessage, 'kind' | 'name'> & { notice?: Pick<InterruptionNotice, 'kind'> },
): string {
  if (message.kind === 'Instance') return `Instance//${message.name}`;
  if (message.notice?.kind !== 'instance-running') return messageGroupId({ kind: 'Node', name: message.name });
  const id = `Running//${message.name}`;
  return id.length <= 128 ? id : `Running/sha256:${createHash('sha256').update(id).digest('hex')}`;
}

/**
 * Key + event ID: the same event routed twice within five minutes is dropped by SQS, another event about the
 * same Node is not. Hashed: SQS allows 128 characters.
 */
export function interruptionDeduplicationId(message: InterruptionMessage): string {
  return createHash('sha256')
    .update(`${interruptionGroupId(message)}\n${message.notice.eventId}`)
    .digest('hex');
}

export type InterruptionParseResult = { ok: true; message: InterruptionMessage } | { ok: false; error: string };

export function parseInterruptionMessage(body: string): InterruptionParseResult {
  const parsed = parseBody(body, InterruptionMessage, 'an interruption notice');
  return parsed.ok ? { ok: true, message: parsed.value } : parsed;
}

// ---- taints ------------------------------------------------------------------------------------------

/**
 * The taints aws-node-termination-handler puts on a Node per kind of notice (its queue-processor mode), so
 * that workloads tolerating them keep working when this controller takes over. The capacity reservation and
 * instance-stopping notices have no taint of their own there: undefined, the controller decides.
 * https://github.com/aws/aws-node-termination-handler#readme
 */
export const INTERRUPTION_TAINT_KEYS: Readonly<Partial<Record<NoticeKind, string>>> = {
  'spot-interruption': 'aws-node-termination-handler/spot-itn',
  'rebalance-recommendation': 'aws-node-termination-handler/rebalance-recommendation',
  'scheduled-maintenance': 'aws-node-termination-handler/scheduled-maintenance',
  'asg-lifecycle-termination': 'aws-node-termination-handler/asg-lifecycle-termination',
};

export interface InterruptionTaint {
  key: string;
  value: string;
  effect: 'NoSchedule';
}

export function interruptionTaint(kind: NoticeKind, eventId: string): InterruptionTaint | undefined {
  const key = INTERRUPTION_TAINT_KEYS[kind];
  return key ? { key, value: taintValue(eventId), effect: 'NoSchedule' } : undefined;
}

/**
 * An event ID as a taint value, which must be a label value: at most 63 characters of `[A-Za-z0-9._-]`,
 * beginning and ending with a letter or digit, or empty.
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
 */
export function taintValue(eventId: string): string {
  return eventId
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 63)
    .replace(/[^A-Za-z0-9]+$/, '');
}
