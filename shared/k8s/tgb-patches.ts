import type { TargetGroupBindingStatus, TgbInferredFields } from './tgb-types.ts';

/**
 * The JSON merge patches of a TargetGroupBinding the port's writes send, built once for both adapter families and
 * the fake (which applies the same bodies). The guard (`metadata.resourceVersion`) is added by the adapters.
 * https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
 */

/** `null` for none: the field removed, as the API server would store an empty list anyway. */
export function finalizersPatch(finalizers: readonly string[]) {
  return { metadata: { finalizers: finalizers.length > 0 ? [...finalizers] : null } };
}

/** Each annotation set, or removed by `null`; the others are left. */
export function annotationsPatch(annotations: Readonly<Record<string, string | null>>) {
  return { metadata: { annotations: { ...annotations } } };
}

/** Only the fields given (an absent one is left as it is). */
export function specFillPatch(fields: TgbInferredFields) {
  return { spec: Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) };
}

/** The whole status: a field it leaves out is removed (`null`), so the patch replaces the status. */
export function statusPatch(status: TargetGroupBindingStatus) {
  return {
    status: {
      observedGeneration: status.observedGeneration ?? null,
      conditions: status.conditions?.length ? status.conditions : null,
    },
  };
}
