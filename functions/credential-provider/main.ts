/**
 * The executable kubelet runs: only process wiring lives here, everything else is in `runCommand` / `runPlugin`
 * where tests drive it through in-memory streams.
 */
import { systemClock } from '../../shared/clock.ts';
import { choosePorts } from './choose-ports.ts';
import { PROGRAM, runCommand } from './cli.ts';

// Injected by scripts/build-credential-provider.ts; absent when run from source.
declare const CREDENTIAL_PROVIDER_VERSION: string | undefined;
const version = typeof CREDENTIAL_PROVIDER_VERSION === 'string' ? CREDENTIAL_PROVIDER_VERSION : 'dev';

runCommand(
  { args: process.argv.slice(2), stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
  {
    version,
    deps: () => ({
      // In the executable this import is the SDK script stored beside the main one (the build's `sdkAsset`).
      ...choosePorts(process.env, { userAgent: `${PROGRAM}/${version}` }, () => import('./aws-ports.ts')),
      clock: systemClock,
      defaultRoleArn: process.env.AWS_ECR_ROLE_ARN,
    }),
  },
).then(
  // Exit at once: the answer is flushed, and idle sockets or timers must not hold kubelet up.
  (code) => process.exit(code),
  () => process.exit(1),
);
