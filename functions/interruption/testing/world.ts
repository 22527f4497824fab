import { AutoScalingAdapter } from '../../../shared/aws/autoscaling-adapter.ts';
import { FakeAutoScaling } from '../../../shared/aws/fakes/autoscaling/fake-autoscaling.ts';
import type { InterruptionKind, InterruptionMessage } from '../../../shared/queue/interruption.ts';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { fifoRecord } from '../../../test/helpers/records.ts';
import { CLUSTER, createWorld } from '../../../test/helpers/world.ts';
import { DEFAULT_INTERRUPTION_ACTIONS } from '../plan.ts';
import { type InterruptionDeps, interruptionReconciler } from '../reconciler.ts';

/** The test world with the interruption controller's deps: FakeKubernetes (Pods, budgets), EC2 and Auto Scaling fakes. */
export function createInterruptionWorld() {
  const w = createWorld();
  const asgFake = new FakeAutoScaling(w.clock);
  const deps: InterruptionDeps = {
    clusterName: CLUSTER,
    kube: w.kube,
    drain: w.kube,
    autoscaling: new AutoScalingAdapter(asgFake),
    ec2: w.ec2Port,
    actions: { ...DEFAULT_INTERRUPTION_ACTIONS },
    outOfServiceTaint: false,
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
  return { ...w, asgFake, deps, addNode, notice, invoke, untilDone };
}

export type InterruptionWorld = ReturnType<typeof createInterruptionWorld>;
