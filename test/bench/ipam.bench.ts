import type { SQSRecord } from 'aws-lambda';
import { ipamReconciler } from '../../functions/ipam/reconciler.ts';
import { readRecord } from '../../functions/ipam/record.ts';
import { parseSettings } from '../../functions/ipam/settings.ts';
import { createIpamWorld, IPAM_QUEUE, type IpamWorld } from '../../functions/ipam/testing/world.ts';
import { ChangeRouter } from '../../functions/relay/change-router.ts';
import type { KubeObject } from '../../functions/relay/kinds.ts';
import { resync } from '../../functions/resync/resync.ts';
import { EC2_WRITE_OPERATIONS, type Ec2Operation } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';
import { silentLog } from '../../shared/observability/log.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- ipam';
const NODES = 5;
const BURST_PODS = 100;
const CHURN_PODS = 1_000;
/** The churn: a wave of Pods every WAVE_SECONDS, spread over the Nodes; each Pod lives LIFE_WAVES waves. */
const WAVE_PODS = 20;
const WAVE_SECONDS = 15;
const LIFE_WAVES = 3;
/** Secondary addresses per interface of m5.4xlarge (30 with the primary): 20 Pods plus the warm pool fit. */
const INSTANCE_TYPE = 'm5.4xlarge';
/** A poll of the event source mapping when it found messages. */
const POLL_MS = 100;

const nodeName = (i: number) => `win-${i}`;

/**
 * The IPAM test world (functions/ipam/testing/world.ts) with its Pod and Node changes routed as the relay routes them: the
 * relay's own change router and forwarding rules (functions/relay/forwarding.ts), one Node key per Pod change that
 * matters (the reconciler's own annotation writes included), onto the FIFO queue the real runner polls.
 */
function createBenchWorld(mode: 'secondary' | 'prefix') {
  const w = createIpamWorld({ instanceType: INSTANCE_TYPE });
  const url = w.sqs.urlOf(IPAM_QUEUE);
  let keysSent = 0;
  const router = new ChangeRouter({
    reconcilers: new Set(['ipam']),
    allows: () => true,
    emit: ({ message }) => {
      keysSent++;
      void w.sqs.sendKeys(url, [message]);
    },
    nodeSetChanged: () => {},
  });
  w.kube.watch((change) => {
    const object = change.object as unknown as KubeObject;
    if (change.type === 'DELETED') router.remove(change.kind, object);
    else router.observe(change.kind, object);
  });
  w.configure(mode === 'prefix' ? { 'enable-windows-prefix-delegation': 'true' } : {});
  const instances = Array.from({ length: NODES }, (_, i) => w.addWindowsNode(nodeName(i)));
  const handler = (records: SQSRecord[]) => w.invoke(ipamReconciler, w.deps, records);
  return { w, instances, url, keysSent: () => keysSent, handler };
}

type BenchWorld = ReturnType<typeof createBenchWorld>;

/** Counters at one moment, to take the cost of one phase as the difference of two. */
function snapshot(w: IpamWorld) {
  const ec2 = new Map(w.ec2.calls);
  const sum = (ops: Iterable<[Ec2Operation, number]>, pick: (op: Ec2Operation) => boolean) =>
    [...ops].filter(([op]) => pick(op)).reduce((n, [, c]) => n + c, 0);
  return {
    ec2Writes: sum(ec2, (op) => EC2_WRITE_OPERATIONS.includes(op)),
    ec2Reads: sum(ec2, (op) => !EC2_WRITE_OPERATIONS.includes(op)),
    ec2: ec2,
    kube: [...w.kube.calls.values()].reduce((a, b) => a + b, 0),
    kubeByOp: new Map(w.kube.calls),
    passes: w.metrics.total(MetricName.Reconciles),
  };
}

function diff(before: ReturnType<typeof snapshot>, after: ReturnType<typeof snapshot>) {
  const ops = (a: Map<string, number>, b: Map<string, number>) =>
    [...b]
      .map(([op, n]) => [op, n - (a.get(op) ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .map(([op, n]) => `${op} ${n}`)
      .join(', ');
  return {
    ec2Writes: after.ec2Writes - before.ec2Writes,
    ec2Reads: after.ec2Reads - before.ec2Reads,
    kube: after.kube - before.kube,
    passes: after.passes - before.passes,
    ec2Ops: ops(before.ec2, after.ec2),
    kubeOps: ops(before.kubeByOp, after.kubeByOp),
  };
}

/**
 * Play the event source mapping until the queue is empty or `until` (simulated) comes: poll, and when only
 * delayed messages remain, move the clock to the next one. Bounded.
 */
async function play(b: BenchWorld, until = Number.POSITIVE_INFINITY, onPoll?: () => void): Promise<void> {
  const { w } = b;
  for (let polls = 0; polls < 100_000; polls++) {
    if (w.clock.now() >= until) return;
    const handled = await w.sqs.pump(IPAM_QUEUE, b.handler);
    if (handled > 0) {
      onPoll?.();
      w.clock.advance(POLL_MS);
      continue;
    }
    const next = w.sqs.nextVisibleInMs(IPAM_QUEUE);
    if (next === undefined) return;
    w.clock.advance(Math.min(Math.max(1, next), Math.max(1, until - w.clock.now())));
  }
  throw new Error('ipam bench: the queue never emptied');
}

const podsOf = (w: IpamWorld) => [...w.kube.workloads.pods.values()];
const annotated = (w: IpamWorld) => podsOf(w).filter((p) => p.metadata.annotations?.[POD_IP_ANNOTATION]).length;

/** The same address on two live Pods, counted over the run. */
function doubles(w: IpamWorld): number {
  const seen = new Set<string>();
  let n = 0;
  for (const p of podsOf(w)) {
    const a = p.metadata.annotations?.[POD_IP_ANNOTATION];
    if (!a) continue;
    if (seen.has(a)) n++;
    seen.add(a);
  }
  return n;
}

/** 100 Pods bound at once across the Nodes, after their warm pools were filled. */
async function burst(mode: 'secondary' | 'prefix') {
  const b = createBenchWorld(mode);
  const { w } = b;
  await play(b);
  const before = snapshot(w);
  const keysBefore = b.keysSent();
  for (let i = 0; i < BURST_PODS; i++) w.addPod(nodeName(i % NODES), `pod-${i}`);
  let passesToAll: number | undefined;
  let double = 0;
  await play(b, undefined, () => {
    double += doubles(w);
    if (passesToAll === undefined && annotated(w) === BURST_PODS) {
      passesToAll = w.metrics.total(MetricName.Reconciles) - before.passes;
    }
  });
  const cost = diff(before, snapshot(w));
  return {
    ...cost,
    keys: b.keysSent() - keysBefore,
    annotated: annotated(w),
    passesToAll: passesToAll ?? Number.NaN,
    double,
    dlq: w.sqs.depth('ipam-dlq.fifo'),
  };
}

/** The addresses on each Node's interface beyond what its live Pods hold and the warm pool its settings ask for. */
async function leaked(b: BenchWorld): Promise<{ leaked: number; onInterfaces: number; detail: string }> {
  const { w } = b;
  const { settings } = parseSettings(await w.kube.getConfigMap(VPC_CNI_CONFIGMAP.namespace, VPC_CNI_CONFIGMAP.name));
  let total = 0;
  let onInterfaces = 0;
  const detail: string[] = [];
  for (const [i, instance] of b.instances.entries()) {
    const { addresses } = await w.interfaceAddresses(instance.instanceId);
    const live = podsOf(w).filter((p) => p.spec?.nodeName === nodeName(i)).length;
    const target = Math.max(settings.minimumIpTarget, live + settings.warmIpTarget);
    const record = readRecord(w.kube.nodes.get(nodeName(i))?.metadata.annotations);
    const now = Math.floor(w.clock.now() / 1000);
    const cooling = Object.values(record?.cooling ?? {}).filter((since) => since + w.deps.cooldownSeconds > now).length;
    onInterfaces += addresses.length;
    total += addresses.length - target;
    detail.push(`${nodeName(i)}: ${addresses.length} on ENI, ${live} Pods, target ${target}, ${cooling} cooling`);
  }
  return { leaked: total, onInterfaces, detail: detail.join('; ') };
}

/**
 * 1,000 Pods created and deleted in waves over simulated time across the Nodes (each lives LIFE_WAVES waves), then,
 * after the cooldown, one resync round (every Windows Node key and the garbage-collection key).
 */
async function churn() {
  const b = createBenchWorld('secondary');
  const { w } = b;
  await play(b);
  const before = snapshot(w);
  const waves = CHURN_PODS / WAVE_PODS;
  const born: string[][] = [];
  let double = 0;
  let created = 0;
  for (let wave = 0; wave < waves + LIFE_WAVES; wave++) {
    const waveAt = w.clock.now();
    const old = born[wave - LIFE_WAVES] ?? [];
    for (const name of old) await w.kube.deletePod('default', name);
    const names: string[] = [];
    if (wave < waves) {
      for (let i = 0; i < WAVE_PODS; i++) {
        const name = `churn-${created}`;
        w.addPod(nodeName(created % NODES), name, { terminationGracePeriodSeconds: 0 });
        created++;
        names.push(name);
      }
    }
    born.push(names);
    await play(b, waveAt + WAVE_SECONDS * 1000, () => {
      double += doubles(w);
    });
    const rest = waveAt + WAVE_SECONDS * 1000 - w.clock.now();
    if (rest > 0) w.clock.advance(rest);
  }
  await play(b);
  const afterChurn = snapshot(w);
  const churnCost = diff(before, afterChurn);
  const leakBeforeResync = await leaked(b);
  // The leak check reads EC2 through the same fake: counted from after it.
  const beforeResync = snapshot(w);
  // The resync after the cooldown: whatever the keys missed, a pass that looks at EC2.
  w.clock.advance((w.deps.cooldownSeconds + 1) * 1000);
  await resync('bench-round', {
    kube: w.kube,
    sqs: w.sqs,
    queues: { ipam: b.url },
    log: silentLog,
    metrics: w.metrics,
  });
  await play(b);
  const resyncCost = diff(beforeResync, snapshot(w));
  const leak = await leaked(b);
  return {
    churnCost,
    resyncCost,
    leak,
    leakBeforeResync,
    double,
    annotatedAtEnd: annotated(w),
    live: podsOf(w).length,
    dlq: w.sqs.depth('ipam-dlq.fifo'),
  };
}

export async function run(): Promise<BenchResult[]> {
  const wallStart = performance.now();
  const secondary = await burst('secondary');
  const prefix = await burst('prefix');
  const churned = await churn();
  const wall = (performance.now() - wallStart) / 1000;
  const per = (n: number) => Number((n / BURST_PODS).toFixed(3));
  const burstNote = (r: Awaited<ReturnType<typeof burst>>) =>
    `${r.annotated}/${BURST_PODS} annotated, ${r.keys} keys, ${r.double} double addresses, DLQ ${r.dlq}; EC2: ${r.ec2Ops}`;
  const results: BenchResult[] = [
    {
      name: `ipam ${BURST_PODS} Pods/${NODES} Nodes: EC2 writes per Pod`,
      value: per(secondary.ec2Writes),
      unit: 'calls',
      target: '<= 0.2',
      rerun: RERUN,
      note: burstNote(secondary),
    },
    {
      name: `ipam ${BURST_PODS} Pods: EC2 calls total`,
      value: secondary.ec2Writes + secondary.ec2Reads,
      unit: 'calls',
      rerun: RERUN,
      note: `${secondary.ec2Reads} reads, ${secondary.ec2Writes} writes`,
    },
    {
      name: `ipam ${BURST_PODS} Pods: passes until all annotated`,
      value: secondary.passesToAll,
      unit: 'reconciles',
      target: `~${NODES} (one per Node)`,
      rerun: RERUN,
      note: `${secondary.passes} passes until the queue was empty`,
    },
    {
      name: `ipam ${BURST_PODS} Pods: Kubernetes calls per Pod`,
      value: per(secondary.kube),
      unit: 'calls',
      rerun: RERUN,
      note: secondary.kubeOps,
    },
    {
      name: `ipam ${BURST_PODS} Pods prefix mode: EC2 writes per Pod`,
      value: per(prefix.ec2Writes),
      unit: 'calls',
      target: '<= 0.2',
      rerun: RERUN,
      note: burstNote(prefix),
    },
    {
      name: `ipam ${BURST_PODS} Pods prefix mode: EC2 calls total`,
      value: prefix.ec2Writes + prefix.ec2Reads,
      unit: 'calls',
      rerun: RERUN,
      note: `${prefix.ec2Reads} reads, ${prefix.ec2Writes} writes`,
    },
    {
      name: `ipam ${BURST_PODS} Pods prefix mode: passes until all annotated`,
      value: prefix.passesToAll,
      unit: 'reconciles',
      target: `~${NODES} (one per Node)`,
      rerun: RERUN,
      note: `${prefix.passes} passes until the queue was empty`,
    },
    {
      name: `ipam ${BURST_PODS} Pods prefix mode: Kubernetes calls per Pod`,
      value: per(prefix.kube),
      unit: 'calls',
      rerun: RERUN,
      note: prefix.kubeOps,
    },
    {
      name: `ipam churn ${CHURN_PODS} Pods: EC2 calls`,
      value: churned.churnCost.ec2Reads + churned.churnCost.ec2Writes,
      unit: 'calls',
      rerun: RERUN,
      note: `${churned.churnCost.ec2Reads} reads, ${churned.churnCost.ec2Writes} writes (${churned.churnCost.ec2Ops}); ${churned.churnCost.passes} passes, ${churned.double} double addresses, DLQ ${churned.dlq}`,
    },
    {
      name: `ipam churn ${CHURN_PODS} Pods: EC2 writes per Pod`,
      value: Number((churned.churnCost.ec2Writes / CHURN_PODS).toFixed(3)),
      unit: 'calls',
      rerun: RERUN,
    },
    {
      name: 'ipam churn: resync pass EC2 calls',
      value: churned.resyncCost.ec2Reads + churned.resyncCost.ec2Writes,
      unit: 'calls',
      rerun: RERUN,
      note: `${churned.resyncCost.ec2Reads} reads, ${churned.resyncCost.ec2Writes} writes (${churned.resyncCost.ec2Ops}); ${churned.resyncCost.passes} passes`,
    },
    {
      name: 'ipam churn: surplus addresses before the resync',
      value: churned.leakBeforeResync.leaked,
      unit: 'addresses',
      rerun: RERUN,
      note: `cooled addresses beyond the warm pool wait for the next key (functions/ipam/plan.ts: no requeue to shrink); ${churned.leakBeforeResync.detail}`,
    },
    {
      name: 'ipam churn: leaked addresses after the resync',
      value: churned.leak.leaked,
      unit: 'addresses',
      target: '0',
      rerun: RERUN,
      note: churned.leak.detail,
    },
    { name: 'ipam bench wall time', value: Number(wall.toFixed(2)), unit: 's', rerun: RERUN, note: 'all three runs' },
  ];
  return results;
}
