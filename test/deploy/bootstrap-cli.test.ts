import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * On a first deploy into an account SST bootstraps the CDK by running `npx cdk bootstrap` (the `aws-cdk`
 * package's `cdk` command). Without `aws-cdk` in the lockfile npx fetches whatever `cdk` the registry has
 * that day, or fails on a machine that cannot reach it. These check that the pinned CLI is what npx runs,
 * with npm forbidden to fetch anything, and that it is recent enough to read what aws-cdk-lib writes.
 */

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const here = createRequire(import.meta.url);

function semverAtLeast(version: string, minimum: string): boolean {
  const parts = (v: string) => v.split('-')[0]!.split('.').map(Number);
  const [a, b] = [parts(version), parts(minimum)];
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

describe("the CDK CLI SST's bootstrap runs", () => {
  // Read inside each test, so that a lockfile without aws-cdk fails the tests rather than their collection.
  const pinnedVersion = () => (here('aws-cdk/package.json') as { version: string }).version;

  it('is what `npx cdk` runs, with npm offline (nothing fetched)', () => {
    const pinned = pinnedVersion();
    const out = execFileSync('npm', ['exec', '--offline', '--', 'cdk', '--version'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      // The CLI would otherwise check the registry for notices and a newer version.
      env: { ...process.env, npm_config_offline: 'true', CDK_DISABLE_VERSION_CHECK: '1' },
    });
    expect(out.trim().split(' ')[0]).toBe(pinned);
  });

  it('reads the cloud assemblies aws-cdk-lib writes (at least their minimumCliVersion)', () => {
    const pinned = pinnedVersion();
    // The schema package as aws-cdk-lib resolves it names the oldest CLI that reads its assemblies.
    const fromCdkLib = createRequire(here.resolve('aws-cdk-lib/package.json'));
    const { Manifest } = fromCdkLib('@aws-cdk/cloud-assembly-schema') as { Manifest: { cliVersion(): string } };
    const minimum = Manifest.cliVersion();
    expect(minimum).toMatch(/^\d+\.\d+\.\d+/);
    expect(semverAtLeast(pinned, minimum), `aws-cdk ${pinned} < ${minimum}`).toBe(true);
  });
});
