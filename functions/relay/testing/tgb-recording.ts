import type { ReadRecorder } from './reads.ts';

/**
 * What the TargetGroupBinding controller (functions/target-group-binding) reads of bindings, Services,
 * EndpointSlices, Nodes and Pods. Pending: the reconciler is not in the tree yet, so nothing is recorded and
 * reads-coverage.test.ts lists its case as a todo (`AWAITING_RECONCILER`) until this runs it.
 */
export async function recordTargetGroupBindingReads(_recorder: ReadRecorder): Promise<void> {}
