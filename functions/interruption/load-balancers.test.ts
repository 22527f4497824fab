import { describe, expect, it } from 'vitest';
import { isLoadBalancerNodeCandidate } from '../../shared/k8s/load-balancer-nodes.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import { podOnNode } from '../../test/helpers/pods.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { NodeIndex } from '../ec2-events/node-index.ts';
import { routeEc2Events } from '../ec2-events/router.ts';
import { LABEL_ACTION, LABEL_EVENT_ID } from './plan.ts';
import { createInterruptionWorld, INTERRUPTION_QUEUE, type InterruptionWorld } from './testing/world.ts';

/**
 * `node.kubernetes.io/exclude-from-external-load-balancers` takes a drained Node out of every load balancer (the
 * label's presence, whatever its value, as Kubernetes and the service controller read it). A Node that survives its
 * interruption (a stop and start, a scheduled stop) must get back in: the label is set with a value that says this
 * controller set it (`aws-node-termination-handler`, the reference's), and only that value is removed once the
 * interruption is over: the instance runs again and the Node is schedulable. A value someone else set stays.
 */

const NODE = 'ip-10-0-0-8.eu-west-1.compute.internal';
const INSTANCE = 'i-0fedcba9876543210';
const OURS = 'aws-node-termination-handler';

const excluded = (w: InterruptionWorld) =>
  w.kube.nodes.get(NODE)!.metadata.labels?.[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS];

/** The EC2 state change as EventBridge delivers it, through the EC2 events router, to the interruption queue. */
async function stateChange(w: InterruptionWorld, state: string, id: string) {
  const body = JSON.stringify({
    version: '0',
    id,
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: '111122223333',
    time: new Date(w.clock.now()).toISOString(),
    region: 'eu-west-1',
    resources: [`arn:aws:ec2:eu-west-1:111122223333:instance/${INSTANCE}`],
    detail: { 'instance-id': INSTANCE, state },
  });
  const response = await routeEc2Events([fifoRecord(body)], {
    index: new NodeIndex(w.kube, w.clock),
    sqs: w.sqs,
    routes: {},
    log: w.runner.log,
    metrics: w.metrics,
    interruption: { queueUrl: w.sqs.urlOf(INTERRUPTION_QUEUE), sqs: w.sqs },
  });
  expect(response.batchItemFailures).toEqual([]);
}

function world(labels: Record<string, string> = {}) {
  const w = createInterruptionWorld();
  w.addNode(NODE, INSTANCE);
  w.kube.mutateNode(NODE, (n) => Object.assign(n.metadata.labels!, labels));
  w.kube.putPod(podOnNode(NODE, 'app', { gracePeriodSeconds: 10 }));
  return w;
}

describe('the load balancer exclusion of a drained Node', () => {
  it('is set with the value that says this controller set it; the Node is then no load balancer target', async () => {
    const w = world();
    w.send(w.notice(NODE, INSTANCE, 'spot-interruption'));
    await w.run({});
    expect(excluded(w)).toBe(OURS);
    expect(isLoadBalancerNodeCandidate(w.kube.nodes.get(NODE)!)).toBe(false);
  });

  it('is not set with INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS=false', async () => {
    const w = world();
    w.deps.excludeFromLoadBalancers = false;
    w.send(w.notice(NODE, INSTANCE, 'spot-interruption'));
    await w.run({});
    expect(w.kube.eventsFor('Node', NODE, 'Drained')).toHaveLength(1);
    expect(excluded(w)).toBeUndefined();
  });

  it('survives a scheduled stop and start: lifted once the instance runs again and an admin uncordons the Node', async () => {
    const w = world({ team: 'shop' });
    const maintenance = w.notice(NODE, INSTANCE, 'scheduled-maintenance', {
      deadline: new Date(w.clock.now() + 600_000).toISOString(),
    });
    w.send(maintenance);
    await w.run({});
    expect(excluded(w)).toBe(OURS);
    w.clock.advance(600_000);
    await stateChange(w, 'stopping', 'stop-1');
    await w.run({});
    w.clock.advance(300_000);
    await stateChange(w, 'running', 'start-1');
    // Still cordoned when the instance comes back: the exclusion stays until an admin uncordons the Node.
    const whileCordoned: (string | undefined)[] = [];
    let passes = 0;
    await w.run({
      onPass: () => {
        if (w.kube.nodes.get(NODE)!.spec?.unschedulable) whileCordoned.push(excluded(w));
        if (++passes === 2) w.kube.mutateNode(NODE, (n) => (n.spec!.unschedulable = false));
      },
    });
    expect(whileCordoned).toEqual([OURS, OURS]);
    const node = w.kube.nodes.get(NODE)!;
    expect(excluded(w)).toBeUndefined();
    expect(isLoadBalancerNodeCandidate(node)).toBe(true);
    // The interruption's marks go with it; the Node's own labels stay.
    expect(node.spec?.taints ?? []).toEqual([]);
    expect(node.metadata.labels).not.toHaveProperty(LABEL_ACTION);
    expect(node.metadata.labels).not.toHaveProperty(LABEL_EVENT_ID);
    expect(node.metadata.labels).toMatchObject({ team: 'shop' });
    expect(Object.keys(node.metadata.annotations ?? {}).filter((k) => k.startsWith('serverless-ccm/'))).toEqual([]);
    expect(w.kube.eventsFor('Node', NODE, 'InterruptionOver')).toHaveLength(1);
    expect(w.sqs.depth(INTERRUPTION_QUEUE)).toBe(0);
  });

  it('a value someone else set is left on the Node by the drain and after it', async () => {
    // An admin's exclusion: any value excludes, the empty one included.
    const w = world({ [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' });
    await stateChange(w, 'stopping', 'stop-1');
    await w.run({});
    expect(w.kube.eventsFor('Node', NODE, 'Drained')).toHaveLength(1);
    expect(excluded(w)).toBe('');
    w.kube.mutateNode(NODE, (n) => (n.spec!.unschedulable = false));
    await stateChange(w, 'running', 'start-1');
    await w.run({});
    expect(excluded(w)).toBe('');
  });

  it('a Node that was never interrupted is left alone when its instance starts', async () => {
    const w = world();
    const version = w.kube.nodes.get(NODE)!.metadata.resourceVersion;
    await stateChange(w, 'running', 'start-1');
    await w.run({});
    expect(w.kube.nodes.get(NODE)!.metadata.resourceVersion).toBe(version);
    expect(w.kube.eventsFor('Node', NODE)).toEqual([]);
  });
});
