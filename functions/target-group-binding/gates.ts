import type { TargetHealth } from '../../shared/aws/elbv2-port.ts';
import { gateOf } from '../../shared/k8s/pod-readiness.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import type { TgbDeps } from './deps.ts';
import { setGate } from './kube.ts';
import { decideGates, type GateChange, releaseGates } from './readiness.ts';

/** The readiness gates written: only the conditions that change. Answers the writes and whether a Pod waits. */
export async function updateGates(
  pods: readonly Pod[],
  bindingName: string,
  health: readonly TargetHealth[],
  podTargetPort: (pod: Pod) => number | undefined,
  deps: Pick<TgbDeps, 'kube' | 'log' | 'clock'>,
): Promise<{ writes: number; waiting: boolean }> {
  const decision = decideGates(pods, bindingName, health, podTargetPort);
  return { writes: await writeChanges(decision.changes, deps), waiting: decision.waiting };
}

/** A deleted binding holds no Pod back: every gated Pod's condition True. */
export async function releaseAllGates(
  pods: readonly Pod[],
  bindingName: string,
  deps: Pick<TgbDeps, 'kube' | 'log' | 'clock'>,
): Promise<number> {
  return writeChanges(releaseGates(pods, bindingName), deps);
}

async function writeChanges(changes: readonly GateChange[], deps: Pick<TgbDeps, 'kube' | 'log' | 'clock'>) {
  let writes = 0;
  for (const { pod, condition } of changes) {
    if (await setGate(deps, pod, condition)) writes++;
  }
  return writes;
}

/** Whether any of the Pods carries this binding's gate (no gated Pod: no target health to read for them). */
export function anyGated(pods: readonly Pod[], bindingName: string): boolean {
  return pods.some((p) => gateOf(p, bindingName) !== undefined);
}
