import type { Readable, Writable } from 'node:stream';
import { type PluginDeps, runPlugin } from './plugin.ts';

export const PROGRAM = 'ecr-credential-provider';

export interface CommandIo {
  /** Arguments after the program name (kubelet passes the provider's `args`). */
  args: readonly string[];
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
}

export interface CommandOptions {
  version: string;
  /** Built only when a request is actually answered, so `--version` never touches AWS configuration. */
  deps: () => PluginDeps;
}

const USAGE = `usage: ${PROGRAM} [--version | --help]

A kubelet image credential provider for Amazon ECR and ECR Public. kubelet writes one
CredentialProviderRequest on stdin; the answer is one CredentialProviderResponse on stdout.
Environment: AWS_ECR_ROLE_ARN (role for service-account pulls whose annotations name none),
plus the usual AWS SDK variables (AWS_ENDPOINT_URL_ECR, AWS_EC2_METADATA_*, proxies).
`;

/**
 * The whole command line contract, minus process wiring: returns the exit code. kubelet treats a non-zero exit
 * as failure and puts stderr into its error, so a failure is exactly one line there and nothing on stdout.
 */
export async function runCommand(io: CommandIo, options: CommandOptions): Promise<number> {
  try {
    const [first, ...rest] = io.args;
    if (first === '--version' && rest.length === 0) {
      await write(io.stdout, `${PROGRAM} ${options.version}\n`);
      return 0;
    }
    if ((first === '--help' || first === '-h') && rest.length === 0) {
      await write(io.stdout, USAGE);
      return 0;
    }
    if (first !== undefined) {
      await write(io.stderr, `${PROGRAM}: unexpected argument ${JSON.stringify(first)}; see --help\n`);
      return 1;
    }
    await runPlugin(io.stdin, io.stdout, options.deps());
    return 0;
  } catch (err) {
    await write(io.stderr, `${PROGRAM}: ${oneLine(err instanceof Error ? err.message : String(err))}\n`);
    return 1;
  }
}

/** kubelet logs stderr verbatim; keep it to one readable line even when AWS sends a multi-line message. */
function oneLine(message: string): string {
  const flat = message.replace(/\s*[\r\n]+\s*/g, ' ').trim();
  return flat.length > 2000 ? `${flat.slice(0, 2000)}...` : flat;
}

function write(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve) => {
    // A closed stderr must not turn into a second failure; there is nowhere left to report it.
    stream.write(text, () => resolve());
  });
}
