import { beforeEach, describe, expect, it } from 'vitest';
import { NodeIndex } from '../../functions/ec2-events/node-index.ts';
import { type RouterDeps, routeEc2Events } from '../../functions/ec2-events/router.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { makeNode } from '../helpers/nodes.ts';
import { RecordingLog } from '../helpers/recording-log.ts';
import { createWorld, type World } from '../helpers/world.ts';
import {
  BAD_EC2_EVENTS,
  type Case,
  fixture,
  GARBAGE_BODIES,
  GOOD_NODE,
  prefixes,
  STATE_CHANGE,
  TOLERATED_EC2_EVENTS,
} from './inputs.ts';

/**
 * The EC2 events router (functions/ec2-events/router.ts) on its standard queue with a DLQ after 3 receives, as
 * stacks/ deploys it: every bad event acknowledged and counted, the good events of the batch routed as keys.
 */

const QUEUE = 'ec2-events';
const DLQ = 'ec2-events-dlq';
const INSTANCE = 'i-0a1b2c3d4e5f60718';

let w: World;
let log: RecordingLog;
let deps: RouterDeps;
let events = 0;

beforeEach(() => {
  w = createWorld();
  log = new RecordingLog();
  w.sqs.createQueue(QUEUE, { maxReceiveCount: 3, deadLetterQueue: DLQ });
  w.kube.putNode(makeNode(GOOD_NODE, { providerID: `aws:///eu-west-1a/${INSTANCE}`, initialized: true }));
  deps = {
    index: new NodeIndex(w.kube, w.clock),
    sqs: w.sqs,
    routes: { 'state-change': w.sqs.urlOf('node-lifecycle.fifo') },
    log,
    metrics: w.metrics,
  };
});

const goodEvent = () => JSON.stringify({ ...STATE_CHANGE, id: `good-${++events}` });

/** Play the queue as the event source mapping does, until it is empty; the number of receives. */
async function drain(): Promise<number> {
  for (let polls = 0; polls < 50; polls++) {
    const handled = await w.sqs.pump(QUEUE, (records) => routeEc2Events(records, deps));
    if (handled > 0) continue;
    const wait = w.sqs.nextVisibleInMs(QUEUE);
    if (wait === undefined) return polls;
    w.clock.advance(Math.max(wait, 1));
  }
  throw new Error('the EC2 events queue did not drain');
}

const keysRouted = () => w.sqs.bodies('node-lifecycle.fifo').map((b) => JSON.parse(b).name);

const EVENTS: Case[] = [
  ...GARBAGE_BODIES,
  ...BAD_EC2_EVENTS,
  ...prefixes(fixture('events/ec2-state-change-stopped.json')).filter((_, n) => n % 7 === 0),
];

describe('EC2 events router, one bad event in a batch of good ones', () => {
  it.each(EVENTS)('%s: acknowledged, counted and logged; the others routed', async (_label, body) => {
    w.sqs.send(QUEUE, goodEvent());
    const id = w.sqs.send(QUEUE, body);
    w.sqs.send(QUEUE, goodEvent());

    expect(await drain()).toBeLessThanOrEqual(2);
    expect(w.sqs.depth(QUEUE)).toBe(0);
    expect(w.sqs.depth(DLQ)).toBe(0);
    // (1) either it is no event the router can read, or it is about no Node of this cluster
    const malformed = w.metrics.total(MetricName.MalformedMessages, { reconciler: 'ec2-events' });
    const unknown = w.metrics.total(MetricName.UnknownInstanceEvents);
    expect(malformed + unknown).toBe(1);
    if (malformed === 1) {
      expect(log.find('WARN', { messageId: id }).map((l) => l.message)).toEqual([
        'EC2 event acknowledged without action',
      ]);
    } else {
      expect(
        log.lines.some((l) => l.message === 'EC2 event about an instance that is not a Node of this cluster'),
      ).toBe(true);
    }
    // (2) both good events became the Node's key
    expect(keysRouted()).toEqual([GOOD_NODE, GOOD_NODE]);
  });

  it.each(TOLERATED_EC2_EVENTS)('%s: routed like any other event', async (_label, body) => {
    w.sqs.send(QUEUE, body);
    w.sqs.send(QUEUE, goodEvent());
    await drain();
    expect(w.sqs.depth(QUEUE) + w.sqs.depth(DLQ)).toBe(0);
    expect(w.metrics.total(MetricName.MalformedMessages)).toBe(0);
    expect(keysRouted()).toEqual([GOOD_NODE, GOOD_NODE]);
  });

  it('a batch of every truncation of an event: each acknowledged, one receive per batch', async () => {
    const bad = prefixes(fixture('events/ec2-spot-interruption-warning.json')).map(([, body]) => body);
    for (const body of bad) w.sqs.send(QUEUE, body);
    w.sqs.send(QUEUE, goodEvent());
    const polls = await drain();
    expect(polls).toBeLessThanOrEqual(Math.ceil((bad.length + 1) / 10) + 1);
    expect(w.sqs.depth(QUEUE) + w.sqs.depth(DLQ)).toBe(0);
    expect(w.metrics.total(MetricName.MalformedMessages, { reconciler: 'ec2-events' })).toBe(bad.length);
    expect(keysRouted()).toEqual([GOOD_NODE]);
  });
});
