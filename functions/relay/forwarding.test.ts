import { describe, expect, it } from 'vitest';
import { IPV4_RESOURCE, POD_IP_ANNOTATION as POD_IP } from '../../shared/k8s/ipam-names.ts';
import { TAINT_SHUTDOWN } from '../../shared/k8s/node-helpers.ts';
import type { Node } from '../../shared/k8s/types.ts';
import type { Reconciler } from './controllers/index.ts';
import { loadBalancerTargets } from './controllers/service-reads.ts';
import { fingerprint, hashString, NOT_RELEVANT } from './fingerprint.ts';
import { kindsFor, ruleFor } from './forwarding.ts';
import type { KubeObject, WatchedKind } from './kinds.ts';
import { compareResourceVersions } from './kinds.ts';
import {
  heartbeat,
  makeAddressPod,
  makeNode,
  makePod,
  makeService,
  makeSlice,
  makeVpcCniConfigMap,
  makeWindowsNode,
  setReady,
  uninitialized,
} from './testing/objects.ts';

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
    ['a label', (p) => (p.metadata!.labels!.team = 'a'), false],
    [
      // The controller's own write: no echo (ADR 0009).
      'the IP annotation',
      (p) => (p.metadata!.annotations = { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.1.20/19' }),
      false,
    ],
    ['phase Succeeded', (p) => (p.status = { phase: 'Succeeded' }), true],
    ['phase Failed', (p) => (p.status = { phase: 'Failed' }), true],
    ['being deleted', (p) => (p.metadata!.deletionTimestamp = '2026-11-02T09:00:00Z'), true],
    ['recreated under the same name', (p) => (p.metadata!.uid = 'another-uid'), true],
  ])('Pod change: %s -> %s', (_what, change, expected) => {
    const before = makeAddressPod('default', 'app-1', 'node-a');
    before.metadata!.uid = 'uid-1';
    expect(changed('Pod', 'ipam', before, edit(before, change))).toBe(expected);
  });

  it.each<[string, KubeObject, boolean]>([
    ['bound, asking for an address', makeAddressPod('default', 'app', 'node-a'), true],
    [
      'bound, holding an address only',
      { ...makePod('default', 'app', 'node-a'), metadata: { name: 'app', annotations: { [POD_IP]: '10.0.1.5/19' } } },
      true,
    ],
    ['bound, neither', makePod('default', 'app', 'node-a'), false],
    ['not bound yet', makeAddressPod('default', 'app', undefined), false],
    [
      'host network',
      edit(makeAddressPod('kube-system', 'proxy', 'node-a'), (p) => {
        (p.spec as { hostNetwork?: boolean }).hostNetwork = true;
      }),
      false,
    ],
  ])('a Pod %s concerns ipam: %s', (_what, pod, expected) => {
    expect(relevant('Pod', 'ipam', pod)).toBe(expected);
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

describe('ipam forwarding rules', () => {
  const windows = () => {
    const n = makeWindowsNode('ip-10-0-1-20.eu-west-1.compute.internal');
    n.metadata.uid = 'uid-1';
    return n;
  };

  it.each<[string, Node, boolean]>([
    ['a Windows Node', windows(), true],
    ['a Linux Node', node(), false],
    ['a Node with only the beta os label', edit(windows(), (n) => delete n.metadata.labels!['kubernetes.io/os']), true],
  ])('%s concerns ipam: %s', (_what, subject, expected) => {
    expect(relevant('Node', 'ipam', subject)).toBe(expected);
  });

  it.each<[string, (n: Node) => void, boolean]>([
    ['heartbeat and images', (n) => heartbeat(n, '2026-11-02T08:05:00Z'), false],
    ['readiness', (n) => setReady(n, false), false],
    ['another label', (n) => (n.metadata.labels!.team = 'a'), false],
    ['cpu capacity', (n) => (n.status!.capacity!.cpu = '4'), false],
    // The controller's own record: forwarding its writes would send it its own key after every pass.
    [
      'the pool annotation the controller writes',
      (n) => (n.metadata.annotations!['serverless-ccm/ipam-pool'] = '{}'),
      false,
    ],
    ['becomes Linux', (n) => (n.metadata.labels!['kubernetes.io/os'] = 'linux'), true],
    ['the beta os label', (n) => (n.metadata.labels!['beta.kubernetes.io/os'] = 'linux'), true],
    ['provider ID', (n) => (n.spec!.providerID = 'aws:///eu-west-1b/i-0abc'), true],
    ['address capacity lost', (n) => delete n.status!.capacity![IPV4_RESOURCE], true],
    ['address allocatable changed', (n) => (n.status!.allocatable![IPV4_RESOURCE] = '3'), true],
    ['being deleted', (n) => (n.metadata.deletionTimestamp = '2026-11-02T09:00:00Z'), true],
    ['recreated under the same name', (n) => (n.metadata.uid = 'another-uid'), true],
  ])('Windows Node change: %s -> %s', (_what, change, expected) => {
    const before = windows();
    expect(changed('Node', 'ipam', before, edit(before, change))).toBe(expected);
  });

  it('a Linux Node turning Windows becomes its business', () => {
    expect(
      changed(
        'Node',
        'ipam',
        node(),
        edit(node(), (n) => (n.metadata.labels!['kubernetes.io/os'] = 'windows')),
      ),
    ).toBe(true);
  });

  it.each<[string, (c: KubeObject) => void, boolean]>([
    ['a data key added', (c) => ((c.data as Record<string, string>)['warm-ip-target'] = '3'), true],
    ['a data value changed', (c) => ((c.data as Record<string, string>)['enable-windows-ipam'] = 'false'), true],
    ['a label', (c) => (c.metadata!.labels = { team: 'a' }), false],
    ['an annotation', (c) => (c.metadata!.annotations = { 'example.com/owner': 'a' }), false],
  ])('VPC CNI ConfigMap change: %s -> %s', (_what, change, expected) => {
    const before = makeVpcCniConfigMap();
    expect(changed('ConfigMap', 'ipam', before, edit(before, change))).toBe(expected);
  });

  it('the same data in another order is no change; another ConfigMap concerns nobody', () => {
    const a = makeVpcCniConfigMap({ x: '1', y: '2' });
    const b = makeVpcCniConfigMap({ y: '2', x: '1' });
    expect(changed('ConfigMap', 'ipam', a, b)).toBe(false);
    expect(relevant('ConfigMap', 'ipam', { ...a, metadata: { namespace: 'kube-system', name: 'other' } })).toBe(false);
    expect(relevant('ConfigMap', 'ipam', { ...a, metadata: { namespace: 'default', name: 'amazon-vpc-cni' } })).toBe(
      false,
    );
  });
});

describe('forwarding helpers', () => {
  it('watches only the kinds configured reconcilers read', () => {
    expect(kindsFor(['ipam'])).toEqual(['Node', 'Pod', 'ConfigMap']);
    expect(kindsFor(['node', 'route'])).toEqual(['Node']);
    expect(kindsFor(['service'])).toEqual(['Node', 'Service', 'EndpointSlice']);
    // Pods and the ConfigMap only for the IP address manager: without its queue they are never listed or watched.
    expect(kindsFor(['node', 'node-lifecycle', 'route', 'service'])).toEqual(['Node', 'Service', 'EndpointSlice']);
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
