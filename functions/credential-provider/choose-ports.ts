/**
 * Which AWS adapter answers a run: the direct calls (direct.ts) when the environment is one they serve, the SDK
 * clients (aws-ports.ts) otherwise. The direct calls hand a FIPS or dual-stack registry's calls to the SDK too.
 * The SDK adapter is loaded only when a call needs it: in the executable it is a separate script the usual run
 * never compiles.
 */
import type { AwsPortOptions } from './aws-ports.ts';
import { createDirectPorts, directSetup, type Env, type FileSystem, realFileSystem } from './direct.ts';
import type { EcrPort, EcrPublicPort, StsPort } from './ports.ts';

export type AwsPorts = { ecr: EcrPort; ecrPublic: EcrPublicPort; sts: StsPort };
export type LoadSdkPorts = () => Promise<{ createAwsPorts(options: AwsPortOptions): AwsPorts }>;

export interface ChosenPorts extends AwsPorts {
  /** Why the SDK serves every call of this run; undefined when the direct calls do. */
  sdkBecause: string | undefined;
}

export function choosePorts(
  env: Env,
  options: { userAgent: string },
  loadSdk: LoadSdkPorts,
  fs: FileSystem = realFileSystem,
): ChosenPorts {
  let sdkPorts: Promise<AwsPorts> | undefined;
  const sdk = () => {
    sdkPorts ??= loadSdk().then((module) => module.createAwsPorts({ userAgent: options.userAgent }));
    return sdkPorts;
  };
  const setup = directSetup(env, fs);
  if ('sdkBecause' in setup) {
    return {
      sdkBecause: setup.sdkBecause,
      ecr: { getAuthorizationToken: async (...args) => (await sdk()).ecr.getAuthorizationToken(...args) },
      ecrPublic: { getAuthorizationToken: async (...args) => (await sdk()).ecrPublic.getAuthorizationToken(...args) },
      sts: { assumeRoleWithWebIdentity: async (input) => (await sdk()).sts.assumeRoleWithWebIdentity(input) },
    };
  }
  return { sdkBecause: undefined, ...createDirectPorts(setup, options, sdk) };
}
