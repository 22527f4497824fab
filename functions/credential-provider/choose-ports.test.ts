import { describe, expect, it } from 'vitest';
import { type AwsPorts, choosePorts } from './choose-ports.ts';
import type { FileSystem } from './direct-setup.ts';

const NO_FILES: FileSystem = { exists: () => false, home: () => '/root', profiles: async () => ({}) };
// Port 9 (discard) on loopback: nothing listens, so a direct call fails at once.
const KEYS = { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret', AWS_ENDPOINT_URL: 'http://127.0.0.1:9' };
const ENDPOINT = { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false };

/** A stand-in for the SDK adapter that records whether it was loaded and what it answered. */
function sdkStandIn() {
  const calls: string[] = [];
  let loads = 0;
  const answer =
    <T>(call: string, value: T) =>
    async () => {
      calls.push(call);
      return value;
    };
  const ports: AwsPorts = {
    ecr: { getAuthorizationToken: answer('sdk ecr', { authorizationToken: 'sdk' }) },
    ecrPublic: { getAuthorizationToken: answer('sdk ecr-public', { authorizationToken: 'sdk' }) },
    sts: { assumeRoleWithWebIdentity: answer('sdk sts', { accessKeyId: 'A', secretAccessKey: 'S' }) },
  };
  return {
    calls,
    loads: () => loads,
    load: async () => {
      loads++;
      return { createAwsPorts: () => ports };
    },
  };
}

describe('choosePorts', () => {
  it('does not load the SDK for the usual node setup, and loads it once for FIPS registries', async () => {
    const sdk = sdkStandIn();
    const ports = choosePorts(KEYS, { userAgent: 'test' }, sdk.load, NO_FILES);

    expect(await ports.sdkBecause()).toBeUndefined();
    // The direct call goes to AWS_ENDPOINT_URL (nothing listens there): it fails without loading the SDK.
    await expect(ports.ecr.getAuthorizationToken(ENDPOINT)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(sdk.loads()).toBe(0);
    const fips = { ...ENDPOINT, fips: true };
    const input = {
      roleArn: 'arn:aws:iam::111122223333:role/r',
      webIdentityToken: 't',
      roleSessionName: 's',
      region: 'eu-west-1',
      dnsSuffix: 'amazonaws.com',
      fips: true,
      dualStack: false,
    };
    await ports.sts.assumeRoleWithWebIdentity(input);
    await ports.ecr.getAuthorizationToken(fips);
    expect(sdk.loads()).toBe(1);
    expect(sdk.calls).toEqual(['sdk sts', 'sdk ecr']);
  });

  it('sends ECR and ECR Public to the SDK when the environment needs its chain, and says why', async () => {
    const sdk = sdkStandIn();
    const ports = choosePorts({ ...KEYS, AWS_RETRY_MODE: 'adaptive' }, { userAgent: 'test' }, sdk.load, NO_FILES);

    expect(await ports.sdkBecause()).toBe('AWS_RETRY_MODE is set');
    await expect(ports.ecr.getAuthorizationToken(ENDPOINT)).resolves.toEqual({ authorizationToken: 'sdk' });
    await expect(ports.ecrPublic.getAuthorizationToken()).resolves.toEqual({ authorizationToken: 'sdk' });
    expect(sdk.calls).toEqual(['sdk ecr', 'sdk ecr-public']);
    expect(sdk.loads()).toBe(1);
  });

  it('reports a failure to load the SDK as the call failing', async () => {
    const ports = choosePorts(
      { AWS_RETRY_MODE: 'adaptive' },
      { userAgent: 'test' },
      () => Promise.reject(new Error('no asset')),
      NO_FILES,
    );
    await expect(ports.ecr.getAuthorizationToken(ENDPOINT)).rejects.toThrow('no asset');
  });
});
