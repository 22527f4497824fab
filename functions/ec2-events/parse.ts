import { z } from 'zod';
import { formatIssues, parseBody } from '../../shared/parse-body.ts';

/**
 * EventBridge EC2 events, parsed through a registry keyed by (source, detail-type), as Karpenter's
 * interruption controller does. Instance IDs come from `detail`, never from `resources` (spot
 * warnings have carried an ARN with a zone and no account there).
 * Reference: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
 */
const instanceId = z.string().regex(/^i-[0-9a-f]{8,17}$/, 'must be an instance ID (i-...)');

const Envelope = z.object({
  version: z.string(),
  id: z.string().min(1),
  'detail-type': z.string(),
  source: z.string(),
  account: z.string().optional(),
  time: z.string(),
  region: z.string(),
  resources: z.array(z.string()).default([]),
  detail: z.unknown(),
});

export type Ec2Event =
  | { type: 'state-change'; id: string; time: string; instanceIds: string[]; state: string }
  | { type: 'spot-interruption'; id: string; time: string; instanceIds: string[]; action: string }
  | { type: 'rebalance-recommendation'; id: string; time: string; instanceIds: string[] }
  | { type: 'scheduled-change'; id: string; time: string; instanceIds: string[]; eventTypeCode?: string };

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
          eventTypeCode: z.string().optional(),
          affectedEntities: z.array(z.object({ entityValue: z.string() })).min(1),
        })
        .parse(detail);
      const instanceIds = d.affectedEntities.map((a) => a.entityValue).filter((v) => instanceId.safeParse(v).success);
      return { type: 'scheduled-change', id: e.id, time: e.time, instanceIds, eventTypeCode: d.eventTypeCode };
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
    const detail = err instanceof z.ZodError ? formatIssues(err) : String(err);
    return { ok: false, error: `${e['detail-type']} ${e.id}: bad detail: ${detail}` };
  }
}
