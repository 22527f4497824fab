import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import { RetryableError } from '../../shared/errors.ts';
import { IPV4_RESOURCE, isWindowsNode, VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';
import type { ConfigMap } from '../../shared/k8s/ipam-port.ts';
import { readNode, recordNodeEvent } from '../../shared/k8s/node-ops.ts';
import type { Node, Pod } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { isIpamGarbageCollectionKey } from '../../shared/queue/ipam-gc-key.ts';
import { isNodeKey } from '../../shared/queue/message.ts';
import type { ReconcileContext, ReconcileResult, Reconciler } from '../../shared/queue/runner.ts';
import { admitAssigned } from './admit.ts';
import { type IpamBatch, journalTrusted, kubeCall, prepareIpamBatch } from './batch.ts';
import type { IpamDeps } from './deps.ts';
import { sweepInterfaces } from './gc.ts';
import { mergeObserved, type Observation, observeInterface } from './observe.ts';
import { type PlanInput, type PoolPlan, planPool } from './plan.ts';
import { annotatePods, managedPod, podEvent, podView, reportUnreadableAnnotations } from './pods.ts';
import { emptyRecord, POOL_ANNOTATION, type PoolRecord, readRecord, writeRecord } from './record.ts';
import { type IpamSettings, parseSettings, settingsForNode } from './settings.ts';

/** Subnet out of addresses (or aligned /28 blocks): look again in about two minutes, as the reference does. */
export const EXHAUSTED_REQUEUE_SECONDS = 120;
/** EC2 does not show the Node's instance or interface yet (it was just launched). */
const NOT_VISIBLE_REQUEUE_SECONDS = 10;

/**
 * Windows IP address management (docs/adr/0009-ip-addresses-as-schedulable-resources.md): a Windows Node advertises
 * its primary interface's capacity as the extended resource `vpc.amazonaws.com/PrivateIPv4Address`, and each Pod
 * bound to it gets a secondary address of that interface in its annotation, from a warm pool kept with as few EC2
 * calls as possible. One key per Node, so the FIFO queue never runs two passes over one pool at once; the state is
 * the interface's addresses (EC2), the Pods' annotations and the journal on the Node (`record.ts`).
 */
export const ipamReconciler: Reconciler<IpamDeps, IpamBatch> = {
  name: 'ipam',
  /** A Node's key, or the garbage-collection key; any other key is another queue's, counted as malformed. */
  accepts: (key) => isNodeKey(key) || isIpamGarbageCollectionKey(key),
  prepareBatch: prepareIpamBatch,

  async reconcile(key, deps, batch, context) {
    if (isIpamGarbageCollectionKey(key)) return sweepInterfaces(deps);
    const node = batch.nodes.has(key.name) ? batch.nodes.get(key.name) : await readNode(deps.kube, key.name);
    // A deleted Node's pool is forgotten: its journal went with it, and its interface goes with the instance.
    if (!node || !isWindowsNode(node)) return undefined;
    const settings = await readSettings(node, batch.configMap, deps);
    // Off: no new addresses, and the Pods that have one keep it.
    if (!settings.enabled) return undefined;
    const instanceId = instanceIdFromProviderId(node.spec?.providerID);
    if (!instanceId) return undefined;
    return reconcilePool(node, { instanceId, observed: batch.observations.get(instanceId) }, settings, deps, context);
  },
};

async function readSettings(node: Node, configMap: ConfigMap | undefined, deps: IpamDeps): Promise<IpamSettings> {
  const { settings, problems } = parseSettings(configMap);
  if (problems.length > 0) {
    deps.metrics.count(MetricName.IpamInvalidInput, { input: 'ConfigMap' }, problems.length);
    const message = `${VPC_CNI_CONFIGMAP.namespace}/${VPC_CNI_CONFIGMAP.name}: ${problems.join('; ')}`;
    deps.log.warn('invalid IPAM setting', { node: node.metadata.name, problems });
    await recordNodeEvent(deps, node, 'Warning', 'InvalidIPAMConfiguration', message);
  }
  return settings;
}

interface PassState {
  node: Node;
  record: PoolRecord;
  pool: PlanInput['pool'];
  again: { addresses: string[]; prefixes: string[] };
  rebuilt: boolean;
  /** The instance type, when this pass looked at EC2 (the journal was not trusted alone). */
  observed?: { instanceType: string };
}

/** The Node's instance, and EC2's view of its interface when the batch read it already. */
interface Instance {
  instanceId: string;
  observed?: Observation;
}

async function reconcilePool(
  node: Node,
  instance: Instance,
  configured: IpamSettings,
  deps: IpamDeps,
  context: ReconcileContext,
): Promise<ReconcileResult | undefined> {
  const now = Math.floor(deps.clock.now() / 1000);
  const state = await poolState(node, instance, deps, context, now);
  if (!('pool' in state)) return state;
  // Prefix delegation needs a Nitro instance type; the others keep secondary addresses, as in the reference.
  const settings = settingsForNode(configured, { prefixDelegation: state.record.nitro === true });
  const advertised = await advertiseCapacity(state.node, state.record.slots!, settings, deps);
  if (settings.mode !== configured.mode && (advertised !== state.node || state.observed)) {
    await warnNotNitro(advertised, state.observed?.instanceType, deps);
  }
  const listed = await kubeCall(`listing pods on ${node.metadata.name}`, () =>
    deps.pods.listPodsOnNode(node.metadata.name),
  );
  const pods = new Map(listed.filter(managedPod).map((p) => [p.metadata.uid ?? '', p]));
  await reportUnreadableAnnotations(pods, deps);
  const input: PlanInput = {
    settings,
    slots: state.record.slots!,
    pool: state.pool,
    record: state.record,
    rebuilt: state.rebuilt,
    pods: [...pods.values()].map(podView),
    now,
    cooldownSeconds: deps.cooldownSeconds,
    mayAllocate: true,
  };
  const served = planPool({ ...input, mayAllocate: false });
  const eni = state.record.eni!;
  let outcome: { plan: PoolPlan; exhausted?: number };
  let annotated: boolean;
  if (served.waiting.length === 0) {
    // Every Pod is served from the warm pool: it gets its address before any EC2 call, and the pool is refilled after.
    const written = await writeJournal(advertised, state.record, served.record, deps);
    annotated = await annotatePods(served, pods, state.record.prefixLength!, deps);
    await release(eni, served.release, state.again, deps);
    outcome = await planAndAllocate(afterServing(input, served), deps, written);
    await writeJournal(written, served.record, outcome.plan.record, deps);
    outcome.plan.handouts.unshift(...served.handouts);
  } else {
    // Pods wait for EC2 anyway: one allocation for all of them and the warm pool, then they are served.
    outcome = await planAndAllocate(input, deps, advertised);
    await writeJournal(advertised, state.record, outcome.plan.record, deps);
    annotated = await annotatePods(outcome.plan, pods, state.record.prefixLength!, deps);
    await release(eni, outcome.plan.release, state.again, deps);
  }
  const { plan, exhausted } = outcome;
  report(advertised, plan, pods, deps);
  // A requeue holds the Node's whole message group: only for Pods still waiting.
  const blocked = exhausted && plan.waiting.length > 0 ? exhausted : undefined;
  const waits = [plan.requeueAfterSeconds, blocked].filter((s): s is number => s !== undefined);
  if (!annotated) throw new RetryableError(`a Pod on ${node.metadata.name} changed while getting its address`);
  return waits.length > 0 ? { requeueAfterSeconds: Math.min(...waits) } : undefined;
}

/**
 * The pool as this pass sees it: the journal alone while it is recent, else EC2's view merged into it. A resync, a
 * retried pass (the previous one may have stopped between EC2 and the journal) or a missing journal looks at EC2.
 */
async function poolState(
  node: Node,
  instance: Instance,
  deps: IpamDeps,
  context: ReconcileContext,
  now: number,
): Promise<PassState | ReconcileResult> {
  const journal = readRecord(node.metadata.annotations);
  const record = journal ?? emptyRecord();
  const trusted = journalTrusted(journal, context, now);
  const empty = { addresses: [], prefixes: [] };
  if (trusted) {
    return {
      node,
      record,
      pool: { addresses: record.addresses, prefixes: record.prefixes },
      again: empty,
      rebuilt: false,
    };
  }
  const observation = instance.observed ?? (await observeInterface(deps.ec2, deps.facts, instance.instanceId));
  if (!observation.ok && observation.gone) {
    // Its addresses went with its interfaces; the Node goes next (node-lifecycle), and its Pods with it. Waiting
    // would only requeue until the key gave up into the DLQ.
    deps.log.info('the Node’s instance is going: no addresses to manage', {
      node: node.metadata.name,
      problem: observation.problem,
    });
    return {};
  }
  if (!observation.ok) {
    deps.log.info('waiting for EC2 to show the Node', { node: node.metadata.name, problem: observation.problem });
    return { requeueAfterSeconds: NOT_VISIBLE_REQUEUE_SECONDS };
  }
  const merged = mergeObserved(record, observation.observed, now);
  return {
    node,
    ...merged,
    rebuilt: journal === undefined,
    observed: { instanceType: observation.observed.instanceType },
  };
}

/** `vpc.amazonaws.com/PrivateIPv4Address` in capacity and allocatable, put back whenever it is missing or wrong. */
async function advertiseCapacity(node: Node, slots: number, settings: IpamSettings, deps: IpamDeps): Promise<Node> {
  const want = String(slots * (settings.mode === 'prefix' ? 16 : 1));
  if (node.status?.capacity?.[IPV4_RESOURCE] === want && node.status?.allocatable?.[IPV4_RESOURCE] === want) {
    return node;
  }
  deps.log.info('advertising VPC address capacity', { node: node.metadata.name, capacity: want });
  return kubeCall(`advertising ${IPV4_RESOURCE} on ${node.metadata.name}`, () =>
    deps.kube.patchNodeStatus(
      node.metadata.name,
      { status: { capacity: { [IPV4_RESOURCE]: want }, allocatable: { [IPV4_RESOURCE]: want } } },
      { resourceVersion: node.metadata.resourceVersion ?? '' },
    ),
  );
}

/**
 * Prefix delegation is on, but the Node's instance type is not Nitro: a Warning on the Node (the reference's reason,
 * `Unsupported`), when its capacity is written and whenever a pass looks at EC2 again (at most every
 * VERIFY_AFTER_SECONDS), not on every pass.
 */
async function warnNotNitro(node: Node, observedType: string | undefined, deps: IpamDeps): Promise<void> {
  const type = observedType ?? node.metadata.labels?.['node.kubernetes.io/instance-type'] ?? 'of this Node';
  const message = `instance type ${type} is not a Nitro type: prefix delegation (enable-windows-prefix-delegation) needs one; the Node keeps secondary addresses, with the secondary-address defaults`;
  deps.log.warn('prefix delegation needs a Nitro instance type', { node: node.metadata.name, type });
  await recordNodeEvent(deps, node, 'Warning', 'Unsupported', message);
}

/**
 * Plan; when the plan needs addresses, ask EC2 once for all of them and plan again with what it gave. A subnet out
 * of addresses is a Warning and a slow look again, never a retry storm; `exhausted` is when to look again (a full
 * interface means the journal was wrong: soon, with a fresh look at EC2).
 */
async function planAndAllocate(
  input: PlanInput,
  deps: IpamDeps,
  node: Node,
): Promise<{ plan: PoolPlan; exhausted?: number }> {
  const first = planPool(input);
  if (!first.allocate) return { plan: first };
  const eni = input.record.eni!;
  const result = await deps.ec2.assignPrivateIpAddresses(eni, first.allocate);
  if (result === 'subnet-full' || result === 'interface-full') {
    const again = planPool({ ...input, mayAllocate: false });
    if (result === 'interface-full') {
      // The journal thought there was room: look at EC2 on the next pass.
      deps.log.warn('network interface full', { node: node.metadata.name, eni });
      return { plan: { ...again, record: { ...again.record, verifiedAt: 0 } }, exhausted: NOT_VISIBLE_REQUEUE_SECONDS };
    }
    deps.metrics.count(MetricName.IpamSubnetExhausted);
    const subnet = `the subnet of ${eni} has no free ${'prefixes' in first.allocate ? '/28 block' : 'address'} left`;
    deps.log.warn('subnet exhausted', { node: node.metadata.name, eni });
    await recordNodeEvent(deps, node, 'Warning', 'SubnetExhausted', `${subnet}; trying again in 2 minutes`);
    for (const pod of again.waiting) await podEvent(deps, pod, 'Warning', 'ResourceAllocationFailed', subnet);
    return { plan: again, exhausted: EXHAUSTED_REQUEUE_SECONDS };
  }
  const now = input.now;
  // Only new units EC2 describes as secondary join the pool, whatever the answer lists (admit.ts).
  const admitted = await admitAssigned(deps, eni, first.allocate, result, {
    primary: input.record.primary,
    addresses: new Set([
      ...input.pool.addresses,
      ...Object.keys(input.record.assigned),
      ...Object.keys(input.record.cooling),
    ]),
    prefixes: new Set(input.pool.prefixes),
  });
  // Planned again from the first plan's journal (a rebuilt journal's cooling already applied to what EC2 showed):
  // the addresses EC2 just gave are free, never "unknown".
  // EC2 may hand back a unit this Node released a moment ago: it is the pool's again, no longer being released.
  const fresh = { ...first.record.fresh };
  const releasing = { ...first.record.releasing };
  for (const unit of [...admitted.addresses, ...admitted.prefixes]) {
    fresh[unit] = now;
    delete releasing[unit];
  }
  deps.metrics.count(MetricName.IpamAddressesAllocated, {}, admitted.addresses.length + 16 * admitted.prefixes.length);
  const plan = planPool({
    ...input,
    pool: {
      addresses: [...input.pool.addresses, ...admitted.addresses],
      prefixes: [...input.pool.prefixes, ...admitted.prefixes],
    },
    // What EC2 assigned but did not describe yet is found by the next pass's look at EC2.
    record: { ...first.record, fresh, releasing, ...(admitted.unconfirmed > 0 ? { verifiedAt: 0 } : {}) },
    rebuilt: false,
    mayAllocate: false,
  });
  return admitted.unconfirmed > 0 ? { plan, exhausted: NOT_VISIBLE_REQUEUE_SECONDS } : { plan };
}

/**
 * The journal, when it changed (the time of the last look at EC2 alone is no reason to write). Cooldowns that are
 * over are dropped with a write that happens anyway: an expired entry means the same as none.
 */
async function writeJournal(node: Node, before: PoolRecord, after: PoolRecord, deps: IpamDeps): Promise<Node> {
  const text = (r: PoolRecord) => writeRecord({ ...r, verifiedAt: undefined });
  // A journal marked for a look at EC2 (verifiedAt 0) is written even when nothing else changed.
  const unverified = after.verifiedAt === 0 && before.verifiedAt !== 0;
  if (readRecord(node.metadata.annotations) && text(before) === text(after) && !unverified) return node;
  const now = Math.floor(deps.clock.now() / 1000);
  const cooling = Object.fromEntries(
    Object.entries(after.cooling).filter(([, since]) => since + deps.cooldownSeconds > now),
  );
  return kubeCall(`writing the address journal of ${node.metadata.name}`, () =>
    deps.kube.patchNode(
      node.metadata.name,
      { metadata: { annotations: { [POOL_ANNOTATION]: writeRecord({ ...after, cooling }) } } },
      { resourceVersion: node.metadata.resourceVersion ?? '' },
    ),
  );
}

/** The plan's input once its handouts are made: the Pods hold their addresses, the journal is the plan's. */
function afterServing(input: PlanInput, served: PoolPlan): PlanInput {
  const given = new Map(served.handouts.map((h) => [h.pod.uid, h.address]));
  return {
    ...input,
    record: served.record,
    pool: { addresses: served.record.addresses, prefixes: served.record.prefixes },
    rebuilt: false,
    pods: input.pods.map((p) => (given.has(p.uid) ? { ...p, holds: given.get(p.uid)! } : p)),
  };
}

async function release(
  eni: string,
  planned: PoolPlan['release'],
  again: { addresses: string[]; prefixes: string[] },
  deps: IpamDeps,
): Promise<void> {
  const addresses = [...planned.addresses, ...again.addresses];
  const prefixes = [...planned.prefixes, ...again.prefixes];
  if (addresses.length + prefixes.length === 0) return;
  await deps.ec2.unassignPrivateIpAddresses(eni, {
    ...(addresses.length > 0 ? { addresses } : {}),
    ...(prefixes.length > 0 ? { prefixes } : {}),
  });
  deps.metrics.count(MetricName.IpamAddressesReleased, {}, addresses.length + 16 * prefixes.length);
}

function report(node: Node, plan: PoolPlan, pods: ReadonlyMap<string, Pod>, deps: IpamDeps): void {
  const { figures } = plan;
  deps.metrics.count(MetricName.IpamAddressesInUse, {}, figures.assigned);
  deps.metrics.count(MetricName.IpamAddressesFree, {}, figures.free);
  deps.metrics.count(MetricName.IpamAddressesCooling, {}, figures.cooling);
  deps.metrics.count(MetricName.IpamWarmTarget, {}, figures.target);
  for (const { address, pods: claimants } of plan.conflicts) {
    deps.log.error('two Pods hold one address', {
      node: node.metadata.name,
      address,
      pods: claimants.map((p) => `${p.namespace}/${p.name}`),
    });
  }
  if (plan.waiting.length > 0) {
    deps.log.info('Pods waiting for an address', {
      node: node.metadata.name,
      waiting: plan.waiting.length,
      cooling: figures.cooling,
      pods: pods.size,
    });
  }
}
