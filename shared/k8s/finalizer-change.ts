import { classifyKubernetesError, isConflict, isNotFound } from './errors.ts';
import type { WriteGuard } from './port.ts';
import type { ObjectMeta } from './types.ts';

/** How one kind's finalizers are written and read again (the kind's port). */
export interface FinalizerAccess<T extends { metadata: ObjectMeta }> {
  write(object: T, finalizers: string[], guard: WriteGuard): Promise<T>;
  /** undefined once it is gone. */
  read(object: T): Promise<T | undefined>;
}

/**
 * Adds or removes one finalizer with a write guarded by the resourceVersion read (a merge patch replaces the list
 * whole); on 409 the object is read again and the change made on what it holds now, up to three times. Answers the
 * object as written, or undefined once it is gone.
 */
export async function changeFinalizer<T extends { metadata: ObjectMeta }>(
  access: FinalizerAccess<T>,
  object: T,
  finalizer: string,
  change: 'add' | 'remove',
): Promise<T | undefined> {
  let current: T | undefined = object;
  for (let attempt = 0; current; attempt++) {
    const has = current.metadata.finalizers?.includes(finalizer) ?? false;
    if (has === (change === 'add')) return current;
    const finalizers =
      change === 'add'
        ? [...(current.metadata.finalizers ?? []), finalizer]
        : (current.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    try {
      return await access.write(current, finalizers, { resourceVersion: current.metadata.resourceVersion ?? '' });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= 2) {
        throw classifyKubernetesError(`${change === 'add' ? 'adding' : 'removing'} finalizer ${finalizer}`, err);
      }
      current = await access.read(current);
    }
  }
  return undefined;
}
