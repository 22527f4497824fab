import { readFileSync } from 'node:fs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { MetricName } from '../../shared/observability/metrics.ts';
import { type InterruptionMessage, parseInterruptionMessage } from '../../shared/queue/interruption.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { NodeIndex } from './node-index.ts';
import { type RouterDeps, routeEc2Events } from './router.ts';

/** The router with INTERRUPTION_QUEUE_URL set: interruption events become notices on the interruption queue. */
const fixtures = new URL('../../test/fixtures/', import.meta.url);
const event = (name: string) => JSON.parse(readFileSync(new URL(`events/${name}`, fixtures), 'utf8'));
const SPOT = event('ec2-spot-interruption-warning.json');
const REBALANCE = event('ec2-rebalance-recommendation.json');
const HEALTH = event('health-scheduled-retirement.json');
const HOOK = event('asg-terminate-lifecycle-action.json');
const CAPACITY = event('ec2-capacity-reservation-interruption-warning.json');
const STATE = event('ec2-state-change-stopped.json');

/** The same sample event about another instance (and with another ID, when asked). */
function about(sample: { detail: Record<string, unknown> }, instanceId: string, id?: string) {
  const detail = { ...sample.detail };
  if ('EC2InstanceId' in detail) detail.EC2InstanceId = instanceId;
  else if ('affectedEntities' in detail) detail.affectedEntities = [{ entityValue: instanceId }];
  else detail['instance-id'] = instanceId;
  return JSON.stringify({ ...sample, ...(id ? { id } : {}), detail });
}

describe('routeEc2Events with an interruption queue', () => {
  let w: World;
  let deps: RouterDeps;
  const INSTANCE = 'i-0aaaaaaaaaaaaaaa1';
  const NODE = 'ip-10-0-1-5.eu-west-1.compute.internal';

  beforeEach(() => {
    w = createWorld();
    w.sqs.createQueue('interruption.fifo', { fifo: true });
    w.kube.putNode(makeNode(NODE, { providerID: `aws:///eu-west-1a/${INSTANCE}`, initialized: true }));
    deps = {
      index: new NodeIndex(w.kube, w.clock),
      sqs: w.sqs,
      routes: { 'state-change': w.sqs.urlOf('node-lifecycle.fifo') },
      log: w.runner.log,
      metrics: w.metrics,
      interruption: { queueUrl: w.sqs.urlOf('interruption.fifo'), sqs: w.sqs },
    };
  });

  const recordsOf = (bodies: string[]): SQSRecord[] => {
    const template = (
      JSON.parse(readFileSync(new URL('sqs/standard-batch-ec2-events.json', fixtures), 'utf8')) as SQSEvent
    ).Records[0]!;
    return bodies.map((body, i) => ({ ...template, messageId: `e-${i}`, body }));
  };
  const notices = (): InterruptionMessage[] =>
    w.sqs.bodies('interruption.fifo').map((body) => {
      const parsed = parseInterruptionMessage(body);
      if (!parsed.ok) throw new Error(parsed.error);
      return parsed.message;
    });

  it.each([
    [
      'a spot warning: deadline two minutes after it',
      SPOT,
      { kind: 'spot-interruption', deadline: '2026-11-02T10:42:00.000Z' },
    ],
    ['a rebalance recommendation: no deadline', REBALANCE, { kind: 'rebalance-recommendation' }],
    [
      'a scheduled retirement: deadline at its start',
      HEALTH,
      { kind: 'scheduled-maintenance', deadline: '2026-11-15T10:00:00.000Z' },
    ],
    [
      'a capacity reservation warning: its termination time',
      CAPACITY,
      { kind: 'capacity-reservation-interruption', deadline: '2026-11-04T12:02:00.000Z' },
    ],
  ])('sends %s as a notice keyed by the Node', async (_, sample, expected) => {
    const response = await routeEc2Events(recordsOf([about(sample, INSTANCE)]), deps);
    expect(response.batchItemFailures).toEqual([]);
    const [notice, ...rest] = notices();
    expect(rest).toEqual([]);
    expect(notice).toEqual({
      kind: 'Node',
      name: NODE,
      notice: {
        ...expected,
        eventId: sample.id,
        eventTime: new Date(sample.time).toISOString(),
        instanceId: INSTANCE,
      },
    });
    if (!('deadline' in expected)) expect(notice!.notice.deadline).toBeUndefined();
    expect(w.metrics.total(MetricName.InterruptionNoticesSent)).toBe(1);
    // Not a state change: nothing for node-lifecycle.
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(0);
  });

  it('groups notices by the Node key and drops the same event delivered twice', async () => {
    const body = about(SPOT, INSTANCE);
    await routeEc2Events(recordsOf([body, body]), deps);
    await routeEc2Events(recordsOf([body]), deps);
    await routeEc2Events(recordsOf([about(SPOT, INSTANCE, 'another-event')]), deps);
    expect(w.sqs.depth('interruption.fifo')).toBe(2);
    const groups: string[] = [];
    await w.sqs.pump('interruption.fifo', async (records) => {
      groups.push(...records.map((r) => r.attributes.MessageGroupId ?? ''));
      return { batchItemFailures: [] };
    });
    expect(groups).toEqual([`Node//${NODE}`, `Node//${NODE}`]);
  });

  it('a lifecycle hook carries what completing it needs; the heartbeat timeout is left to the hook', async () => {
    await routeEc2Events(recordsOf([about(HOOK, INSTANCE)]), deps);
    expect(notices()).toEqual([
      {
        kind: 'Node',
        name: NODE,
        notice: {
          kind: 'asg-lifecycle-termination',
          eventId: HOOK.id,
          eventTime: '2026-11-03T08:15:00.000Z',
          instanceId: INSTANCE,
          lifecycleHook: {
            autoScalingGroupName: 'workers',
            lifecycleHookName: 'drain-before-terminate',
            lifecycleActionToken: HOOK.detail.LifecycleActionToken,
          },
        },
      },
    ]);
  });

  it('a lifecycle hook of an instance no Node is known for still goes out, keyed by the instance', async () => {
    const stranger = 'i-0bbbbbbbbbbbbbbb2';
    const response = await routeEc2Events(recordsOf([about(HOOK, stranger)]), deps);
    expect(response.batchItemFailures).toEqual([]);
    expect(notices()).toEqual([
      expect.objectContaining({
        kind: 'Instance',
        name: stranger,
        notice: expect.objectContaining({ instanceId: stranger }),
      }),
    ]);
    expect(w.metrics.total(MetricName.UnknownInstanceEvents, { type: 'asg-lifecycle-termination' })).toBe(1);
  });

  it('acknowledges and counts other interruptions of instances that are no Node of the cluster', async () => {
    const strangers = [SPOT, REBALANCE, HEALTH, CAPACITY].map((s, i) => about(s, `i-0ccccccccccccccc${i}`));
    const response = await routeEc2Events(recordsOf(strangers), deps);
    expect(response.batchItemFailures).toEqual([]);
    expect(w.sqs.depth('interruption.fifo')).toBe(0);
    expect(w.metrics.total(MetricName.UnknownInstanceEvents)).toBe(4);
  });

  it('a stopping instance: the Node key to node-lifecycle as before, and an instance-stopping notice', async () => {
    const stopping = JSON.stringify({ ...STATE, detail: { 'instance-id': INSTANCE, state: 'stopping' } });
    const stopped = JSON.stringify({
      ...STATE,
      id: 'stopped-1',
      detail: { 'instance-id': INSTANCE, state: 'stopped' },
    });
    await routeEc2Events(recordsOf([stopping, stopped]), deps);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(2);
    expect(notices().map((n) => n.notice.kind)).toEqual(['instance-stopping']);
    expect(w.kube.callCount('listNodes')).toBe(1);
  });

  it('retries only the record whose notice SQS refused', async () => {
    const other = 'i-0ddddddddddddddd3';
    w.kube.putNode(makeNode('n2', { providerID: `aws:///eu-west-1a/${other}`, initialized: true }));
    w.sqs.refuseNextSends.push(['', 'InternalError']);
    const response = await routeEc2Events(recordsOf([about(SPOT, INSTANCE), about(SPOT, other, 'e2')]), deps);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'e-1' }]);
    expect(notices().map((n) => n.name)).toEqual([NODE]);
  });

  it('retries the record when the Nodes cannot be listed', async () => {
    w.kube.queueError('listNodes', new Error('connection refused'));
    const response = await routeEc2Events(recordsOf([about(HOOK, INSTANCE)]), deps);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'e-0' }]);
    expect(w.sqs.depth('interruption.fifo')).toBe(0);
  });

  it('without the setting, interruption events are acknowledged and not routed, exactly as before', async () => {
    const { interruption: _, ...without } = deps;
    const response = await routeEc2Events(recordsOf([about(SPOT, INSTANCE), about(HOOK, INSTANCE)]), without);
    expect(response.batchItemFailures).toEqual([]);
    expect(w.sqs.depth('interruption.fifo')).toBe(0);
    expect(w.kube.callCount('listNodes')).toBe(0);
    expect(w.metrics.total(MetricName.InterruptionNoticesSent)).toBe(0);
  });
});
