/**
 * The executable kubelet runs: only process wiring lives here, everything else is in `runCommand` / `runPlugin`
 * where tests drive it through in-memory streams.
 */
import { systemClock } from '../../shared/clock.ts';
import { createAwsPorts } from './aws-ports.ts';
import { PROGRAM, runCommand } from './cli.ts';

// Injected by scripts/build-credential-provider.ts; absent when run from source.
declare const CREDENTIAL_PROVIDER_VERSION: string | undefined;
const version = typeof CREDENTIAL_PROVIDER_VERSION === 'string' ? CREDENTIAL_PROVIDER_VERSION : 'dev';

runCommand(
  { args: process.argv.slice(2), stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
  {
    version,
    deps: () => ({
      ...createAwsPorts({ userAgent: `${PROGRAM}/${version}` }),
      clock: systemClock,
      defaultRoleArn: process.env.AWS_ECR_ROLE_ARN,
    }),
  },
).then(
  // Exit at once: the answer is flushed, and idle SDK sockets or timers must not hold kubelet up.
  (code) => process.exit(code),
  () => process.exit(1),
);
