import { KubernetesApiError } from '../errors.ts';
import { applyMergePatch } from '../merge-patch.ts';
import type { WriteGuard } from '../port.ts';
import type { EventRecord, MergePatch, ObjectMeta } from '../types.ts';
import type { RecordedRequest } from './api-server.ts';
import type { AggregatedEvent } from './fake-kubernetes.ts';

/** How FakeKubernetes writes, as the API server does: timestamps and guarded merge patches. */

/** A timestamp as the API server writes one (metav1.Time: RFC 3339, whole seconds). */
export function apiTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * A merge patch as the API server applies it: 404 when the object is gone, 409 when the guard's
 * resourceVersion is stale, the status subresource ignoring the spec and the main resource ignoring the
 * status (both ignore the identity fields), and no new finalizer on an object being deleted (422).
 */
export function guardedMergePatch<T extends { metadata: ObjectMeta }>(
  resource: string,
  name: string,
  current: T | undefined,
  patch: unknown,
  guard: WriteGuard,
  status: boolean,
): T {
  if (!current) throw new KubernetesApiError(404, 'NotFound', `${resource} "${name}" not found`);
  if (guard.resourceVersion !== current.metadata.resourceVersion) {
    throw new KubernetesApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    );
  }
  const { status: statusPatch, ...rest } = patch as { status?: unknown; metadata?: Record<string, unknown> };
  const {
    resourceVersion: _rv,
    uid: _uid,
    name: _name,
    namespace: _ns,
    deletionTimestamp: _dt,
    ...metadata
  } = rest.metadata ?? {};
  // The status subresource of Nodes, Services and Pods keeps the spec but takes metadata (labels,
  // annotations, finalizers) as the main resource does: kube-apiserver's status strategies reset only the
  // spec (and a Pod's owner references), as test/k8s-contract/ checks against a real one.
  const effective: Record<string, unknown> = status
    ? { metadata: resource === 'pods' ? { ...metadata, ownerReferences: undefined } : metadata, status: statusPatch }
    : { ...rest, metadata };
  const next = applyMergePatch(current, effective);
  const added = (next.metadata.finalizers ?? []).filter((f) => !(current.metadata.finalizers ?? []).includes(f));
  if (current.metadata.deletionTimestamp && added.length > 0) {
    throw new KubernetesApiError(
      422,
      'Invalid',
      `${resource} "${name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"${added.join('", "')}"}`,
    );
  }
  return next;
}

/** Delete preconditions as the API server checks them: 409 when the uid or resourceVersion differs. */
export function checkPreconditions(current: ObjectMeta, preconditions: { uid?: string; resourceVersion?: string }) {
  if (preconditions.uid && preconditions.uid !== current.uid) {
    throw new KubernetesApiError(
      409,
      'Conflict',
      `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${current.uid}`,
    );
  }
  if (preconditions.resourceVersion && preconditions.resourceVersion !== current.resourceVersion) {
    throw new KubernetesApiError(409, 'Conflict', 'Precondition failed: resourceVersion');
  }
}

/**
 * Events as the real adapter leaves them in the cluster: identical Events (same object, type, reason
 * and message) counted on one, with the times of the first and the last.
 */
export function aggregateEvents(events: readonly (EventRecord & { timestamp: number })[]): AggregatedEvent[] {
  const byKey = new Map<string, AggregatedEvent>();
  for (const { timestamp, ...event } of events) {
    const ref = event.involvedObject;
    const key = JSON.stringify([ref.kind, ref.namespace, ref.name, ref.uid, event.type, event.reason, event.message]);
    const seen = byKey.get(key);
    if (seen) {
      seen.count += 1;
      seen.lastTimestamp = timestamp;
    } else {
      byKey.set(key, { ...structuredClone(event), count: 1, firstTimestamp: timestamp, lastTimestamp: timestamp });
    }
  }
  return [...byKey.values()];
}

/**
 * A JSON merge patch sent to the fake API server (`fake-kubernetes-server.ts`), and its guard. Only merge
 * patches are served (the adapters send nothing else); the patch's `metadata.resourceVersion` is the
 * precondition, and a patch without one applies to whatever is stored, as on the real API server. Its
 * `metadata.uid`, when there is one, is returned as `uid`: the Pod routes treat it as a precondition too.
 */
export function requestMergePatch<T>(req: RecordedRequest, current: ObjectMeta | undefined) {
  if (req.headers['content-type'] !== 'application/merge-patch+json') {
    throw new KubernetesApiError(
      415,
      'UnsupportedMediaType',
      `the fake API server serves merge patches only, not ${String(req.headers['content-type'])}`,
    );
  }
  const patch = JSON.parse(req.body) as MergePatch<T> & { metadata?: { resourceVersion?: string; uid?: string } };
  const resourceVersion = patch.metadata?.resourceVersion ?? current?.resourceVersion ?? '';
  return { patch, guard: { resourceVersion }, uid: patch.metadata?.uid };
}
