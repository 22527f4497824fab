/**
 * Which AWS adapter answers a run: the direct calls (direct.ts) when the environment is one they serve, the SDK
 * clients (aws-ports.ts) otherwise, and always the SDK for STS (service-account pulls). The SDK adapter is loaded
 * only when a call needs it: in the executable it is a separate script the common case never compiles.
 */
import type { AwsPortOptions } from './aws-ports.ts';
import { createDirectPorts, directSetup, type Env, type FileSystem, realFileSystem } from './direct.ts';
import type { EcrPort, EcrPublicPort, StsPort } from './ports.ts';

export type AwsPorts = { ecr: EcrPort; ecrPublic: EcrPublicPort; sts: StsPort };
export type LoadSdkPorts = () => Promise<{ createAwsPorts(options: AwsPortOptions): AwsPorts }>;

export interface ChosenPorts extends AwsPorts {
  /** Why the SDK serves ECR and ECR Public in this run; undefined when the direct calls do. */
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
  const sts: StsPort = {
    assumeRoleWithWebIdentity: async (input) => (await sdk()).sts.assumeRoleWithWebIdentity(input),
  };
  const setup = directSetup(env, fs);
  if ('sdkBecause' in setup) {
    return {
      sdkBecause: setup.sdkBecause,
      ecr: { getAuthorizationToken: async (...args) => (await sdk()).ecr.getAuthorizationToken(...args) },
      ecrPublic: { getAuthorizationToken: async (...args) => (await sdk()).ecrPublic.getAuthorizationToken(...args) },
      sts,
    };
  }
  return { sdkBecause: undefined, ...createDirectPorts(setup, options), sts };
}
