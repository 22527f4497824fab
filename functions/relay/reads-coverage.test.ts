import { beforeAll, describe, expect, it } from 'vitest';
import { GROUP_NAME_ANNOTATION, GROUP_ORDER_ANNOTATION } from '../../shared/ingress/membership.ts';
import { DEFAULT_INGRESS_CLASS_ANNOTATION, INGRESS_CLASS_ANNOTATION } from '../../shared/k8s/ingress-types.ts';
import { IPV4_RESOURCE, POD_IP_ANNOTATION } from '../../shared/k8s/ipam-names.ts';
import { POOL_ANNOTATION } from '../ipam/record.ts';
import {
  LABEL_BETA_INSTANCE_TYPE,
  LABEL_BETA_REGION,
  LABEL_BETA_ZONE,
  LABEL_INSTANCE_TYPE,
  LABEL_REGION,
  LABEL_ZONE,
  LABEL_ZONE_ID,
} from '../node/plan.ts';
import { REGISTERED_TARGETS_ANNOTATION } from '../target-group-binding/record.ts';
import { RECONCILERS, type Reconciler } from './controllers/index.ts';
import { ruleFor } from './forwarding.ts';
import { type KubeObject, WATCHED_KINDS, type WatchedKind } from './kinds.ts';
import {
  fingerprintNotices,
  pathText,
  type Read,
  ReadRecorder,
  type RecordedObject,
  valuesAt,
} from './testing/reads.ts';
import { recordReconcilerReads } from './testing/reconciler-reads.ts';

/**
 * Every field a reconciler reads of a watched object (Node, Service, EndpointSlice, Pod, the VPC CNI
 * ConfigMap) must be in the fingerprint the relay keeps for that reconciler and kind (its controller's
module under controllers/, found through the table by `ruleFor`):
 * otherwise a change of that field never reaches the reconciler until the periodic resync. The
 * reconcilers run on recorded objects (testing/reconciler-reads.ts); for each field read, changing only
 * that field on a copy of an object it was read from must change the fingerprint. Reads that cannot
 * matter are listed below, each with the reason.
 */

type Reads = (object: KubeObject) => unknown[] | undefined;

interface Allowed {
  reconcilers: readonly Reconciler[];
  kinds: readonly WatchedKind[];
  /** This field and everything under it. */
  path: string;
  /** This field alone, not what is under it (a map read only while it is missing). */
  exact?: true;
  why: string;
}

/**
 * Every controller of the table (controllers/index.ts) and every kind one reads: a controller added there is
 * checked here like the others, its recording (testing/reconciler-reads.ts, which the compiler asks for) run and
 * its rules taken from the table through `ruleFor`.
 */
const READERS: readonly Reconciler[] = RECONCILERS;
/** Controllers in the table whose reconciler is not in the tree yet: their case is a todo until it lands. */
const AWAITING_RECONCILER: readonly Reconciler[] = [];
const ALL_KINDS: readonly WatchedKind[] = WATCHED_KINDS;
const INITIALIZATION_LABELS = [
  LABEL_INSTANCE_TYPE,
  LABEL_BETA_INSTANCE_TYPE,
  LABEL_ZONE,
  LABEL_BETA_ZONE,
  LABEL_REGION,
  LABEL_BETA_REGION,
  LABEL_ZONE_ID,
];

const ALLOWED: readonly Allowed[] = [
  { reconcilers: READERS, kinds: ALL_KINDS, path: 'metadata.name', why: 'the key: another name is another object' },
  {
    reconcilers: READERS,
    kinds: ALL_KINDS,
    path: 'metadata.namespace',
    why: 'the key: another namespace is another object',
  },
  {
    reconcilers: READERS,
    kinds: ALL_KINDS,
    path: 'metadata.resourceVersion',
    why: 'the precondition of writes; it changes on every write, heartbeats included',
  },
  {
    reconcilers: ['node', 'node-lifecycle'],
    kinds: ['Node'],
    path: 'metadata.deletionTimestamp',
    why: 'a Node being deleted is left alone (shared/k8s/node-ops.ts): hearing of it could only make the reconciler do nothing',
  },
  ...INITIALIZATION_LABELS.map(
    (label): Allowed => ({
      reconcilers: ['node'],
      kinds: ['Node'],
      path: `metadata.labels.${label}`,
      why: 'read while initializing, only so as not to overwrite a label; initialization retries until done, reading them again',
    }),
  ),
  {
    reconcilers: ['route', 'node-lifecycle'],
    kinds: ['Node'],
    path: 'metadata.creationTimestamp',
    why: 'fixed for the life of a Node (its age bounds the wait for a new instance); a Node created again has a new uid, which is fingerprinted',
  },
  {
    reconcilers: ['service'],
    kinds: ['Service'],
    path: 'status',
    why: 'the reconciler writes it (the load balancer hostname); a Classic ELB hostname there predates the migration',
  },
  {
    reconcilers: ['ipam'],
    kinds: ['Node'],
    path: `metadata.annotations.${POOL_ANNOTATION}`,
    why: "the reconciler's own journal: forwarding its own writes back would loop; a pass reads it afresh",
  },
  {
    reconcilers: ['ipam'],
    kinds: ['Pod'],
    path: `metadata.annotations.${POD_IP_ANNOTATION}`,
    why: 'written by the reconciler itself (its journal on the Node says what it wrote); only it may write it (the validating webhook); hearing its own write back would double every pass',
  },
  {
    reconcilers: ['ipam'],
    kinds: ['Node'],
    path: 'metadata.annotations',
    exact: true,
    why: 'read whole only on a Node without annotations, looking for the journal there',
  },
  {
    reconcilers: ['ipam'],
    kinds: ['Pod'],
    path: 'metadata.creationTimestamp',
    why: 'fixed for the life of a Pod (it orders who gets an address first); a Pod created again has a new uid, which is fingerprinted',
  },
  {
    // https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#consuming-extended-resources
    reconcilers: ['ipam'],
    kinds: ['Pod'],
    path: 'spec.containers[].resources',
    why:
      'fixed for the life of a Pod: only cpu and memory can be resized in place, and an extended resource has a ' +
      'limit equal to its request (API validation), so the request never changes alone; whether a Pod asks for an ' +
      'address is in the fingerprint all the same (podAddressReads: requestsPodAddress)',
  },
  {
    reconcilers: ['ingress'],
    kinds: ['Ingress'],
    path: 'status',
    why: 'the reconciler writes it (the load balancer hostname and listener ports), reading it only to skip a write that would change nothing',
  },
  {
    reconcilers: ['target-group-binding'],
    kinds: ['TargetGroupBinding'],
    path: 'status',
    why: 'the controller writes it (conditions, observedGeneration); hearing its own writes back would double every pass',
  },
  {
    reconcilers: ['target-group-binding'],
    kinds: ['TargetGroupBinding'],
    path: `metadata.annotations.${REGISTERED_TARGETS_ANNOTATION}`,
    why:
      "the controller's own record of the targets a multi-cluster binding registered, written by its passes alone; " +
      'hearing it back would double every pass (a record removed by hand waits for the resync)',
  },
  {
    // https://kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement
    reconcilers: ['target-group-binding'],
    kinds: ['Pod'],
    path: 'spec.containers',
    why:
      'the port names networking rules of IP targets resolve: fixed for the life of a Pod (a Pod update cannot ' +
      "change its containers' ports), and a new Pod reaches its bindings through its endpoint in the slices",
  },
  {
    reconcilers: ['target-group-binding'],
    kinds: ['TargetGroupBinding'],
    path: 'metadata.annotations',
    exact: true,
    why: 'the map is read only to find the record above',
  },
  {
    reconcilers: ['ingress'],
    kinds: ['Service'],
    path: 'spec.ports[].toJSON',
    exact: true,
    why: 'JSON.stringify of a Service port (whose fields are all fingerprinted) looks for a toJSON method, which no API object has',
  },
];

const fieldText = (read: Read) => pathText({ ...read, how: 'value' });

function allowance(reconciler: string, kind: WatchedKind, read: Read): Allowed | undefined {
  const text = fieldText(read);
  return ALLOWED.find(
    (a) =>
      (a.reconcilers as readonly string[]).includes(reconciler) &&
      a.kinds.includes(kind) &&
      (text === a.path || (!a.exact && (text.startsWith(`${a.path}.`) || text.startsWith(`${a.path}[`)))),
  );
}

/** The distinct values a field has in the recorded objects of a kind. */
function donorValues(objects: readonly RecordedObject[], kind: WatchedKind, path: readonly string[]): unknown[] {
  const values = new Map<string, unknown>();
  for (const object of objects) {
    if (object.kind !== kind) continue;
    for (const value of valuesAt(object.snapshot, path)) {
      if (value !== undefined) values.set(JSON.stringify(value), value);
    }
  }
  return [...values.values()];
}

/**
 * `reconciler kind field` for every field read that no object it was read from notices when only that
 * field changes, and that is not allowed; `rules` gives the fingerprint per kind and reconciler.
 */
function unnoticedReads(
  objects: readonly RecordedObject[],
  rules: (kind: WatchedKind, reconciler: Reconciler) => Reads | undefined = (kind, reconciler) =>
    ruleFor(kind, reconciler)?.reads,
): string[] {
  const groups = new Map<string, { read: Read; objects: RecordedObject[] }>();
  for (const object of objects) {
    for (const [text, read] of object.reads) {
      const id = `${object.reconciler} ${object.kind} ${text}`;
      const group = groups.get(id) ?? { read, objects: [] };
      group.objects.push(object);
      groups.set(id, group);
    }
  }
  const unnoticed: string[] = [];
  for (const [id, { read, objects: readFrom }] of groups) {
    const { reconciler, kind } = readFrom[0]!;
    if (allowance(reconciler, kind, read)) continue;
    const reads = rules(kind, reconciler as Reconciler);
    const donors = read.path.includes('[]') ? [] : donorValues(objects, kind, read.path);
    if (!reads || !readFrom.some((o) => fingerprintNotices(reads, o.snapshot, read, donors))) unnoticed.push(id);
  }
  return unnoticed.sort();
}

const recorder = new ReadRecorder();
const readsOf = (reconciler: string, kind: WatchedKind) =>
  recorder.objects.filter((o) => o.reconciler === reconciler && o.kind === kind).flatMap((o) => [...o.reads.keys()]);

beforeAll(async () => {
  await recordReconcilerReads(recorder);
});

describe('the relay fingerprints every field a reconciler reads', () => {
  for (const reconciler of AWAITING_RECONCILER) it.todo(`${reconciler} (its reconciler is not written yet)`);

  it.each(READERS.filter((r) => !AWAITING_RECONCILER.includes(r)))('%s', (reconciler) => {
    const objects = recorder.objects.filter((o) => o.reconciler === reconciler);
    expect(objects.length).toBeGreaterThan(0);
    expect(unnoticedReads(objects)).toEqual([]);
  });

  it('the recording sees the reads that decide things', () => {
    expect(readsOf('node', 'Node')).toEqual(expect.arrayContaining(['spec.providerID', 'status.addresses[].address']));
    expect(readsOf('node-lifecycle', 'Node')).toEqual(
      expect.arrayContaining(['status.conditions[].type', 'status.conditions[].status', 'spec.taints[].key']),
    );
    expect(readsOf('route', 'Node')).toEqual(expect.arrayContaining(['spec.podCIDRs[]', 'spec.podCIDR']));
    expect(readsOf('service', 'Node')).toEqual(
      expect.arrayContaining([
        'metadata.labels.node.kubernetes.io/exclude-from-external-load-balancers (in)',
        'metadata.labels.team (in)',
        'spec.taints[].key',
      ]),
    );
    // Readiness no longer decides load balancer targets (KEP-3458).
    expect(readsOf('service', 'Node')).not.toContain('status.conditions[].status');
    expect(readsOf('service', 'Service')).toEqual(
      expect.arrayContaining(['spec.type', 'spec.ports[].nodePort', 'metadata.finalizers[]']),
    );
    expect(readsOf('service', 'EndpointSlice')).toEqual(
      expect.arrayContaining(['endpoints[].addresses[]', 'endpoints[].conditions.ready', 'ports[].port']),
    );
    expect(readsOf('ipam', 'Node')).toEqual(
      expect.arrayContaining([
        'metadata.labels.kubernetes.io/os',
        'metadata.labels.beta.kubernetes.io/os',
        'spec.providerID',
        `status.capacity.${IPV4_RESOURCE}`,
        `status.allocatable.${IPV4_RESOURCE}`,
      ]),
    );
    expect(readsOf('ipam', 'Pod')).toEqual(
      expect.arrayContaining([
        'spec.hostNetwork',
        `spec.containers[].resources.requests.${IPV4_RESOURCE}`,
        `metadata.annotations.${POD_IP_ANNOTATION}`,
        'status.phase',
      ]),
    );
    expect(readsOf('ipam', 'ConfigMap')).toEqual(
      expect.arrayContaining([
        'data.enable-windows-ipam',
        'data.enable-windows-prefix-delegation',
        'data.warm-ip-target',
      ]),
    );
  });

  it('the Ingress recording sees what decides whose an Ingress is, its group and its targets', () => {
    expect(readsOf('ingress', 'Ingress')).toEqual(
      expect.arrayContaining([
        'spec.ingressClassName',
        `metadata.annotations.${INGRESS_CLASS_ANNOTATION}`,
        `metadata.annotations.${GROUP_NAME_ANNOTATION}`,
        `metadata.annotations.${GROUP_ORDER_ANNOTATION}`,
        'metadata.finalizers[]',
        'metadata.deletionTimestamp',
      ]),
    );
    expect(readsOf('ingress', 'IngressClass')).toEqual(
      expect.arrayContaining([
        'spec.controller',
        'spec.parameters.kind',
        'spec.parameters.name',
        `metadata.annotations.${DEFAULT_INGRESS_CLASS_ANNOTATION}`,
      ]),
    );
    expect(readsOf('ingress', 'IngressClassParams')).toEqual(
      expect.arrayContaining(['spec.group.name', 'spec.scheme', 'spec.targetType', 'spec.tags[].key']),
    );
    expect(readsOf('ingress', 'Service')).toEqual(
      expect.arrayContaining(['metadata.uid', 'spec.ports[].nodePort', 'spec.ports[].targetPort', 'spec.ipFamilies[]']),
    );
    expect(readsOf('ingress', 'EndpointSlice')).toEqual(
      expect.arrayContaining(['endpoints[].addresses[]', 'endpoints[].conditions.ready', 'ports[].port']),
    );
    expect(readsOf('ingress', 'Node')).toEqual(expect.arrayContaining(['spec.providerID']));
  });

  it('the TargetGroupBinding recording sees what decides targets and readiness gates', () => {
    expect(readsOf('target-group-binding', 'TargetGroupBinding')).toEqual(
      expect.arrayContaining(['spec.targetGroupARN', 'spec.serviceRef.name', 'metadata.finalizers[]']),
    );
    expect(readsOf('target-group-binding', 'Service')).toEqual(
      expect.arrayContaining(['spec.selector.*', 'spec.ports[].nodePort', 'spec.ports[].name']),
    );
    expect(readsOf('target-group-binding', 'EndpointSlice')).toEqual(
      expect.arrayContaining(['endpoints[].addresses[]', 'endpoints[].conditions.ready', 'endpoints[].targetRef.name']),
    );
    expect(readsOf('target-group-binding', 'Node')).toEqual(
      expect.arrayContaining(['spec.providerID', 'status.conditions[].status', 'metadata.labels.pool']),
    );
    expect(readsOf('target-group-binding', 'Pod')).toEqual(
      expect.arrayContaining([
        'spec.readinessGates[].conditionType',
        'status.conditions[].status',
        'status.podIPs[].ip',
      ]),
    );
  });

  it('reports a gated Pod field left out of a fingerprint', () => {
    const rules = (kind: WatchedKind, reconciler: Reconciler): Reads | undefined =>
      kind === 'Pod' && reconciler === 'target-group-binding'
        ? (object) => {
            const copy = structuredClone(object) as { status?: { podIPs?: unknown } };
            delete copy.status?.podIPs;
            return ruleFor('Pod', 'target-group-binding')!.reads(copy as KubeObject);
          }
        : ruleFor(kind, reconciler)?.reads;
    const unnoticed = unnoticedReads(
      recorder.objects.filter((o) => o.reconciler === 'target-group-binding'),
      rules,
    );
    expect(unnoticed).toEqual(['target-group-binding Pod status.podIPs[].ip']);
  });

  it('reports an Ingress field left out of a fingerprint', () => {
    const without =
      (drop: (copy: { metadata?: { annotations?: Record<string, string> } }) => void): Reads =>
      (object) => {
        const copy = structuredClone(object) as { metadata?: { annotations?: Record<string, string> } };
        drop(copy);
        return ruleFor('Ingress', 'ingress')!.reads(copy as KubeObject);
      };
    const rules = (kind: WatchedKind, reconciler: Reconciler) =>
      kind === 'Ingress' && reconciler === 'ingress'
        ? without((i) => delete i.metadata?.annotations?.[GROUP_NAME_ANNOTATION])
        : ruleFor(kind, reconciler)?.reads;
    const unnoticed = unnoticedReads(
      recorder.objects.filter((o) => o.reconciler === 'ingress'),
      rules,
    );
    expect(unnoticed).toEqual([`ingress Ingress metadata.annotations.${GROUP_NAME_ANNOTATION}`]);
  });

  it('reports a field left out of a fingerprint', () => {
    const blind =
      (field: 'addresses' | 'conditions'): Reads =>
      (object) => {
        const copy = structuredClone(object) as { status?: Record<string, unknown> };
        delete copy.status?.[field];
        return ruleFor('Node', field === 'addresses' ? 'node' : 'node-lifecycle')!.reads(copy as KubeObject);
      };
    const rules = (kind: WatchedKind, reconciler: Reconciler) =>
      kind === 'Node' && reconciler === 'node'
        ? blind('addresses')
        : kind === 'Node' && reconciler === 'node-lifecycle'
          ? blind('conditions')
          : ruleFor(kind, reconciler)?.reads;
    const unnoticed = unnoticedReads(recorder.objects, rules);
    expect(unnoticed).toEqual(
      expect.arrayContaining([
        'node Node status.addresses[].address',
        'node Node status.addresses[].type',
        'node-lifecycle Node status.conditions[].status',
        'node-lifecycle Node status.conditions[].type',
      ]),
    );
  });

  it('reports an IPAM field left out of a fingerprint', () => {
    const without =
      (kind: 'Node' | 'Pod', drop: (copy: { status?: Record<string, unknown> }) => void): Reads =>
      (object) => {
        const copy = structuredClone(object) as { status?: Record<string, unknown> };
        drop(copy);
        return ruleFor(kind, 'ipam')!.reads(copy as KubeObject);
      };
    const rules = (kind: WatchedKind, reconciler: Reconciler) =>
      reconciler !== 'ipam'
        ? ruleFor(kind, reconciler)?.reads
        : kind === 'Pod'
          ? without('Pod', (p) => delete p.status?.phase)
          : kind === 'Node'
            ? without('Node', (n) => delete n.status?.allocatable)
            : ruleFor(kind, reconciler)?.reads;
    const unnoticed = unnoticedReads(
      recorder.objects.filter((o) => o.reconciler === 'ipam'),
      rules,
    );
    expect(unnoticed).toEqual(
      expect.arrayContaining(['ipam Pod status.phase', `ipam Node status.allocatable.${IPV4_RESOURCE}`]),
    );
  });

  it('every allowed read is still read (the list holds no stale entry)', () => {
    const used = new Set<Allowed>();
    for (const object of recorder.objects) {
      for (const read of object.reads.values()) {
        const allowed = allowance(object.reconciler, object.kind, read);
        if (allowed) used.add(allowed);
      }
    }
    expect(ALLOWED.filter((a) => !used.has(a)).map((a) => `${a.reconcilers.join(',')} ${a.path}`)).toEqual([]);
  });
});
