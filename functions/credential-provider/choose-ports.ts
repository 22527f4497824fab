/**
 * Which AWS adapter answers a run: the direct calls (direct.ts) when the environment is one they serve, the SDK
 * clients (aws-ports.ts) otherwise. The direct calls hand a FIPS or dual-stack registry's calls to the SDK too.
 * The SDK adapter is loaded only when a call needs it: in the executable it is a separate script the usual run
 * never compiles. The choice is made on the first call (it may read the shared config files), once per run.
 */
import { proxyEnv } from '../../shared/net/proxy.ts';
import type { AwsPortOptions } from './aws-ports.ts';
import { createDirectPorts } from './direct.ts';
import { directSetup, type Env, type FileSystem, realFileSystem } from './direct-setup.ts';
import type { EcrPort, EcrPublicPort, StsPort } from './ports.ts';

export type AwsPorts = { ecr: EcrPort; ecrPublic: EcrPublicPort; sts: StsPort };
export type LoadSdkPorts = () => Promise<{ createAwsPorts(options: AwsPortOptions): AwsPorts }>;

export interface ChosenPorts extends AwsPorts {
  /** Why the SDK serves every call of this run; undefined when the direct calls do. */
  sdkBecause(): Promise<string | undefined>;
}

export function choosePorts(
  env: Env,
  options: { userAgent: string },
  loadSdk: LoadSdkPorts,
  fs: FileSystem = realFileSystem,
): ChosenPorts {
  let sdkPorts: Promise<AwsPorts> | undefined;
  const proxies = proxyEnv(env);
  const sdk = () => {
    sdkPorts ??= loadSdk().then((module) =>
      module.createAwsPorts({ userAgent: options.userAgent, ...(proxies ? { proxies } : {}) }),
    );
    return sdkPorts;
  };
  let choice: Promise<{ ports?: AwsPorts; sdkBecause?: string }> | undefined;
  const choose = () => {
    choice ??= directSetup(env, fs).then((setup) =>
      'sdkBecause' in setup ? { sdkBecause: setup.sdkBecause } : { ports: createDirectPorts(setup, options, sdk) },
    );
    return choice;
  };
  const ports = async () => (await choose()).ports ?? (await sdk());
  return {
    sdkBecause: async () => (await choose()).sdkBecause,
    ecr: { getAuthorizationToken: async (...args) => (await ports()).ecr.getAuthorizationToken(...args) },
    ecrPublic: { getAuthorizationToken: async (...args) => (await ports()).ecrPublic.getAuthorizationToken(...args) },
    sts: { assumeRoleWithWebIdentity: async (input) => (await ports()).sts.assumeRoleWithWebIdentity(input) },
  };
}
