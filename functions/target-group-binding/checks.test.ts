import { beforeEach, describe, expect, it } from 'vitest';
import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { LBC_ACTIVE_REASON, LBC_GATE_REQUEUES } from '../../shared/k8s/lbc-lease.ts';
import type { TargetGroupBindingSpec } from '../../shared/k8s/tgb-types.ts';
import { targetGroupBindingReconciler } from './reconciler.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from './testing/world.ts';

/** Bindings that cannot be served, the reference controller running, and instance targets. */

let w: TgbWorld;
let ipGroup: TargetGroup;
let instanceGroup: TargetGroup;

beforeEach(async () => {
  w = createTgbWorld();
  w.addPodNode(1, ['10.0.20.11']);
  w.putWebService();
  w.putSlice([{ pod: 'web-1', ip: '10.0.20.11' }]);
  ipGroup = await w.targetGroup('web-ip');
  instanceGroup = await w.targetGroup('web-instance', { targetType: 'instance', port: 30080 });
});

describe('a binding that disagrees with its target group', () => {
  const cases: [string, () => Partial<TargetGroupBindingSpec>, string, string][] = [
    ['target type', () => ({ targetGroupARN: ipGroup.arn, targetType: 'instance' }), 'spec.targetType', 'InvalidSpec'],
    [
      'address type',
      () => ({ targetGroupARN: ipGroup.arn, ipAddressType: 'ipv6' }),
      'spec.ipAddressType',
      'InvalidSpec',
    ],
    ['VPC', () => ({ targetGroupARN: ipGroup.arn, vpcID: 'vpc-0ther' }), 'spec.vpcID', 'InvalidSpec'],
    [
      'nodeSelector with ip targets',
      () => ({ targetGroupARN: ipGroup.arn, nodeSelector: { matchLabels: { pool: 'web' } } }),
      'spec.nodeSelector',
      'InvalidSpec',
    ],
    [
      'protocol',
      () => ({ targetGroupARN: ipGroup.arn, targetGroupProtocol: 'HTTP' }),
      'spec.targetGroupProtocol',
      'InvalidSpec',
    ],
    [
      'an unknown ARN',
      () => ({ targetGroupARN: ipGroup.arn.replace('web-ip', 'gone') }),
      'spec.targetGroupARN',
      'TargetGroupNotFound',
    ],
    ['an unknown name', () => ({ targetGroupName: 'gone' }), 'spec.targetGroupName', 'TargetGroupNotFound'],
    ['no target group', () => ({}), 'spec.targetGroupARN', 'InvalidSpec'],
    [
      'a role to assume',
      () => ({ targetGroupARN: ipGroup.arn, iamRoleArnToAssume: 'arn:aws:iam::1:role/x' }),
      'spec.iamRoleArnToAssume',
      'Unsupported',
    ],
    [
      'a Service port it lacks',
      () => ({ targetGroupARN: ipGroup.arn, serviceRef: { name: 'web', port: 81 } }),
      'spec.serviceRef.port',
      'InvalidSpec',
    ],
  ];

  it.each(cases)(
    '%s: a False condition and a Warning naming the field; no target written',
    async (_, spec, field, reason) => {
      w.putBinding('web', spec());
      w.reset();
      await w.reconcile('web');
      expect(w.elbv2.writeCallCount()).toBe(0);
      expect(w.registered(ipGroup.arn)).toEqual([]);
      expect(w.eventsOf('web', 'FailedReconcile')).toEqual([expect.stringContaining(`FailedReconcile: ${field}: `)]);
      expect(w.binding('web')!.status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason });
      expect(w.binding('web')!.status?.conditions?.[0]?.message).toContain(field);
    },
  );

  it('a target group outside the cluster VPC is refused', async () => {
    const elsewhere = await w.targetGroup('other-vpc', { vpcId: 'vpc-0ther', listener: false });
    w.putBinding('web', { targetGroupARN: elsewhere.arn });
    await w.reconcile('web');
    expect(w.registered(elsewhere.arn)).toEqual([]);
    expect(w.eventsOf('web', 'FailedReconcile')[0]).toContain("not in the cluster's VPC vpc-0a1b2c3d");
  });
});

describe('the reference controller holding its leader Lease', () => {
  it('nothing is written but a Warning, the key comes back after the Lease; then the work is done', async () => {
    w.putBinding('web', { targetGroupARN: ipGroup.arn });
    w.kube.workloads.leases.holdLbcLease('lbc-7d9f', { durationSeconds: 15 });
    const deps = { ...w.deps, checkLbcLease: true };
    w.reset();
    const result = await w.reconcile('web', deps);
    expect(result).toEqual({ requeueAfterSeconds: 60 });
    expect(w.writes()).toBe(0);
    expect(w.bindings.writeCount()).toBe(0);
    expect(w.eventsOf('web')).toEqual([expect.stringMatching(new RegExp(`^${LBC_ACTIVE_REASON}: .*holder lbc-7d9f`))]);
    expect(w.registered(ipGroup.arn)).toEqual([]);
    // It stops renewing: the Lease expires, and the next look serves the binding.
    w.clock.advance(16_000);
    expect(await w.reconcile('web', deps)).toBeUndefined();
    expect(w.registered(ipGroup.arn)).toEqual(['10.0.20.11:8080']);
  });

  it('a key requeued LBC_GATE_REQUEUES times is let go (the resync brings it back), never walked into the DLQ', async () => {
    w.putBinding('web', { targetGroupARN: ipGroup.arn });
    w.kube.workloads.leases.holdLbcLease('lbc-7d9f');
    const deps = { ...w.deps, checkLbcLease: true };
    const at = (receiveCount: number) =>
      targetGroupBindingReconciler.reconcile(
        { kind: 'TargetGroupBinding', namespace: NAMESPACE, name: 'web' },
        deps,
        undefined,
        {
          receiveCount,
          hints: [],
          payloads: [],
        },
      );
    expect(await at(LBC_GATE_REQUEUES - 1)).toEqual({ requeueAfterSeconds: 60 });
    expect(await at(LBC_GATE_REQUEUES)).toBeUndefined();
    expect(w.registered(ipGroup.arn)).toEqual([]);
  });

  it('a deleted binding is not cleaned up while the Lease is held', async () => {
    w.putBinding('web', { targetGroupARN: ipGroup.arn });
    await w.reconcile('web');
    w.bindings.deleteBinding(NAMESPACE, 'web');
    w.kube.workloads.leases.holdLbcLease('lbc-7d9f');
    await w.reconcile('web', { ...w.deps, checkLbcLease: true });
    expect(w.registered(ipGroup.arn)).toEqual(['10.0.20.11:8080']);
    expect(w.binding('web')).toBeDefined();
  });
});

describe('an instance binding', () => {
  it('registers the Ready, eligible Nodes matching nodeSelector on the node port', async () => {
    w.addPodNode(2);
    w.addPodNode(3);
    w.kube.mutateNode('node-3', (n) => {
      n.metadata.labels = { ...n.metadata.labels, pool: 'batch' };
    });
    w.kube.mutateNode('node-2', (n) => {
      n.metadata.labels = { ...n.metadata.labels, pool: 'web' };
    });
    w.kube.mutateNode('node-1', (n) => {
      n.metadata.labels = {
        ...n.metadata.labels,
        pool: 'web',
        'node.kubernetes.io/exclude-from-external-load-balancers': '',
      };
    });
    w.putBinding('web', { targetGroupARN: instanceGroup.arn, nodeSelector: { matchLabels: { pool: 'web' } } });
    await w.reconcile('web');
    const id = (name: string) => w.kube.nodes.get(name)!.spec!.providerID!.split('/').pop();
    expect(w.registered(instanceGroup.arn)).toEqual([`${id('node-2')}:30080`]);
    expect(w.binding('web')!.spec.targetType).toBe('instance');
  });

  it('a pass in line reads only; a Node that goes NotReady leaves, one that comes back returns', async () => {
    w.addPodNode(2);
    w.putBinding('web', { targetGroupARN: instanceGroup.arn });
    await w.reconcile('web');
    expect(w.registered(instanceGroup.arn)).toHaveLength(2);
    w.reset();
    await w.reconcile('web');
    expect(w.writes()).toBe(0);
    expect(w.kube.events).toEqual([]);
    w.kube.mutateNode('node-2', (n) => {
      n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'False' }] };
    });
    await w.reconcile('web');
    expect(w.registered(instanceGroup.arn)).toHaveLength(1);
    w.kube.mutateNode('node-2', (n) => {
      n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'True' }] };
    });
    await w.reconcile('web');
    expect(w.registered(instanceGroup.arn)).toHaveLength(2);
  });

  it('a spec change moves observedGeneration, written once', async () => {
    w.putBinding('web', { targetGroupARN: instanceGroup.arn });
    await w.reconcile('web');
    w.bindings.mutateBinding(NAMESPACE, 'web', (b) => {
      b.spec.nodeSelector = { matchLabels: {} };
    });
    w.reset();
    await w.reconcile('web');
    const b = w.binding('web')!;
    expect(b.status?.observedGeneration).toBe(b.metadata.generation);
    expect(b.status?.conditions?.[0]?.observedGeneration).toBe(b.metadata.generation);
    expect(w.bindings.callCount('setTargetGroupBindingStatus')).toBe(1);
  });

  it('a Service without a node port: a Warning naming the port, nothing registered', async () => {
    w.kube.mutateService(NAMESPACE, 'web', (s) => {
      s.spec = { ...s.spec, type: 'ClusterIP', ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }] };
    });
    w.putBinding('web', { targetGroupARN: instanceGroup.arn });
    await w.reconcile('web');
    expect(w.registered(instanceGroup.arn)).toEqual([]);
    expect(w.eventsOf('web', 'FailedReconcile')).toEqual([expect.stringContaining('spec.serviceRef.port: ')]);
    expect(w.eventsOf('web', 'FailedReconcile')[0]).toContain('has no nodePort');
  });
});
