import * as z from '../zod.ts';
import { once } from './schemas.ts';
import { type Schema, SETTINGS, type Setting } from './settings.ts';

/**
 * The one configuration object, read from the environment the stacks set (or the local runner's
 * flags). A missing or bad setting stops start-up with an error naming the variable and what it expects.
 *
 * Each setting's schema is made the first time a value of it is read (`SETTINGS`, settings.ts), not when this module loads:
 * every Lambda imports it at a cold start, a function's environment sets only a few of the settings, and making all
 * 130 zod schemas (each binds its methods to itself as it is made) cost about 11 million instructions more, 3% of an
 * import (docs/adr/0010-lambda-cold-start.md, fourth round). The whole object schema (`configSchema`) is made only
 * for the stacks' checks, from the same settings.
 */

type Settings = typeof SETTINGS;
/** The schema a setting has inside the whole object schema, as `z.object` would have it written out. */
type FieldSchema<T> = T extends { unset: 'optional'; schema: () => infer S extends Schema }
  ? z.ZodMiniOptional<S>
  : T extends { unset: 'default'; schema: () => infer S extends Schema }
    ? z.ZodMiniDefault<S>
    : T extends { schema: () => infer S extends Schema }
      ? S
      : never;
type Shape = { [K in keyof Settings]: FieldSchema<Settings[K]> };

function fieldSchema(setting: Setting): Schema {
  if (setting.unset === 'optional') return z.optional(setting.schema());
  if (setting.unset === 'default') return z._default(setting.schema(), setting.value as never);
  return setting.schema();
}

/** Rules across settings; checked once every setting on its own is valid. */
function crossSettingProblems(c: {
  KUBERNETES_AUTH_MODE: string;
  KUBERNETES_TOKEN_SECRET_ID?: string | undefined;
  KUBERNETES_API_ENDPOINT?: string | undefined;
  INGRESS_DEFAULT_TAGS?: Record<string, string>;
  SERVICE_EXTERNAL_MANAGED_TAGS?: string[];
}): Problem[] {
  const problems: Problem[] = [];
  // A tag set on every resource and one left to another tool cannot both hold: each would undo the other.
  const managedElsewhere = Object.keys(c.INGRESS_DEFAULT_TAGS ?? {}).filter((key) =>
    c.SERVICE_EXTERNAL_MANAGED_TAGS?.includes(key),
  );
  if (managedElsewhere.length > 0) {
    problems.push({
      path: ['INGRESS_DEFAULT_TAGS'],
      message: `${managedElsewhere.join(', ')}: also in SERVICE_EXTERNAL_MANAGED_TAGS (tags another tool manages)`,
    });
  }
  if (c.KUBERNETES_AUTH_MODE === 'token' && !c.KUBERNETES_TOKEN_SECRET_ID) {
    problems.push({
      path: ['KUBERNETES_TOKEN_SECRET_ID'],
      message: 'is required when KUBERNETES_AUTH_MODE=token (the Secrets Manager secret holding token and CA)',
    });
  }
  if (c.KUBERNETES_AUTH_MODE !== 'kubeconfig' && !c.KUBERNETES_API_ENDPOINT) {
    problems.push({
      path: ['KUBERNETES_API_ENDPOINT'],
      message: `is required when KUBERNETES_AUTH_MODE=${c.KUBERNETES_AUTH_MODE}`,
    });
  }
  return problems;
}

/**
 * The whole configuration as one zod object schema, made on the first call: what the stacks check a stage's
 * settings against. `loadConfig` reads the same settings one at a time, with the same results and messages.
 */
export const configSchema = once(() => {
  const shape = Object.fromEntries(
    Object.entries(SETTINGS).map(([name, setting]) => [name, fieldSchema(setting)]),
  ) as unknown as Shape;
  return z.object(shape).check(
    z.superRefine((c, ctx) => {
      for (const { path, message } of crossSettingProblems(c))
        ctx.addIssue({ code: 'custom', path: [...path], message });
    }),
  );
});

export type Config = z.output<ReturnType<typeof configSchema>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** A problem with one setting: its name (then where inside its value) and what is wrong. */
interface Problem {
  path: readonly PropertyKey[];
  message: string;
}

/** The environment's set values: empty ones count as unset. */
function setValues(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')) as Record<
    string,
    string
  >;
}

/** ConfigError with one line per problem, naming the variable and the value it had. */
function configError(problems: readonly Problem[], env: Record<string, string | undefined>): ConfigError {
  return new ConfigError(
    problems.map((problem) => {
      const setting = problem.path.map(String).join('.') || '(environment)';
      const value = typeof problem.path[0] === 'string' ? env[problem.path[0]] : undefined;
      return `${setting}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}: ${problem.message}`;
    }),
  );
}

/**
 * Parse the environment; throws ConfigError listing every bad or missing setting. The settings are read one at a
 * time in `SETTINGS` order, as `configSchema()` would read them, so that only the schemas of settings that are
 * set (and the required ones) are made.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input = setValues(env);
  const config: Record<string, unknown> = {};
  const problems: Problem[] = [];
  for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
    const value = input[name];
    if (value === undefined && setting.unset === 'optional') continue;
    if (value === undefined && setting.unset === 'default') {
      // As zod's default: a fresh copy for every parse, so no caller can change the next one's.
      config[name] = Array.isArray(setting.value)
        ? [...setting.value]
        : typeof setting.value === 'object' && setting.value !== null
          ? { ...setting.value }
          : setting.value;
      continue;
    }
    const result = z.safeParse(setting.schema(), value);
    if (result.success) config[name] = result.data;
    else
      for (const issue of result.error.issues) problems.push({ path: [name, ...issue.path], message: issue.message });
  }
  if (problems.length === 0) problems.push(...crossSettingProblems(config as Config));
  if (problems.length > 0) throw configError(problems, env);
  return config as Config;
}

/**
 * Any component's settings from the environment (empty values count as unset); throws ConfigError
 * listing every bad or missing setting, each line naming the variable and the value it had.
 */
export function parseEnvironment<S extends z.core.$ZodType>(
  schema: S,
  env: Record<string, string | undefined>,
): z.output<S> {
  const result = z.safeParse(schema, setValues(env));
  if (result.success) return result.data;
  throw configError(result.error.issues, env);
}

/** A setting one component cannot run without, although the shared schema allows it to be absent. */
export function requireSetting<K extends keyof Config>(
  config: Config,
  key: K,
  purpose: string,
): NonNullable<Config[K]> {
  const value = config[key];
  if (value === undefined || value === null) throw new ConfigError([`${String(key)}: is required ${purpose}`]);
  return value as NonNullable<Config[K]>;
}
