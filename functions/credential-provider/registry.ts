import { UnsupportedRegistryError } from './errors.ts';

/** A private ECR registry, with what the API call needs to reach the matching endpoint. */
export interface PrivateEcrRegistry {
  kind: 'private';
  /** The registry as written in the image (the `auth` key kubelet matches on). */
  host: string;
  accountId: string;
  region: string;
  /** The partition's DNS suffix the host ends with: `amazonaws.com`, `amazonaws.com.cn`, ... */
  dnsSuffix: string;
  /** `-fips` host: the token must come from the FIPS endpoint too. */
  fips: boolean;
  /** `dkr-ecr` host: the node may be IPv6-only, so the API call goes dual-stack as well. */
  dualStack: boolean;
}

/** ECR Public: one global registry whose tokens come from ECR Public in us-east-1. */
export interface PublicEcrRegistry {
  kind: 'public';
  host: string;
}

export type EcrRegistry = PrivateEcrRegistry | PublicEcrRegistry;

/** ECR Public only has an API in us-east-1 (https://docs.aws.amazon.com/general/latest/gr/ecr-public.html). */
export const ECR_PUBLIC_REGION = 'us-east-1';
export const ECR_PUBLIC_DNS_SUFFIX = 'amazonaws.com';

const PUBLIC_HOSTS = new Set(['public.ecr.aws', 'ecr-public.aws.com']);

/**
 * The DNS suffix of every partition that runs ECR: commercial, China (classic and dual-stack), EU sovereign
 * cloud, dual-stack `on.aws`, and the ISO partitions.
 */
const PARTITION_SUFFIXES = [
  'amazonaws.com',
  'amazonaws.com.cn',
  'amazonaws.eu',
  'on.aws',
  'on.amazonwebservices.com.cn',
  'sc2s.sgov.gov',
  'c2s.ic.gov',
  'cloud.adc-e.uk',
  'csp.hci.ic.gov',
];

const escapeDots = (suffix: string) => suffix.replaceAll('.', '\\.');

/**
 * `<12-digit account>.dkr.ecr[-fips].<region>.<suffix>` and the dual-stack `<account>.dkr-ecr[-fips]...`.
 * Regions look like `us-east-1`, `us-gov-west-1`, `eusc-de-east-1` or `us-isob-east-1`.
 */
const PRIVATE_HOST = new RegExp(
  `^(?<account>\\d{12})\\.dkr(?<separator>[.-])ecr(?<fips>-fips)?\\.(?<region>[a-z]+(?:-[a-z]+)+-\\d+)\\.` +
    `(?<suffix>${PARTITION_SUFFIXES.map(escapeDots).join('|')})$`,
);

/**
 * The registry part of an image reference, as kubelet would key it: the first path component when it looks
 * like a host (has a dot or port, or is localhost); otherwise the image is on Docker Hub.
 */
export function registryHostOf(image: string): string | undefined {
  const slash = image.indexOf('/');
  if (slash <= 0) return undefined;
  const first = image.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') return first;
  return undefined;
}

/** Classifies a registry host; undefined when it is not ECR. A `:port` is tolerated and kept in `host`. */
export function parseEcrRegistry(host: string): EcrRegistry | undefined {
  const hostname = host.replace(/:\d+$/, '').toLowerCase();
  if (PUBLIC_HOSTS.has(hostname)) return { kind: 'public', host };
  const match = PRIVATE_HOST.exec(hostname);
  if (!match?.groups) return undefined;
  const { account, separator, fips, region, suffix } = match.groups;
  return {
    kind: 'private',
    host,
    accountId: account!,
    region: region!,
    dnsSuffix: suffix!,
    fips: fips !== undefined,
    dualStack: separator === '-',
  };
}

/** The ECR registry an image is pulled from, or an error naming the image's host when it is not ECR. */
export function ecrRegistryOfImage(image: string): EcrRegistry {
  const host = registryHostOf(image);
  if (host === undefined) {
    throw new UnsupportedRegistryError(
      `image ${JSON.stringify(image)} is on Docker Hub, not ECR: narrow matchImages in the kubelet CredentialProviderConfig`,
    );
  }
  const registry = parseEcrRegistry(host);
  if (registry === undefined) {
    throw new UnsupportedRegistryError(
      `registry ${JSON.stringify(host)} of image ${JSON.stringify(image)} is not an ECR registry: ` +
        'narrow matchImages in the kubelet CredentialProviderConfig',
    );
  }
  return registry;
}
