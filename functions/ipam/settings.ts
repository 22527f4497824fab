import { ENABLE_KEY, PREFIX_DELEGATION_KEY, readFlag } from '../../shared/k8s/ipam-flags.ts';
import type { ConfigMap } from '../../shared/k8s/ipam-port.ts';

/**
 * Windows IP address management as the VPC CNI's ConfigMap (`kube-system/amazon-vpc-cni`) sets it, with the
 * VPC resource controller's defaults and rules, which Windows users already tune (its pkg/config/loader.go,
 * pkg/pool/pool.go and docs/windows/*_config_options.md; settings.test.ts states them as a table):
 * - `enable-windows-ipam` turns it on; `enable-windows-prefix-delegation` hands out /28 prefixes instead of single
 *   secondary addresses, on Nitro instance types only (`settingsForNode`). Both are read as Go's strconv.ParseBool
 *   reads them (shared/k8s/ipam-flags.ts, which the admission webhooks read too); anything else is false;
 * - `warm-ip-target`, `minimum-ip-target`, `warm-prefix-target`, each also as `windows-<key>` (the plain key wins),
 *   read as strconv.Atoi reads them (an optional sign and digits); a negative or unreadable value is unset;
 * - secondary-address mode: warm 3 and minimum 3 when unset; an explicit warm 0 becomes 1 (allocating only on
 *   demand is not supported: a Pod would wait for EC2 every time); minimum 0 stands;
 * - prefix mode: warm-ip 1, minimum-ip 3, warm-prefix 0 by default; once warm-ip or minimum-ip is above zero the
 *   other takes its default (warm-ip 1, minimum-ip 3) and warm-prefix is ignored, else warm-prefix whole free
 *   prefixes are kept.
 */
export interface IpamSettings {
  enabled: boolean;
  mode: 'secondary' | 'prefix';
  /** Free addresses to keep ready beyond those in use. */
  warmIpTarget: number;
  /** The pool never shrinks below this many addresses. */
  minimumIpTarget: number;
  /** Prefix mode with address targets unset: whole free prefixes to keep. */
  warmPrefixTarget: number;
}

const TARGET_KEYS = ['warm-ip-target', 'minimum-ip-target', 'warm-prefix-target'] as const;
type TargetKey = (typeof TARGET_KEYS)[number];

/** The secondary-address defaults, also what a non-Nitro Node gets while prefix delegation is on. */
const SECONDARY_DEFAULTS = { warmIpTarget: 3, minimumIpTarget: 3, warmPrefixTarget: 0 } as const;

export interface ParsedSettings {
  settings: IpamSettings;
  /** Values that could not be used, each naming the key and the value (the default applies instead). */
  problems: string[];
}

export function parseSettings(configMap: ConfigMap | undefined): ParsedSettings {
  const data = configMap?.data ?? {};
  const problems: string[] = [];
  const enabled = readFlag(data, ENABLE_KEY);
  const prefixes = readFlag(data, PREFIX_DELEGATION_KEY);
  for (const flag of [enabled, prefixes]) if (flag.problem) problems.push(flag.problem);
  const mode = prefixes.on ? 'prefix' : 'secondary';
  const raw = {} as Record<TargetKey, number | undefined>;
  for (const key of TARGET_KEYS) raw[key] = target(data, key, problems);
  const settings = { enabled: enabled.on, mode, ...targets(mode, raw) } as const;
  return { settings, problems };
}

/**
 * The settings for one Node. Prefix delegation needs a Nitro instance type (or bare metal): the reference keeps
 * the others in secondary-address mode, with the secondary-address defaults (the targets the ConfigMap sets while
 * prefix delegation is on are the prefixes' targets: its loader.go puts them in the prefix pool's configuration
 * only).
 */
export function settingsForNode(settings: IpamSettings, type: { prefixDelegation: boolean }): IpamSettings {
  if (settings.mode !== 'prefix' || type.prefixDelegation) return settings;
  return { enabled: settings.enabled, mode: 'secondary', ...SECONDARY_DEFAULTS };
}

/** Go's strconv.Atoi: an optional sign, then decimal digits, nothing else (no spaces, no `0x`, no exponent). */
const WHOLE_NUMBER = /^[+-]?\d+$/;

/**
 * The plain key wins over the `windows-` one, as in the reference (present, even if unreadable). A value that is
 * no whole number, or is negative, is a problem and unset (the reference's docs: "the default value being used").
 */
function target(data: Record<string, string>, key: TargetKey, problems: string[]): number | undefined {
  const name = data[key] !== undefined ? key : `windows-${key}`;
  const value = data[name];
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!WHOLE_NUMBER.test(value) || !Number.isSafeInteger(parsed)) {
    problems.push(`${name}: "${value}" is not a whole number of addresses (0 or more); using the default`);
    return undefined;
  }
  if (parsed < 0) {
    problems.push(`${name}: "${value}" is negative; using the default`);
    return undefined;
  }
  return parsed;
}

function targets(
  mode: IpamSettings['mode'],
  raw: Record<TargetKey, number | undefined>,
): Pick<IpamSettings, 'warmIpTarget' | 'minimumIpTarget' | 'warmPrefixTarget'> {
  const warm = raw['warm-ip-target'];
  const minimum = raw['minimum-ip-target'];
  if (mode === 'secondary') {
    return {
      warmIpTarget: warm === undefined ? SECONDARY_DEFAULTS.warmIpTarget : Math.max(1, warm),
      minimumIpTarget: minimum ?? SECONDARY_DEFAULTS.minimumIpTarget,
      warmPrefixTarget: 0,
    };
  }
  // Zero is "unset" in prefix mode (pool.go getPDDeviation: a target counts when above zero).
  const set = (n: number | undefined) => (n !== undefined && n > 0 ? n : undefined);
  const warmIp = set(warm);
  const minimumIp = set(minimum);
  const warmPrefix = set(raw['warm-prefix-target']);
  if (warmIp !== undefined || minimumIp !== undefined) {
    return { warmIpTarget: warmIp ?? 1, minimumIpTarget: minimumIp ?? 3, warmPrefixTarget: 0 };
  }
  if (warmPrefix !== undefined) return { warmIpTarget: 0, minimumIpTarget: 0, warmPrefixTarget: warmPrefix };
  return { warmIpTarget: 1, minimumIpTarget: 3, warmPrefixTarget: 0 };
}
