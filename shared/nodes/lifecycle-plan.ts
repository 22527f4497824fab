import type { InstanceState } from '../aws/ec2-port.ts';

/**
 * What the lifecycle controller does with a Node, from its readiness and its instance's state
 * (docs/reference.md "Nodes"): the node-lifecycle reconciler's pure step (functions/node-lifecycle), which the
 * resync's node sweep (functions/resync/node-sweep.ts) applies too to tell which Nodes are out of step. Here, not in
 * functions/node-lifecycle, because a producer never imports a reconciler. Pure: table-tested.
 *  - not found or terminated = the instance does not exist; stopped = shut down;
 *    pending, running, stopping, shutting-down = exists.
 *  - Ready -> remove the shutdown taint if present.
 *  - not Ready and gone -> delete the Node; not Ready and stopped -> add the shutdown taint.
 */
export type LifecycleAction =
  | 'none'
  | 'delete-node'
  | 'add-shutdown-taint'
  | 'remove-shutdown-taint'
  /** The instance is unknown to EC2 but the Node is young: EC2 may not show a new instance yet. */
  | 'wait-for-instance';

export interface LifecycleObservation {
  ready: boolean;
  /** undefined: EC2 does not know the instance (InvalidInstanceID.NotFound or long gone). */
  instanceState: InstanceState | undefined;
  hasShutdownTaint: boolean;
  /** The Node is young enough that EC2 may not show its new instance yet (eventual consistency). */
  instanceMayAppear?: boolean;
}

export function instanceExists(state: InstanceState | undefined): boolean {
  return state !== undefined && state !== 'terminated';
}

export function instanceShutdown(state: InstanceState | undefined): boolean {
  return state === 'stopped';
}

export function lifecycleAction(o: LifecycleObservation): LifecycleAction {
  if (o.ready) return o.hasShutdownTaint ? 'remove-shutdown-taint' : 'none';
  if (o.instanceState === undefined && o.instanceMayAppear) return 'wait-for-instance';
  if (!instanceExists(o.instanceState)) return 'delete-node';
  if (instanceShutdown(o.instanceState)) return o.hasShutdownTaint ? 'none' : 'add-shutdown-taint';
  return 'none';
}
