/**
 * The executable kubelet runs: only process wiring lives here, everything else is in `runCommand` / `runPlugin`
 * where tests drive it through in-memory streams.
 */
import { startupSnapshot } from 'node:v8';
import { systemClock } from '../../shared/clock.ts';
import { createAwsPorts } from './aws-ports.ts';
import { PROGRAM, runCommand } from './cli.ts';
import { warmUp } from './warm-up.ts';

// Injected by scripts/build-credential-provider.ts; absent when run from source.
declare const CREDENTIAL_PROVIDER_VERSION: string | undefined;
const version = typeof CREDENTIAL_PROVIDER_VERSION === 'string' ? CREDENTIAL_PROVIDER_VERSION : 'dev';

function main(): void {
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
}

// Built into a startup snapshot (https://nodejs.org/docs/latest-v22.x/api/v8.html#startup-snapshot-api), this
// module and everything it imports is evaluated once at build time, and the exchange run once against canned
// answers (warm-up.ts); the snapshot is written when that is done, and the executable only runs `main`.
if (startupSnapshot.isBuildingSnapshot()) {
  startupSnapshot.setDeserializeMainFunction(main);
  warmUp(version).catch((err: unknown) => {
    process.stderr.write(`${PROGRAM}: warm-up failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
} else main();
