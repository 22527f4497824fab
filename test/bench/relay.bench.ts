/**
 * The relay under a large cluster: 5,000 Nodes and 100,000 bound Pods (plus 200 Services and their
 * EndpointSlices, and 2,000 Ingresses of the IngressClass `alb` forwarding to those Services) listed, then a stream of watch events with realistic churn, where Node status
 * heartbeats dominate and most Pod and EndpointSlice updates touch nothing a reconciler reads; then
 * a backlog of changes that all matter, to measure how many the relay forwards a second.
 *
 * The relay runs in a child process (this file, forked), so RSS and CPU are the relay's alone: the
 * relay as main.ts wires it in a Pod (REST list/watch and Leases over HTTPS on 127.0.0.1, the router,
 * the forwarder, the operations server) with the Deployment's memory settings, and an SQS stand-in
 * that takes SendMessageBatch calls with a fixed latency and keeps only counts. The parent serves the
 * API (functions/relay/testing/fake-kube-api.ts) and makes the churn, pacing itself on what the watch
 * connections have not yet taken.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- relay';
const NODES = 5_000;
const PODS_PER_NODE = 20;
const SERVICES = 200;
/** Ingresses of the class `alb`, in 20 namespaces; one in four in one of 10 explicit IngressGroups. */
const INGRESSES = 2_000;
const INGRESS_NAMESPACES = 20;
const EXPLICIT_GROUPS = 10;
const CHURN_EVENTS = 120_000;
/** Changes written while the relay is stopped, then drained: its forwarding capacity. */
const BURST_EVENTS = 30_000;
/** A SendMessageBatch round trip in-region. */
const SQS_LATENCY_MS = 10;
const CHILD_FLAG = '--relay-bench-child';
/**
 * The memory settings of the relay's container (deploy/relay/deployment.yaml): NODE_OPTIONS, glibc's
 * MALLOC_* and RELAY_PAGE_SIZE, read from the manifest so the bench cannot drift from it. Side-by-side
 * experiments override them: RELAY_BENCH_NODE_FLAGS, RELAY_BENCH_PAGE_SIZE, and MALLOC_* from the
 * environment (relay README, "Memory and throughput").
 */
function deploymentSettings(): { nodeFlags: string[]; env: Record<string, string> } {
  const text = readFileSync(new URL('../../deploy/relay/deployment.yaml', import.meta.url), 'utf8');
  const env: Record<string, string> = {};
  // The container's `- name: X` / `value: Y` pairs (a plain value on the next line).
  for (const m of text.matchAll(/- name: (NODE_OPTIONS|MALLOC_[A-Z_]+|RELAY_PAGE_SIZE)\n\s+value: "?([^"\n]*)"?/g)) {
    env[m[1]!] = m[2]!;
  }
  const nodeFlags = (process.env.RELAY_BENCH_NODE_FLAGS ?? env.NODE_OPTIONS ?? '').split(' ').filter(Boolean);
  delete env.NODE_OPTIONS;
  if (process.env.RELAY_BENCH_PAGE_SIZE) env.RELAY_PAGE_SIZE = process.env.RELAY_BENCH_PAGE_SIZE;
  for (const [name, value] of Object.entries(process.env)) if (name.startsWith('MALLOC_') && value) env[name] = value;
  return { nodeFlags, env };
}

type ToChild = { type: 'churn-start' } | { type: 'churn-done'; revisions: Record<string, number> } | { type: 'stop' };

interface Phase {
  seconds: number;
  cpuSeconds: number;
  rssMiB: number;
  peakRssMiB: number;
  heapMiB: number;
  /** After a full garbage collection: what the relay really keeps. */
  retainedHeapMiB: number;
  retainedRssMiB: number;
  seen: number;
  forwarded: number;
  filtered: number;
  keysSent: number;
  /** Of keysSent, IngressGroup keys (the ingress queue). */
  ingressKeys: number;
  sendCalls: number;
}
type FromChild =
  | { type: 'synced'; phase: Phase; idleRssMiB: number; idleHeapMiB: number; memory: NodeJS.MemoryUsage }
  | { type: 'caught-up'; phase: Phase; sentAfterReadSeconds: number }
  | { type: 'started' }
  | { type: 'error'; message: string };

export async function run(): Promise<BenchResult[]> {
  const { FakeCluster, startFakeKubeApi } = await import('../../functions/relay/testing/fake-kube-api.ts');
  // The relay keeps up, so little history is ever replayed; a long one would only weigh on this process.
  const cluster = new FakeCluster({ historyLimit: 10_000 });
  const world = populate(cluster);
  const api = await startFakeKubeApi(cluster);
  const bundle = await bundleChild();
  const port = await freePort();
  const settings = deploymentSettings();
  const child = fork(bundle, [CHILD_FLAG], {
    // The relay runs as an esbuild bundle on plain Node, as in its container (deploy/relay/Dockerfile),
    // not under the TypeScript loader, whose own memory would dwarf the relay's. --expose-gc: the
    // figures include the heap retained after a full collection, not only what V8 has not collected yet.
    execArgv: ['--expose-gc', ...settings.nodeFlags],
    env: {
      ...process.env,
      ...settings.env,
      RELAY_BENCH: JSON.stringify({ url: api.url, caData: api.caData, port, pageSize: settings.env.RELAY_PAGE_SIZE }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: FromChild[] = [];
  let wake: (() => void) | undefined;
  child.on('message', (m: FromChild) => {
    messages.push(m);
    wake?.();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const next = async (type: FromChild['type']): Promise<FromChild> => {
    for (;;) {
      const found = messages.find((m) => m.type === type || m.type === 'error');
      if (found) {
        messages.splice(messages.indexOf(found), 1);
        if (found.type === 'error') throw new Error(`relay bench child: ${found.message}`);
        return found;
      }
      await Promise.race([new Promise<void>((resolve) => (wake = resolve)), exited.then(() => undefined)]);
      if (child.exitCode !== null && !messages.length) throw new Error(`relay bench child exited (${child.exitCode})`);
    }
  };
  const send = (m: ToChild) => child.send(m);

  try {
    const synced = (await next('synced')) as Extract<FromChild, { type: 'synced' }>;
    process.stderr.write(`  relay synced: ${synced.phase.keysSent} keys in ${synced.phase.seconds.toFixed(1)} s\n`);
    const mb = (v: number) => (v / 2 ** 20).toFixed(1);
    const u = synced.memory;
    process.stderr.write(
      `  memory after sync: rss ${mb(u.rss)} heapTotal ${mb(u.heapTotal)} heapUsed ${mb(u.heapUsed)} external ${mb(u.external)} arrayBuffers ${mb(u.arrayBuffers)}; idle heap ${synced.idleHeapMiB.toFixed(1)}\n`,
    );
    if (process.env.RELAY_BENCH_SYNC_ONLY) {
      // Side-by-side memory experiments (flags, page sizes): the initial sync is all they need.
      send({ type: 'stop' });
      await exited;
      return report(
        synced.phase,
        synced.phase,
        { seconds: 0, waitedSeconds: 0, events: 0, ingressChanges: 0 },
        synced.idleRssMiB,
        {
          phase: synced.phase,
          seconds: 1,
          generatedSeconds: 1,
          sentAfterReadSeconds: 0,
        },
      ).slice(0, 2);
    }
    const revisions = () =>
      Object.fromEntries(
        ['Node', 'Service', 'EndpointSlice', 'Pod', 'Ingress'].map((k) => [k, cluster.lastRevision(k as never)]),
      );

    // 1. Realistic churn, the generator pacing itself on what the relay has not yet read.
    send({ type: 'churn-start' });
    await next('started');
    const churnStarted = performance.now();
    const generator = await churn(cluster, world, () => api.backlog(), CHURN_EVENTS, realisticChange);
    const generated = (performance.now() - churnStarted) / 1000;
    send({ type: 'churn-done', revisions: revisions() });
    const churned = (await next('caught-up')) as Extract<FromChild, { type: 'caught-up' }>;
    const ingressChanges = world.ingressChanges;

    // 2. Forwarding capacity: only changes some reconciler reads, all written while the relay is stopped
    // (SIGSTOP), so the generator cannot be what bounds the rate; the relay then drains them, end to end
    // to the SQS stand-in. Stopped for a few seconds, well within the 10 s renew deadline.
    send({ type: 'churn-start' });
    await next('started');
    child.kill('SIGSTOP');
    const burstStarted = performance.now();
    await churn(cluster, world, () => 0, BURST_EVENTS, relevantChange);
    const burstGenerated = (performance.now() - burstStarted) / 1000;
    const resumed = performance.now();
    child.kill('SIGCONT');
    send({ type: 'churn-done', revisions: revisions() });
    const burst = (await next('caught-up')) as Extract<FromChild, { type: 'caught-up' }>;
    const drainedSeconds = (performance.now() - resumed) / 1000;

    send({ type: 'stop' });
    await exited;
    return report(
      synced.phase,
      churned.phase,
      { seconds: generated, ...generator, ingressChanges },
      synced.idleRssMiB,
      {
        phase: burst.phase,
        seconds: drainedSeconds,
        generatedSeconds: burstGenerated,
        sentAfterReadSeconds: burst.sentAfterReadSeconds,
      },
    );
  } finally {
    if (child.exitCode === null) child.kill();
    await api.close();
  }
}

/**
 * This file bundled like the relay's image (deploy/relay/Dockerfile: ESM, dependencies inlined, what is
 * imported on demand in chunks of its own); its child path runs the relay.
 */
async function bundleChild(): Promise<string> {
  const { build } = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'relay-bench-'));
  await build({
    entryPoints: { child: fileURLToPath(import.meta.url) },
    outdir: dir,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    minify: true,
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'error',
  });
  // The process's script is this small entry, not the bundle: main.ts starts a relay of its own when
  // its module is the script.
  const entry = join(dir, 'entry.mjs');
  writeFileSync(entry, "import './child.mjs';\n");
  return entry;
}

/** A port for the relay's operations server (RELAY_PORT takes no 0). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

function report(
  sync: Phase,
  churn: Phase,
  generator: { seconds: number; waitedSeconds: number; events: number; ingressChanges: number },
  idleRssMiB: number,
  burst: { phase: Phase; seconds: number; generatedSeconds: number; sentAfterReadSeconds: number },
): BenchResult[] {
  const objects = NODES + NODES * PODS_PER_NODE + 2 * SERVICES + INGRESSES + 1;
  const withIngresses = `with the ${INGRESSES.toLocaleString('en')} Ingresses and their IngressClass`;
  const mib = (v: number) => Math.round(v);
  const round = (v: number, digits = 1) => Number(v.toFixed(digits));
  return [
    {
      name: 'relay: heap retained after the initial sync',
      value: round(sync.retainedHeapMiB),
      unit: 'MiB',
      rerun: RERUN,
      note: `${objects.toLocaleString('en')} objects fingerprinted, ${withIngresses} (after a full GC; RSS then ${mib(sync.retainedRssMiB)} MiB)`,
    },
    {
      name: 'relay: RSS after the initial sync',
      value: mib(sync.rssMiB),
      unit: 'MiB',
      target: '<= 120',
      rerun: RERUN,
      note: `the process as deployed (main.ts wiring, the Deployment's memory settings, the Ingress module on), ${withIngresses}, before any forced GC; heap in use ${mib(sync.heapMiB)} MiB; idle relay (nothing listed) ${mib(idleRssMiB)} MiB`,
    },
    {
      name: 'relay: peak RSS (sync + churn)',
      value: mib(Math.max(sync.peakRssMiB, churn.peakRssMiB)),
      unit: 'MiB',
      target: '< 256',
      rerun: RERUN,
      note: `${withIngresses}; after the churn ${mib(churn.rssMiB)} MiB, heap retained ${round(churn.retainedHeapMiB)} MiB`,
    },
    {
      name: 'relay: initial sync, list to last key accepted',
      value: round(sync.seconds),
      unit: 's',
      rerun: RERUN,
      note: `${sync.keysSent.toLocaleString('en')} keys, SQS at ${SQS_LATENCY_MS} ms per call, 4 calls in flight per queue`,
    },
    {
      name: 'relay: CPU for the initial sync',
      value: round(sync.cpuSeconds),
      unit: 's',
      rerun: RERUN,
      note: `${Math.round((sync.cpuSeconds * 1000) / (objects / 1000))} ms per 1,000 objects listed (TLS, JSON, hashing, sends)`,
    },
    {
      name: 'relay: SQS calls per 1,000 keys (initial sync)',
      value: round((sync.sendCalls * 1000) / Math.max(1, sync.keysSent)),
      unit: 'calls',
      target: '100 (full batches of 10)',
      rerun: RERUN,
    },
    {
      name: 'relay: churn, watch events processed per second',
      value: Math.round(churn.seen / churn.seconds),
      unit: 'events/s',
      rerun: RERUN,
      note: `${churn.seen.toLocaleString('en')} events in ${round(churn.seconds)} s; the generator took ${round(generator.seconds)} s, ${round(generator.waitedSeconds)} s of it waiting for the relay (${generator.waitedSeconds > 0.1 * generator.seconds ? 'bound by the relay' : 'bound by the generator'})`,
    },
    {
      name: 'relay: changes forwarded per second (backlog of changes that matter)',
      value: Math.round(burst.phase.forwarded / burst.seconds),
      unit: 'changes/s',
      target: '>= 2000',
      rerun: RERUN,
      note: `${burst.phase.forwarded.toLocaleString('en')} of ${burst.phase.seen.toLocaleString('en')} events forwarded as ${burst.phase.keysSent.toLocaleString('en')} keys in ${round(burst.seconds)} s from resume to the last key accepted, ${round(burst.sentAfterReadSeconds)} s of it sending after the last event was read (CPU ${round(burst.phase.cpuSeconds)} s); the generator alone makes ${Math.round(BURST_EVENTS / burst.generatedSeconds).toLocaleString('en')} events/s`,
    },
    {
      name: 'relay: churn, changes forwarded per second',
      value: Math.round(churn.forwarded / churn.seconds),
      unit: 'changes/s',
      rerun: RERUN,
      note: `${churn.forwarded.toLocaleString('en')} forwarded, ${churn.filtered.toLocaleString('en')} filtered (${round((100 * churn.filtered) / Math.max(1, churn.seen))} %)`,
    },
    {
      name: 'relay: SQS calls per 1,000 changes forwarded (churn)',
      value: Math.round((churn.sendCalls * 1000) / Math.max(1, churn.forwarded)),
      unit: 'calls',
      rerun: RERUN,
      note: `${churn.sendCalls.toLocaleString('en')} SendMessageBatch for ${churn.keysSent.toLocaleString('en')} keys; a change can be keys for several reconcilers`,
    },
    {
      name: 'relay: CPU per 1,000 watch events (churn)',
      value: round((churn.cpuSeconds * 1000) / (Math.max(1, churn.seen) / 1000)),
      unit: 'ms',
      rerun: RERUN,
      note: `${round(churn.cpuSeconds)} s CPU in total: one core handles about ${Math.round(churn.seen / Math.max(0.001, churn.cpuSeconds)).toLocaleString('en')} events/s`,
    },
    {
      name: 'relay: IngressGroup keys sent (initial sync + churn)',
      value: sync.ingressKeys + churn.ingressKeys,
      unit: 'keys',
      rerun: RERUN,
      note: `${sync.ingressKeys.toLocaleString('en')} at the initial sync (${INGRESSES.toLocaleString('en')} Ingresses: ${EXPLICIT_GROUPS} explicit groups and one implicit group per other Ingress), ${churn.ingressKeys.toLocaleString('en')} during the churn (${generator.ingressChanges.toLocaleString('en')} Ingress path changes; Node readiness and endpoint changes send groups too)`,
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// The cluster: objects sized like real ones, sharing what real ones have in common (the parent's
// memory is not what is measured, but it should stay reasonable).

interface World {
  nodes: string[];
  ready: Map<string, boolean>;
  pods: string[];
  podNode: Map<string, string>;
  slices: string[];
  podCounter: number;
  /** Pods created without their address annotation yet. */
  unannotated: string[];
  /** The churn's clock, in milliseconds. */
  clock: number;
  ingresses: string[];
  /** Ingress changes made so far. */
  ingressChanges: number;
  random: () => number;
}

const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
const NODE_IMAGES = Array.from({ length: 8 }, (_, i) => ({
  names: [
    `602401143452.dkr.ecr.eu-west-1.amazonaws.com/eks/image-${i}@sha256:${'ab'.repeat(32)}`,
    `602401143452.dkr.ecr.eu-west-1.amazonaws.com/eks/image-${i}:v1.${i}.0`,
  ],
  sizeBytes: 10_000_000 + i,
}));
const NODE_INFO = {
  architecture: 'amd64',
  bootID: '6b1e8e4a-1c1a-4c6e-9b1a-1a2b3c4d5e6f',
  containerRuntimeVersion: 'containerd://1.7.22',
  kernelVersion: '6.1.112-124.190.amzn2023.x86_64',
  kubeProxyVersion: 'v1.31.2-eks-7f9249a',
  kubeletVersion: 'v1.31.2-eks-7f9249a',
  machineID: 'ec2b2b6f0a0e4c2a9d1e8f7a6b5c4d3e',
  operatingSystem: 'linux',
  osImage: 'Amazon Linux 2023.6.20241121',
  systemUUID: 'ec2b2b6f-0a0e-4c2a-9d1e-8f7a6b5c4d3e',
};
const CAPACITY = { cpu: '4', 'ephemeral-storage': '83873772Ki', memory: '15896988Ki', pods: '58' };
const ALLOCATABLE = { cpu: '3920m', 'ephemeral-storage': '76224326324', memory: '14880156Ki', pods: '58' };

function nodeName(i: number): string {
  return `ip-10-${(i >> 8) & 255}-${i & 255}-10.eu-west-1.compute.internal`;
}

function nodeConditions(at: string, ready: boolean) {
  const c = (type: string, status: string, reason: string) => ({
    type,
    status,
    reason,
    message: `kubelet reports ${reason}`,
    lastHeartbeatTime: at,
    lastTransitionTime: '2026-11-01T00:00:00Z',
  });
  return [
    c('MemoryPressure', 'False', 'KubeletHasSufficientMemory'),
    c('DiskPressure', 'False', 'KubeletHasNoDiskPressure'),
    c('PIDPressure', 'False', 'KubeletHasSufficientPID'),
    c('Ready', ready ? 'True' : 'False', ready ? 'KubeletReady' : 'KubeletNotReady'),
  ];
}

function makeNode(i: number) {
  const name = nodeName(i);
  const zone = ZONES[i % 3]!;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/instance-type': 'm5.xlarge',
        'beta.kubernetes.io/os': 'linux',
        'eks.amazonaws.com/nodegroup': 'general',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'm5.xlarge',
        'topology.kubernetes.io/region': 'eu-west-1',
        'topology.kubernetes.io/zone': zone,
      },
      annotations: {
        'alpha.kubernetes.io/provided-node-ip': `10.${(i >> 8) & 255}.${i & 255}.10`,
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: {
      providerID: `aws:///${zone}/i-0${(0x1000000 + i).toString(16)}abcdef`,
      podCIDR: `10.${128 + ((i >> 8) & 63)}.${i & 255}.0/24`,
      podCIDRs: [`10.${128 + ((i >> 8) & 63)}.${i & 255}.0/24`],
    },
    status: {
      addresses: [
        { type: 'InternalIP', address: `10.${(i >> 8) & 255}.${i & 255}.10` },
        { type: 'InternalDNS', address: name },
        { type: 'Hostname', address: name },
      ],
      allocatable: ALLOCATABLE,
      capacity: CAPACITY,
      conditions: nodeConditions('2026-11-02T08:00:00Z', true),
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      images: NODE_IMAGES,
      nodeInfo: NODE_INFO,
    },
  };
}

const POD_SPEC = {
  containers: [
    {
      name: 'app',
      image: '123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/app:2026.11.1',
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
      env: [
        { name: 'LOG_LEVEL', value: 'info' },
        { name: 'PORT', value: '8080' },
      ],
      resources: {
        requests: { cpu: '100m', memory: '128Mi', 'vpc.amazonaws.com/PrivateIPv4Address': '1' },
        limits: { memory: '256Mi', 'vpc.amazonaws.com/PrivateIPv4Address': '1' },
      },
      readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 10 },
    },
  ],
  dnsPolicy: 'ClusterFirst',
  restartPolicy: 'Always',
  schedulerName: 'default-scheduler',
  serviceAccountName: 'default',
  terminationGracePeriodSeconds: 30,
  tolerations: [
    { effect: 'NoExecute', key: 'node.kubernetes.io/not-ready', operator: 'Exists', tolerationSeconds: 300 },
    { effect: 'NoExecute', key: 'node.kubernetes.io/unreachable', operator: 'Exists', tolerationSeconds: 300 },
  ],
};

function podStatus(ip: string, hostIP: string, ready: boolean, restarts: number) {
  const r = ready ? 'True' : 'False';
  return {
    phase: 'Running',
    conditions: [
      { type: 'Initialized', status: 'True', lastTransitionTime: '2026-11-02T07:00:00Z' },
      { type: 'Ready', status: r, lastTransitionTime: '2026-11-02T07:00:05Z' },
      { type: 'ContainersReady', status: r, lastTransitionTime: '2026-11-02T07:00:05Z' },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-02T07:00:00Z' },
    ],
    containerStatuses: [
      {
        name: 'app',
        image: '123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/app:2026.11.1',
        imageID: `123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/app@sha256:${'cd'.repeat(32)}`,
        containerID: `containerd://${'ef'.repeat(32)}`,
        ready,
        restartCount: restarts,
        started: true,
        state: { running: { startedAt: '2026-11-02T07:00:03Z' } },
      },
    ],
    hostIP,
    podIP: ip,
    podIPs: [{ ip }],
    qosClass: 'Burstable',
    startTime: '2026-11-02T07:00:00Z',
  };
}

function makePod(namespace: string, name: string, node: number, seq: number) {
  const ip = `10.${(seq >> 16) & 255}.${(seq >> 8) & 255}.${seq & 255}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { app: 'app', 'pod-template-hash': '7d9f8b6c5d' },
      annotations: { 'vpc.amazonaws.com/PrivateIPv4Address': `${ip}/19` },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'app-7d9f8b6c5d', uid: 'rs-uid', controller: true },
      ],
    },
    spec: { ...POD_SPEC, nodeName: nodeName(node) },
    status: podStatus(ip, `10.${(node >> 8) & 255}.${node & 255}.10`, true, 0),
  };
}

function serviceType(i: number): { type: string; annotations: Record<string, string> } {
  if (i < 40)
    return { type: 'LoadBalancer', annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' } };
  if (i < 50) {
    return {
      type: 'LoadBalancer',
      annotations: {
        'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb',
        'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
      },
    };
  }
  return { type: 'ClusterIP', annotations: {} };
}

function makeSlice(namespace: string, service: string, seed: number, readyFlip: number) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${service}-x7k2p`,
      namespace,
      labels: {
        'kubernetes.io/service-name': service,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    },
    addressType: 'IPv4',
    endpoints: Array.from({ length: 20 }, (_, e) => ({
      addresses: [`10.${(seed >> 8) & 255}.${seed & 255}.${e + 1}`],
      conditions: { ready: e !== readyFlip, serving: true, terminating: false },
      nodeName: nodeName((seed * 20 + e) % NODES),
      zone: ZONES[e % 3],
    })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

function populate(cluster: import('../../functions/relay/testing/fake-kube-api.ts').FakeCluster): World {
  let state = 0x2545f491;
  const random = () => {
    // xorshift32: deterministic churn, run after run.
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const world: World = {
    nodes: [],
    ready: new Map(),
    pods: [],
    podNode: new Map(),
    slices: [],
    podCounter: 0,
    unannotated: [],
    clock: Date.parse('2026-11-02T08:00:00Z'),
    ingresses: [],
    ingressChanges: 0,
    random,
  };
  for (let i = 0; i < NODES; i++) {
    const node = makeNode(i);
    cluster.apply('Node', node);
    world.nodes.push(node.metadata.name);
    world.ready.set(node.metadata.name, true);
  }
  for (let i = 0; i < NODES * PODS_PER_NODE; i++) {
    const namespace = `team-${i % 50}`;
    const name = `app-7d9f8b6c5d-${i.toString(36).padStart(5, '0')}`;
    cluster.apply('Pod', makePod(namespace, name, i % NODES, i));
    world.pods.push(`${namespace}/${name}`);
    world.podNode.set(`${namespace}/${name}`, nodeName(i % NODES));
  }
  world.podCounter = NODES * PODS_PER_NODE;
  for (let i = 0; i < SERVICES; i++) {
    const namespace = `team-${i % 50}`;
    const name = `svc-${i}`;
    const { type, annotations } = serviceType(i);
    cluster.apply('Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace, annotations },
      spec: {
        type,
        selector: { app: name },
        ports: [
          {
            name: 'http',
            port: 80,
            protocol: 'TCP',
            targetPort: 8080,
            ...(type === 'LoadBalancer' ? { nodePort: 30000 + i } : {}),
          },
        ],
        ...(type === 'LoadBalancer' ? { externalTrafficPolicy: 'Cluster' } : {}),
      },
    });
    cluster.apply('EndpointSlice', makeSlice(namespace, name, i, -1));
    world.slices.push(`${namespace}/${name}-x7k2p`);
  }
  cluster.apply('IngressClass', {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'alb' },
    spec: { controller: 'ingress.k8s.aws/alb' },
  });
  for (let i = 0; i < INGRESSES; i++) {
    const ingress = makeIngress(i, 0);
    cluster.apply('Ingress', ingress);
    world.ingresses.push(`${ingress.metadata.namespace}/${ingress.metadata.name}`);
  }
  return world;
}

/**
 * Ingress `i` in namespace team-(i % 20), with 2 or 3 paths to that namespace's Services (svc-n, svc-(n+50), ...);
 * one in four in an explicit group (group.name), the others each their own implicit group. `version` changes the
 * paths (a new path prefix, as a deployment renaming a route), and the generation with them.
 */
function makeIngress(i: number, version: number) {
  const ns = i % INGRESS_NAMESPACES;
  const namespace = `team-${ns}`;
  const name = `web-${i}`;
  const explicit = i % 4 === 0;
  const paths = 2 + (i % 2);
  const group = explicit ? `shared-${(i >> 2) % EXPLICIT_GROUPS}` : undefined;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace,
      generation: version + 1,
      labels: { app: name, 'app.kubernetes.io/managed-by': 'Helm' },
      annotations: {
        'alb.ingress.kubernetes.io/scheme': 'internet-facing',
        'alb.ingress.kubernetes.io/target-type': i % 3 === 0 ? 'instance' : 'ip',
        'alb.ingress.kubernetes.io/listen-ports': '[{"HTTP": 80}, {"HTTPS": 443}]',
        'alb.ingress.kubernetes.io/healthcheck-path': '/ready',
        'meta.helm.sh/release-name': name,
        'meta.helm.sh/release-namespace': namespace,
        ...(group ? { 'alb.ingress.kubernetes.io/group.name': group } : {}),
      },
      finalizers: [group ? `group.ingress.k8s.aws/${group}` : 'ingress.k8s.aws/resources'],
    },
    spec: {
      ingressClassName: 'alb',
      rules: [
        {
          host: `${name}.${namespace}.shop.example.com`,
          http: {
            paths: Array.from({ length: paths }, (_, p) => ({
              path: `/v${version}/${['api', 'static', 'admin'][p]}`,
              pathType: 'Prefix',
              backend: { service: { name: `svc-${ns + 50 * p}`, port: { name: 'http' } } },
            })),
          },
        },
      ],
    },
    status: {
      loadBalancer: {
        ingress: [
          { hostname: `k8s-${group ?? `${namespace}-${name}`}-0123456789.eu-west-1.elb.amazonaws.com`.slice(0, 90) },
        ],
      },
    },
  };
}

type Cluster = import('../../functions/relay/testing/fake-kube-api.ts').FakeCluster;
/** One change to the cluster; `at` is the churn's clock (heartbeats and deletion timestamps). */
type Change = (cluster: Cluster, world: World, at: string) => void;

const nodeHeartbeat: Change = (cluster, world, at) => {
  const name = pick(world, world.nodes);
  const node = cluster.get('Node', name) as ReturnType<typeof makeNode>;
  cluster.apply('Node', {
    ...node,
    status: { ...node.status, conditions: nodeConditions(at, world.ready.get(name)!) },
  });
};

const podStatusChange: Change = (cluster, world) => {
  const pod = cluster.get('Pod', pick(world, world.pods)) as ReturnType<typeof makePod> | undefined;
  if (!pod) return;
  const status = pod.status;
  const ready = !status.containerStatuses[0]!.ready;
  const restarts = status.containerStatuses[0]!.restartCount + (ready ? 0 : 1);
  cluster.apply('Pod', { ...pod, status: podStatus(status.podIP, status.hostIP, ready, restarts) });
};

/** An endpoint's readiness flips; `ipTargets`: only slices of the Services whose load balancers target Pod IPs. */
const sliceChange =
  (ipTargets: boolean): Change =>
  (cluster, world) => {
    const i = ipTargets ? 40 + Math.floor(world.random() * 10) : Math.floor(world.random() * SERVICES);
    const [namespace, name] = world.slices[i]!.split('/') as [string, string];
    cluster.apply(
      'EndpointSlice',
      makeSlice(namespace, name.replace(/-x7k2p$/, ''), i, Math.floor(world.random() * 20)),
    );
  };

/** A Pod bound to a Node, asking for a VPC address (no annotation yet). */
const podCreated: Change = (cluster, world) => {
  const seq = world.podCounter++;
  const namespace = `team-${seq % 50}`;
  const name = `app-7d9f8b6c5d-${seq.toString(36).padStart(5, '0')}`;
  const pod = makePod(namespace, name, Math.floor(world.random() * NODES), seq);
  cluster.apply('Pod', { ...pod, metadata: { ...pod.metadata, annotations: {} } });
  world.pods.push(`${namespace}/${name}`);
  world.unannotated.push(`${namespace}/${name}`);
};

const podAnnotated: Change = (cluster, world) => {
  const pod = cluster.get('Pod', world.unannotated.shift() ?? pick(world, world.pods)) as
    | ReturnType<typeof makePod>
    | undefined;
  if (!pod) return;
  const annotations = { 'vpc.amazonaws.com/PrivateIPv4Address': `${pod.status.podIP}/19` };
  cluster.apply('Pod', { ...pod, metadata: { ...pod.metadata, annotations } });
};

/** deletionTimestamp, then gone: two events. */
const podDeleted: Change = (cluster, world, at) => {
  const index = Math.floor(world.random() * world.pods.length);
  const key = world.pods[index]!;
  const pod = cluster.get('Pod', key) as ReturnType<typeof makePod> | undefined;
  if (!pod) return;
  cluster.apply('Pod', { ...pod, metadata: { ...pod.metadata, deletionTimestamp: at } });
  cluster.remove('Pod', key);
  world.pods[index] = world.pods[world.pods.length - 1]!;
  world.pods.pop();
};

/** An Ingress's paths change (a new prefix): its group's key. */
const ingressPathChange: Change = (cluster, world) => {
  const index = Math.floor(world.random() * world.ingresses.length);
  const ingress = cluster.get('Ingress', world.ingresses[index]!) as ReturnType<typeof makeIngress>;
  world.ingressChanges++;
  const next = makeIngress(index, ingress.metadata.generation);
  cluster.apply('Ingress', next);
};

const nodeReadyFlip: Change = (cluster, world, at) => {
  const name = pick(world, world.nodes);
  const ready = !world.ready.get(name);
  world.ready.set(name, ready);
  const node = cluster.get('Node', name) as ReturnType<typeof makeNode>;
  cluster.apply('Node', { ...node, status: { ...node.status, conditions: nodeConditions(at, ready) } });
};

function pick<T>(world: World, items: T[]): T {
  return items[Math.floor(world.random() * items.length)]!;
}

/** Changes by cumulative share. */
function mix(shares: [number, Change][]): (roll: number) => Change {
  return (roll) => shares.find(([upTo]) => roll < upTo)?.[1] ?? shares[shares.length - 1]![1];
}

/**
 * The churn, by share of events: Node heartbeats 69.75 %, Ingress path changes 0.25 % (about 300), Pod status churn (readiness, restarts) 20 %,
 * EndpointSlice updates 4 %, Pods created 2 % (and their IP annotation 2 %), Pods deleted 1.5 %
 * (deletionTimestamp, then gone), Nodes going NotReady or Ready 0.5 %.
 */
const realisticChange = mix([
  [0.6975, nodeHeartbeat],
  [0.7, ingressPathChange],
  [0.9, podStatusChange],
  [0.94, sliceChange(false)],
  [0.96, podCreated],
  [0.98, podAnnotated],
  [0.995, podDeleted],
  [1, nodeReadyFlip],
]);

/**
 * Only changes a reconciler reads: Pods created 40 % (ipam, their Node's key), Pods deleted 25 %, Nodes going
 * NotReady or Ready 25 % (node-lifecycle), endpoints of IP-target Services 10 % (service).
 */
const relevantChange = mix([
  [0.4, podCreated],
  [0.65, podDeleted],
  [0.9, nodeReadyFlip],
  [1, sliceChange(true)],
]);

/** Make `events` changes; returns how long the generator waited for the relay to read what it wrote. */
async function churn(
  cluster: Cluster,
  world: World,
  backlog: () => number,
  events: number,
  change: (roll: number) => Change,
): Promise<{ waitedSeconds: number; events: number }> {
  let waited = 0;
  for (let n = 0; n < events; n++) {
    if (n % 200 === 0 && backlog() > 4 * 2 ** 20) {
      // Never run ahead of the relay by more than a few MB of unread watch data.
      const from = performance.now();
      while (backlog() > 4 * 2 ** 20) await new Promise((resolve) => setTimeout(resolve, 2));
      waited += performance.now() - from;
    }
    world.clock += 5;
    const at = new Date(world.clock - (world.clock % 1000)).toISOString().replace('.000Z', 'Z');
    change(world.random())(cluster, world, at);
  }
  return { waitedSeconds: waited / 1000, events };
}

// ---------------------------------------------------------------------------------------------
// The child: the relay, measured.

async function child(): Promise<void> {
  // The relay's own wiring (functions/relay/main.ts `wire`), so the process loads and runs what the
  // container does: every module main.mjs loads, the operations server, the in-cluster REST list/watch
  // and Leases against the fake API server; only SQS is a stand-in and the admission webhooks stay off
  // (their default), so their chunk is not loaded, as in the container.
  const [{ wire }, { loadRelayConfig }, { restClients }, log] = await Promise.all([
    import('../../functions/relay/main.ts'),
    import('../../functions/relay/config.ts'),
    import('../../functions/relay/kube-clients.ts'),
    import('../../shared/observability/log.ts'),
  ]);
  const { url, caData, port, pageSize } = JSON.parse(process.env.RELAY_BENCH ?? '{}') as {
    url: string;
    caData: string;
    port: number;
    pageSize?: string;
  };
  const reply = (m: FromChild) => process.send?.(m);
  let sendCalls = 0;
  const sqs = {
    async sendKeys(_queueUrl: string, messages: readonly unknown[]) {
      sendCalls += Math.ceil(messages.length / 10);
      await new Promise((resolve) => setTimeout(resolve, SQS_LATENCY_MS));
      return [];
    },
    async changeVisibility() {},
  };
  const queue = (name: string) => `https://sqs.eu-west-1.amazonaws.com/123456789012/bench-${name}.fifo`;
  const config = loadRelayConfig({
    NODE_QUEUE_URL: queue('node'),
    NODE_LIFECYCLE_QUEUE_URL: queue('node-lifecycle'),
    ROUTE_QUEUE_URL: queue('route'),
    SERVICE_QUEUE_URL: queue('service'),
    IPAM_QUEUE_URL: queue('ipam'),
    INGRESS_QUEUE_URL: queue('ingress'),
    RELAY_NAMESPACE: 'kube-system',
    RELAY_IDENTITY: 'bench',
    RELAY_PORT: String(port),
    ...(pageSize ? { RELAY_PAGE_SIZE: pageSize } : {}),
  });
  // The clients of a relay in a Pod (kube-clients.ts `loadKubeClients` in-cluster), with the bench's server and CA.
  const kube = restClients({ server: url, caData, token: 'relay-token' });
  const { relay, operations } = await wire(config, { kube, sqs, log: log.silentLog });

  let peakRss = 0;
  const sample = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 50);
  const m = relay.metrics;
  const snapshot = () => ({
    at: performance.now(),
    cpu: process.cpuUsage(),
    seen: m.changesSeen.total(),
    forwarded: m.changesForwarded.total(),
    filtered: m.changesFiltered.total(),
    keysSent: m.keysSent.total(),
    ingressKeys: m.keysSent.get({ reconciler: 'ingress' }),
    sendCalls,
  });
  const phase = (from: ReturnType<typeof snapshot>): Phase => {
    const now = snapshot();
    const cpu = process.cpuUsage(from.cpu);
    const memory = process.memoryUsage();
    peakRss = Math.max(peakRss, memory.rss);
    const result: Phase = {
      seconds: (now.at - from.at) / 1000,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      rssMiB: memory.rss / 2 ** 20,
      peakRssMiB: peakRss / 2 ** 20,
      heapMiB: memory.heapUsed / 2 ** 20,
      retainedHeapMiB: 0,
      retainedRssMiB: 0,
      seen: now.seen - from.seen,
      forwarded: now.forwarded - from.forwarded,
      filtered: now.filtered - from.filtered,
      keysSent: now.keysSent - from.keysSent,
      ingressKeys: now.ingressKeys - from.ingressKeys,
      sendCalls: now.sendCalls - from.sendCalls,
    };
    (globalThis as { gc?: () => void }).gc?.();
    const collected = process.memoryUsage();
    result.retainedHeapMiB = collected.heapUsed / 2 ** 20;
    result.retainedRssMiB = collected.rss / 2 ** 20;
    peakRss = 0;
    return result;
  };
  const until = async (check: () => boolean) => {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
  };

  (globalThis as { gc?: () => void }).gc?.();
  const idleRssMiB = process.memoryUsage.rss() / 2 ** 20;
  const idleHeapMiB = process.memoryUsage().heapUsed / 2 ** 20;
  const start = snapshot();
  relay.start();
  await until(() => relay.status().synced && relay.status().pending === 0);
  // Settled: the node-set keys are out, the garbage of the list collected where V8 wants to.
  const memory = process.memoryUsage();
  reply({ type: 'synced', phase: phase(start), idleRssMiB, idleHeapMiB, memory });

  let churnStart = snapshot();
  process.on('message', async (message: ToChild) => {
    if (message.type === 'churn-start') {
      churnStart = snapshot();
      reply({ type: 'started' });
    }
    if (message.type === 'churn-done') {
      const seen = (kind: string, revision: number) =>
        Number(relay.resourceVersions()[kind as keyof ReturnType<typeof relay.resourceVersions>] ?? 0) >= revision;
      await until(() => Object.entries(message.revisions).every(([kind, r]) => seen(kind, r)));
      const read = performance.now();
      await until(() => relay.status().pending === 0);
      reply({ type: 'caught-up', phase: phase(churnStart), sentAfterReadSeconds: (performance.now() - read) / 1000 });
    }
    if (message.type === 'stop') {
      clearInterval(sample);
      await relay.stop(5_000);
      await operations.close();
      process.exit(0);
    }
  });
}

if (process.argv.includes(CHILD_FLAG)) {
  child().catch((err: unknown) => {
    process.send?.({ type: 'error', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
}
