/**
 * Reading the JSON annotations (`actions.<service>`, `conditions.<service>`) as the AWS Load Balancer Controller
 * reads them, with Go's encoding/json: an object's keys match field names case-insensitively (`"Type"`,
 * `"RedirectConfig"`, `"Values"` and `"type"` are one field), a later key wins over an earlier one, unknown keys are ignored, `null` is the same as absent, and a value of the wrong kind is an error.
 * https://pkg.go.dev/encoding/json#Unmarshal
 */

/** A value of the wrong kind, or JSON that does not parse; the message names the field. */
export class JsonShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonShapeError';
  }
}

export type JsonObject = { readonly [key: string]: unknown };

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new JsonShapeError(`invalid JSON: ${(err as Error).message}`);
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function wrongKind(path: string, want: string, value: unknown): JsonShapeError {
  return new JsonShapeError(`${path}: expected ${want}, got ${kindOf(value)}`);
}

/**
 * The value of field `name`: the last key equal to it ignoring ASCII case (Go sets the field once per matching
 * key, in document order). Undefined when absent or null.
 */
export function field(object: JsonObject, name: string): unknown {
  const folded = name.toLowerCase();
  let found: unknown;
  for (const [key, value] of Object.entries(object)) if (key.toLowerCase() === folded) found = value;
  return found ?? undefined;
}

export function asObject(value: unknown, path: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw wrongKind(path, 'an object', value);
  return value as JsonObject;
}

export function asArray(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw wrongKind(path, 'a list', value);
  return value;
}

export function optionalObject(object: JsonObject, name: string, path: string): JsonObject | undefined {
  const value = field(object, name);
  return value === undefined ? undefined : asObject(value, `${path}.${name}`);
}

export function optionalString(object: JsonObject, name: string, path: string): string | undefined {
  const value = field(object, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw wrongKind(`${path}.${name}`, 'a string', value);
  return value;
}

export function optionalBoolean(object: JsonObject, name: string, path: string): boolean | undefined {
  const value = field(object, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw wrongKind(`${path}.${name}`, 'true or false', value);
  return value;
}

/** A JSON number that is an integer (Go's int64 fields refuse fractions). */
export function optionalInteger(object: JsonObject, name: string, path: string): number | undefined {
  const value = field(object, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw wrongKind(`${path}.${name}`, 'an integer', value);
  return value;
}

/** A list of strings; an absent or null list is empty. */
export function stringList(object: JsonObject, name: string, path: string): string[] {
  const value = field(object, name);
  if (value === undefined) return [];
  return asArray(value, `${path}.${name}`).map((item, i) => {
    if (typeof item !== 'string') throw wrongKind(`${path}.${name}[${i}]`, 'a string', item);
    return item;
  });
}

/** A Kubernetes IntOrString: a JSON number (an integer) or a string. */
export function optionalIntOrString(object: JsonObject, name: string, path: string): number | string | undefined {
  const value = field(object, name);
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw wrongKind(`${path}.${name}`, 'a port number or name', value);
}
