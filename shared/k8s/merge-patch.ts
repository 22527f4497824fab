/** RFC 7386 JSON merge patch: objects merge recursively, `null` removes, anything else replaces. */
export function applyMergePatch<T>(target: T, patch: unknown): T {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch) as T;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else if (value === undefined) continue;
    else base[key] = applyMergePatch(base[key], value);
  }
  return base as T;
}
