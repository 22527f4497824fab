/**
 * Builds the kubelet credential provider as Node.js single executable applications
 * (https://nodejs.org/docs/latest-v22.x/api/single-executable-applications.html): the plugin bundled into one
 * CommonJS file, wrapped in a SEA blob and injected into an official Node.js binary, so a node needs no
 * Node.js install. One executable per Linux architecture, in dist/credential-provider/.
 *
 *   npm run build:credential-provider                 # linux x64 and arm64
 *   npm run build:credential-provider -- --arch x64   # one architecture only
 *
 * The Node.js binaries are exactly the version pinned as the `node` devDependency: the one `npm ci` installed
 * for this machine's architecture, and for the other from the npm registry (`node-linux-<arch>`, the same
 * packages the `node` package installs from), cached under node_modules/.cache.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const WORK = join(ROOT, '.build', 'credential-provider');
const OUT = join(ROOT, 'dist', 'credential-provider');
const CACHE = join(ROOT, 'node_modules', '.cache', 'credential-provider');
const ENTRY = join(ROOT, 'functions', 'credential-provider', 'main.ts');

export type TargetArch = 'x64' | 'arm64';
export const TARGET_ARCHES: readonly TargetArch[] = ['x64', 'arm64'];

/** Where the executable for an architecture lands; the bench and the executable test look here. */
export function executablePath(arch: TargetArch): string {
  return join(OUT, `ecr-credential-provider-linux-${arch}`);
}

/** The fuse Node.js looks for to know a blob was injected (fixed for every Node.js version with SEA). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** ELF e_machine values, to prove a downloaded binary is for the architecture we think. */
const ELF_MACHINE: Record<TargetArch, number> = { x64: 0x3e, arm64: 0xb7 };

const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
};

/** The exact Node.js version: the `node` devDependency, which must be pinned (no ranges). */
function pinnedNodeVersion(): string {
  const version = packageJson.devDependencies.node;
  if (!version || !/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`devDependencies.node must be an exact version, got ${JSON.stringify(version)}`);
  }
  return version;
}

function log(message: string): void {
  process.stdout.write(`[build:credential-provider] ${message}\n`);
}

/** The pinned Node.js this machine runs; it generates the blob, which then fits every target of that version. */
function hostNode(version: string): string {
  const path = join(ROOT, 'node_modules', 'node', 'bin', 'node');
  const actual = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
  if (actual !== `v${version}`) throw new Error(`${path} is ${actual}, expected v${version}: run npm ci`);
  return path;
}

function assertElf(path: string, arch: TargetArch): void {
  const header = readFileSync(path).subarray(0, 20);
  const isElf = header.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  if (!isElf || header.readUInt16LE(18) !== ELF_MACHINE[arch]) {
    throw new Error(`${path} is not a linux-${arch} ELF executable`);
  }
}

/** A Node.js binary of the pinned version for `arch`: the installed one if it matches, else from the registry. */
function targetNode(arch: TargetArch, version: string): string {
  if (process.platform === 'linux' && process.arch === arch) return hostNode(version);
  const cached = join(CACHE, `node-linux-${arch}-${version}`, 'node');
  if (!existsSync(cached)) {
    const spec = `node-linux-${arch}@${version}`;
    log(`fetching ${spec} from the npm registry`);
    const scratch = join(tmpdir(), `credential-provider-${arch}-${process.pid}`);
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    try {
      // npm checks the tarball against the registry's integrity hash.
      const output = execFileSync('npm', ['pack', spec, '--pack-destination', scratch, '--json', '--silent'], {
        encoding: 'utf8',
        cwd: scratch,
      });
      const [{ filename }] = JSON.parse(output) as [{ filename: string }];
      execFileSync('tar', ['-xzf', join(scratch, filename), '-C', scratch, 'package/bin/node']);
      mkdirSync(dirname(cached), { recursive: true });
      copyFileSync(join(scratch, 'package', 'bin', 'node'), cached);
      chmodSync(cached, 0o755);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  assertElf(cached, arch);
  return cached;
}

async function bundle(version: string): Promise<string> {
  const outfile = join(WORK, 'main.cjs');
  const result = await build({
    entryPoints: [ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node22',
    // A SEA main script is run as CommonJS, with `require` limited to built-in modules.
    format: 'cjs',
    minify: true,
    // The SDK ships ES modules next to CommonJS; preferring them lets esbuild drop what is never called.
    mainFields: ['module', 'main'],
    // The SDK lazily `import()`s node:http and friends; as require() they skip booting the ESM loader.
    supported: { 'dynamic-import': false },
    define: { CREDENTIAL_PROVIDER_VERSION: JSON.stringify(version) },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  const inputs = Object.keys(result.metafile.inputs).length;
  log(`bundled ${inputs} modules into ${relative(ROOT, outfile)} (${kib(outfile)} KiB)`);
  return outfile;
}

/**
 * The SEA blob holds only the script: no snapshot and no code cache, as both are tied to the architecture that
 * generated them, and one blob serves both targets. NODE_OPTIONS from the host (kubelet passes its environment
 * on) is ignored: it could otherwise preload code into a process that handles registry credentials.
 */
function seaBlob(node: string, script: string): string {
  const blob = join(WORK, 'sea-prep.blob');
  const config = join(WORK, 'sea-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      // Relative to WORK: the blob records this path, and an absolute one would tie the bytes to the checkout.
      main: relative(WORK, script),
      output: relative(WORK, blob),
      disableExperimentalSEAWarning: true,
      useSnapshot: false,
      useCodeCache: false,
      execArgvExtension: 'none',
    }),
  );
  const result = spawnSync(node, ['--experimental-sea-config', config], { encoding: 'utf8', cwd: WORK });
  if (result.status !== 0) throw new Error(`generating the SEA blob failed: ${result.stdout}${result.stderr}`);
  return blob;
}

async function executable(arch: TargetArch, node: string, blob: string): Promise<string> {
  const out = executablePath(arch);
  rmSync(out, { force: true });
  copyFileSync(node, out);
  chmodSync(out, 0o755);
  // postject's CLI, run by the pinned Node.js. Its output is only worth showing when it fails: on success it is a
  // banner plus LIEF warnings ("Can't find string offset for section name") about the official binaries' notes.
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  const result = spawnSync(process.execPath, [postject, out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], {
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`postject failed on ${out}: ${result.stdout}${result.stderr}`);
  return out;
}

function kib(path: string): number {
  return Math.round(readFileSync(path).length / 1024);
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function requestedArches(argv: readonly string[]): TargetArch[] {
  const index = argv.indexOf('--arch');
  if (index < 0) return [...TARGET_ARCHES];
  const value = argv[index + 1];
  if (!TARGET_ARCHES.includes(value as TargetArch)) {
    throw new Error(`--arch must be one of ${TARGET_ARCHES.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return [value as TargetArch];
}

export async function buildCredentialProvider(arches: readonly TargetArch[] = TARGET_ARCHES): Promise<string[]> {
  const nodeVersion = pinnedNodeVersion();
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  mkdirSync(OUT, { recursive: true });

  const script = await bundle(packageJson.version);
  const blob = seaBlob(hostNode(nodeVersion), script);
  const built: string[] = [];
  for (const arch of arches) {
    const out = await executable(arch, targetNode(arch, nodeVersion), blob);
    log(`${relative(ROOT, out)}: node v${nodeVersion}, ${(kib(out) / 1024).toFixed(1)} MiB, sha256 ${sha256(out)}`);
    built.push(out);
  }

  // Prove the result starts, where this machine can run it.
  const native = arches.find((arch) => process.platform === 'linux' && process.arch === arch);
  if (native) {
    const answer = execFileSync(executablePath(native), ['--version'], { encoding: 'utf8' }).trim();
    log(`smoke test: ${answer}`);
  }
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildCredentialProvider(requestedArches(process.argv.slice(2))).catch((err: unknown) => {
    process.stderr.write(`[build:credential-provider] failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
