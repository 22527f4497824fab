import { CreateAutoScalingGroupCommand, PutLifecycleHookCommand } from '@aws-sdk/client-auto-scaling';
import type { SQSRecord } from 'aws-lambda';
import { AutoScalingAdapter } from '../../../shared/aws/autoscaling-adapter.ts';
import { FakeAutoScaling } from '../../../shared/aws/fakes/autoscaling/fake-autoscaling.ts';
import {
  type InterruptionKind,
  type InterruptionMessage,
  interruptionDeduplicationId,
  interruptionGroupId,
} from '../../../shared/queue/interruption.ts';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { fifoRecord } from '../../../test/helpers/records.ts';
import { CLUSTER, createWorld } from '../../../test/helpers/world.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from '../plan.ts';
import { type InterruptionDeps, interruptionReconciler } from '../reconciler.ts';

/** The interruption FIFO queue of the world, with the stack's receive count before the DLQ. */
export const INTERRUPTION_QUEUE = 'interruption.fifo';

/** Notices that reach the queue at a time of the world's clock (ms since the epoch), together. */
export interface Arrival {
  at: number;
  messages: InterruptionMessage[];
}

/** The test world with the interruption controller's deps: FakeKubernetes (Pods, budgets), EC2 and Auto Scaling fakes. */
export function createInterruptionWorld() {
  const w = createWorld();
  const asgFake = new FakeAutoScaling(w.clock);
  w.sqs.createQueue(INTERRUPTION_QUEUE, {
    maxReceiveCount: 1000,
    deadLetterQueue: 'interruption-dlq.fifo',
    deduplicationScope: 'messageGroup',
  });
  const deps: InterruptionDeps = {
    clusterName: CLUSTER,
    kube: w.kube,
    drain: w.kube,
    autoscaling: new AutoScalingAdapter(asgFake),
    ec2: w.ec2Port,
    actions: { ...DEFAULT_INTERRUPTION_ACTIONS },
    outOfServiceTaint: false,
    excludeFromLoadBalancers: true,
    drainRequeueSeconds: 5,
    clock: w.clock,
    log: w.nodeDeps.log,
    metrics: w.metrics,
  };
  const addNode = (name: string, instanceId: string) =>
    w.kube.putNode(makeNode(name, { providerID: `aws:///eu-west-1a/${instanceId}`, initialized: true, ready: true }));
  let events = 0;
  const notice = (
    node: string,
    instanceId: string,
    kind: InterruptionKind = 'spot-interruption',
    extra: Partial<InterruptionMessage['notice']> = {},
  ): InterruptionMessage => ({
    kind: 'Node',
    name: node,
    notice: {
      kind,
      eventId: `evt-${++events}`,
      eventTime: new Date(w.clock.now()).toISOString(),
      instanceId,
      ...extra,
    },
  });
  /** One Lambda invocation with these notices. */
  const invoke = (...messages: InterruptionMessage[]) =>
    w.invoke(
      interruptionReconciler,
      deps,
      messages.map((m) => fifoRecord(JSON.stringify(m))),
    );
  /** Invoke, then keep invoking after each requeue (the clock moves by the requeue) until done. Bounded. */
  const untilDone = async (message: InterruptionMessage, onPass?: () => void, maxPasses = 100) => {
    for (let pass = 1; pass <= maxPasses; pass++) {
      const response = await invoke(message);
      onPass?.();
      if (response.batchItemFailures.length === 0) return pass;
      w.clock.advance(deps.drainRequeueSeconds * 1000);
    }
    throw new Error('the drain did not end');
  };
  /** Send notices to the queue as the EC2 events router does: grouped by key, deduplicated by event. */
  const send = (...messages: InterruptionMessage[]) => {
    for (const m of messages) {
      w.sqs.send(INTERRUPTION_QUEUE, JSON.stringify(m), {
        groupId: interruptionGroupId(m),
        deduplicationId: interruptionDeduplicationId(m),
      });
    }
  };
  /**
   * Play the event source mapping on the queue: send what has arrived, poll and invoke until nothing is visible,
   * then move the clock to the next message's visibility (plus `latencyMs`, what a busy queue and a cold Lambda
   * add to every requeue) or to the next arrival, whichever comes first. `beforePass` and `onPass` run around every
   * invocation (an observer; a ReplicaSet's replacements). Ends when the queue is empty and nothing more arrives;
   * answers the invocations.
   */
  const run = async (options: {
    arrivals?: Arrival[];
    latencyMs?: number;
    beforePass?: () => void;
    onPass?: () => void;
    maxPolls?: number;
  }) => {
    const arrivals = [...(options.arrivals ?? [])].sort((a, b) => a.at - b.at);
    const handler = (records: SQSRecord[]) => {
      options.beforePass?.();
      return w.invoke(interruptionReconciler, deps, records);
    };
    let polls = 0;
    for (;;) {
      while (arrivals[0] && arrivals[0].at <= w.clock.now()) send(...arrivals.shift()!.messages);
      if ((await w.sqs.pump(INTERRUPTION_QUEUE, handler)) > 0) {
        options.onPass?.();
        if (++polls > (options.maxPolls ?? 5000)) throw new Error('the interruption queue did not drain');
        continue;
      }
      const visible = w.sqs.nextVisibleInMs(INTERRUPTION_QUEUE);
      const next = [
        visible === undefined ? undefined : w.clock.now() + visible + (options.latencyMs ?? 0),
        arrivals[0]?.at,
      ].filter((t): t is number => t !== undefined);
      if (next.length === 0) return polls;
      w.clock.advance(Math.max(1, Math.min(...next) - w.clock.now()));
    }
  };
  /**
   * A one-instance Auto Scaling group `workers` with a termination lifecycle hook `drain` of this heartbeat timeout
   * (its global timeout is 100 times that, as Auto Scaling sets it); answers the group's instance ID.
   */
  const workersWithHook = async (heartbeatSeconds: number): Promise<string> => {
    await asgFake.send(
      new CreateAutoScalingGroupCommand({
        AutoScalingGroupName: 'workers',
        MinSize: 1,
        MaxSize: 1,
        DesiredCapacity: 1,
      }),
    );
    await asgFake.send(
      new PutLifecycleHookCommand({
        AutoScalingGroupName: 'workers',
        LifecycleHookName: 'drain',
        LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
        HeartbeatTimeout: heartbeatSeconds,
      }),
    );
    return [...asgFake.groups.get('workers')!.instances.keys()][0]!;
  };
  return { ...w, asgFake, deps, addNode, notice, invoke, untilDone, send, run, workersWithHook };
}

export type InterruptionWorld = ReturnType<typeof createInterruptionWorld>;
