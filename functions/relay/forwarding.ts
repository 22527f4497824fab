import { controller, RECONCILERS, type Reconciler } from './controllers/index.ts';
import type { ForwardingRule as ModuleRule } from './controllers/module.ts';
import { WATCHED_KINDS, type WatchedKind } from './kinds.ts';

/**
 * The forwarding rules per kind, as the table of controller modules (controllers/index.ts) declares them: which
 * reconciler queues a change of each kind goes to, and which fields of the object each reconciler reads. A change
 * to a field not in its controller's rule never reaches that reconciler (the periodic resync still would). The
 * names and predicates come from shared/, where the reconcilers take them too, and reads-coverage.test.ts runs
 * the reconcilers to check that every field they read is in the rule.
 */

/** A module's rule for one kind, with the reconciler it belongs to. */
export interface ForwardingRule extends ModuleRule {
  reconciler: Reconciler;
}

function rulesByKind(): Record<WatchedKind, readonly ForwardingRule[]> {
  const rules = Object.fromEntries(WATCHED_KINDS.map((kind) => [kind, [] as ForwardingRule[]])) as Record<
    WatchedKind,
    ForwardingRule[]
  >;
  for (const reconciler of RECONCILERS) {
    for (const rule of controller(reconciler).rules) rules[rule.kind.name as WatchedKind].push({ ...rule, reconciler });
  }
  return rules;
}

/** Per kind, the rules of every controller that reads it, in table order. */
export const FORWARDING_RULES: Readonly<Record<WatchedKind, readonly ForwardingRule[]>> = rulesByKind();

/** The rule for one reconciler and kind, if that reconciler reads that kind. */
export function ruleFor(kind: WatchedKind, reconciler: Reconciler): ForwardingRule | undefined {
  return FORWARDING_RULES[kind].find((r) => r.reconciler === reconciler);
}

/** Names a LeaderMigrationConfiguration may give each reconciler's controller (ControllerModule.migrationNames). */
export const MIGRATION_CONTROLLER_NAMES = Object.fromEntries(
  RECONCILERS.map((reconciler) => [reconciler, controller(reconciler).migrationNames]),
) as Readonly<Record<Reconciler, readonly string[]>>;

/**
 * The kinds whose changes some of these reconcilers read: the only kinds the relay lists and
 * watches (and its RBAC must allow), so a kind no configured queue consumes is never watched.
 */
export function kindsFor(reconcilers: Iterable<Reconciler>): WatchedKind[] {
  const wanted = new Set(reconcilers);
  return WATCHED_KINDS.filter((kind) => FORWARDING_RULES[kind].some((r) => wanted.has(r.reconciler)));
}
