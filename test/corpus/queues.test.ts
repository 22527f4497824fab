import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { interruptionReconciler } from '../../functions/interruption/reconciler.ts';
import { createInterruptionWorld } from '../../functions/interruption/testing/world.ts';
import { ipamReconciler } from '../../functions/ipam/reconciler.ts';
import { createIpamWorld, IPAM_QUEUE } from '../../functions/ipam/testing/world.ts';
import { nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { routeReconciler } from '../../functions/route/reconciler.ts';
import { serviceReconciler } from '../../functions/service/reconciler.ts';
import { makeRouteTable } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { interruptionGroupId } from '../../shared/queue/interruption.ts';
import { ipamGarbageCollectionMessage } from '../../shared/queue/ipam-gc-key.ts';
import { type KeyMessage, messageDeduplicationId, messageGroupId } from '../../shared/queue/message.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';
import { garbageCollectionMessage } from '../../shared/queue/service-gc-key.ts';
import { RecordingLog } from '../helpers/recording-log.ts';
import { createServiceWorld, SERVICE_QUEUE } from '../helpers/service-world.ts';
import { createWorld } from '../helpers/world.ts';
import {
  BAD_KEY_BODIES,
  BAD_NOTICES,
  type Case,
  GARBAGE_BODIES,
  GOOD_NOTICE,
  NAME_253,
  NAMESPACE_63,
  prefixes,
  VALID_KEY_BODY,
} from './inputs.ts';

/**
 * Every bad body on every reconciler's FIFO queue, through the runner as the event source mapping plays it
 * (FakeSqs with its DLQ): acknowledged, logged once and counted (MalformedMessages), never retried; the good
 * keys around it, one of them in the same message group, reconciled.
 */

interface Subject {
  name: string;
  queue: string;
  dlq: string;
  log: RecordingLog;
  /** Bodies with their group: reconciled (`Reconciles{result=done}`), one per key. */
  good: { body: string; group: string }[];
  /** Send a raw body in `group`, as a producer would (FIFO: its own deduplication ID). */
  send(body: string, group: string): void;
  drain(): Promise<number>;
  total(name: MetricName, where?: Record<string, string>): number;
  depth(queue: string): number;
}

let sent = 0;
const dedup = (body: string) => createHash('sha256').update(`${++sent}\n${body}`).digest('hex');
const keyBody = (message: KeyMessage) => ({ body: JSON.stringify(message), group: messageGroupId(message) });

function keySubject(
  name: string,
  world: Pick<ReturnType<typeof createWorld>, 'sqs' | 'drain' | 'metrics'>,
  queue: string,
  dlq: string,
  reconciler: Reconciler<never, never>,
  deps: unknown,
  log: RecordingLog,
  good: KeyMessage[],
): Subject {
  return {
    name,
    queue,
    dlq,
    log,
    good: good.map(keyBody),
    send: (body, group) => world.sqs.send(queue, body, { groupId: group, deduplicationId: dedup(body) }),
    drain: () => world.drain(queue, reconciler, deps as never),
    total: (metric, where) => world.metrics.total(metric, where),
    depth: (q) => world.sqs.depth(q),
  };
}

const hint = () => ({ eventType: 'RESYNC' as const, eventId: `corpus-${++sent}` });
const node = (name: string): KeyMessage => ({ kind: 'Node', name, hint: hint() });

/** Each subject with a recording log in place of the world's silent one. */
const SUBJECTS: Record<string, () => Subject> = {
  node: () => {
    const w = createWorld();
    const log = new RecordingLog();
    w.runner.log = log;
    return keySubject('node', w, 'node.fifo', 'node-dlq.fifo', nodeReconciler as never, { ...w.nodeDeps, log }, log, [
      node('good-a'),
      node('good-b'),
    ]);
  },
  'node-lifecycle': () => {
    const w = createWorld();
    const log = new RecordingLog();
    w.runner.log = log;
    const deps = { ...w.lifecycleDeps, log };
    return keySubject(
      'node-lifecycle',
      w,
      'node-lifecycle.fifo',
      'node-lifecycle-dlq.fifo',
      nodeLifecycleReconciler as never,
      deps,
      log,
      [node('good-a'), node('good-b')],
    );
  },
  route: () => {
    const w = createWorld();
    w.ec2.putRouteTable(makeRouteTable());
    const log = new RecordingLog();
    w.runner.log = log;
    return keySubject(
      'route',
      w,
      'route.fifo',
      'route-dlq.fifo',
      routeReconciler as never,
      { ...w.routeDeps, log },
      log,
      [routeTableMessage(hint())],
    );
  },
  service: () => {
    const w = createServiceWorld();
    const log = new RecordingLog();
    w.runner.log = log;
    const deps = { ...w.serviceDeps, log };
    return keySubject('service', w, SERVICE_QUEUE, 'service-dlq.fifo', serviceReconciler as never, deps, log, [
      garbageCollectionMessage(hint()),
      { kind: 'Service', namespace: 'default', name: 'absent', hint: hint() },
    ]);
  },
  ipam: () => {
    const w = createIpamWorld();
    const log = new RecordingLog();
    w.runner.log = log;
    const deps = { ...w.deps, log };
    return keySubject('ipam', w, IPAM_QUEUE, 'ipam-dlq.fifo', ipamReconciler as never, deps, log, [
      node('good-a'),
      ipamGarbageCollectionMessage(hint()),
    ]);
  },
  interruption: () => {
    const w = createInterruptionWorld();
    const log = new RecordingLog();
    w.runner.log = log;
    w.sqs.createQueue('interruption.fifo', { maxReceiveCount: 8, deadLetterQueue: 'interruption-dlq.fifo' });
    const good = [GOOD_NOTICE, { ...GOOD_NOTICE, name: 'good-b', notice: { ...GOOD_NOTICE.notice, eventId: 'evt-b' } }];
    const subject = keySubject(
      'interruption',
      w,
      'interruption.fifo',
      'interruption-dlq.fifo',
      interruptionReconciler as never,
      { ...w.deps, log },
      log,
      [],
    );
    subject.good = good.map((m) => ({ body: JSON.stringify(m), group: interruptionGroupId(m as never) }));
    subject.send = (body, group) =>
      w.sqs.send('interruption.fifo', body, { groupId: group, deduplicationId: dedup(body) });
    return subject;
  },
};

const KEY_CORPUS: Case[] = [...GARBAGE_BODIES, ...BAD_KEY_BODIES, ...prefixes(VALID_KEY_BODY)];
const NOTICE_CORPUS: Case[] = [...GARBAGE_BODIES, ...BAD_NOTICES, ...prefixes(JSON.stringify(GOOD_NOTICE))];

/** Sends `bad` between the good bodies, in the first good body's group, and plays the queue until it is empty. */
async function mixAndDrain(subject: Subject, bad: readonly string[]) {
  const [first, ...rest] = subject.good;
  subject.send(first!.body, first!.group);
  for (const body of bad) subject.send(body, first!.group);
  for (const good of rest) subject.send(good.body, good.group);
  const polls = await subject.drain();
  return polls;
}

describe.each(Object.keys(SUBJECTS))('the %s queue', (name) => {
  const corpus = name === 'interruption' ? NOTICE_CORPUS : KEY_CORPUS;

  it.each(corpus)(
    'acknowledges %s once, counted and logged, and reconciles the rest of the batch',
    async (_label, body) => {
      const subject = SUBJECTS[name]!();
      const polls = await mixAndDrain(subject, [body]);

      // (3) nothing left, nothing dead-lettered, within a bounded number of receives
      expect(subject.depth(subject.queue)).toBe(0);
      expect(subject.depth(subject.dlq)).toBe(0);
      expect(polls).toBeLessThanOrEqual(3);
      // (1) counted and logged once, naming the problem
      expect(subject.total(MetricName.MalformedMessages, { reconciler: name })).toBe(1);
      const lines = subject.log.find('ERROR', { reconciler: name });
      expect(lines.map((l) => l.message)).toEqual(['malformed message acknowledged']);
      expect(String(lines[0]!.fields.error)).toMatch(/^body is not (JSON|a key message|an interruption notice)/);
      // (2) the good keys around it were reconciled
      expect(subject.total(MetricName.Reconciles, { reconciler: name, result: 'done' })).toBe(subject.good.length);
    },
  );

  it('acknowledges a whole batch of truncated bodies in one receive per batch, and reconciles the good ones', async () => {
    const subject = SUBJECTS[name]!();
    const good = name === 'interruption' ? JSON.stringify(GOOD_NOTICE) : VALID_KEY_BODY;
    const bad = prefixes(good).map(([, body]) => body);
    await mixAndDrain(subject, bad);
    expect(subject.depth(subject.queue) + subject.depth(subject.dlq)).toBe(0);
    expect(subject.total(MetricName.MalformedMessages, { reconciler: name })).toBe(bad.length);
    expect(subject.total(MetricName.Reconciles, { reconciler: name, result: 'done' })).toBe(subject.good.length);
  });
});

describe('the longest valid names are keys, not malformed messages', () => {
  it.each([
    ['node', node(NAME_253)],
    ['node-lifecycle', node(NAME_253)],
    ['ipam', node(NAME_253)],
    ['service', { kind: 'Service', namespace: NAMESPACE_63, name: NAME_253, hint: hint() } as KeyMessage],
  ])('%s: a 253-character name (and a 63-character namespace) is reconciled', async (name, message) => {
    const subject = SUBJECTS[name]!();
    subject.send(JSON.stringify(message), messageGroupId(message));
    await subject.drain();
    expect(subject.total(MetricName.MalformedMessages)).toBe(0);
    expect(subject.total(MetricName.Reconciles, { reconciler: name, result: 'done' })).toBe(1);
    expect(subject.depth(subject.queue) + subject.depth(subject.dlq)).toBe(0);
    expect(messageDeduplicationId(message)).toHaveLength(64);
  });
});

/** Key messages that parse but name nothing this queue's reconciler works on. */
const FOREIGN_KEYS: Case<KeyMessage>[] = [
  ['a Service key', { kind: 'Service', namespace: 'default', name: 'web' }],
  ['the route table key', { kind: 'RouteTable', name: 'cluster' }],
  ['an EndpointSlice key', { kind: 'EndpointSlice', namespace: 'default', name: 'web-abc12' }],
  ['a Pod key', { kind: 'Pod', namespace: 'default', name: 'web-0' }],
  ['a namespaced Node key', { kind: 'Node', namespace: 'default', name: 'good-a' }],
];

/** The keys a queue takes itself, left out of FOREIGN_KEYS for it. */
const OWN: Record<string, string[]> = { route: ['the route table key'], service: ['a Service key'] };

describe.each(['node', 'node-lifecycle', 'route', 'service', 'ipam'])(
  'keys of another queue on the %s queue',
  (name) => {
    it.each(FOREIGN_KEYS.filter(([label]) => !OWN[name]?.includes(label)))(
      '%s is acknowledged, counted and logged',
      async (_label, foreign) => {
        const subject = SUBJECTS[name]!();
        const message = { ...foreign, hint: hint() };
        const [first] = subject.good;
        subject.send(JSON.stringify(message), messageGroupId(message));
        subject.send(first!.body, first!.group);
        const polls = await subject.drain();
        expect(polls).toBeLessThanOrEqual(3);
        expect(subject.depth(subject.queue) + subject.depth(subject.dlq)).toBe(0);
        const refused =
          subject.total(MetricName.MalformedMessages, { reconciler: name }) +
          subject.total(MetricName.TerminalErrors, { reconciler: name });
        expect(refused).toBe(1);
        expect(subject.log.find('ERROR', { reconciler: name })).toHaveLength(1);
      },
    );
  },
);
