import { ingressController } from './ingress.ts';
import { ipamController } from './ipam.ts';
import type { ControllerModule } from './module.ts';
import { nodeController } from './node.ts';
import { nodeLifecycleController } from './node-lifecycle.ts';
import { routeController } from './route.ts';
import { serviceController } from './service.ts';
import { targetGroupBindingController } from './target-group-binding.ts';

/**
 * The controllers the relay feeds, one line each: the reconciler's name (its queue, its metrics label) and its
 * module. Everything else is derived from this table: the reconciler names, the kinds the relay lists and watches
 * (kinds.ts), the forwarding rules per kind (forwarding.ts), the queue variables (config.ts), the leader migration
 * names, and what reads-coverage.test.ts checks. A kind read by several controllers routes its changes in table
 * order. docs/relay.md says how to add a controller.
 *
 * A module imports nothing of the relay but kube-object.ts, fingerprint.ts and its own folder: the files that
 * derive from the table would otherwise be loaded in the middle of loading it.
 */
export const CONTROLLERS = {
  node: nodeController,
  'node-lifecycle': nodeLifecycleController,
  route: routeController,
  service: serviceController,
  ipam: ipamController,
  ingress: ingressController,
  'target-group-binding': targetGroupBindingController,
} as const satisfies Record<string, ControllerModule>;

export type Reconciler = keyof typeof CONTROLLERS;

/** The reconcilers, in table order. */
export const RECONCILERS = Object.keys(CONTROLLERS) as readonly Reconciler[];

/** The name of every kind some module reads: the relay's watched kinds. */
export type WatchedKind = (typeof CONTROLLERS)[Reconciler]['rules'][number]['kind']['name'];

/** The module of one reconciler, typed as the contract (the table's own type keeps each module's literals). */
export function controller(reconciler: Reconciler): ControllerModule {
  return CONTROLLERS[reconciler];
}
