/**
 * The example kubelet configs in deploy/credential-provider must agree with the plugin: every registry shape it
 * serves is matched by some `matchImages` pattern, and nothing a pattern matches is refused by the plugin.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROGRAM } from './cli.ts';
import { parseEcrRegistry } from './registry.ts';
import { API_VERSIONS } from './request.ts';

const CONFIGS = ['credential-provider-config.yaml', 'credential-provider-config-service-account.yaml'];

function read(name: string): string {
  return readFileSync(new URL(`../../deploy/credential-provider/${name}`, import.meta.url), 'utf8');
}

/** The quoted list items under `matchImages:` (the example files keep to that one shape). */
function matchImages(yaml: string): string[] {
  const block = /matchImages:\n((?:\s+(?:-\s+"[^"]+"|#.*)\n)+)/.exec(yaml)?.[1] ?? '';
  return [...block.matchAll(/-\s+"([^"]+)"/g)].map((match) => match[1]!);
}

/**
 * kubelet's rule for a host-only pattern: as many DNS labels as the host, each label matched by a glob where
 * `*` stands for any run of characters inside that label.
 */
function kubeletMatches(pattern: string, host: string): boolean {
  const patternLabels = pattern.split('.');
  const hostLabels = host.split('.');
  if (patternLabels.length !== hostLabels.length) return false;
  return patternLabels.every((label, i) => {
    const glob = new RegExp(`^${label.replace(/[.+?^${}()|[\]\\-]/g, '\\$&').replaceAll('*', '[^.]*')}$`);
    return glob.test(hostLabels[i]!);
  });
}

// One host of every shape the plugin serves, as in registry.test.ts.
const SERVED = [
  '111122223333.dkr.ecr.us-east-1.amazonaws.com',
  '111122223333.dkr.ecr-fips.us-gov-west-1.amazonaws.com',
  '111122223333.dkr-ecr.eu-west-1.on.aws',
  '111122223333.dkr-ecr-fips.us-east-2.on.aws',
  '111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn',
  '111122223333.dkr-ecr.cn-northwest-1.on.amazonwebservices.com.cn',
  '111122223333.dkr.ecr.eusc-de-east-1.amazonaws.eu',
  '111122223333.dkr.ecr.us-iso-east-1.c2s.ic.gov',
  '111122223333.dkr.ecr.us-isob-east-1.sc2s.sgov.gov',
  '111122223333.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk',
  '111122223333.dkr.ecr.us-isof-south-1.csp.hci.ic.gov',
  'public.ecr.aws',
  'ecr-public.aws.com',
];

describe('deploy/credential-provider/credential-provider-config.yaml', () => {
  const yaml = read('credential-provider-config.yaml');
  const patterns = matchImages(yaml);

  it.each(SERVED)('matches %s', (host) => {
    expect(patterns.some((pattern) => kubeletMatches(pattern, host))).toBe(true);
  });
});

describe.each(CONFIGS)('deploy/credential-provider/%s', (name) => {
  const yaml = read(name);
  const patterns = matchImages(yaml);

  it('names the executable and speaks an apiVersion the plugin answers', () => {
    expect(yaml).toContain(`- name: ${PROGRAM}`);
    const apiVersion = /^\s+apiVersion: (\S+)/m.exec(yaml)?.[1];
    expect(API_VERSIONS).toContain(apiVersion);
    expect(patterns.length).toBeGreaterThan(0);
  });

  it('only sends the plugin hosts it serves', () => {
    for (const pattern of patterns) {
      // Fill each wildcard label the way a real host would: account first, region after.
      const host = pattern.replace('*', '111122223333').replace('*', 'eu-west-1');
      expect(parseEcrRegistry(host), `${pattern} as ${host}`).toBeDefined();
    }
  });
});
