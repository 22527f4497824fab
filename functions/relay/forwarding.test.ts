import { describe, expect, it } from 'vitest';
import { TAINT_SHUTDOWN } from '../../shared/k8s/node-helpers.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { fingerprint, hashString, NOT_RELEVANT } from './fingerprint.ts';
import { kindsFor, loadBalancerTargets, type Reconciler, ruleFor } from './forwarding.ts';
import type { KubeObject, WatchedKind } from './kinds.ts';
import { compareResourceVersions } from './kinds.ts';
import { heartbeat, makeNode, makePod, makeService, makeSlice, setReady, uninitialized } from './testing.ts';

/** The forwarding rules: which changes each reconciler hears about. */

function changed(kind: WatchedKind, reconciler: Reconciler, before: unknown, after: unknown): boolean {
  const rule = ruleFor(kind, reconciler)!;
  return fingerprint(rule.reads(before as KubeObject)) !== fingerprint(rule.reads(after as KubeObject));
}

function relevant(kind: WatchedKind, reconciler: Reconciler, object: unknown): boolean {
  const rule = ruleFor(kind, reconciler)!;
  return fingerprint(rule.reads(object as KubeObject)) !== NOT_RELEVANT;
}

const node = () =>
  makeNode('ip-10-0-1-10.eu-west-1.compute.internal', {
    podCIDR: '10.244.1.0/24',
    providerID: 'aws:///eu-west-1a/i-0123456789abcdef0',
  });
const edit = <T>(object: T, change: (copy: T) => void): T => {
  const copy = structuredClone(object);
  change(copy);
  return copy;
};

describe('Node forwarding rules', () => {
  const reconcilers: Reconciler[] = ['node', 'node-lifecycle', 'route', 'service'];
  it.each<[string, (n: Node) => void, Reconciler[]]>([
    ['heartbeat and images', (n) => heartbeat(n, '2026-11-02T08:05:00Z'), []],
    ['capacity and allocatable', (n) => Object.assign(n.status!, { allocatable: { cpu: '1' } }), []],
    ['a non-Ready condition flips', (n) => (n.status!.conditions![0]!.status = 'True'), []],
    // Readiness no longer decides load balancer targets (KEP-3458): only the lifecycle reconciler hears it.
    ['NotReady', (n) => setReady(n, false), ['node-lifecycle']],
    ['provider ID set', (n) => (n.spec!.providerID = 'aws:///eu-west-1b/i-0abc'), reconcilers],
    [
      'shutdown taint added',
      (n) => (n.spec!.taints = [{ key: TAINT_SHUTDOWN, effect: 'NoSchedule' }]),
      ['node-lifecycle'],
    ],
    [
      'autoscaler taint added',
      (n) => (n.spec!.taints = [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }]),
      ['service'],
    ],
    ['a label changes', (n) => (n.metadata.labels!.team = 'a'), ['service']],
    [
      'excluded from load balancers',
      (n) => (n.metadata.labels!['node.kubernetes.io/exclude-from-external-load-balancers'] = ''),
      ['service'],
    ],
    ['addresses change', (n) => (n.status!.addresses = [{ type: 'InternalIP', address: '10.0.1.11' }]), ['node']],
    [
      'provided-node-ip annotation',
      (n) => (n.metadata.annotations!['alpha.kubernetes.io/provided-node-ip'] = '10.0.1.10'),
      ['node'],
    ],
    ['pod CIDR assigned', (n) => (n.spec!.podCIDRs = ['10.244.2.0/24']), ['route']],
    ['being deleted', (n) => (n.metadata.deletionTimestamp = '2026-11-02T09:00:00Z'), ['route', 'service']],
    [
      'NetworkUnavailable set by someone else',
      (n) => n.status!.conditions!.push({ type: 'NetworkUnavailable', status: 'True' }),
      ['route'],
    ],
    ['recreated under the same name', (n) => (n.metadata.uid = 'another-uid'), reconcilers],
  ])('%s -> %j', (_what, change, expected) => {
    const before = node();
    before.metadata.uid = 'uid-1';
    const after = edit(before, change);
    expect(reconcilers.filter((r) => changed('Node', r, before, after))).toEqual(expected);
  });

  it('the uninitialized taint removed matters to the node reconciler only', () => {
    const before = uninitialized(node());
    expect(reconcilers.filter((r) => changed('Node', r, before, node()))).toEqual(['node']);
  });

  it('NotReady turning Unknown (kubelet silent) is not news', () => {
    const before = edit(node(), (n) => setReady(n, false));
    const after = edit(before, (n) => {
      n.status!.conditions!.find((c) => c.type === 'Ready')!.status = 'Unknown';
    });
    expect(reconcilers.filter((r) => changed('Node', r, before, after))).toEqual([]);
  });
});

describe('Service, EndpointSlice and Pod forwarding rules', () => {
  it.each<[string, KubeObject, boolean]>([
    ['LoadBalancer', makeService('default', 'web'), true],
    ['ClusterIP', makeService('default', 'api', 'ClusterIP'), false],
    [
      'ClusterIP still holding the load balancer finalizer',
      {
        ...makeService('default', 'was-lb', 'ClusterIP'),
        metadata: { name: 'was-lb', namespace: 'default', finalizers: ['service.kubernetes.io/load-balancer-cleanup'] },
      },
      true,
    ],
  ])('a %s Service concerns the service reconciler: %s', (_what, service, expected) => {
    expect(relevant('Service', 'service', service)).toBe(expected);
  });

  it.each<[string, (s: KubeObject) => void, boolean]>([
    [
      'an aws-load-balancer annotation',
      (s) => (s.metadata!.annotations!['service.beta.kubernetes.io/aws-load-balancer-internal'] = 'true'),
      true,
    ],
    [
      'source ranges',
      (s) => ((s.spec as { loadBalancerSourceRanges?: string[] }).loadBalancerSourceRanges = ['10.0.0.0/8']),
      true,
    ],
    ['a port', (s) => ((s.spec as { ports: { port: number }[] }).ports[0]!.port = 443), true],
    ['type LoadBalancer -> ClusterIP', (s) => ((s.spec as { type: string }).type = 'ClusterIP'), true],
    ['an unrelated annotation', (s) => (s.metadata!.annotations!['example.com/owner'] = 'team-a'), false],
    [
      'the status the reconciler writes',
      (s) => (s.status = { loadBalancer: { ingress: [{ hostname: 'a.elb' }] } }),
      false,
    ],
  ])('Service change: %s -> %s', (_what, change, expected) => {
    const before = makeService('default', 'web');
    expect(changed('Service', 'service', before, edit(before, change))).toBe(expected);
  });

  it.each<[string, (s: KubeObject) => void, boolean]>([
    ['an address', (s) => (s.endpoints as { addresses: string[] }[])[0]!.addresses.push('10.244.1.9'), true],
    ['readiness', (s) => ((s.endpoints as { conditions: { ready: boolean } }[])[0]!.conditions.ready = false), true],
    ['a label other than the service name', (s) => (s.metadata!.labels!.extra = 'x'), false],
  ])('EndpointSlice change: %s -> %s', (_what, change, expected) => {
    const before = makeSlice('default', 'web', 'abc', ['10.244.1.5']);
    expect(changed('EndpointSlice', 'service', before, edit(before, change))).toBe(expected);
  });

  it('an EndpointSlice without a Service concerns nobody', () => {
    const slice = makeSlice('default', 'web', 'abc', ['10.244.1.5']);
    delete slice.metadata!.labels!['kubernetes.io/service-name'];
    expect(relevant('EndpointSlice', 'service', slice)).toBe(false);
  });

  it.each<[string, (p: KubeObject) => void, boolean]>([
    [
      'container statuses and conditions',
      (p) => (p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] }),
      false,
    ],
    [
      'the IP annotation',
      (p) => (p.metadata!.annotations = { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.1.20/24' }),
      true,
    ],
    ['phase Succeeded', (p) => (p.status = { phase: 'Succeeded' }), true],
    ['being deleted', (p) => (p.metadata!.deletionTimestamp = '2026-11-02T09:00:00Z'), true],
  ])('Pod change: %s -> %s', (_what, change, expected) => {
    const before = makePod('default', 'app-1', 'node-a');
    expect(changed('Pod', 'ipam', before, edit(before, change))).toBe(expected);
  });

  it('host-network Pods concern nobody', () => {
    const pod = makePod('kube-system', 'proxy', 'node-a');
    (pod.spec as { hostNetwork?: boolean }).hostNetwork = true;
    expect(relevant('Pod', 'ipam', pod)).toBe(false);
  });

  it.each<[Record<string, string>, string | undefined, 'instance' | 'ip' | undefined]>([
    [{}, 'LoadBalancer', 'instance'],
    [{ 'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip' }, 'LoadBalancer', 'ip'],
    [{ 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb-ip' }, 'LoadBalancer', 'ip'],
    [{}, 'NodePort', undefined],
  ])('load balancer targets of %j (%s): %s', (annotations, type, expected) => {
    expect(loadBalancerTargets(makeService('default', 'web', type, annotations))).toBe(expected);
  });
});

describe('forwarding helpers', () => {
  it('watches only the kinds configured reconcilers read', () => {
    expect(kindsFor(['ipam'])).toEqual(['Pod']);
    expect(kindsFor(['node', 'route'])).toEqual(['Node']);
    expect(kindsFor(['service'])).toEqual(['Node', 'Service', 'EndpointSlice']);
    // Pods only for the IP-allocation reconciler: without its queue they are never listed or watched.
    expect(kindsFor(['node', 'node-lifecycle', 'route', 'service'])).not.toContain('Pod');
  });

  it('fingerprints are never 0 and differ for different fields', () => {
    expect(hashString('')).not.toBe(NOT_RELEVANT);
    expect(fingerprint(['a', 1])).not.toBe(fingerprint(['a', 2]));
    expect(fingerprint(undefined)).toBe(NOT_RELEVANT);
  });

  it.each<[string | undefined, string | undefined, number | undefined]>([
    ['9', '10', -1],
    ['100', '99', 1],
    ['12345', '12345', 0],
    ['1', 'abc', undefined],
    ['01', '1', undefined],
    [undefined, '5', undefined],
  ])('compareResourceVersions(%s, %s) has the sign of %s', (a, b, sign) => {
    const result = compareResourceVersions(a, b);
    expect(result === undefined ? undefined : Math.sign(result)).toBe(sign);
  });
});
