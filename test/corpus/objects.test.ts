import { describe, expect, it } from 'vitest';
import { createIpamWorld } from '../../functions/ipam/testing/world.ts';
import { nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { routeReconciler } from '../../functions/route/reconciler.ts';
import { makeInstance, makeRouteTable } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { POD_IP_ANNOTATION } from '../../shared/k8s/ipam-names.ts';
import { ANNOTATION } from '../../shared/k8s/service-annotations.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { makeNode } from '../helpers/nodes.ts';
import { RecordingLog } from '../helpers/recording-log.ts';
import { createServiceWorld, SERVICE_QUEUE } from '../helpers/service-world.ts';
import { createWorld } from '../helpers/world.ts';
import {
  BAD_IPAM_SETTINGS,
  BAD_SERVICE_ANNOTATIONS,
  FOREIGN_PROVIDER_IDS,
  hugeMetadata,
  MALFORMED_AWS_PROVIDER_IDS,
  MALFORMED_POD_ADDRESSES,
} from './inputs.ts';

/**
 * Objects no handler should meet but every handler may: Nodes with malformed provider IDs or huge metadata,
 * Services with every annotation wrong, a VPC CNI ConfigMap with bad values, Pods with a malformed address.
 * Each through its reconciler on its queue: the problem is said on the object (an Event) or in a log line, and
 * counted; the good objects of the batch are reconciled; the queue ends empty.
 */

let events = 0;
const hint = () => ({ eventType: 'RESYNC' as const, eventId: `objects-${++events}` });
const nodeKey = (name: string): KeyMessage => ({ kind: 'Node', name, hint: hint() });

/** A world with one good uninitialized Node (its instance in EC2) and a recording log. */
function nodeWorld() {
  const w = createWorld();
  const log = new RecordingLog();
  w.runner.log = log;
  const instance = makeInstance({ index: 1 });
  w.ec2.putInstance(instance);
  w.ec2.putRouteTable(makeRouteTable());
  w.kube.putNode(makeNode('good', { providerID: `aws:///${instance.availabilityZone}/${instance.instanceId}` }));
  return { ...w, log, nodeDeps: { ...w.nodeDeps, log }, lifecycleDeps: { ...w.lifecycleDeps, log } };
}
const initialized = (w: ReturnType<typeof nodeWorld>, name: string) =>
  !w.kube.nodes.get(name)?.spec?.taints?.some((t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized');

describe('Nodes with a malformed AWS provider ID', () => {
  it.each(MALFORMED_AWS_PROVIDER_IDS)('%s: a Warning Event on the Node, counted, the batch goes on', async (_l, id) => {
    const w = nodeWorld();
    w.kube.putNode(makeNode('broken', { providerID: id }));
    await w.enqueue('node.fifo', [nodeKey('broken'), nodeKey('good')]);
    expect(await w.drain('node.fifo', nodeReconciler, w.nodeDeps)).toBeLessThanOrEqual(3);

    expect(w.sqs.depth('node.fifo') + w.sqs.depth('node-dlq.fifo')).toBe(0);
    const warnings = w.kube.eventsFor('Node', 'broken').filter((e) => e.type === 'Warning');
    expect(warnings.map((e) => e.reason)).toEqual(['FailedToInitialize']);
    expect(warnings[0]!.message).toContain('is not an AWS instance');
    expect(w.metrics.total(MetricName.TerminalErrors, { reconciler: 'node' })).toBe(1);
    expect(w.log.find('ERROR', { reconciler: 'node', key: 'Node//broken' })).toHaveLength(1);
    expect(initialized(w, 'good')).toBe(true);
    expect(initialized(w, 'broken')).toBe(false);
  });

  it.each(FOREIGN_PROVIDER_IDS)('%s: not ours, skipped without an Event', async (_l, id) => {
    const w = nodeWorld();
    w.kube.putNode(makeNode('foreign', { providerID: id }));
    await w.enqueue('node.fifo', [nodeKey('foreign'), nodeKey('good')]);
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps);
    expect(w.kube.eventsFor('Node', 'foreign')).toEqual([]);
    expect(w.metrics.total(MetricName.TerminalErrors)).toBe(0);
    expect(w.log.find('INFO', { node: 'foreign' }).map((l) => l.message)).toEqual([
      'node skipped: not an AWS instance',
    ]);
    expect(initialized(w, 'good')).toBe(true);
  });

  it.each(MALFORMED_AWS_PROVIDER_IDS)(
    '%s: the lifecycle and route passes leave it and serve the rest',
    async (_l, id) => {
      const w = nodeWorld();
      w.kube.putNode(makeNode('broken', { providerID: id, ready: false, initialized: true }));
      await w.enqueue('node-lifecycle.fifo', [nodeKey('broken'), nodeKey('good')]);
      await w.drain('node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps);
      await w.enqueue('route.fifo', [routeTableMessage(hint())]);
      await w.drain('route.fifo', routeReconciler, { ...w.routeDeps, log: w.log });
      for (const q of ['node-lifecycle', 'route'])
        expect(w.sqs.depth(`${q}.fifo`) + w.sqs.depth(`${q}-dlq.fifo`)).toBe(0);
      expect(w.kube.nodes.has('broken')).toBe(true);
      expect(w.metrics.total(MetricName.Reconciles, { reconciler: 'node-lifecycle', result: 'done' })).toBe(2);
      expect(w.metrics.total(MetricName.Reconciles, { reconciler: 'route', result: 'done' })).toBe(1);
    },
  );
});

describe('Nodes with huge metadata and names at the limit', () => {
  it('a 1 MiB annotation and 10 000 labels: initialized like any Node', async () => {
    const w = nodeWorld();
    const instance = makeInstance({ index: 2 });
    w.ec2.putInstance(instance);
    const { annotations, labels } = hugeMetadata();
    const name = `n${'a'.repeat(251)}1`;
    w.kube.putNode(makeNode(name, { providerID: `aws:///eu-west-1a/${instance.instanceId}`, annotations, labels }));
    await w.enqueue('node.fifo', [nodeKey(name), nodeKey('good')]);
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps);
    expect(initialized(w, name)).toBe(true);
    expect(initialized(w, 'good')).toBe(true);
    expect(w.kube.nodes.get(name)!.metadata.labels!['corpus.example.com/label-9999']).toBe('v9999');
    expect(w.sqs.depth('node.fifo') + w.sqs.depth('node-dlq.fifo')).toBe(0);
  });
});

describe('Services with an invalid annotation', () => {
  const cases = Object.entries(BAD_SERVICE_ANNOTATIONS).filter(
    (entry): entry is [keyof typeof ANNOTATION, string] => entry[1] !== undefined,
  );

  it('the corpus has a bad value for every annotation that can have one', () => {
    expect(Object.keys(BAD_SERVICE_ANNOTATIONS).sort()).toEqual(Object.keys(ANNOTATION).sort());
  });

  it.each(cases)(
    '%s = %j: a Warning Event naming it, counted; the good Service still gets its load balancer',
    async (field, value) => {
      const w = createServiceWorld();
      const log = new RecordingLog();
      w.runner.log = log;
      w.addNode(1);
      w.putService('bad', { annotations: { [ANNOTATION[field]]: value } });
      w.putService('good');
      const deps = { ...w.serviceDeps, log };
      expect(await w.converge([w.serviceKey('bad'), w.serviceKey('good')], deps)).toBeLessThanOrEqual(50);

      expect(w.sqs.depth(SERVICE_QUEUE) + w.sqs.depth('service-dlq.fifo')).toBe(0);
      const failed = w.kube.eventsFor('Service', 'bad', 'SyncLoadBalancerFailed').map((e) => e.message);
      expect(failed.length).toBeGreaterThanOrEqual(1);
      expect(failed[0]).toContain(ANNOTATION[field].replace(/^.*\//, ''));
      expect(
        w.metrics.total(MetricName.LoadBalancerSyncFailures, { reason: 'InvalidAnnotation' }),
      ).toBeGreaterThanOrEqual(1);
      expect(w.kube.services.get('default/bad')!.status?.loadBalancer?.ingress).toBeUndefined();
      expect(w.kube.services.get('default/good')!.status?.loadBalancer?.ingress?.[0]?.hostname).toBeTruthy();
    },
  );

  it('a 1 MiB annotation and 10 000 labels on a Service: reconciled', async () => {
    const w = createServiceWorld();
    w.addNode(1);
    const { annotations, labels } = hugeMetadata();
    w.putService('huge', { annotations });
    w.kube.services.get('default/huge')!.metadata.labels = labels;
    await w.converge([w.serviceKey('huge')]);
    expect(w.sqs.depth(SERVICE_QUEUE) + w.sqs.depth('service-dlq.fifo')).toBe(0);
    expect(w.kube.services.get('default/huge')!.status?.loadBalancer?.ingress?.[0]?.hostname).toBeTruthy();
  });
});

describe('IPAM: the VPC CNI ConfigMap with bad values', () => {
  it.each(BAD_IPAM_SETTINGS)(
    '%s: a Warning Event on the Node, logged; the pool is kept with the defaults',
    async (_label, data) => {
      const w = createIpamWorld();
      const log = new RecordingLog();
      w.runner.log = log;
      w.deps.log = log;
      w.configure(data);
      w.addWindowsNode('win-1');
      w.addPod('win-1', 'a');
      await w.settle('win-1');
      expect(w.sqs.depth('ipam.fifo') + w.sqs.depth('ipam-dlq.fifo')).toBe(0);
      const warnings = w.kube.eventsFor('Node', 'win-1', 'InvalidIPAMConfiguration').map((e) => e.message);
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      expect(warnings[0]).toContain(Object.keys(data).find((k) => k.includes('target'))!);
      expect(log.find('WARN', { node: 'win-1' }).map((l) => l.message)).toContain('invalid IPAM setting');
      expect(w.podAddress('default', 'a')).toMatch(/^10\.0\.1\.\d+\/24$/);
    },
  );
});

describe('IPAM: Pods with a malformed address annotation', () => {
  it.each(MALFORMED_POD_ADDRESSES)(
    '%s: the pass ends, the queue empties, the other Pods get addresses',
    async (_label, value) => {
      const w = createIpamWorld();
      const log = new RecordingLog();
      w.runner.log = log;
      w.deps.log = log;
      w.configure();
      w.addWindowsNode('win-1');
      const odd = w.addPod('win-1', 'odd');
      odd.metadata.annotations = { ...odd.metadata.annotations, [POD_IP_ANNOTATION]: value };
      w.kube.putPod(odd);
      w.addPod('win-1', 'fine');
      const polls = await w.settle('win-1');
      expect(polls).toBeLessThanOrEqual(10);
      expect(w.sqs.depth('ipam.fifo') + w.sqs.depth('ipam-dlq.fifo')).toBe(0);
      expect(w.podAddress('default', 'fine')).toMatch(/^10\.0\.1\.\d+\/24$/);
      expect(w.metrics.total(MetricName.TerminalErrors)).toBe(0);
    },
  );
});
