import type { TargetGroupBindingsPort } from '../../shared/k8s/tgb-port.ts';
import type { KeyHint, KeyMessage } from '../../shared/queue/message.ts';

/** What the resync reads to name the cluster's TargetGroupBindings. */
export type TargetGroupBindingSources = Pick<TargetGroupBindingsPort, 'listTargetGroupBindings'>;

/**
 * Every TargetGroupBinding of every namespace, one key each: those being deleted too (their finalizer waits on the
 * controller's deregistration), and those whose Lease gate or bad spec left them alone (the key finds them again).
 * None when the CustomResourceDefinition is not installed (the port answers []).
 */
export async function targetGroupBindingKeys(sources: TargetGroupBindingSources, hint: KeyHint): Promise<KeyMessage[]> {
  const bindings = await sources.listTargetGroupBindings();
  return bindings.map((binding) => ({
    kind: 'TargetGroupBinding',
    namespace: binding.metadata.namespace ?? 'default',
    name: binding.metadata.name,
    hint,
  }));
}
