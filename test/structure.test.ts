import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layout's rules, checked on the source tree itself (docs/architecture.md, "Layout"):
 * - production code never imports test support (fakes, emulators, test helpers), so a picture of the imports
 *   tells the truth about what runs in a Lambda or in the relay;
 * - a load balancer front end never imports another front end's folder: shared pieces live in the resource
 *   modules every front end calls;
 * - shared code never imports a function's code: functions build on shared/, never the other way round.
 */

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const PRODUCTION_ROOTS = ['functions', 'shared', 'stacks'];
/** Folders that hold test support only. */
const TEST_SUPPORT_FOLDERS = new Set(['fakes', 'testing']);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const rel = (path: string) => relative(ROOT, path).split(sep).join('/');

function isTestSupport(path: string): boolean {
  const r = rel(path);
  return r.endsWith('.test.ts') || r.startsWith('test/') || r.split('/').some((part) => TEST_SUPPORT_FOLDERS.has(part));
}

/** Every module specifier a file names: static imports and re-exports, dynamic imports. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s+['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
  ];
  for (const pattern of patterns) for (const m of source.matchAll(pattern)) found.push(m[1]!);
  return found;
}

function relativeImports(file: string): string[] {
  return specifiers(readFileSync(file, 'utf8'))
    .filter((s) => s.startsWith('.'))
    .map((s) => resolve(dirname(file), s));
}

const productionFiles = PRODUCTION_ROOTS.flatMap((root) => walk(join(ROOT, root))).filter((f) => !isTestSupport(f));

describe('the layout', () => {
  it('finds the production files it checks', () => {
    expect(productionFiles.length).toBeGreaterThan(100);
    expect(productionFiles.map(rel)).toContain('functions/service/reconciler.ts');
    expect(productionFiles.map(rel)).not.toContain('shared/aws/fakes/ec2/fake-ec2.ts');
  });

  it('tells test support from production code', () => {
    expect(isTestSupport(join(ROOT, 'shared/aws/fakes/ec2/fake-ec2.ts'))).toBe(true);
    expect(isTestSupport(join(ROOT, 'functions/relay/testing/relay.ts'))).toBe(true);
    expect(isTestSupport(join(ROOT, 'functions/relay/relay.test.ts'))).toBe(true);
    expect(isTestSupport(join(ROOT, 'test/helpers/world.ts'))).toBe(true);
    expect(isTestSupport(join(ROOT, 'functions/relay/relay.ts'))).toBe(false);
    expect(
      specifiers("import { a } from './a.ts';\nexport * from '../b.ts';\nconst c = await import('./c.ts');"),
    ).toEqual(['./a.ts', '../b.ts', './c.ts']);
  });

  it('no production file imports a fake, an emulator or a test helper', () => {
    const offenders = productionFiles.flatMap((file) =>
      relativeImports(file)
        .filter((target) => isTestSupport(target))
        .map((target) => `${rel(file)} imports ${rel(target)}`),
    );
    expect(offenders).toEqual([]);
  });

  it('every relative import names a file that exists', () => {
    const missing = productionFiles.flatMap((file) =>
      relativeImports(file)
        .filter((target) => !existsSync(target))
        .map((target) => `${rel(file)} imports ${rel(target)}`),
    );
    expect(missing).toEqual([]);
  });

  it("no load balancer front end of the Service controller imports another front end's folder", () => {
    const service = join(ROOT, 'functions/service');
    const frontEnds = readdirSync(service).filter((name) => existsSync(join(service, name, 'backend.ts')));
    expect(frontEnds.sort()).toEqual(['clb', 'nlb']);
    const offenders = frontEnds.flatMap((frontEnd) =>
      walk(join(service, frontEnd)).flatMap((file) =>
        relativeImports(file)
          .filter((target) =>
            frontEnds.some((other) => other !== frontEnd && target.startsWith(join(service, other) + sep)),
          )
          .map((target) => `${rel(file)} imports ${rel(target)}`),
      ),
    );
    expect(offenders).toEqual([]);
  });

  // A producer only sends keys: the rules it shares with a reconciler live in shared/ (shared/nodes for the resync's
  // node sweep), so a reconciler's folder can change without a producer changing what it sends. Tests may drive both.
  it("no producer (resync, EC2 events router, relay) imports a reconciler's folder", () => {
    const producers = ['resync', 'ec2-events', 'relay'].map((name) => join(ROOT, 'functions', name));
    const reconcilers = ['node', 'node-lifecycle', 'route', 'service', 'ipam', 'interruption'].map((name) =>
      join(ROOT, 'functions', name),
    );
    const offenders = productionFiles
      .filter((file) => producers.some((producer) => file.startsWith(producer + sep)))
      .flatMap((file) =>
        relativeImports(file)
          .filter((target) => reconcilers.some((folder) => target.startsWith(folder + sep)))
          .map((target) => `${rel(file)} imports ${rel(target)}`),
      );
    expect(offenders).toEqual([]);
  });

  // A file one can read whole: past 400 lines it holds more than one thing. Test support counts too (a fake is read
  // as often as the code it stands in for); tests do not. An SDK adapter maps every command of its client in one
  // place, and says so in its header.
  it('no file in functions/ or shared/ is longer than 400 lines, but an SDK adapter that says why', () => {
    const MAX_LINES = 400;
    const REASON = 'longer than 400 lines because';
    const offenders = ['functions', 'shared']
      .flatMap((root) => walk(join(ROOT, root)))
      .filter((file) => !file.endsWith('.test.ts'))
      .flatMap((file) => {
        const source = readFileSync(file, 'utf8');
        const lines = source.split('\n').length - (source.endsWith('\n') ? 1 : 0);
        if (lines <= MAX_LINES) return [];
        const explained = file.endsWith('-adapter.ts') && source.split('\n').slice(0, 20).join('\n').includes(REASON);
        return explained ? [] : [`${rel(file)}: ${lines} lines`];
      });
    expect(offenders).toEqual([]);
  });

  it('no production file in shared/ imports anything under functions/', () => {
    const functions = join(ROOT, 'functions');
    const offenders = productionFiles
      .filter((file) => rel(file).startsWith('shared/'))
      .flatMap((file) =>
        relativeImports(file)
          .filter((target) => target.startsWith(functions + sep))
          .map((target) => `${rel(file)} imports ${rel(target)}`),
      );
    expect(offenders).toEqual([]);
  });
});
