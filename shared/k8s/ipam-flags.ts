/**
 * The switches of Windows IP address management in the VPC CNI's ConfigMap, read as the VPC resource controller
 * reads them. Shared by the IPAM reconciler (functions/ipam/settings.ts) and the relay's admission webhooks
 * (functions/relay/webhook/ipam-switch.ts), so the webhooks mutate Pods exactly while the controller serves them.
 */

/** Turns Windows IP address management on. */
export const ENABLE_KEY = 'enable-windows-ipam';
/** Hands out /28 prefixes instead of single secondary addresses (Nitro instance types only). */
export const PREFIX_DELEGATION_KEY = 'enable-windows-prefix-delegation';

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/**
 * Go's `strconv.ParseBool`, which the reference applies to both flags: exactly these spellings, no whitespace;
 * anything else is an error (undefined), which the reference takes as false.
 */
export function parseGoBool(value: string): boolean | undefined {
  if (TRUE.has(value)) return true;
  if (FALSE.has(value)) return false;
  return undefined;
}

export interface Flag {
  on: boolean;
  /** The value was there but no boolean (it counts as false): named for the user. */
  problem?: string;
}

/** A flag of the ConfigMap's data: off when missing or unreadable. */
export function readFlag(data: Readonly<Record<string, string>> | undefined, key: string): Flag {
  const value = data?.[key];
  if (value === undefined) return { on: false };
  const parsed = parseGoBool(value);
  if (parsed !== undefined) return { on: parsed };
  return {
    on: false,
    problem: `${key}: "${value}" is not a boolean (true, false, 1, 0, t, f, as Go reads them); taken as false`,
  };
}

/** Whether Windows IP address management is on, by the ConfigMap's data (undefined: no ConfigMap, off). */
export function windowsIpamEnabled(data: Readonly<Record<string, string>> | undefined): boolean {
  return readFlag(data, ENABLE_KEY).on;
}
