import type { IpamDeps } from './deps.ts';
import { units } from './observe.ts';
import type { Allocation } from './plan.ts';

/**
 * What of an AssignPrivateIpAddresses answer joins the pool. A Pod must only ever get an address EC2 describes as a
 * secondary address of the Node's interface (`Primary: false` in DescribeNetworkInterfaces): never the interface's
 * primary address (the Node's own), never an address the pool already has.
 *
 * EC2 answers exactly the addresses (or prefixes) the call assigned, no more than asked, none the interface already
 * had: such an answer is taken at its word, without another call (a describe right after the assign may not show
 * them yet: EC2 is eventually consistent, which `fresh` in the journal covers). Any other answer (the AWS API
 * emulator's lists every address of the interface, the primary included: docs/emulator-differences.md,
 * `eni.assign-answer`) is checked with one DescribeNetworkInterfaces, and only the new units it shows as secondary
 * join the pool; new ones it does not show yet are left to the next look at EC2 (`unconfirmed`).
 */

export interface Known {
  /** The interface's primary address, from the last look at EC2. */
  primary: string | undefined;
  /** Addresses and prefixes the pool has (in use, free or cooling); not those being released (EC2 may hand them back). */
  addresses: ReadonlySet<string>;
  prefixes: ReadonlySet<string>;
}

export interface Admitted {
  addresses: string[];
  prefixes: string[];
  /** New units the answer named that DescribeNetworkInterfaces did not show: the next pass looks at EC2. */
  unconfirmed: number;
}

export async function admitAssigned(
  deps: Pick<IpamDeps, 'ec2' | 'log'>,
  eni: string,
  requested: Allocation,
  answer: { addresses: readonly string[]; prefixes: readonly string[] },
  known: Known,
): Promise<Admitted> {
  const addresses = [...new Set(answer.addresses)];
  const prefixes = [...new Set(answer.prefixes)];
  const asked =
    'count' in requested ? { addresses: requested.count, prefixes: 0 } : { addresses: 0, prefixes: requested.prefixes };
  const exact =
    known.primary !== undefined &&
    addresses.length === answer.addresses.length &&
    prefixes.length === answer.prefixes.length &&
    addresses.length <= asked.addresses &&
    prefixes.length <= asked.prefixes &&
    addresses.every((a) => a !== known.primary && !known.addresses.has(a)) &&
    prefixes.every((p) => !known.prefixes.has(p));
  if (exact) return { addresses, prefixes, unconfirmed: 0 };

  const newAddresses = addresses.filter((a) => a !== known.primary && !known.addresses.has(a));
  const newPrefixes = prefixes.filter((p) => !known.prefixes.has(p));
  const [described] = await deps.ec2.describeNetworkInterfaces({ networkInterfaceIds: [eni] });
  const shown = described ? units(described) : { addresses: [], prefixes: [] };
  const secondary = new Set(shown.addresses.filter((a) => a !== known.primary));
  const delegated = new Set(shown.prefixes);
  const admitted = {
    addresses: newAddresses.filter((a) => secondary.has(a)),
    prefixes: newPrefixes.filter((p) => delegated.has(p)),
  };
  const unconfirmed = newAddresses.length + newPrefixes.length - admitted.addresses.length - admitted.prefixes.length;
  deps.log.warn(
    'AssignPrivateIpAddresses answered more than it assigned: only the new secondary units EC2 describes join the pool',
    {
      eni,
      asked: asked.addresses || asked.prefixes,
      answered: addresses.length + prefixes.length,
      admitted: admitted.addresses.length + admitted.prefixes.length,
      unconfirmed,
    },
  );
  return { ...admitted, unconfirmed };
}
