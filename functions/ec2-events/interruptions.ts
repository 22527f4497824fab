import {
  type InterruptionMessage,
  type InterruptionNotice,
  interruptionDeduplicationId,
  interruptionGroupId,
  SPOT_NOTICE_MS,
} from '../../shared/queue/interruption.ts';
import type { FifoMessage } from '../../shared/queue/sqs-port.ts';
import type { Ec2Event } from './parse.ts';

/**
 * Which EC2 events are interruption notices, and the notice each makes for one of its instances; undefined for
 * events that are none (a state change other than stopping, shutting down or running). Deadlines as
 * shared/queue/interruption.ts documents them.
 */
export function interruptionNotice(event: Ec2Event, instanceId: string): InterruptionNotice | undefined {
  const base = { eventId: event.id, eventTime: isoTime(event.time), instanceId };
  switch (event.type) {
    case 'spot-interruption':
      return { kind: 'spot-interruption', ...base, deadline: after(event.time, SPOT_NOTICE_MS) };
    case 'rebalance-recommendation':
      return { kind: 'rebalance-recommendation', ...base };
    case 'scheduled-change':
      return { kind: 'scheduled-maintenance', ...base, ...(event.startTime ? { deadline: event.startTime } : {}) };
    case 'capacity-reservation-interruption':
      return {
        kind: 'capacity-reservation-interruption',
        ...base,
        // The warning comes 2 minutes before the termination; its own time wins when it states one.
        deadline: event.terminationTime ?? after(event.time, SPOT_NOTICE_MS),
      };
    case 'asg-lifecycle-termination':
      return {
        kind: 'asg-lifecycle-termination',
        ...base,
        lifecycleHook: {
          autoScalingGroupName: event.autoScalingGroupName,
          lifecycleHookName: event.lifecycleHookName,
          ...(event.lifecycleActionToken ? { lifecycleActionToken: event.lifecycleActionToken } : {}),
        },
      };
    case 'state-change':
      // `stopping` and `shutting-down` are the last moment a Node can still be drained: the instance is
      // going away now (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html).
      if (event.state === 'stopping' || event.state === 'shutting-down') return { kind: 'instance-stopping', ...base };
      // `running` again (after a stop, or a spot instance's stop or hibernation): the end of any interruption of
      // its Node, whose load balancer exclusion the controller lifts once the Node is schedulable.
      return event.state === 'running' ? { kind: 'instance-running', ...base } : undefined;
  }
}

/** The notice as it goes on the queue: body, group ID (the key) and deduplication ID (key + event ID). */
export function toFifoMessage(message: InterruptionMessage): FifoMessage {
  return {
    body: JSON.stringify(message),
    groupId: interruptionGroupId(message),
    deduplicationId: interruptionDeduplicationId(message),
  };
}

function isoTime(time: string): string {
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? time : new Date(ms).toISOString();
}

function after(time: string, ms: number): string | undefined {
  const start = Date.parse(time);
  return Number.isNaN(start) ? undefined : new Date(start + ms).toISOString();
}
