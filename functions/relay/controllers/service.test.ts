import { describe, expect, it } from 'vitest';
import { ANNOTATION } from '../../../shared/k8s/service-annotations.ts';
import {
  LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS,
  TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
} from '../../../shared/k8s/service-port.ts';
import type { Node } from '../../../shared/k8s/types.ts';
import {
  NODE_JOIN_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
  NODE_SET_HINT_SOURCE,
} from '../../../shared/queue/message.ts';
import { makeNode, makeService, makeSlice, setReady } from '../testing/objects.ts';
import { asObject, at, lastRevision, router, short } from '../testing/router.ts';
import { LEFT_RECENTLY_MS } from './service.ts';

/** The service controller's keys, through the router: Service and EndpointSlice keys, and Node-set rounds. */

describe("ChangeRouter: the service controller's keys", () => {
  it('sends EndpointSlice changes to their Service only for LoadBalancers with IP targets', () => {
    const { r, keys } = router({ reconcilers: ['service'] });
    r.observe(
      'Service',
      at(
        makeService('default', 'ip-lb', 'LoadBalancer', {
          'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
        }),
        'uid-ip-lb',
      ),
    );
    r.observe('Service', at(makeService('default', 'instance-lb')));
    r.observe('Service', at(makeService('default', 'cluster-ip', 'ClusterIP')));
    keys.length = 0;

    // The Service's key names the Service's uid, never the slice's.
    const slice = at(makeSlice('default', 'ip-lb', 'x', ['10.244.0.1']), 'uid-slice');
    expect(r.observe('EndpointSlice', slice)).toBe('forwarded');
    expect(r.observe('EndpointSlice', at(makeSlice('default', 'instance-lb', 'y', ['10.244.0.2'])))).toBe('unchanged');
    expect(r.observe('EndpointSlice', at(makeSlice('default', 'cluster-ip', 'z', ['10.244.0.3'])))).toBe('unchanged');
    expect(keys).toEqual([
      {
        reconciler: 'service',
        message: {
          kind: 'Service',
          namespace: 'default',
          name: 'ip-lb',
          hint: {
            eventType: 'MODIFIED',
            resourceVersion: slice.metadata!.resourceVersion,
            source: 'relay/EndpointSlice',
            uid: 'uid-ip-lb',
          },
        },
      },
    ]);
  });

  it('a Node change reaches LoadBalancers with instance targets, even when they are indexed after it', () => {
    const { r, keys, nodeSetSignals } = router({ reconcilers: ['service'] });
    // Nodes listed before Services (lists run in parallel): nothing to send yet, but remembered.
    const node = at(makeNode('n1'));
    expect(r.observe('Node', asObject(node))).toBe('unchanged');
    expect(nodeSetSignals()).toBe(0);

    r.observe('Service', at(makeService('default', 'web'), 'uid-web'));
    const nodeSet = { eventType: 'MODIFIED', resourceVersion: node.metadata.resourceVersion, source: 'relay/Node' };
    expect(keys.map((k) => [k.message.name, k.message.hint])).toEqual([
      ['web', { ...nodeSet, uid: 'uid-web' }],
      ['web', { eventType: 'MODIFIED', resourceVersion: expect.any(String), uid: 'uid-web', source: 'relay' }],
    ]);

    // Later Node changes signal the relay, which asks for every such Service's key with the newest revision.
    const excluded = structuredClone(node);
    excluded.metadata.labels![LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = '';
    expect(r.observe('Node', asObject(at(excluded)))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(1);
    const older = at(makeNode('n0'));
    older.metadata.resourceVersion = '1';
    r.observe('Node', asObject(older));
    expect(r.loadBalancerKeys().map((k) => k.message.hint?.resourceVersion)).toEqual([String(lastRevision() - 1)]);
  });

  it('a Ready <-> NotReady flip sends no Service key (KEP-3458); an exclusion label change does', () => {
    const { r, keys, nodeSetSignals } = router();
    r.observe('Service', at(makeService('default', 'web')));
    const node = at(makeNode('n1'));
    r.observe('Node', asObject(node));
    const signalsBefore = nodeSetSignals();
    keys.length = 0;

    const notReady = structuredClone(node);
    setReady(notReady, false);
    expect(r.observe('Node', asObject(at(notReady)))).toBe('forwarded');
    const readyAgain = structuredClone(notReady);
    setReady(readyAgain, true);
    r.observe('Node', asObject(at(readyAgain)));
    // Only the lifecycle reconciler hears readiness; the load balancers' target set did not change.
    expect(short(keys)).toEqual(['node-lifecycle:Node//n1', 'node-lifecycle:Node//n1']);
    expect(nodeSetSignals()).toBe(signalsBefore);

    const excluded = structuredClone(readyAgain);
    excluded.metadata.labels![LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = '';
    expect(r.observe('Node', asObject(at(excluded)))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(signalsBefore + 1);
    expect(short(r.loadBalancerKeys())).toEqual(['service:Service/default/web']);
  });

  it('a Node that may not take traffic sends no Service key: one round when it joins, one when it is scaled down', () => {
    const { r, nodeSetSignals } = router({ reconcilers: ['service'] });
    r.observe('Service', at(makeService('default', 'web')));
    // Registered by a kubelet with an external cloud provider: no instance until the node controller sets it.
    const joining = at(makeNode('n1', { providerID: '' }));
    expect(r.observe('Node', asObject(joining))).toBe('not-relevant');
    const labelled = structuredClone(joining);
    labelled.metadata.labels!['feature.node.kubernetes.io/cpu-model'] = 'x';
    expect(r.observe('Node', asObject(at(labelled)))).toBe('not-relevant');
    expect(nodeSetSignals()).toBe(0);

    // Initialized: it becomes a target of every instance-target load balancer.
    const initialized = at(makeNode('n1'));
    expect(r.observe('Node', asObject(initialized))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(1);
    expect(r.loadBalancerKeys().map((k) => k.message.hint?.resourceVersion)).toEqual([
      initialized.metadata.resourceVersion,
    ]);

    // Marked by the cluster autoscaler: it leaves the targets (one round); its deletion after that sends nothing.
    const marked = structuredClone(initialized);
    marked.spec!.taints = [
      { key: TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER, value: '1700000000', effect: 'NoSchedule' },
    ];
    expect(r.observe('Node', asObject(at(marked)))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(2);
    expect(r.remove('Node', asObject(at(marked)))).toBe('not-relevant');
    expect(nodeSetSignals()).toBe(2);

    // A target Node deleted outright (its instance gone) leaves the targets: one round.
    const other = at(makeNode('n2'));
    r.observe('Node', asObject(other));
    expect(nodeSetSignals()).toBe(3);
    expect(r.remove('Node', asObject(at(other)))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(4);
  });

  it('a change of labels alone sends no Service key until a LoadBalancer Service picks Nodes by label', () => {
    const { r, nodeSetSignals } = router({ reconcilers: ['service'] });
    r.observe('Service', at(makeService('default', 'web')));
    const node = at(makeNode('n1'));
    r.observe('Node', asObject(node));
    expect(nodeSetSignals()).toBe(1);
    const labelled = (from: Node, value: string) => {
      const next = structuredClone(from);
      next.metadata.labels!['example.com/pool'] = value;
      return at(next);
    };
    const a = labelled(node, 'a');
    expect(r.observe('Node', asObject(a))).toBe('unchanged');
    expect(nodeSetSignals()).toBe(1);

    // A Service picks Nodes by label: its own key comes from its change; from then on, label changes count.
    const picky = at(
      makeService('default', 'picky', 'LoadBalancer', { [ANNOTATION.targetNodeLabels]: 'example.com/pool=b' }),
    );
    r.observe('Service', picky);
    const b = labelled(a, 'b');
    expect(r.observe('Node', asObject(b))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(2);
    expect(r.loadBalancerKeys().map((k) => k.message.hint?.resourceVersion)).toEqual([
      b.metadata.resourceVersion,
      b.metadata.resourceVersion,
    ]);

    // It goes (deleted): labels concern no load balancer again, but a Node's instance still does.
    r.remove('Service', picky);
    expect(r.observe('Node', asObject(labelled(b, 'c')))).toBe('unchanged');
    expect(nodeSetSignals()).toBe(2);
    const moved = at(makeNode('n1', { providerID: 'aws:///eu-west-1b/i-0123456789abcdef0' }));
    expect(r.observe('Node', asObject(moved))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(3);
  });

  it('a round is one of joins only when every change in it was a Node becoming a candidate, after a full list', () => {
    const { r } = router({ reconcilers: ['service'] });
    const sources = () => [...new Set(r.loadBalancerKeys().map((k) => k.message.hint?.source))];
    r.observe('Service', at(makeService('default', 'web'), 'uid-web'));
    // Nodes seen before the first full list ends: the relay knows nothing yet of what may have left.
    r.listStarted('Node');
    r.observe('Node', asObject(at(makeNode('n1'))));
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    r.listFinished('Node', String(lastRevision()));
    r.takeNodeSetRound();

    r.observe('Node', asObject(at(makeNode('n2'))));
    r.observe('Node', asObject(at(makeNode('n3'))));
    expect(sources()).toEqual([NODE_JOIN_HINT_SOURCE]);
    r.takeNodeSetRound();

    // A join and a leave in one round: the registered targets must be read.
    r.observe('Node', asObject(at(makeNode('n4'))));
    r.remove('Node', asObject(at(makeNode('n1'))));
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    r.takeNodeSetRound();

    // A candidate's instance changing under the same name is no join either.
    r.observe('Node', asObject(at(makeNode('n2', { providerID: 'aws:///eu-west-1b/i-0fedcba9876543210' }))));
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    // Each Service's key of a round names that Service's uid (a migrated load balancer is named after it).
    expect(r.takeNodeSetRound().map((k) => k.message.hint?.uid)).toEqual(['uid-web']);
    r.observe('Node', asObject(at(makeNode('n5'))));
    expect(sources()).toEqual([NODE_JOIN_HINT_SOURCE]);
  });

  it('a round is one of leaves only when every change in it was a candidate leaving the targets while it stays, of both with joins', () => {
    const { r } = router({ reconcilers: ['service'] });
    const sources = () => [...new Set(r.loadBalancerKeys().map((k) => k.message.hint?.source))];
    r.observe('Service', at(makeService('default', 'web')));
    const nodes = ['n1', 'n2', 'n3', 'n4', 'n5'].map((name) => at(makeNode(name)));
    r.listed('Node', nodes.map(asObject), String(lastRevision()));
    r.takeNodeSetRound();
    const changed = (node: Node, change: (n: Node) => void) => {
      const next = structuredClone(node);
      change(next);
      return asObject(at(next));
    };

    // Excluded, and marked by the cluster autoscaler: both stay listed, their instances known to the pass.
    r.observe(
      'Node',
      changed(nodes[0]!, (n) => (n.metadata.labels![LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = '')),
    );
    r.observe(
      'Node',
      changed(nodes[1]!, (n) => (n.spec!.taints = [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }])),
    );
    expect(sources()).toEqual([NODE_LEAVE_HINT_SOURCE]);
    r.takeNodeSetRound();

    // Being deleted: it may be gone before the pass lists the Nodes, so the registered targets must be read.
    r.observe(
      'Node',
      changed(nodes[2]!, (n) => (n.metadata.deletionTimestamp = '2026-12-02T06:00:00Z')),
    );
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    r.takeNodeSetRound();

    // A leave and a join in one round (a Node replaced): a round of both.
    r.observe(
      'Node',
      changed(nodes[3]!, (n) => (n.metadata.labels![LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = '')),
    );
    r.observe('Node', asObject(at(makeNode('n6'))));
    expect(sources()).toEqual([NODE_JOIN_LEAVE_HINT_SOURCE]);
    // Anything else in it as well: the ordinary round.
    r.observe('Node', asObject(at(makeNode('n6', { providerID: 'aws:///eu-west-1b/i-0fedcba9876543210' }))));
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    r.takeNodeSetRound();

    // Deleted outright while a target.
    r.remove('Node', asObject(nodes[4]!));
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
  });

  it("a Node deleted soon after its round of leaves sends an ordinary round: that round's pass may not list it", () => {
    let now = 0;
    const { r, nodeSetSignals } = router({ reconcilers: ['service'], now: () => now });
    const sources = () => [...new Set(r.loadBalancerKeys().map((k) => k.message.hint?.source))];
    r.observe('Service', at(makeService('default', 'web')));
    const nodes = ['n1', 'n2', 'n3'].map((name) => at(makeNode(name)));
    r.listed('Node', nodes.map(asObject), String(lastRevision()));
    r.takeNodeSetRound();
    const excluded = (node: Node) => {
      const next = structuredClone(node);
      next.metadata.labels![LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = '';
      return asObject(at(next));
    };

    // Deleted before its round of leaves is even taken: that round is an ordinary one.
    r.observe('Node', excluded(nodes[0]!));
    r.remove('Node', asObject(nodes[0]!));
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    r.takeNodeSetRound();

    // Deleted 10 s after its round of leaves went out: a new, ordinary round.
    r.observe('Node', excluded(nodes[1]!));
    expect(sources()).toEqual([NODE_LEAVE_HINT_SOURCE]);
    r.takeNodeSetRound();
    const signals = nodeSetSignals();
    now += 10_000;
    expect(r.remove('Node', asObject(nodes[1]!))).toBe('forwarded');
    expect(nodeSetSignals()).toBe(signals + 1);
    expect(sources()).toEqual([NODE_SET_HINT_SOURCE]);
    r.takeNodeSetRound();

    // Deleted after LEFT_RECENTLY_MS (as a cluster autoscaler does once it drained the Node): nothing.
    r.observe('Node', excluded(nodes[2]!));
    r.takeNodeSetRound();
    now += LEFT_RECENTLY_MS;
    expect(r.remove('Node', asObject(nodes[2]!))).toBe('not-relevant');
    expect(nodeSetSignals()).toBe(signals + 2);
  });

  it('an EndpointSlice change reaches its Service even when the slice is listed before the Service', () => {
    const { r, keys } = router({ reconcilers: ['service'] });
    const slice = at(makeSlice('default', 'ip-lb', 'x', ['10.244.0.1']), 'uid-slice');
    expect(r.observe('EndpointSlice', slice)).toBe('unchanged');
    const service = at(
      makeService('default', 'ip-lb', 'LoadBalancer', {
        'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
      }),
    );
    r.observe('Service', service);
    expect(keys.map((k) => k.message.hint)).toEqual([
      {
        eventType: 'MODIFIED',
        resourceVersion: slice.metadata!.resourceVersion,
        source: 'relay/EndpointSlice',
        uid: 'uid',
      },
      { eventType: 'MODIFIED', resourceVersion: service.metadata!.resourceVersion, uid: 'uid', source: 'relay' },
    ]);
  });
});
