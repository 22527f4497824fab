import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '../../scripts/build.ts';
import { ON_DEMAND_DIR } from '../../scripts/on-demand.ts';

/**
 * A Lambda package as scripts/build.ts makes it, outside the repository (as in Lambda: no node_modules to fall back
 * on): one file at a cold start, and every module it loads on demand a package of its own that loads.
 */
const out = mkdtempSync(join(tmpdir(), 'on-demand-'));
const dir = join(out, 'node');
let meta: Metafile;
beforeAll(async () => {
  await bundleFunction('node', out);
  meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Metafile;
}, 120_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

const ENV = {
  PATH: process.env.PATH,
  CLUSTER_NAME: 'test',
  AWS_REGION: 'eu-west-1',
  NODE_LIFECYCLE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/000000000000/node-lifecycle.fifo',
};

/** Imports `file` in a fresh Node process; its stdout is the module's export names. */
function load(file: string) {
  const script = `const m = await import(${JSON.stringify(`file://${resolve(file)}`)}); console.log(Object.keys(m).join(','));`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: ENV, encoding: 'utf8' });
}

const outputOf = (file: string) => meta.outputs[Object.keys(meta.outputs).find((o) => resolve(o) === resolve(file))!]!;

describe('a Lambda package', () => {
  it('loads one file at a cold start: the entry imports nothing of its own statically', () => {
    const statics = outputOf(join(dir, 'index.mjs')).imports.filter((i) => i.kind === 'import-statement');
    expect(statics.length).toBeGreaterThan(0);
    for (const i of statics) expect(i.path).toMatch(/^node:|^[a-z_]+$/); // Node built-ins only
    const started = load(join(dir, 'index.mjs'));
    expect(started.stderr).toBe('');
    expect(started.stdout.trim().split(',')).toContain('handler');
  });

  it('has a package for every module imported on demand, and each loads on its own', () => {
    const packages = readdirSync(join(dir, ON_DEMAND_DIR));
    // Relative dynamic imports are the packages' own (`import("node:http")` and the like stay as they are).
    const dynamic = Object.values(meta.outputs).flatMap((o) =>
      o.imports.filter((i) => i.kind === 'dynamic-import' && i.path.startsWith('./')),
    );
    expect(dynamic.length).toBeGreaterThan(0);
    for (const i of dynamic) expect(packages).toContain(i.path.split('/').pop());
    // The EKS and Secrets Manager clients of the eks and token modes, with what lambda-access.ts takes from them.
    const exportsOf = (stem: string) =>
      load(join(dir, ON_DEMAND_DIR, packages.find((p) => p.startsWith(stem))!))
        .stdout.trim()
        .split(',');
    expect(exportsOf('aws-sdk-client-eks-')).toEqual(expect.arrayContaining(['DescribeClusterCommand', 'EKSClient']));
    expect(exportsOf('aws-sdk-client-secrets-manager-')).toEqual(
      expect.arrayContaining(['GetSecretValueCommand', 'SecretsManagerClient']),
    );
    for (const p of packages) {
      const needsClientNode = outputOf(join(dir, ON_DEMAND_DIR, p)).imports.some((i) =>
        i.path.startsWith('@kubernetes/client-node'),
      );
      const loaded = load(join(dir, ON_DEMAND_DIR, p));
      // Only kubeconfig mode's adapters need client-node, which Lambda packages leave out.
      if (needsClientNode) expect(loaded.stderr).toContain("Cannot find package '@kubernetes/client-node'");
      else expect({ p, stderr: loaded.stderr }).toEqual({ p, stderr: '' });
    }
  });
});
