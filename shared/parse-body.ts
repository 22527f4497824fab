import * as z from './zod.ts';

export type BodyResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** A message body through JSON.parse and a zod schema; the error says what `what` the body failed to be. */
export function parseBody<S extends z.core.$ZodType>(body: string, schema: S, what: string): BodyResult<z.output<S>> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    return { ok: false, error: `body is not JSON: ${(err as Error).message}` };
  }
  const result = z.safeParse(schema, json);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, error: `body is not ${what}: ${formatIssues(result.error)}` };
}

export function formatIssues(error: z.core.$ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}
