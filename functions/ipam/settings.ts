import type { ConfigMap } from '../../shared/k8s/ipam-port.ts';

/**
 * Windows IP address management as the VPC CNI's ConfigMap (`kube-system/amazon-vpc-cni`) sets it, with the
 * VPC resource controller's defaults and rules, which Windows users already tune:
 * - `enable-windows-ipam: "true"` turns it on; `enable-windows-prefix-delegation: "true"` hands out /28 prefixes
 *   instead of single secondary addresses;
 * - `warm-ip-target`, `minimum-ip-target`, `warm-prefix-target`, each also as `windows-<key>` (the plain key wins);
 * - secondary-address mode: warm 3 and minimum 3 by default; an explicit warm 0 becomes 1, and all zero means the
 *   defaults (allocating only on demand is not supported: a Pod would wait for EC2 every time);
 * - prefix mode: warm-ip 1, minimum-ip 3, warm-prefix 0 by default; once warm-ip or minimum-ip is set above zero the
 *   address targets rule and warm-prefix is ignored, else warm-prefix whole free prefixes are kept.
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

export const ENABLE_KEY = 'enable-windows-ipam';
export const PREFIX_DELEGATION_KEY = 'enable-windows-prefix-delegation';
const TARGET_KEYS = ['warm-ip-target', 'minimum-ip-target', 'warm-prefix-target'] as const;
type TargetKey = (typeof TARGET_KEYS)[number];

export interface ParsedSettings {
  settings: IpamSettings;
  /** Values that could not be used, each naming the key and the value (the default applies instead). */
  problems: string[];
}

export function parseSettings(configMap: ConfigMap | undefined): ParsedSettings {
  const data = configMap?.data ?? {};
  const problems: string[] = [];
  const mode = data[PREFIX_DELEGATION_KEY] === 'true' ? 'prefix' : 'secondary';
  const raw = {} as Record<TargetKey, number | undefined>;
  for (const key of TARGET_KEYS) raw[key] = target(data, key, problems);
  for (const key of [ENABLE_KEY, PREFIX_DELEGATION_KEY]) {
    const value = data[key];
    if (value !== undefined && value !== 'true' && value !== 'false') {
      problems.push(`${key}: "${value}" is neither "true" nor "false"; taken as false`);
    }
  }
  const settings = { enabled: data[ENABLE_KEY] === 'true', mode, ...targets(mode, raw) } as const;
  return { settings, problems };
}

/** The plain key wins over the `windows-` one; a value that is no whole number >= 0 is a problem, not a zero. */
function target(data: Record<string, string>, key: TargetKey, problems: string[]): number | undefined {
  const name = data[key] !== undefined ? key : `windows-${key}`;
  const value = data[name];
  if (value === undefined || value.trim() === '') return undefined;
  if (!/^\d{1,6}$/.test(value.trim())) {
    problems.push(`${name}: "${value}" is not a whole number of addresses (0 or more); using the default`);
    return undefined;
  }
  return Number(value.trim());
}

function targets(
  mode: IpamSettings['mode'],
  raw: Record<TargetKey, number | undefined>,
): Pick<IpamSettings, 'warmIpTarget' | 'minimumIpTarget' | 'warmPrefixTarget'> {
  const warm = raw['warm-ip-target'];
  const minimum = raw['minimum-ip-target'];
  const warmPrefix = raw['warm-prefix-target'];
  if (mode === 'secondary') {
    if ((warm ?? 0) === 0 && (minimum ?? 0) === 0) return { warmIpTarget: 3, minimumIpTarget: 3, warmPrefixTarget: 0 };
    return { warmIpTarget: Math.max(1, warm ?? 3), minimumIpTarget: minimum ?? 3, warmPrefixTarget: 0 };
  }
  const addressTargets = (warm ?? 0) > 0 || (minimum ?? 0) > 0;
  if (addressTargets) return { warmIpTarget: warm ?? 0, minimumIpTarget: minimum ?? 0, warmPrefixTarget: 0 };
  if ((warmPrefix ?? 0) > 0) return { warmIpTarget: 0, minimumIpTarget: 0, warmPrefixTarget: warmPrefix! };
  return { warmIpTarget: 1, minimumIpTarget: 3, warmPrefixTarget: 0 };
}
