import { parseCidr } from '../net/cidr.ts';
import { INTERRUPTION_KINDS, type InterruptionKind } from '../queue/interruption-kinds.ts';
import * as z from '../zod.ts';

/*
 * The schemas the settings (settings.ts) are made of: each a factory, so that a setting's schema is made the first
 * time a value of it is read (config.ts says why).
 */

/** A factory that makes its value once, on the first call. */
export function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => {
    made ??= make();
    return made;
  };
}

export const clusterName = () =>
  z
    .string({ error: 'is required (the cluster name used in kubernetes.io/cluster/<name> tags)' })
    .check(z.regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be 1-63 letters, digits, "-", "_" or "."'));

/** One schema for every URL setting: a setting's schema is only read, so one instance can serve them all. */
export const url = once(() => z.url({ error: 'must be an https:// URL' }));

/** A CIDR block of either family; host bits must be zero (see `parseCidr`). */
export const cidr = () =>
  z.string().check(
    z.superRefine((value, ctx) => {
      const result = parseCidr(value);
      if (!result.ok) ctx.addIssue({ code: 'custom', message: result.error });
    }),
  );

/** A setting given as a pattern; `message` says what it must look like. */
export const matching = (pattern: RegExp, message: string) => z.string().check(z.regex(pattern, message));

/**
 * A whole number from the environment's text, within bounds: `number` is the message for what is no number at all,
 * `whole` for a fraction, `min`/`max` the bounds with theirs.
 */
export function wholeNumber(
  messages: { number: string; whole?: string },
  min: [number, string?],
  max: [number, string?],
) {
  return z.coerce
    .number({ error: messages.number })
    .check(z.int(messages.whole), z.minimum(min[0], min[1]), z.maximum(max[0], max[1]));
}

/** What the interruption controller does for a kind of notice: cordon and drain, or only mark the Node. */
export const INTERRUPTION_ACTION_NAMES = ['drain', 'taint-only'] as const;
export type InterruptionActionName = (typeof INTERRUPTION_ACTION_NAMES)[number];
export type InterruptionActionOverrides = Partial<Record<InterruptionKind, InterruptionActionName>>;

/**
 * `kind=action,...` (INTERRUPTION_ACTIONS): the kinds named override the controller's defaults, the others keep
 * them. An unknown kind or action, or a kind named twice, is refused rather than ignored: a typo would
 * otherwise leave a kind on its default without a word.
 */
export const interruptionActions = () =>
  z.pipe(
    z.string(),
    z.transform((text: string, ctx): InterruptionActionOverrides => {
      const overrides: InterruptionActionOverrides = {};
      const problem = (message: string) => ctx.issues.push({ code: 'custom', message, input: text });
      for (const entry of text
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)) {
        const [kind = '', action = '', ...rest] = entry.split('=').map((p) => p.trim());
        if (rest.length > 0 || !entry.includes('=')) problem(`"${entry}" must be kind=action`);
        else if (!(INTERRUPTION_KINDS as readonly string[]).includes(kind)) {
          problem(`"${kind}" is no interruption kind (${INTERRUPTION_KINDS.join(', ')})`);
        } else if (!(INTERRUPTION_ACTION_NAMES as readonly string[]).includes(action)) {
          problem(`"${action}" for ${kind} must be ${INTERRUPTION_ACTION_NAMES.join(' or ')}`);
        } else if (overrides[kind as InterruptionKind] !== undefined) problem(`${kind} is named twice`);
        else overrides[kind as InterruptionKind] = action as InterruptionActionName;
      }
      return overrides;
    }),
  );

export const SECONDS = { number: 'must be a number of seconds', whole: 'must be a whole number of seconds' };

/** The load balancer kinds the service controller makes (SERVICE_DEFAULT_LOAD_BALANCER_TYPE). */
export const SERVICE_LOAD_BALANCER_TYPES = ['nlb', 'classic'] as const;
export type ServiceLoadBalancerType = (typeof SERVICE_LOAD_BALANCER_TYPES)[number];

/** The target types an Ingress's target groups can have (INGRESS_DEFAULT_TARGET_TYPE): Node ports or Pod addresses. */
export const INGRESS_TARGET_TYPES = ['instance', 'ip'] as const;

/**
 * Tag keys the Ingress controller sets itself on every resource it tracks, and so keys no setting may give: the AWS
 * Load Balancer Controller's tracking tags (its `--default-tags` refuses them as well) and the cluster ownership tag
 * (`kubernetes.io/cluster/<name>`, by its prefix).
 */
export const TRACKING_TAG_KEYS: readonly string[] = [
  'elbv2.k8s.aws/cluster',
  'elbv2.k8s.aws/resource',
  'ingress.k8s.aws/stack',
  'ingress.k8s.aws/resource',
  'service.k8s.aws/stack',
  'service.k8s.aws/resource',
];
const OWNERSHIP_TAG_PREFIX = 'kubernetes.io/cluster/';

/**
 * The characters and lengths AWS allows in ELBv2 and EC2 tag keys and values.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Tag.html
 */
const TAG_TEXT = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u;

/**
 * `key=value,key2=value2` (INGRESS_DEFAULT_TAGS): tags as a map. Refused, naming the entry: an entry without `=`, an
 * empty key, a key named twice, a key or value AWS would refuse (length, characters, the reserved `aws:` prefix),
 * and the keys the controller sets itself (TRACKING_TAG_KEYS and the ownership tag).
 */
export const tagMap = () =>
  z.pipe(
    z.string(),
    z.transform((text: string, ctx): Record<string, string> => {
      const tags: Record<string, string> = {};
      const problem = (message: string) => ctx.issues.push({ code: 'custom', message, input: text });
      for (const entry of text
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)) {
        const at = entry.indexOf('=');
        const key = at < 0 ? '' : entry.slice(0, at).trim();
        const value = at < 0 ? '' : entry.slice(at + 1).trim();
        if (at < 0 || key === '') problem(`"${entry}" must be key=value`);
        else if (key.length > 128 || !TAG_TEXT.test(key)) {
          problem(`"${key}" is no tag key AWS accepts (at most 128 letters, digits, spaces or _ . : / = + - @)`);
        } else if (value.length > 256 || !TAG_TEXT.test(value)) {
          problem(`the value of ${key} is none AWS accepts (at most 256 letters, digits, spaces or _ . : / = + - @)`);
        } else if (key.toLowerCase().startsWith('aws:')) problem(`"${key}": the aws: prefix is reserved for AWS`);
        else if (TRACKING_TAG_KEYS.includes(key) || key.startsWith(OWNERSHIP_TAG_PREFIX)) {
          problem(`"${key}" is a tag the controller sets itself`);
        } else if (key in tags) problem(`${key} is named twice`);
        else tags[key] = value;
      }
      return tags;
    }),
  );
