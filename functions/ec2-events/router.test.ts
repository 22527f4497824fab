import { readdirSync, readFileSync } from 'node:fs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { TAINT_SHUTDOWN } from '../../shared/k8s/node-helpers.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { nodeLifecycleReconciler } from '../node-lifecycle/reconciler.ts';
import { NodeIndex } from './node-index.ts';
import { parseEc2Event } from './parse.ts';
import { type RouterDeps, routeEc2Events } from './router.ts';

const fixtures = new URL('../../test/fixtures/', import.meta.url);
const fixture = (path: string) => readFileSync(new URL(path, fixtures), 'utf8');

describe('parseEc2Event', () => {
  it.each(readdirSync(new URL('events/', fixtures)))('parses the fixture %s', (file) => {
    const parsed = parseEc2Event(fixture(`events/${file}`));
    expect(parsed.ok).toBe(true);
    const event = JSON.parse(fixture(`events/${file}`));
    if (parsed.ok) {
      expect(parsed.event.id).toBe(event.id);
      expect(parsed.event.instanceIds).toHaveLength(1);
      expect(parsed.event.instanceIds[0]).toMatch(/^i-[0-9a-f]+$/);
    }
  });

  it('takes the instance ID from detail, not from the resources ARN', () => {
    const spot = JSON.parse(fixture('events/ec2-spot-interruption-warning.json'));
    const parsed = parseEc2Event(JSON.stringify(spot));
    expect(parsed.ok && parsed.event.instanceIds).toEqual([spot.detail['instance-id']]);
  });

  it.each([
    ['not json', /not JSON/, false],
    ['{"hello":1}', /body is not an EventBridge event/, false],
    [
      JSON.stringify({ ...JSON.parse(fixture('events/ec2-state-change-stopped.json')), detail: { state: 'stopped' } }),
      /instance-id/,
      false,
    ],
    [
      JSON.stringify({ ...JSON.parse(fixture('events/ec2-state-change-stopped.json')), 'detail-type': 'Other' }),
      /unsupported event aws.ec2 \/ Other/,
      true,
    ],
  ])('refuses %s', (body, pattern, unsupported) => {
    const parsed = parseEc2Event(body);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error).toMatch(pattern);
      expect(Boolean(parsed.unsupported)).toBe(unsupported);
    }
  });
});

describe('routeEc2Events', () => {
  let w: World;
  let deps: RouterDeps;
  beforeEach(() => {
    w = createWorld();
    deps = {
      index: new NodeIndex(w.kube, w.clock),
      sqs: w.sqs,
      routes: { 'state-change': w.sqs.urlOf('node-lifecycle.fifo') },
      log: w.runner.log,
      metrics: w.metrics,
    };
  });

  const recordsOf = (bodies: string[]): SQSRecord[] => {
    const template = (JSON.parse(fixture('sqs/standard-batch-ec2-events.json')) as SQSEvent).Records[0]!;
    return bodies.map((body, i) => ({ ...template, messageId: `e-${i}`, body }));
  };
  const stateChange = (instanceId: string, state: string, id = `evt-${instanceId}-${state}`) =>
    JSON.stringify({
      ...JSON.parse(fixture('events/ec2-state-change-stopped.json')),
      id,
      detail: { 'instance-id': instanceId, state },
    });

  it('routes a state change of a cluster Node to node-lifecycle, which taints it', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 1 }));
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name, { providerID: `aws:///eu-west-1a/${instance.instanceId}`, initialized: true }));
    w.ec2.setState(instance.instanceId, 'stopped');
    w.kube.mutateNode(name, (n) => {
      n.status!.conditions = [{ type: 'Ready', status: 'Unknown' }];
    });

    const response = await routeEc2Events(recordsOf([stateChange(instance.instanceId, 'stopped')]), deps);
    expect(response.batchItemFailures).toEqual([]);
    expect(w.sqs.bodies('node-lifecycle.fifo').map((b) => JSON.parse(b))).toEqual([
      {
        kind: 'Node',
        name,
        hint: { eventType: 'EC2', source: 'state-change', eventId: `evt-${instance.instanceId}-stopped` },
      },
    ]);
    await w.drain('node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps);
    expect(w.kube.nodes.get(name)!.spec?.taints?.map((t) => t.key)).toEqual([TAINT_SHUTDOWN]);
  });

  it('the same event delivered twice becomes one key (deduplicated by event ID)', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 2 }));
    w.kube.putNode(makeNode('n2', { providerID: `aws:///eu-west-1a/${instance.instanceId}`, initialized: true }));
    const body = stateChange(instance.instanceId, 'stopped');
    await routeEc2Events(recordsOf([body, body]), deps);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(1);
  });

  it('acknowledges and counts instances that are not Nodes of this cluster, malformed and unrouted events', async () => {
    const response = await routeEc2Events(
      recordsOf([
        stateChange('i-0fffffffffffffff0', 'terminated'),
        'garbage',
        fixture('events/ec2-spot-interruption-warning.json'),
      ]),
      deps,
    );
    expect(response.batchItemFailures).toEqual([]);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(0);
    expect(w.metrics.total(MetricName.UnknownInstanceEvents)).toBe(1);
    expect(w.metrics.total(MetricName.MalformedMessages, { reconciler: 'ec2-events' })).toBe(1);
    expect(w.metrics.total(MetricName.Ec2Events, { type: 'spot-interruption' })).toBe(1);
  });

  it('retries only the record whose key SQS refused', async () => {
    const a = w.ec2.putInstance(makeInstance({ index: 3 }));
    const b = w.ec2.putInstance(makeInstance({ index: 4 }));
    w.kube.putNode(makeNode('na', { providerID: `aws:///eu-west-1a/${a.instanceId}`, initialized: true }));
    w.kube.putNode(makeNode('nb', { providerID: `aws:///eu-west-1a/${b.instanceId}`, initialized: true }));
    w.sqs.refuseNextSends.push(['', 'InternalError']);
    const response = await routeEc2Events(
      recordsOf([stateChange(a.instanceId, 'stopped'), stateChange(b.instanceId, 'stopped')]),
      deps,
    );
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'e-1' }]);
    expect(w.metrics.total(MetricName.KeySendFailures)).toBe(1);
  });

  it('lists Nodes once for a burst of events, and refreshes on a miss at most every few seconds', async () => {
    const instances = [5, 6, 7].map((i) => w.ec2.putInstance(makeInstance({ index: i })));
    instances.forEach((inst, i) => {
      w.kube.putNode(makeNode(`n${i}`, { providerID: `aws:///eu-west-1a/${inst.instanceId}`, initialized: true }));
    });
    await routeEc2Events(
      recordsOf([
        ...instances.map((i) => stateChange(i.instanceId, 'stopped')),
        stateChange('i-0eeeeeeeeeeeeeee0', 'stopped'),
      ]),
      deps,
    );
    expect(w.kube.callCount('listNodes')).toBe(1);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(3);
  });
});
