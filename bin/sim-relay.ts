import { ChangeRouter } from '../functions/relay/change-router.ts';
import type { KubeObject } from '../functions/relay/kinds.ts';
import type { Clock } from '../shared/clock.ts';
import type { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import type { FakeIngresses } from '../shared/k8s/fakes/ingresses.ts';
import type { FakeTargetGroupBindings } from '../shared/k8s/fakes/target-group-bindings.ts';
import type { Engine } from './engine.ts';

/**
 * The relay of the embedded simulation: the relay's own change router (functions/relay/change-router.ts,
 * the forwarding rules of forwarding.ts) fed by the simulated API server's changes, so the simulation
 * filters and routes exactly as the deployed relay does. Only the transport differs: the simulated
 * cluster lives in this process on a simulated clock, so there is nothing to list or watch over HTTP
 * and no Lease to hold (real mode runs the whole relay: bin/real.ts).
 */
export function startSimulatedRelay(
  kube: FakeKubernetes,
  engine: Engine,
  clock: Clock,
  ingresses?: FakeIngresses,
  bindings?: FakeTargetGroupBindings,
): () => void {
  const send = (url: string | undefined, message: Parameters<Engine['keys']['sendKeys']>[1][number]) => {
    if (url) void engine.keys.sendKeys(url, [message]);
  };
  let nodeSetPending = false;
  const router = new ChangeRouter({
    // The controllers the relay feeds that run (the interruption controller is fed by EC2 events only).
    reconcilers: new Set(Object.keys(engine.queueUrls) as (keyof Engine['queueUrls'])[]),
    allows: () => true,
    now: () => clock.now(),
    emit: ({ reconciler, message }) => send(engine.queueUrls[reconciler as keyof Engine['queueUrls']], message),
    // The relay waits a moment so a burst of Node changes becomes one key per Service; within one
    // simulated step, the end of the current turn of the event loop is that moment.
    nodeSetChanged: () => {
      if (nodeSetPending) return;
      nodeSetPending = true;
      queueMicrotask(() => {
        nodeSetPending = false;
        // Each round key goes to its own controller's queue, as the deployed relay forwards it (relay.ts): a Node-set
        // round holds Service, IngressGroup and TargetGroupBinding keys alike.
        for (const { reconciler, message } of router.takeNodeSetRound()) {
          send(engine.queueUrls[reconciler as keyof Engine['queueUrls']], message);
        }
      });
    },
  });
  // The relay lists the Nodes before it watches (which lets a round of Node joins say so: change-router.ts).
  router.listed('Node', kube.nodes.values() as Iterable<unknown> as Iterable<KubeObject>, '0');
  const route = (change: { kind: Parameters<ChangeRouter['observe']>[0]; type: string; object: unknown }) => {
    const object = change.object as KubeObject;
    if (change.type === 'DELETED') router.remove(change.kind, object);
    else router.observe(change.kind, object);
  };
  // Namespaces are no kind the relay watches.
  const stopIngresses = ingresses?.watch((change) => {
    if (change.kind !== 'Namespace') route({ ...change, kind: change.kind });
  });
  const stopBindings = bindings?.watch((change) => route({ ...change, kind: 'TargetGroupBinding' }));
  const stopKube = kube.watch(route);
  return () => {
    stopIngresses?.();
    stopBindings?.();
    stopKube();
  };
}
