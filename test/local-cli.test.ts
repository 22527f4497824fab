import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  FakeCluster,
  type FakeKubeApi,
  kubeConfigFor,
  startFakeKubeApi,
} from '../functions/relay/testing/fake-kube-api.ts';
import { makeNode } from './helpers/nodes.ts';

const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'bin/local.ts', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeout: 60_000,
  });

describe('npm start (bin/local.ts)', () => {
  it('refuses to run against a real cluster without the cluster name, saying what to pass', () => {
    const result = cli(['--real', '--region', 'eu-west-1']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('refusing to start against a real cluster');
    expect(result.stderr).toContain('CLUSTER_NAME: is required');
    expect(result.stderr).toContain('--cluster-name');
    expect(result.stdout).toBe('');
  });

  it('refuses a bad VPC or cluster CIDR for the real-mode route and service controllers, naming the setting', () => {
    const result = cli([
      '--real',
      '--region',
      'eu-west-1',
      '--cluster-name',
      'prod',
      '--vpc-id',
      'vpc-nope',
      '--cluster-cidrs',
      '10.0.0.1/8',
    ]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('VPC_ID');
    expect(result.stderr).toContain('CLUSTER_CIDRS');
  });

  it('--kubeconfig PATH --once against an API server: one pass under the Lease; the summary names the controllers on and off, and why', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('ip-10-0-0-5.eu-west-1.compute.internal'));
    const api = await startFakeKubeApi(cluster);
    try {
      const { exited, stdout: out } = startCli(api, ['--once']);
      const code = await exited;
      const stdout = out();
      expect(code).toBe(0);
      // Every controller, on or off, with what would switch it on.
      expect(stdout).toMatch(
        /controllers +node: on, node-lifecycle: on, route: off \(no --cluster-cidrs\), service: off \(no --vpc-id\), ipam: off \(no --ipam or CCM_IPAM=true, no --vpc-id\), ingress: off \(no --ingress or CCM_INGRESS=true, no --vpc-id\), target-group-binding: off \(no --target-group-binding or CCM_TARGET_GROUP_BINDING=true\), interruption: off \(no --interruption or CCM_INTERRUPTION=true\)/,
      );
      expect(stdout).toMatch(/resync +every 300 s: node, node-lifecycle/);
      expect(stdout).toMatch(/resync rounds +1/);
      expect(stdout).toMatch(/Lease +kube-system\/serverless-ccm-relay, held by this process/);
      expect(stdout).toMatch(/EC2 events +resync only \(no --ec2-events-queue-url\)/);
      expect(stdout).toContain('EC2 changes are seen at the next resync only');
    } finally {
      await api.close();
    }
  }, 60_000);

  it('--ipam --interruption --webhook-port: every controller on, the webhook configurations printed and served, the summary says so', async () => {
    const api = await startFakeKubeApi(new FakeCluster());
    const port = await freePort();
    try {
      const flags = ['--cluster-cidrs', '10.244.0.0/16', '--vpc-id', 'vpc-0a1b2c3d', '--ipam', '--interruption'];
      const webhook = ['--webhook-port', String(port), '--webhook-host', '127.0.0.1', '--plain'];
      // AWS answers nothing here, at once: this is about what runs and what is served.
      const cli = startCli(api, [...flags, ...webhook], {
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'y',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      });
      const deadline = Date.now() + 30_000;
      while (!cli.stdout().includes('ValidatingWebhookConfiguration') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      let stdout = cli.stdout();
      expect(stdout).toContain(`admission webhooks: answers at https://127.0.0.1:${port} from this machine`);
      expect(stdout).toMatch(/apply them with: kubectl apply -f \S+serverless-ccm-ipam-webhook-local\.yaml/);
      expect(stdout).toContain(`url: https://127.0.0.1:${port}/mutate-v1-pod`);
      expect(stdout).toContain(`url: https://127.0.0.1:${port}/validate-v1-pod`);
      cli.child.kill('SIGINT');
      expect(await cli.exited).toBe(0);
      stdout = cli.stdout();
      expect(stdout).toMatch(
        /controllers +node: on, node-lifecycle: on, route: on, service: on, ipam: on, ingress: off \(no --ingress or CCM_INGRESS=true\), target-group-binding: off \(no --target-group-binding or CCM_TARGET_GROUP_BINDING=true\), interruption: on/,
      );
      expect(stdout).toMatch(
        /resync +every 300 s: node, node-lifecycle, route, service, ipam; none \(its work comes only from EC2 events\): interruption/,
      );
      expect(stdout).toMatch(
        new RegExp(`admission webhooks +https://127\\.0\\.0\\.1:${port}: [1-9]\\d* admission reviews answered`),
      );
      expect(stdout).toContain('its notices come only from EC2 events: without --ec2-events-queue-url it gets none');
    } finally {
      await api.close();
    }
  }, 60_000);

  it('--real without any kubeconfig refuses to start rather than guess a cluster', () => {
    const home = mkdtempSync(join(tmpdir(), 'local-cli-home-'));
    const result = cli(['--real', '--cluster-name', 'prod', '--region', 'eu-west-1'], { HOME: home });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('refusing to start: no cluster in the kubeconfig');
  });

  it('refuses a bad flag value with the usage', () => {
    const result = cli(['--nodes', 'two']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--nodes must be an integer >= 3 (got "two")');
  });

  it('converges the simulated cluster and exits 0, with plain lines when not on a terminal', () => {
    const result = cli(['--nodes', '4', '--speed', '0', '--ec2-latency-ms', '0']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('nodes initialized            4');
    expect(result.stdout).toContain('converged: every Node initialized');
    expect(result.stdout).not.toContain('\x1b[2J');
  });
});

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `npm start -- --kubeconfig <api> --cluster-name prod --region eu-west-1 ...flags`, asynchronously: the API server answers from this process. */
function startCli(api: FakeKubeApi, flags: string[], env: Record<string, string> = {}) {
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'local-cli-')), 'config');
  writeFileSync(kubeconfig, kubeConfigFor(api).exportConfig());
  const args = ['--kubeconfig', kubeconfig, '--cluster-name', 'prod', '--region', 'eu-west-1', ...flags];
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts', ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  child.stdin.end();
  let stdout = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return { child, exited, stdout: () => stdout };
}
