import { describe, expect, it } from 'vitest';
import { READINESS_GATE_PREFIX, TGB_API_VERSION, TGB_FINALIZER } from '../../../shared/k8s/tgb-types.ts';
import type { RoutedKey } from '../change-router.ts';
import type { KubeObject } from '../kinds.ts';
import { makeNode, makePod, makeService, makeSlice, setReady } from '../testing/objects.ts';
import { asObject, at, router } from '../testing/router.ts';

/** The TargetGroupBinding controller's keys, through the router: one key per binding a change concerns. */

interface PodStatus {
  podIP?: string;
  containerStatuses?: unknown[];
  conditions: { type: string; status: string; reason?: string; message?: string }[];
}
type GatedPod = KubeObject & { spec: Record<string, unknown>; status: PodStatus };
type BindingShape = KubeObject & {
  metadata: NonNullable<KubeObject['metadata']>;
  spec: Record<string, unknown>;
  status?: unknown;
};
type SliceShape = KubeObject & { endpoints: { conditions?: object; targetRef?: object }[] };

const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef';

function binding(
  namespace: string,
  name: string,
  options: { service?: string; targetType?: 'ip' | 'instance'; spec?: object; finalizers?: string[] } = {},
): KubeObject {
  return {
    apiVersion: TGB_API_VERSION,
    kind: 'TargetGroupBinding',
    metadata: { namespace, name, generation: 1, ...(options.finalizers ? { finalizers: options.finalizers } : {}) },
    spec: {
      serviceRef: { name: options.service ?? 'web', port: 80 },
      targetGroupARN: ARN,
      ...(options.targetType ? { targetType: options.targetType } : {}),
      ...options.spec,
    },
  } as unknown as KubeObject;
}

function gatedPod(namespace: string, name: string, gates: string[], extra: { ip?: string; gate?: string } = {}) {
  const pod = makePod(namespace, name, 'n1') as GatedPod;
  pod.spec.readinessGates = gates.map((conditionType) => ({ conditionType }));
  pod.status.podIP = extra.ip ?? '10.0.0.5';
  if (extra.gate) pod.status.conditions.push({ type: gates[0]!, status: extra.gate });
  return pod as KubeObject;
}

const names = (keys: RoutedKey[]) =>
  keys.map((k) => `${k.reconciler}:${k.message.kind}/${k.message.namespace ?? ''}/${k.message.name}`);
const tgb = (namespace: string, name: string) => `target-group-binding:TargetGroupBinding/${namespace}/${name}`;

function tgbRouter() {
  const harness = router({ reconcilers: ['target-group-binding'] });
  const { r, keys } = harness;
  /** Observe and return the keys this observation sent. */
  const sent = (kind: Parameters<typeof r.observe>[0], object: KubeObject) => {
    const from = keys.length;
    r.observe(kind, object);
    return names(keys.slice(from));
  };
  return { ...harness, sent };
}

describe("ChangeRouter: the TargetGroupBinding controller's keys", () => {
  it('a binding is its own key, at its revision and uid', () => {
    const { r, keys } = tgbRouter();
    const web = at(binding('shop', 'web'), 'uid-web');
    expect(r.observe('TargetGroupBinding', web)).toBe('forwarded');
    expect(names(keys)).toEqual([tgb('shop', 'web')]);
    expect(keys[0]!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: web.metadata!.resourceVersion,
      uid: 'uid-web',
      source: 'relay',
    });
  });

  it('a change the controller does not read (status, annotations) sends nothing; spec, finalizers, labels do', () => {
    const { r, sent } = tgbRouter();
    const web = binding('shop', 'web');
    r.observe('TargetGroupBinding', at(web));
    const noisy = structuredClone(web) as BindingShape;
    noisy.status = { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True' }] };
    noisy.metadata.annotations = { 'serverless-ccm/registered-targets': '10.0.0.1:80' };
    expect(r.observe('TargetGroupBinding', at(noisy))).toBe('unchanged');
    const finalized = structuredClone(noisy);
    finalized.metadata.finalizers = [TGB_FINALIZER];
    expect(sent('TargetGroupBinding', at(finalized))).toEqual([tgb('shop', 'web')]);
    const filled = structuredClone(finalized);
    filled.spec.targetType = 'ip';
    expect(sent('TargetGroupBinding', at(filled))).toEqual([tgb('shop', 'web')]);
    const labelled = structuredClone(filled);
    labelled.metadata.labels = { 'service.k8s.aws/stack-name': 'web' };
    expect(sent('TargetGroupBinding', at(labelled))).toEqual([tgb('shop', 'web')]);
    const deleting = structuredClone(labelled);
    deleting.metadata.deletionTimestamp = '2026-12-04T10:00:00Z';
    expect(sent('TargetGroupBinding', at(deleting))).toEqual([tgb('shop', 'web')]);
  });

  it('a Service sends the bindings whose serviceRef names it, in its namespace only', () => {
    const { r, sent } = tgbRouter();
    r.observe('TargetGroupBinding', at(binding('shop', 'web-a')));
    r.observe('TargetGroupBinding', at(binding('shop', 'web-b', { targetType: 'instance' })));
    r.observe('TargetGroupBinding', at(binding('shop', 'api', { service: 'api' })));
    r.observe('TargetGroupBinding', at(binding('other', 'web')));
    const service = at(makeService('shop', 'web', 'NodePort'));
    expect(sent('Service', service)).toEqual([tgb('shop', 'web-a'), tgb('shop', 'web-b')]);
    expect(sent('Service', at(makeService('shop', 'lonely', 'NodePort')))).toEqual([]);
    // Its selector decides the Pods behind it.
    const selecting = structuredClone(service) as KubeObject & { spec: Record<string, unknown> };
    selecting.spec.selector = { app: 'web' };
    expect(sent('Service', at(selecting))).toEqual([tgb('shop', 'web-a'), tgb('shop', 'web-b')]);
    // Status and annotations are none of its business.
    const annotated = structuredClone(selecting);
    annotated.metadata!.annotations = { team: 'a' };
    expect(sent('Service', at(annotated))).toEqual([]);
  });

  it('a binding that moves to another Service leaves the index of the first', () => {
    const { r, sent } = tgbRouter();
    r.observe('TargetGroupBinding', at(binding('shop', 'web')));
    expect(sent('TargetGroupBinding', at(binding('shop', 'web', { service: 'web-v2' })))).toEqual([tgb('shop', 'web')]);
    expect(sent('Service', at(makeService('shop', 'web', 'NodePort')))).toEqual([]);
    expect(sent('Service', at(makeService('shop', 'web-v2', 'NodePort')))).toEqual([tgb('shop', 'web')]);
  });

  it('a deleted binding sends its key once more and leaves the index, whether the watch or a relist finds it gone', () => {
    const { r, keys, sent } = tgbRouter();
    const web = at(binding('shop', 'web'));
    const api = at(binding('shop', 'api', { service: 'api' }));
    r.listed('TargetGroupBinding', [web, api], '500');
    keys.length = 0;
    expect(r.remove('TargetGroupBinding', web)).toBe('forwarded');
    expect(names(keys)).toEqual([tgb('shop', 'web')]);
    expect(keys[0]!.message.hint?.eventType).toBe('DELETED');
    expect(sent('Service', at(makeService('shop', 'web', 'NodePort')))).toEqual([]);
    keys.length = 0;
    r.listed('TargetGroupBinding', [], '600');
    expect(names(keys)).toEqual([tgb('shop', 'api')]);
    expect(sent('Service', at(makeService('shop', 'api', 'NodePort')))).toEqual([]);
  });

  it("a Service's EndpointSlices send its bindings with IP targets (or not yet filled in), never instance ones", () => {
    const { r, keys, sent } = tgbRouter();
    r.observe('TargetGroupBinding', at(binding('shop', 'ip', { targetType: 'ip' })));
    r.observe('TargetGroupBinding', at(binding('shop', 'unset')));
    r.observe('TargetGroupBinding', at(binding('shop', 'instance', { targetType: 'instance' })));
    const slice = at(makeSlice('shop', 'web', 'abc', ['10.0.0.1']));
    expect(sent('EndpointSlice', slice)).toEqual([tgb('shop', 'ip'), tgb('shop', 'unset')]);
    // MODIFIED at the slice's revision, never the slice's uid.
    expect(keys.at(-1)!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: slice.metadata!.resourceVersion,
      source: 'relay/EndpointSlice',
    });
    // An endpoint's readiness and the Pod behind it count.
    const unready = structuredClone(slice) as SliceShape;
    unready.endpoints[0]!.conditions = { ready: false, serving: true, terminating: false };
    expect(sent('EndpointSlice', at(unready))).toEqual([tgb('shop', 'ip'), tgb('shop', 'unset')]);
    const targeted = structuredClone(unready);
    targeted.endpoints[0]!.targetRef = { kind: 'Pod', namespace: 'shop', name: 'web-1', uid: 'pod-uid' };
    expect(sent('EndpointSlice', at(targeted))).toEqual([tgb('shop', 'ip'), tgb('shop', 'unset')]);
    // A slice of another Service, or of no Service, is none of theirs.
    expect(sent('EndpointSlice', at(makeSlice('shop', 'api', 'abc', ['10.0.0.2'])))).toEqual([]);
    // A slice deleted: its Service's IP bindings lose targets.
    keys.length = 0;
    r.remove('EndpointSlice', targeted);
    expect(names(keys)).toEqual([tgb('shop', 'ip'), tgb('shop', 'unset')]);
  });

  it('a listed Service of many slices is one key per binding', () => {
    const { r, keys } = tgbRouter();
    r.observe('TargetGroupBinding', at(binding('shop', 'ip', { targetType: 'ip' })));
    keys.length = 0;
    r.listed(
      'EndpointSlice',
      ['a', 'b', 'c'].map((suffix, i) => at(makeSlice('shop', 'web', suffix, [`10.0.0.${i + 1}`]))),
      '900',
    );
    expect(names(keys)).toEqual([tgb('shop', 'ip')]);
  });

  it('a Node change is a round of the bindings with instance targets (or not yet filled in)', () => {
    const { r, keys, nodeSetSignals } = tgbRouter();
    // No binding yet: the change is noted, no round is due.
    expect(r.observe('Node', asObject(at(makeNode('n0'))))).toBe('unchanged');
    expect(nodeSetSignals()).toBe(0);
    r.observe('TargetGroupBinding', at(binding('shop', 'ip', { targetType: 'ip' })));
    expect(r.observe('Node', asObject(at(makeNode('n1'))))).toBe('unchanged');
    r.observe('TargetGroupBinding', at(binding('shop', 'instance', { targetType: 'instance' })));
    r.observe('TargetGroupBinding', at(binding('other', 'unset')));
    keys.length = 0;
    const node = at(makeNode('n2'));
    expect(r.observe('Node', asObject(node))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(1);
    expect(keys).toEqual([]);
    const round = r.takeNodeSetRound();
    expect(names(round)).toEqual([tgb('other', 'unset'), tgb('shop', 'instance')]);
    expect(round[0]!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: node.metadata.resourceVersion,
      source: 'relay/Node',
    });
    expect(r.takeNodeSetRound()).toEqual([]);
    // Readiness decides instance targets (the reference registers Ready Nodes only), and so do labels.
    const notReady = structuredClone(node);
    setReady(notReady, false);
    expect(r.observe('Node', asObject(at(notReady)))).toBe('forwarded');
    expect(names(r.takeNodeSetRound())).toEqual([tgb('other', 'unset'), tgb('shop', 'instance')]);
    const labelled = structuredClone(notReady);
    labelled.metadata.labels = { ...labelled.metadata.labels, pool: 'edge' };
    expect(r.observe('Node', asObject(at(labelled)))).toBe('forwarded');
    // A heartbeat is not a change; a Node without an instance is no target.
    expect(r.observe('Node', asObject(at(labelled)))).toBe('unchanged');
    expect(r.observe('Node', asObject(at(makeNode('n3', { providerID: '' }))))).toBe('not-relevant');
  });

  it('a gated Pod sends the bindings its gates name (legacy prefix too); other Pods send nothing', () => {
    const { sent } = tgbRouter();
    expect(sent('Pod', at(makePod('shop', 'plain-1', 'n1')))).toEqual([]);
    const other = gatedPod('shop', 'other-1', ['example.com/ready']);
    expect(sent('Pod', at(other))).toEqual([]);
    // Named by its gate, whether or not the binding was seen yet.
    const pod = gatedPod('shop', 'web-1', [`${READINESS_GATE_PREFIX}web`, 'target-health.alb.ingress.k8s.aws/old']);
    expect(sent('Pod', at(pod))).toEqual([tgb('shop', 'old'), tgb('shop', 'web')]);
    // Its gate condition, IP, containers-ready and deletion count; its other status does not.
    const restarted = structuredClone(pod) as GatedPod;
    restarted.status.containerStatuses = [{ name: 'app', restartCount: 1 }];
    expect(sent('Pod', at(restarted))).toEqual([]);
    const gateTrue = structuredClone(restarted);
    gateTrue.status.conditions.push({ type: `${READINESS_GATE_PREFIX}web`, status: 'True', reason: 'healthy' });
    expect(sent('Pod', at(gateTrue))).toEqual([tgb('shop', 'old'), tgb('shop', 'web')]);
    const reason = structuredClone(gateTrue);
    reason.status.conditions.at(-1)!.message = 'Target is healthy';
    expect(sent('Pod', at(reason))).toEqual([]);
    const containersReady = structuredClone(reason);
    containersReady.status.conditions.push({ type: 'ContainersReady', status: 'True' });
    expect(sent('Pod', at(containersReady))).toEqual([tgb('shop', 'old'), tgb('shop', 'web')]);
    const moved = structuredClone(containersReady);
    moved.status.podIP = '10.0.0.9';
    expect(sent('Pod', at(moved))).toEqual([tgb('shop', 'old'), tgb('shop', 'web')]);
    const terminating = structuredClone(moved);
    terminating.metadata!.deletionTimestamp = '2026-12-04T10:00:00Z';
    expect(sent('Pod', at(terminating))).toEqual([tgb('shop', 'old'), tgb('shop', 'web')]);
  });

  it('a resend after the migration lock sends every binding once, and nothing for the other kinds', () => {
    const { r, keys } = tgbRouter();
    r.observe('TargetGroupBinding', at(binding('shop', 'web')));
    r.observe('TargetGroupBinding', at(binding('shop', 'api', { service: 'api', targetType: 'ip' })));
    r.observe('Service', at(makeService('shop', 'web', 'NodePort')));
    r.observe('EndpointSlice', at(makeSlice('shop', 'api', 'x', ['10.0.0.1'])));
    r.observe('Pod', at(gatedPod('shop', 'api-1', [`${READINESS_GATE_PREFIX}api`])));
    r.observe('Node', asObject(at(makeNode('n1'))));
    r.takeNodeSetRound();
    keys.length = 0;
    expect(r.resendAll('target-group-binding', { eventType: 'RESYNC', source: 'relay/migration' })).toBe(2);
    expect(names(keys).sort()).toEqual([tgb('shop', 'api'), tgb('shop', 'web')]);
    expect(r.takeNodeSetRound()).toEqual([]);
  });

  it('the keys are valid queue messages of kind TargetGroupBinding', async () => {
    const { KeyMessage } = await import('../../../shared/queue/message.ts');
    const { r, keys } = tgbRouter();
    r.observe('TargetGroupBinding', at(binding('shop', 'web')));
    r.observe('Service', at(makeService('shop', 'web', 'NodePort')));
    expect(keys.length).toBe(2);
    for (const key of keys) expect(KeyMessage.safeParse(key.message).success).toBe(true);
  });
});
