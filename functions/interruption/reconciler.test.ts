import {
  CreateAutoScalingGroupCommand,
  PutLifecycleHookCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { beforeEach, describe, expect, it } from 'vitest';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { budget, podOnNode } from '../../test/helpers/pods.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { EXCLUDE_FROM_LOAD_BALANCERS_VALUE, LABEL_ACTION, LABEL_EVENT_ID, TAINT_OUT_OF_SERVICE } from './plan.ts';
import { createInterruptionWorld, type InterruptionWorld } from './testing/world.ts';

let w: InterruptionWorld;
const NODE = 'ip-10-0-0-5.eu-west-1.compute.internal';
const INSTANCE = 'i-0123456789abcdef0';
beforeEach(() => {
  w = createInterruptionWorld();
  w.addNode(NODE, INSTANCE);
});

const node = () => w.kube.nodes.get(NODE);
const reasons = () => w.kube.eventsFor('Node', NODE).map((e) => e.reason);
const podsOn = (name = NODE) =>
  w.kube.workloads.list().filter((p) => p.spec?.nodeName === name && !p.metadata.deletionTimestamp);
/** Three replicas of `web` on the Node; the budget allows one down at a time. */
const webUnderBudget = () => {
  for (let i = 0; i < 3; i++) {
    w.kube.putPod(
      podOnNode(NODE, `web-${i}`, {
        labels: { app: 'web' },
        owner: { kind: 'ReplicaSet', name: 'web-rs' },
        gracePeriodSeconds: 10,
      }),
    );
  }
  w.kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 2 }));
};
/** Healthy Pods of `web` that are not on the Node: what a ReplicaSet puts elsewhere for each one evicted. */
const healthyWebElsewhere = () => {
  let n = 0;
  return () => {
    const evicted = w.kube.workloads
      .list()
      .filter((p) => p.metadata.labels?.app === 'web' && p.metadata.deletionTimestamp);
    while (n < evicted.length) {
      w.kube.putPod(
        podOnNode('other-node', `web-new-${n++}`, {
          labels: { app: 'web' },
          owner: { kind: 'ReplicaSet', name: 'web-rs' },
        }),
      );
    }
  };
};

describe('a spot interruption', () => {
  it('marks the Node as the reference handler does, excludes it from load balancers, cordons it and drains it within the budget', async () => {
    webUnderBudget();
    const message = w.notice(NODE, INSTANCE);
    const replace = healthyWebElsewhere();
    let lowest = 3;
    const passes = await w.untilDone(message, () => {
      replace();
      const healthy = w.kube.workloads
        .list()
        .filter((p) => p.metadata.labels?.app === 'web' && !p.metadata.deletionTimestamp);
      lowest = Math.min(lowest, healthy.length);
    });
    const n = node()!;
    expect(n.spec?.taints).toContainEqual({
      key: 'aws-node-termination-handler/spot-itn',
      value: message.notice.eventId,
      effect: 'NoSchedule',
    });
    expect(n.metadata.labels).toMatchObject({
      [LABEL_ACTION]: 'cordon-and-drain',
      [LABEL_EVENT_ID]: message.notice.eventId,
      [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: EXCLUDE_FROM_LOAD_BALANCERS_VALUE,
    });
    expect(n.spec?.unschedulable).toBe(true);
    expect(podsOn()).toEqual([]);
    // The budget held on every pass: never fewer than 2 healthy replicas.
    expect(lowest).toBeGreaterThanOrEqual(2);
    expect(passes).toBeGreaterThan(1);
    expect(w.metrics.total(MetricName.PdbWaits)).toBeGreaterThan(0);
    expect(reasons()).toEqual(['InterruptionReceived', 'Cordoned', 'Draining', 'Drained']);
    expect(w.kube.eventsFor('Node', NODE, 'Draining')[0]!.message).toMatch(/Draining 3 Pod\(s\) within 1[12]\d s/);
    // Inside the two minutes.
    expect(passes * w.deps.drainRequeueSeconds).toBeLessThan(120);
  });

  it('at the deadline, a Warning names the Pods left, and the drain ends', async () => {
    webUnderBudget();
    w.kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 3 }));
    const passes = await w.untilDone(w.notice(NODE, INSTANCE));
    expect(passes * w.deps.drainRequeueSeconds).toBeGreaterThanOrEqual(120);
    expect(podsOn()).toHaveLength(3);
    const warning = w.kube.eventsFor('Node', NODE, 'DrainTimedOut')[0]!.message;
    expect(warning).toContain('3 Pod(s)');
    expect(warning).toContain('default/web-0');
    expect(w.metrics.total(MetricName.DrainTimeouts)).toBe(1);
  });

  it('DaemonSet and mirror Pods stay, finished Pods are deleted, the rest evicted', async () => {
    w.kube.putPod(podOnNode(NODE, 'agent', { owner: { kind: 'DaemonSet', name: 'agent' } }));
    w.kube.putPod(podOnNode(NODE, 'static', { mirror: true }));
    w.kube.putPod(podOnNode(NODE, 'job', { phase: 'Succeeded' }));
    w.kube.putPod(podOnNode(NODE, 'app', { gracePeriodSeconds: 5 }));
    await w.untilDone(w.notice(NODE, INSTANCE));
    expect(
      podsOn()
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['agent', 'static']);
    expect(reasons()).toContain('Drained');
  });

  it('a duplicate or redelivered notice changes nothing more; a Node deleted mid-drain ends it cleanly', async () => {
    const message = w.notice(NODE, INSTANCE);
    await w.untilDone(message);
    const version = node()!.metadata.resourceVersion;
    await w.untilDone(message);
    expect(node()!.metadata.resourceVersion).toBe(version);
    expect(reasons().filter((r) => r === 'InterruptionReceived')).toHaveLength(1);

    w.kube.putPod(podOnNode(NODE, 'slow', { gracePeriodSeconds: 600 }));
    w.kube.nodes.delete(NODE);
    expect(await w.untilDone(w.notice(NODE, INSTANCE))).toBe(1);
  });

  it('the out-of-service taint once drained, when configured', async () => {
    w.deps.outOfServiceTaint = true;
    await w.untilDone(w.notice(NODE, INSTANCE));
    expect(node()!.spec?.taints).toContainEqual(TAINT_OUT_OF_SERVICE);
  });
});

describe('other notices', () => {
  it('a rebalance recommendation only marks the Node (Karpenter): no cordon, no drain', async () => {
    webUnderBudget();
    const message = w.notice(NODE, INSTANCE, 'rebalance-recommendation');
    expect(await w.untilDone(message)).toBe(1);
    expect(node()!.spec?.taints?.map((t) => t.key)).toContain('aws-node-termination-handler/rebalance-recommendation');
    expect(node()!.spec?.unschedulable).toBeFalsy();
    expect(podsOn()).toHaveLength(3);
    expect(node()!.metadata.labels?.[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]).toBeUndefined();
  });

  it('an ASG termination hook: the instance waits while the Node drains, then the action is completed with CONTINUE', async () => {
    await w.asgFake.send(
      new CreateAutoScalingGroupCommand({
        AutoScalingGroupName: 'workers',
        MinSize: 1,
        MaxSize: 1,
        DesiredCapacity: 1,
      }),
    );
    await w.asgFake.send(
      new PutLifecycleHookCommand({
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'drain',
        LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
        HeartbeatTimeout: 60,
      }),
    );
    const [instanceId] = [...w.asgFake.groups.get('workers')!.instances.keys()];
    await w.asgFake.send(
      new TerminateInstanceInAutoScalingGroupCommand({ InstanceId: instanceId, ShouldDecrementDesiredCapacity: true }),
    );
    w.addNode('asg-node', instanceId!);
    w.kube.putPod(podOnNode('asg-node', 'app', { gracePeriodSeconds: 90 }));
    const message = w.notice('asg-node', instanceId!, 'asg-lifecycle-termination', {
      lifecycleHook: { autoScalingGroupName: 'workers', lifecycleHookName: 'drain' },
    });
    const states: (string | undefined)[] = [];
    await w.untilDone(message, () => states.push(w.asgFake.lifecycleStateOf(instanceId!)));
    // The Pod's 90 s outlive the 60 s heartbeat timeout: heartbeats kept the instance waiting until the end.
    expect(states.slice(0, -1).every((s) => s === 'Terminating:Wait')).toBe(true);
    expect(w.asgFake.lifecycleStateOf(instanceId!)).toBeUndefined();
    expect(w.asgFake.callCount('RecordLifecycleActionHeartbeat')).toBeGreaterThan(0);
    expect(w.asgFake.callCount('CompleteLifecycleAction')).toBe(1);
  });

  it('a hook for an instance with no Node: completed when the instance is the cluster`s, left alone otherwise', async () => {
    w.ec2.putInstance(makeInstance({ index: 7, clusterName: CLUSTER }));
    w.ec2.putInstance(makeInstance({ index: 8, clusterName: 'another' }));
    const ours = makeInstance({ index: 7 }).instanceId;
    const theirs = makeInstance({ index: 8 }).instanceId;
    for (const instanceId of [ours, theirs]) {
      await w.invoke({
        kind: 'Instance',
        name: instanceId,
        notice: {
          kind: 'asg-lifecycle-termination',
          eventId: `hook-${instanceId}`,
          eventTime: new Date(w.clock.now()).toISOString(),
          instanceId,
          lifecycleHook: { autoScalingGroupName: 'workers', lifecycleHookName: 'drain' },
        },
      });
    }
    expect(w.asgFake.callCount('CompleteLifecycleAction')).toBe(1);
  });
});
