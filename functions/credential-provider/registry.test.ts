import { describe, expect, it } from 'vitest';
import { UnsupportedRegistryError } from './errors.ts';
import { ecrRegistryOfImage, parseEcrRegistry, registryHostOf } from './registry.ts';

describe('parseEcrRegistry', () => {
  it.each([
    // host, region, fips, dualStack
    ['111122223333.dkr.ecr.us-east-1.amazonaws.com', 'us-east-1', false, false],
    ['111122223333.dkr.ecr-fips.us-east-1.amazonaws.com', 'us-east-1', true, false],
    ['111122223333.dkr.ecr-fips.us-gov-west-1.amazonaws.com', 'us-gov-west-1', true, false],
    ['111122223333.dkr-ecr.eu-west-1.on.aws', 'eu-west-1', false, true],
    ['111122223333.dkr-ecr-fips.us-east-2.on.aws', 'us-east-2', true, true],
    ['111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn', 'cn-north-1', false, false],
    ['111122223333.dkr-ecr.cn-northwest-1.on.amazonwebservices.com.cn', 'cn-northwest-1', false, true],
    ['111122223333.dkr.ecr.eusc-de-east-1.amazonaws.eu', 'eusc-de-east-1', false, false],
    ['111122223333.dkr.ecr.us-iso-east-1.c2s.ic.gov', 'us-iso-east-1', false, false],
    ['111122223333.dkr.ecr.us-isob-east-1.sc2s.sgov.gov', 'us-isob-east-1', false, false],
    ['111122223333.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk', 'eu-isoe-west-1', false, false],
    ['111122223333.dkr.ecr.us-isof-south-1.csp.hci.ic.gov', 'us-isof-south-1', false, false],
    ['111122223333.dkr.ecr.ap-southeast-5.amazonaws.com', 'ap-southeast-5', false, false],
  ])('%s is private ECR in %s (fips %s, dual-stack %s)', (host, region, fips, dualStack) => {
    expect(parseEcrRegistry(host)).toEqual({
      kind: 'private',
      host,
      accountId: '111122223333',
      region,
      // Whatever follows the region: the partition's (or, for dual-stack hosts, the dual-stack) DNS suffix.
      dnsSuffix: host.slice(host.indexOf(region) + region.length + 1),
      fips,
      dualStack,
    });
  });

  it.each(['public.ecr.aws', 'ecr-public.aws.com'])('%s is ECR Public', (host) => {
    expect(parseEcrRegistry(host)).toEqual({ kind: 'public', host });
  });

  it('keeps the host as written (port, case) for the auth key but parses it case-insensitively', () => {
    expect(parseEcrRegistry('111122223333.DKR.ECR.us-east-1.amazonaws.com:443')).toMatchObject({
      kind: 'private',
      host: '111122223333.DKR.ECR.us-east-1.amazonaws.com:443',
      region: 'us-east-1',
    });
  });

  it.each([
    'docker.io',
    'registry.k8s.io',
    'gcr.io',
    'localhost:5000',
    '11112222333.dkr.ecr.us-east-1.amazonaws.com', // 11 digits
    '1111222233334.dkr.ecr.us-east-1.amazonaws.com', // 13 digits
    '111122223333.dkr.ecr.us-east-1.amazonaws.com.evil.example', // suffix must end the host
    'evil.111122223333.dkr.ecr.us-east-1.amazonaws.com', // and the account must start it
    '111122223333.dkr.ecr.us-east-1.example.com',
    '111122223333.dkr.ecr.amazonaws.com', // no region
    '111122223333.dkr.ecr.useast1.amazonaws.com', // not a region
    '111122223333.dkr_ecr.us-east-1.amazonaws.com',
    '111122223333.dkr.ecr-fips-x.us-east-1.amazonaws.com',
    'api.ecr.us-east-1.amazonaws.com', // the API, not a registry
    'public.ecr.aws.evil.example',
    'vpce-0a1b2c3d.dkr.ecr.us-east-1.vpce.amazonaws.com',
  ])('%s is not ECR', (host) => {
    expect(parseEcrRegistry(host)).toBeUndefined();
  });
});

describe('registryHostOf', () => {
  it.each([
    ['111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1.4.2', '111122223333.dkr.ecr.eu-west-1.amazonaws.com'],
    ['111122223333.dkr.ecr.eu-west-1.amazonaws.com/api@sha256:abc', '111122223333.dkr.ecr.eu-west-1.amazonaws.com'],
    ['public.ecr.aws/nginx/nginx:1.27', 'public.ecr.aws'],
    ['localhost/app', 'localhost'],
    ['registry:5000/app', 'registry:5000'],
  ])('%s -> %s', (image, host) => {
    expect(registryHostOf(image)).toBe(host);
  });

  it.each(['nginx', 'nginx:1.27', 'library/nginx', '/leading-slash'])('%s is a Docker Hub image', (image) => {
    expect(registryHostOf(image)).toBeUndefined();
  });
});

describe('ecrRegistryOfImage', () => {
  it('names the host and the kubelet setting to fix when the registry is not ECR', () => {
    expect(() => ecrRegistryOfImage('quay.io/team/app:1')).toThrow(UnsupportedRegistryError);
    expect(() => ecrRegistryOfImage('quay.io/team/app:1')).toThrow(
      /registry "quay.io" of image "quay.io\/team\/app:1" is not an ECR registry: narrow matchImages/,
    );
  });

  it('refuses Docker Hub images', () => {
    expect(() => ecrRegistryOfImage('nginx:1.27')).toThrow(/is on Docker Hub, not ECR/);
  });
});
