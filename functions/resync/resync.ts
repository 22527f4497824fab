import type { Ec2Port } from '../../shared/aws/ec2-port.ts';
import { errorMessage } from '../../shared/errors.ts';
import { isWindowsNode } from '../../shared/k8s/ipam-names.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP, type ServicesPort } from '../../shared/k8s/service-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import type { IpFamily } from '../../shared/nodes/addresses.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import { ingressGarbageCollectionMessage } from '../../shared/queue/ingress-gc-key.ts';
import { ipamGarbageCollectionMessage } from '../../shared/queue/ipam-gc-key.ts';
import { HINT_FIELD_MAX, type KeyHint, type KeyMessage } from '../../shared/queue/message.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { garbageCollectionMessage } from '../../shared/queue/service-gc-key.ts';
import type { SqsPort } from '../../shared/queue/sqs-port.ts';
import { type IngressGroupSources, ingressGroupKeys } from './ingress-groups.ts';
import { sweepNodes } from './node-sweep.ts';
import { type TargetGroupBindingSources, targetGroupBindingKeys } from './target-group-bindings.ts';

/** The reconciler queues this stage deploys; an unset one is simply not fed. */
export interface ResyncQueues {
  node?: string;
  nodeLifecycle?: string;
  route?: string;
  service?: string;
  /** The Windows IP address manager (functions/ipam). */
  ipam?: string;
  /** The Ingress controller (functions/ingress): one key per IngressGroup. */
  ingress?: string;
  /** The TargetGroupBinding controller (functions/target-group-binding): one key per binding. */
  targetGroupBinding?: string;
}

export interface ResyncDeps {
  kube: Pick<KubernetesPort, 'listNodes'>;
  /** Only with the service controller. */
  services?: Pick<ServicesPort, 'listServices'>;
  /** Only with the Ingress controller. */
  ingresses?: IngressGroupSources;
  /** Only with the TargetGroupBinding controller. */
  targetGroupBindings?: TargetGroupBindingSources;
  sqs: Pick<SqsPort, 'sendKeys'>;
  queues: ResyncQueues;
  /**
   * With it, the node and node-lifecycle queues get only the Nodes a sweep of the cluster's instances finds out of
   * step (`node-sweep.ts`); without it, or when the sweep fails, every Node as before.
   */
  nodeSweep?: NodeSweepDeps;
  log: Log;
  metrics: MetricsPort;
}

export interface NodeSweepDeps {
  ec2: Pick<Ec2Port, 'findClusterInstances'>;
  clusterName: string;
  /** The node reconciler's NODE_IP_FAMILIES: the addresses it would give a Node. */
  ipFamilies: readonly IpFamily[];
}

export class ResyncError extends Error {}

/**
 * The keys of the LoadBalancer Services, and of any Service still holding the cleanup finalizer (type changed
 * away). Each names the Service's uid: the service controller reads its batch's load balancers ahead with it (a
 * migrated one is named after it); the deduplication ID does not include it. One over the hint's limit is left
 * out rather than make the message unreadable.
 */
function serviceKeys(services: readonly Service[], hint: KeyHint): KeyMessage[] {
  return services
    .filter((s) => s.spec?.type === 'LoadBalancer' || s.metadata.finalizers?.includes(FINALIZER_LOAD_BALANCER_CLEANUP))
    .map((s) => {
      const uid = s.metadata.uid;
      const keyHint = uid && uid.length <= HINT_FIELD_MAX ? { ...hint, uid } : hint;
      return { kind: 'Service', namespace: s.metadata.namespace, name: s.metadata.name, hint: keyHint };
    });
}

/**
 * The level-triggered safety net (docs/architecture.md, docs/keys.md): every key again, whatever events were lost;
 * for the node and node-lifecycle queues, every Node a sweep of the cluster's instances finds out of step (`sweep`).
 * Every key of a round carries the same hint (`RESYNC` + the round's ID), so a round retried by
 * EventBridge is deduplicated by SQS while the next round is not. Reconcilers re-read state, so a
 * key for an object that needs nothing costs reads and no writes.
 */
export async function resync(round: string, deps: ResyncDeps): Promise<{ sent: number }> {
  const hint: KeyHint = { eventType: 'RESYNC', eventId: round };
  const batches: [string, KeyMessage[]][] = [];
  const { queues } = deps;

  if (queues.node || queues.nodeLifecycle || queues.route || queues.ipam) {
    const nodes = await deps.kube.listNodes();
    const nodeKey = (n: (typeof nodes)[number]): KeyMessage => ({ kind: 'Node', name: n.metadata.name, hint });
    if (queues.node || queues.nodeLifecycle) {
      const swept = await sweep(round, nodes, deps);
      const keysOf = (names: ReadonlySet<string> | undefined) =>
        (names ? nodes.filter((n) => names.has(n.metadata.name)) : nodes).map(nodeKey);
      if (queues.node) batches.push([queues.node, keysOf(swept?.node)]);
      if (queues.nodeLifecycle) batches.push([queues.nodeLifecycle, keysOf(swept?.lifecycle)]);
    }
    // One pass over the whole route table covers every Node (docs/adr/0003).
    if (queues.route) batches.push([queues.route, [routeTableMessage(hint)]]);
    // Only Windows Nodes get VPC addresses for their Pods; the GC key sweeps the interfaces no Node holds.
    if (queues.ipam) {
      const windowsKeys = nodes.filter((n) => isWindowsNode(n)).map(nodeKey);
      batches.push([queues.ipam, [...windowsKeys, ipamGarbageCollectionMessage(hint)]]);
    }
  }
  if (queues.service && deps.services) {
    const keys = serviceKeys(await deps.services.listServices(), hint);
    batches.push([queues.service, [...keys, garbageCollectionMessage(hint)]]);
  }
  if (queues.ingress && deps.ingresses) {
    batches.push([
      queues.ingress,
      [...(await ingressGroupKeys(deps.ingresses, hint)), ingressGarbageCollectionMessage(hint)],
    ]);
  }

  if (queues.targetGroupBinding && deps.targetGroupBindings) {
    batches.push([queues.targetGroupBinding, await targetGroupBindingKeys(deps.targetGroupBindings, hint)]);
  }

  let sent = 0;
  const problems: string[] = [];
  for (const [queueUrl, keys] of batches) {
    try {
      const failed = await deps.sqs.sendKeys(queueUrl, keys);
      sent += keys.length - failed.length;
      if (failed.length > 0) problems.push(`${failed.length} key(s) refused by ${queueUrl}: ${failed[0]!.code}`);
      deps.metrics.count(MetricName.KeysSent, { source: 'resync' }, keys.length - failed.length);
      if (failed.length > 0) deps.metrics.count(MetricName.KeySendFailures, { source: 'resync' }, failed.length);
    } catch (err) {
      problems.push(`sending to ${queueUrl}: ${errorMessage(err)}`);
      deps.metrics.count(MetricName.KeySendFailures, { source: 'resync' }, keys.length);
    }
  }
  deps.log.info('resync round sent', { round, sent, queues: batches.length });
  // Every queue got what could be sent; a failure makes the scheduled invocation fail, so
  // EventBridge retries the round (the keys already accepted are deduplicated).
  if (problems.length > 0) throw new ResyncError(`resync ${round}: ${problems.join('; ')}`);
  return { sent };
}

/**
 * The Nodes the node and node-lifecycle reconcilers would act on, from one list of the cluster's instances (1 call
 * per 1000 instances, where a key per Node costs one DescribeInstances per batch of 10 in each reconciler).
 * Undefined: no sweep configured, or it failed (throttled...): every Node is sent, as without it, so a lost event is
 * still mended this round. Keys from events (the relay, EC2 events) never depend on it.
 */
async function sweep(
  round: string,
  nodes: Parameters<typeof sweepNodes>[0]['nodes'],
  deps: ResyncDeps,
): Promise<{ node: Set<string>; lifecycle: Set<string> } | undefined> {
  if (!deps.nodeSweep) return undefined;
  try {
    const clusterInstances = await deps.nodeSweep.ec2.findClusterInstances(deps.nodeSweep.clusterName);
    const found = sweepNodes({ nodes, clusterInstances, ipFamilies: deps.nodeSweep.ipFamilies });
    deps.log.info('node sweep', {
      round,
      nodes: nodes.length,
      instances: clusterInstances.length,
      node: found.node.length,
      lifecycle: found.lifecycle.length,
    });
    return { node: new Set(found.node), lifecycle: new Set(found.lifecycle) };
  } catch (err) {
    deps.log.warn('node sweep failed: sending every Node key', { round, error: errorMessage(err) });
    deps.metrics.count(MetricName.NodeSweepFallbacks);
    return undefined;
  }
}
