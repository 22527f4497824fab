// Reads the vitest JSON report of `npm test` and says whether the suites that need tools from outside
// package.json ran: the AWS API emulator contract suite and the sst deploy suite (both moto_server) and the
// cfn-lint check, and the Kubernetes suites on the lab's real API server. Where the tool is on PATH the suite must have run (a suite that skipped itself anyway fails
// CI); where it is not, the skip is printed plainly and is not a failure.
// Usage: node .ci/suites-ran.mjs <report.json> <moto_server found: yes|no> <cfn-lint found: yes|no> <kube lab found: yes|no>
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [reportFile, motoFound, cfnLintFound, kubeLabFound = 'no'] = process.argv.slice(2);
const report = JSON.parse(readFileSync(reportFile, 'utf8'));

/** Every test of the report: its file (relative), full name and status (passed, failed, skipped, pending, todo). */
const tests = report.testResults.flatMap((file) =>
  file.assertionResults.map((test) => ({
    file: relative(process.cwd(), file.name),
    name: test.fullName,
    status: test.status,
  })),
);

let failed = false;

function check(label, found, tool, wanted) {
  const ran = wanted.filter((t) => t.status === 'passed');
  const skipped = wanted.filter((t) => t.status === 'skipped' || t.status === 'pending' || t.status === 'todo');
  if (found !== 'yes') {
    console.log(`ci: SKIPPED ${label}: ${tool} not found (${skipped.length} tests skipped)`);
    return;
  }
  const files = [...new Set(wanted.map((t) => t.file))].sort();
  const silent = files.filter((f) => !ran.some((t) => t.file === f));
  if (ran.length === 0 || silent.length > 0) {
    failed = true;
    console.log(`ci: FAILED ${label}: ${tool} is on PATH but no test of ${silent.join(', ') || 'the suite'} ran`);
    return;
  }
  console.log(`ci: ran ${label}: ${ran.length} tests in ${files.length} files (${skipped.length} skipped by design)`);
}

// Emulator tests are the ones whose describe or name mentions it (backend labels say "emulator").
check(
  'the AWS API emulator contract suite',
  motoFound,
  'moto_server',
  tests.filter((t) => t.file.startsWith('test/contract/') && /emulator/i.test(t.name)),
);
// The deploy suite: `sst deploy` and `sst remove` of two stages onto the emulator (its describe names it).
check(
  'the sst deploy suite on the AWS API emulator',
  motoFound,
  'moto_server',
  tests.filter(
    (t) =>
      t.file === 'test/deploy/sst-deploy.emulator.test.ts' && t.name.startsWith('sst deploy onto the AWS API emulator'),
  ),
);
check(
  'the cfn-lint check of the templates',
  cfnLintFound,
  'cfn-lint',
  tests.filter((t) => t.file === 'stacks/cfn-lint.test.ts'),
);

// The Kubernetes contract suite's real half (its describe titles name the backend) and the webhooks the real
// API server calls.
check(
  'the Kubernetes contract suite on a real API server',
  kubeLabFound,
  'the kube lab',
  tests.filter(
    (t) =>
      (t.file.startsWith('test/k8s-contract/') && /real API server/.test(t.name)) ||
      t.file === 'test/k8s-contract/webhooks.real.test.ts',
  ),
);
// The deployed shape end to end needs both: the lab's API server and the emulator.
check(
  'the end-to-end suite (built bundles and relay, real API server, AWS API emulator)',
  kubeLabFound === 'yes' && motoFound === 'yes' ? 'yes' : 'no',
  'the kube lab or moto_server',
  tests.filter((t) => t.file === 'test/e2e/deployed-shape.e2e.test.ts'),
);

process.exitCode = failed ? 1 : 0;
