import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.ts';

/**
 * The Kubernetes lab: a real kube-apiserver (v1.32) on its own etcd, both on loopback, for the Kubernetes
 * contract suite (test/k8s-contract/) and the end-to-end tests. Its binaries and `start.sh` are not part of
 * this repository: they live beside it, in `../shared/lab` (its README says what the API server does and does
 * not do: no scheduler, controller-manager or kubelet). Where the folder is missing the suites that need it are
 * skipped with a message, as the moto suites are where `moto_server` is not installed.
 *
 * One API server serves a whole `npm test` run: the global setup (test/k8s-contract/global-setup.ts) starts it
 * the first time a test file asks (`useKubeLab`), so runs that need none start none, and stops it at the end.
 * A test file run without that setup starts its own.
 */

/** The folder is found by env `KUBE_LAB_DIR`, else `../shared/lab` beside the repository, else `/work/shared/lab`. */
export function findKubeLabDir(): string | undefined {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const candidates = process.env.KUBE_LAB_DIR
    ? [resolve(process.env.KUBE_LAB_DIR)]
    : [resolve(repo, '../shared/lab'), '/work/shared/lab'];
  return candidates.find((dir) => ['start.sh', 'kube-apiserver.xz', 'etcd.xz'].every((f) => existsSync(join(dir, f))));
}

/** start.sh unpacks with xz, makes keys with openssl and polls with curl. */
function missingTools(): string[] {
  return ['bash', 'xz', 'openssl', 'curl'].filter((tool) => {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
}

const LAB_DIR = findKubeLabDir();
const MISSING_TOOLS = LAB_DIR && process.platform === 'linux' ? missingTools() : [];

/** Whether a real API server can be started here (linux/amd64 binaries, and the tools start.sh uses). */
export const KUBE_LAB_AVAILABLE: boolean =
  LAB_DIR !== undefined && process.platform === 'linux' && process.arch === 'x64' && MISSING_TOOLS.length === 0;

export const KUBE_LAB_SKIPPED_MESSAGE = (() => {
  if (!LAB_DIR) {
    return 'Kubernetes API server suite skipped: no lab (kube-apiserver.xz, etcd.xz, start.sh) in $KUBE_LAB_DIR, ../shared/lab or /work/shared/lab';
  }
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `Kubernetes API server suite skipped: the lab's binaries are linux/amd64, this is ${process.platform}/${process.arch}`;
  }
  return `Kubernetes API server suite skipped: ${MISSING_TOOLS.join(', ')} not on PATH (the lab's start.sh needs them)`;
})();

/** How a client reaches the lab's API server: as `system:masters`, with a bearer token. */
export interface KubeLabAccess {
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** Base64 PEM of the serving certificate (self-signed), as a kubeconfig's `certificate-authority-data`. */
  caData: string;
  token: string;
  kubeconfig: string;
  /** `http://127.0.0.1:<port>`: the lab's etcd (its v3 JSON gateway), for what only etcd does (compaction). */
  etcd: string;
}

export interface KubeLab extends KubeLabAccess {
  stop(): Promise<void>;
}

async function isFree(port: number): Promise<boolean> {
  return new Promise((answer) => {
    const server = createServer();
    server.unref();
    server.once('error', () => answer(false));
    server.listen(port, '127.0.0.1', () => server.close(() => answer(true)));
  });
}

/** etcd takes two ports (client, and client + 1 for peers). */
async function etcdPorts(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freePort();
    if (port < 65535 && (await isFree(port + 1))) return port;
  }
  throw new Error('kube lab: found no two consecutive free ports for etcd');
}

function pidOf(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
async function stopProcess(pid: number, graceMs = 5_000): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  while (alive(pid)) await new Promise((r) => setTimeout(r, 20));
}

/**
 * Starts etcd and kube-apiserver on free loopback ports, in a fresh temporary folder (their data, logs, PKI
 * and pids), and answers once the API server is ready. `stop` ends both, by the pids start.sh wrote, and
 * removes the folder.
 */
export async function startKubeLab(timeoutMs = 60_000): Promise<KubeLab> {
  if (!KUBE_LAB_AVAILABLE || !LAB_DIR) throw new Error(KUBE_LAB_SKIPPED_MESSAGE);
  const dir = mkdtempSync(join(tmpdir(), 'kube-lab-'));
  const [apiPort, etcdPort] = [await freePort(), await etcdPorts()];
  const stop = async () => {
    // The API server first: it would otherwise log its lost etcd for the seconds etcd takes to stop.
    for (const name of ['apiserver.pid', 'etcd.pid']) {
      const pid = pidOf(join(dir, name));
      if (pid !== undefined) await stopProcess(pid);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((done, fail) => {
      const child = spawn('bash', [join(LAB_DIR, 'start.sh'), dir, String(apiPort), String(etcdPort)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(new Error(`kube lab: start.sh did not finish within ${timeoutMs} ms: ${output}`));
      }, timeoutMs);
      child.on('error', fail);
      child.on('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) done();
        else fail(new Error(`kube lab: start.sh exited with ${code}: ${output.trim()}\n${tail(dir)}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `https://127.0.0.1:${apiPort}`,
    caData: readFileSync(join(dir, 'pki', 'serving.crt')).toString('base64'),
    token: 'admin-token',
    kubeconfig: join(dir, 'kubeconfig'),
    etcd: `http://127.0.0.1:${etcdPort}`,
    stop,
  };
}

/** The last lines of the API server's log, for a start that failed. */
function tail(dir: string): string {
  try {
    return readFileSync(join(dir, 'apiserver.log'), 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '';
  }
}

/** `npx tsx test/helpers/kube-lab.ts`: prints the lab folder and exits 0, or the skip message and exits 1 (for CI). */
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (KUBE_LAB_AVAILABLE) console.log(LAB_DIR);
  else console.log(KUBE_LAB_SKIPPED_MESSAGE);
  process.exitCode = KUBE_LAB_AVAILABLE ? 0 : 1;
}
