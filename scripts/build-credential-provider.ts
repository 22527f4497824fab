/**
 * Builds the kubelet credential provider as Node.js single executable applications
 * (https://nodejs.org/docs/latest-v22.x/api/single-executable-applications.html), so a node needs no Node.js
 * install: a small loader as the main script; the plugin bundled into one CommonJS script and the SDK adapter
 * (aws-ports.ts) into a second, compiled only by the runs that need it, both stored as assets with V8 code caches
 * taken after warm-up calls to a stand-in AWS; all injected into a stripped copy of the official Node.js binary. One executable per Linux
 * architecture, in dist/credential-provider/. Why this packaging (and not a startup snapshot, bun, UPX, ...): the
 * numbers are in docs/credential-provider.md.
 *
 *   npm run build:credential-provider                 # linux x64 and arm64
 *   npm run build:credential-provider -- --arch x64   # one architecture only
 *
 * The Node.js binaries are exactly the version pinned as the `node` devDependency: the one `npm ci` installed
 * for this machine's architecture, and for the other from the npm registry (`node-linux-<arch>`, the same
 * packages the `node` package installs from), cached under node_modules/.cache.
 *
 * A code cache only loads into the Node.js build (version and architecture) that made it, so each
 * architecture's caches are made by that architecture's Node.js. For the architecture this machine is not, that
 * Node.js runs under qemu user-mode emulation when it is installed (Debian: `apt-get install qemu-user-static
 * libc6-arm64-cross libstdc++6-arm64-cross`, for arm64 on x64); without it that executable is built without code
 * caches (same behaviour, slower start) and the build says so.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import {
  MAIN_ASSET,
  MAIN_CODE_CACHE_ASSET,
  SDK_ASSET,
  SDK_CODE_CACHE_ASSET,
} from '../functions/credential-provider/sea-assets.ts';
import { startFakeAwsServer } from '../functions/credential-provider/testing/fake-aws-server.ts';
import { sdkSchemaKeys } from './sdk-schema-keys.ts';

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

/** How this machine can run another architecture's Node.js: qemu user mode, with that architecture's libc. */
const EMULATION: Record<TargetArch, { qemu: string[]; sysroot: string }> = {
  x64: { qemu: ['qemu-x86_64-static', 'qemu-x86_64'], sysroot: '/usr/x86_64-linux-gnu' },
  arm64: { qemu: ['qemu-aarch64-static', 'qemu-aarch64'], sysroot: '/usr/aarch64-linux-gnu' },
};

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
function hostNodePath(): string {
  return join(ROOT, 'node_modules', 'node', 'bin', 'node');
}

function hostNode(version: string): string {
  const path = hostNodePath();
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

const CREDENTIAL_PROVIDER = join(ROOT, 'functions', 'credential-provider');

/** What every bundle here shares: one CommonJS file for Node.js 22, the SDK's ES modules so unused code drops out. */
const COMMON: BuildOptions = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  // A SEA main script is run as CommonJS, with `require` limited to built-in modules.
  format: 'cjs',
  minify: true,
  mainFields: ['module', 'main'],
  // The SDK lazily `import()`s node:http and friends; as require() they skip booting the ESM loader.
  supported: { 'dynamic-import': false },
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
};

/**
 * main.ts loads the SDK adapter with `import('./aws-ports.ts')`. In the executable that import becomes
 * `loadSdkAsset()`: the adapter is its own script (a SEA asset), compiled only by the runs that need it.
 */
const sdkAsset: Plugin = {
  name: 'sdk-asset',
  setup(b) {
    b.onResolve({ filter: /[\\/]aws-ports\.ts$|^\.\/aws-ports\.ts$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: 'aws-ports', namespace: 'sdk-asset' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'sdk-asset' }, () => ({
      loader: 'js',
      resolveDir: CREDENTIAL_PROVIDER,
      contents: "module.exports = require('./sea-assets.ts').loadSdkAsset();",
    }));
  },
};

/**
 * The plugin's script (and the bench's floor program, packaged the same way) without `node:crypto` at start: the
 * bundled SDK code's imports of it resolve to functions/credential-provider/lazy-crypto.ts, and the SDK's UUID
 * helper's test for a global Web Crypto is answered at build time, since that global's getter loads `node:crypto`
 * too (the helper then takes its own fallback, random bytes from `getRandomValues`). About 5 ms of each start; see
 * that file and docs/credential-provider.md. A bundled module importing a name the stand-in does not export fails
 * the build ("No matching export"), so an SDK update cannot quietly get `undefined` for a function.
 */
const LAZY_CRYPTO: Partial<BuildOptions> = {
  define: { crypto: 'undefined' },
  plugins: [
    {
      name: 'lazy-crypto',
      setup(b) {
        b.onResolve({ filter: /^(node:)?crypto$/ }, () => ({ path: join(CREDENTIAL_PROVIDER, 'lazy-crypto.ts') }));
      },
    },
  ],
};

/**
 * The SDK's IMDS credential provider makes its three requests through its own `node-http` module, a re-export of
 * `node:http`; in the plugin's script that module is functions/credential-provider/imds-http.ts, the same requests
 * on http1.ts's exchange, so the usual node (the instance role) does not load `node:http`. The build fails if the
 * provider no longer imports such a module, rather than quietly loading `node:http` again.
 */
const imdsOnHttp1: Plugin = {
  name: 'imds-on-http1',
  setup(b) {
    let replaced = false;
    b.onResolve({ filter: /^\.\/node-http(\.js)?$/ }, (args) => {
      if (!/[\\/]@smithy[\\/]credential-provider-imds[\\/]/.test(args.importer)) return undefined;
      replaced = true;
      return { path: join(CREDENTIAL_PROVIDER, 'imds-http.ts') };
    });
    b.onEnd(() =>
      replaced
        ? undefined
        : { errors: [{ text: "@smithy/credential-provider-imds no longer imports './node-http'; see imds-http.ts" }] },
    );
  },
};

async function bundleOne(entry: string, outfile: string, options: Partial<BuildOptions>): Promise<string> {
  const result = await build({ ...COMMON, entryPoints: [entry], outfile, ...options });
  const inputs = Object.keys(result.metafile?.inputs ?? {}).length;
  log(`bundled ${inputs} modules into ${relative(ROOT, outfile)} (${kib(outfile)} KiB)`);
  return outfile;
}

export type Scripts = { loader: string; main: string; sdk: string; codeCache: string };

/**
 * The SEA's main script (a loader), the plugin and the SDK adapter (assets), and the script that makes their code
 * caches, bundled into `dir`.
 */
export async function bundleScripts(version: string, dir = WORK): Promise<Scripts> {
  const loader = await bundleOne(join(CREDENTIAL_PROVIDER, 'sea-main.ts'), join(dir, 'sea-main.cjs'), {});
  const main = await bundleOne(ENTRY, join(dir, MAIN_ASSET), {
    define: { ...LAZY_CRYPTO.define, CREDENTIAL_PROVIDER_VERSION: JSON.stringify(version) },
    plugins: [sdkAsset, imdsOnHttp1, ...LAZY_CRYPTO.plugins!],
  });
  if (/\bECRClient\b|client-ecr\/dist-es\/ECRClient/.test(readFileSync(main, 'utf8'))) {
    throw new Error(`${main} contains the SDK clients; the dynamic import of aws-ports.ts was not replaced`);
  }
  const sdk = await bundleOne(join(CREDENTIAL_PROVIDER, 'aws-ports.ts'), join(dir, SDK_ASSET), {
    // Without it every shape of the three APIs stays in the asset (scripts/sdk-schema-keys.ts).
    plugins: [sdkSchemaKeys()],
  });
  const codeCache = await bundleOne(
    join(ROOT, 'scripts', 'credential-provider-code-cache.ts'),
    join(dir, 'code-cache.cjs'),
    {
      minify: false,
    },
  );
  return { loader, main, sdk, codeCache };
}

/** qemu user mode and a sysroot to run `arch`'s Node.js on this machine, if installed. */
function emulatorFor(arch: TargetArch): string[] | undefined {
  const { qemu, sysroot } = EMULATION[arch];
  if (!existsSync(sysroot)) return undefined;
  for (const name of qemu) {
    const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
    if (found) return [found, '-L', sysroot];
  }
  return undefined;
}

/**
 * Runs a command in WORK with an empty environment (nothing of the build machine, AWS_* variables or HOME, may
 * shape what is generated); its output is shown only when it fails. Not spawnSync: the stand-in AWS answering the
 * warm-up runs in this process.
 */
function runChecked([command, ...args]: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command!, args, { cwd: WORK, env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${what} failed: ${output}`))));
  });
}

/**
 * The SEA blob for one architecture: a loader as the main script, and as assets the plugin and the SDK adapter,
 * each with its V8 code cache (scripts/credential-provider-code-cache.ts), taken after calls to `standIn`, the
 * stand-in AWS. A code cache only loads into the Node.js build (version and
 * architecture) that made it, so the caches are made by that architecture's Node.js, natively or under qemu;
 * without a way to run it, the blob has the scripts only (same behaviour, a slower start) and the build says so.
 */
async function seaBlob(
  arch: TargetArch,
  node: string,
  scripts: Scripts,
  standIn: string,
): Promise<{ blob: string; codeCache: boolean }> {
  const native = process.platform === 'linux' && process.arch === arch;
  const runner = native ? [node] : emulatorFor(arch)?.concat(node);
  if (!runner) {
    log(
      `WARNING: cannot run linux-${arch} Node.js here (no ${EMULATION[arch].qemu[0]} or ${EMULATION[arch].sysroot}): ` +
        'building it WITHOUT code caches: same behaviour, a slower start. See docs/credential-provider.md.',
    );
  }
  const nodeCommand = runner ?? [hostNodePath()];
  const run = (what: string, argv: string[]) => runChecked([...nodeCommand, ...argv], `${what} for ${arch}`);
  const assets: Record<string, string> = {
    [MAIN_ASSET]: relative(WORK, scripts.main),
    [SDK_ASSET]: relative(WORK, scripts.sdk),
  };
  if (runner) {
    const caches = [
      { kind: 'main', what: 'the plugin', script: scripts.main, asset: MAIN_CODE_CACHE_ASSET },
      { kind: 'sdk', what: 'the SDK adapter', script: scripts.sdk, asset: SDK_CODE_CACHE_ASSET },
    ];
    for (const { kind, what, script, asset } of caches) {
      const cache = join(WORK, `${asset}-${arch}`);
      await run(`the warm-up and code cache of ${what}`, [scripts.codeCache, kind, script, cache, standIn]);
      assets[asset] = relative(WORK, cache);
    }
  }
  const blob = join(WORK, `sea-prep-${arch}.blob`);
  const config = join(WORK, `sea-config-${arch}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      // Relative to WORK: the blob records these paths, and absolute ones would tie the bytes to the checkout.
      main: relative(WORK, scripts.loader),
      output: relative(WORK, blob),
      disableExperimentalSEAWarning: true,
      useSnapshot: false,
      useCodeCache: runner !== undefined,
      assets,
      // NODE_OPTIONS from the host (kubelet passes its environment on) is ignored: it could otherwise preload code
      // into a process that handles registry credentials.
      execArgvExtension: 'none',
    }),
  );
  await run('generating the SEA blob', ['--experimental-sea-config', config]);
  return { blob, codeCache: runner !== undefined };
}

/**
 * `strip` in JavaScript, so it works for both architectures without binutils for each: drops the section
 * headers' non-loaded tail (.symtab, .strtab, .debug_*, .comment: about 17 MiB of the official binaries), which
 * no loader reads. Refuses any layout it does not expect rather than guess.
 */
export function stripElf(input: Buffer): Buffer {
  const elf = Buffer.from(input);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) throw new Error('not a 64-bit LSB ELF file');
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const shentsize = elf.readUInt16LE(0x3a);
  const shnum = elf.readUInt16LE(0x3c);
  const shstrndx = elf.readUInt16LE(0x3e);
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    return {
      at,
      flags: elf.readBigUInt64LE(at + 8),
      offset: Number(elf.readBigUInt64LE(at + 0x18)),
      size: Number(elf.readBigUInt64LE(at + 0x20)),
      link: elf.readUInt32LE(at + 0x28),
      type: elf.readUInt32LE(at + 4),
    };
  };
  const SHF_ALLOC = 2n;
  const SHT_NOBITS = 8;
  // The loaded sections come first, the rest after them: keep [0, firstUnloaded), then .shstrtab.
  let firstUnloaded = 1;
  while (firstUnloaded < shnum && (section(firstUnloaded).flags & SHF_ALLOC) !== 0n) firstUnloaded++;
  let cut = shoff;
  for (let i = firstUnloaded; i < shnum; i++) {
    const s = section(i);
    if ((s.flags & SHF_ALLOC) !== 0n) throw new Error(`section ${i} is loaded but follows unloaded ones`);
    cut = Math.min(cut, s.offset);
  }
  let loadedEnd = 0;
  for (let i = 1; i < firstUnloaded; i++) {
    const s = section(i);
    if (s.link >= firstUnloaded) throw new Error(`section ${i} links to an unloaded section`);
    if (s.type !== SHT_NOBITS) loadedEnd = Math.max(loadedEnd, s.offset + s.size);
  }
  const phoff = Number(elf.readBigUInt64LE(0x20));
  for (let i = 0; i < elf.readUInt16LE(0x38); i++) {
    const at = phoff + i * elf.readUInt16LE(0x36);
    loadedEnd = Math.max(loadedEnd, Number(elf.readBigUInt64LE(at + 8) + elf.readBigUInt64LE(at + 0x20)));
  }
  if (cut < loadedEnd) throw new Error('unloaded sections overlap the loaded image');
  const names = section(shstrndx);
  const namesData = elf.subarray(names.offset, names.offset + names.size);
  const namesOffset = cut;
  const headersOffset = Math.ceil((namesOffset + namesData.length) / 8) * 8;
  const out = Buffer.alloc(headersOffset + (firstUnloaded + 1) * shentsize);
  elf.copy(out, 0, 0, cut);
  namesData.copy(out, namesOffset);
  for (let i = 0; i < firstUnloaded; i++) {
    const s = section(i);
    elf.copy(out, headersOffset + i * shentsize, s.at, s.at + shentsize);
  }
  const namesHeader = headersOffset + firstUnloaded * shentsize;
  elf.copy(out, namesHeader, names.at, names.at + shentsize);
  out.writeBigUInt64LE(BigInt(namesOffset), namesHeader + 0x18);
  out.writeBigUInt64LE(BigInt(headersOffset), 0x28);
  out.writeUInt16LE(firstUnloaded + 1, 0x3c);
  out.writeUInt16LE(firstUnloaded, 0x3e);
  return out;
}

/** A stripped copy of `node` with `blob` injected, at `out`. */
function injectBlob(node: string, blob: string, out: string): string {
  rmSync(out, { force: true });
  writeFileSync(out, stripElf(readFileSync(node)));
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

/**
 * One script as an executable for this machine, packaged like the provider (a stripped copy of the pinned Node.js,
 * bundled the same way) but with Node.js's own code cache for its main script: the bench's floor program.
 */
export async function buildOneScriptExecutable(entry: string, out: string): Promise<string> {
  const dir = join(ROOT, '.build', basename(out));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const script = await bundleOne(entry, join(dir, 'main.cjs'), LAZY_CRYPTO);
  const blob = join(dir, 'sea-prep.blob');
  const config = join(dir, 'sea-config.json');
  writeFileSync(
    config,
    JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }),
  );
  const node = hostNode(pinnedNodeVersion());
  execFileSync(node, ['--experimental-sea-config', config], { env: {}, stdio: 'pipe' });
  mkdirSync(dirname(out), { recursive: true });
  return injectBlob(node, blob, out);
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

  const scripts = await bundleScripts(packageJson.version);
  hostNode(nodeVersion);
  const built: string[] = [];
  const standIn = await startFakeAwsServer();
  try {
    for (const arch of arches) {
      const node = targetNode(arch, nodeVersion);
      const { blob, codeCache } = await seaBlob(arch, node, scripts, standIn.url);
      const out = injectBlob(node, blob, executablePath(arch));
      log(
        `${relative(ROOT, out)}: node v${nodeVersion}, ${codeCache ? 'code caches' : 'NO code caches'}, ` +
          `${(kib(out) / 1024).toFixed(1)} MiB, sha256 ${sha256(out)}`,
      );
      built.push(out);
    }
  } finally {
    await standIn.close();
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
