import { TerminalError } from '../../shared/errors.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { gateRequeue, LBC_ACTIVE_REASON, lbcActiveMessage, lbcLeaseState } from '../../shared/k8s/lbc-lease.ts';
import type { TargetGroupBinding } from '../../shared/k8s/tgb-types.ts';
import { keyString, type ObjectKey } from '../../shared/queue/message.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';
import { deleteBinding } from './cleanup.ts';
import type { TgbDeps } from './deps.ts';
import { EVENT, recordBindingEvent } from './kube.ts';
import { syncBinding } from './sync.ts';

/**
 * TargetGroupBindings (`elbv2.k8s.aws/v1beta1`): Pods or Nodes registered in a target group someone else made, as the
 * AWS Load Balancer Controller does it (docs/target-group-binding.md). The key is the binding. Nothing is done while
 * the reference controller holds its leader Lease: a Warning says so, and the key comes back when the Lease may
 * have expired. https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/targetgroupbinding/
 */
export const targetGroupBindingReconciler: Reconciler<TgbDeps> = {
  name: 'target-group-binding',
  accepts: (key) => key.kind === 'TargetGroupBinding',
  async reconcile(key, deps, _batch, context) {
    if (key.kind !== 'TargetGroupBinding') {
      throw new TerminalError(`the target-group-binding queue takes TargetGroupBinding keys (got ${keyString(key)})`);
    }
    const binding = await readBinding(key, deps);
    if (!binding) return undefined;
    if (deps.checkLbcLease) {
      const state = await lbcLeaseState(deps.kube, deps.clock.now()).catch((err: unknown) => {
        throw classifyKubernetesError('reading the AWS Load Balancer Controller leader Lease', err);
      });
      if (state.held) {
        await recordBindingEvent(deps, binding, 'Warning', LBC_ACTIVE_REASON, lbcActiveMessage(state));
        return gateRequeue(state, context?.receiveCount ?? 1);
      }
    }
    if (binding.metadata.deletionTimestamp) return deleteBinding(binding, deps);
    try {
      return await syncBinding(binding, deps);
    } catch (err) {
      await recordBindingEvent(deps, binding, 'Warning', EVENT.failedReconcile, (err as Error).message);
      throw err;
    }
  },
  async reportTerminal(key: ObjectKey, error: TerminalError, deps: TgbDeps) {
    const binding = await readBinding(key, deps).catch(() => undefined);
    if (binding) await recordBindingEvent(deps, binding, 'Warning', EVENT.failedReconcile, error.message);
  },
};

async function readBinding(key: ObjectKey, deps: TgbDeps): Promise<TargetGroupBinding | undefined> {
  const namespace = key.namespace ?? 'default';
  try {
    return await deps.kube.getTargetGroupBinding(namespace, key.name);
  } catch (err) {
    throw classifyKubernetesError(`reading targetgroupbinding ${namespace}/${key.name}`, err);
  }
}
