import { beforeEach, describe, expect, it } from 'vitest';
import type { TargetGroup, TargetHealth } from '../../shared/aws/elbv2-port.ts';
import { LEGACY_READINESS_GATE_PREFIX, READINESS_GATE_PREFIX, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { decideGates } from './readiness.ts';
import { wantedIpTargets } from './targets.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from './testing/world.ts';

/** Readiness gates: which gated Pods are registered, their conditions from the target health, on the fakes too. */

const gate = `${READINESS_GATE_PREFIX}web`;

const pod = (
  name: string,
  ip: string,
  conditions: { type: string; status: 'True' | 'False' }[],
  gates = [gate],
): Pod => ({
  metadata: { name, namespace: NAMESPACE },
  spec: { nodeName: 'node-1', readinessGates: gates.map((conditionType) => ({ conditionType })) },
  status: { podIP: ip, conditions },
});

describe('which not-ready endpoints are registered', () => {
  const node = { metadata: { name: 'node-1' }, status: { conditions: [{ type: 'Ready', status: 'True' as const }] } };
  const notReadyNode = {
    metadata: { name: 'node-2' },
    status: { conditions: [{ type: 'Ready', status: 'False' as const }] },
  };
  const containersReady = { type: 'ContainersReady', status: 'True' as const };
  const targetsOf = (p: Pod, options: { nodeName?: string; terminating?: boolean } = {}) =>
    wantedIpTargets({
      servicePort: { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
      ipAddressType: 'ipv4',
      slices: [
        {
          metadata: { name: 's' },
          addressType: 'IPv4',
          endpoints: [
            {
              addresses: [p.status!.podIP as string],
              conditions: { ready: false, terminating: options.terminating ?? false },
              nodeName: options.nodeName ?? 'node-1',
              targetRef: { kind: 'Pod', name: p.metadata.name },
            },
          ],
          ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
        },
      ],
      pods: new Map([[p.metadata.name, p]]),
      nodes: new Map([node, notReadyNode].map((n) => [n.metadata.name, n])),
      bindingName: 'web',
    }).map((t) => `${t.id}:${t.port}`);

  it.each<[string, Pod, { nodeName?: string; terminating?: boolean }, string[]]>([
    ['only the gate unmet: registered', pod('a', '10.0.0.1', [containersReady]), {}, ['10.0.0.1:8080']],
    [
      'the legacy gate',
      pod('a', '10.0.0.1', [containersReady], [`${LEGACY_READINESS_GATE_PREFIX}web`]),
      {},
      ['10.0.0.1:8080'],
    ],
    [
      'the gate already met (something else is wrong)',
      pod('a', '10.0.0.1', [containersReady, { type: gate, status: 'True' }]),
      {},
      [],
    ],
    ['containers not ready', pod('a', '10.0.0.1', [{ type: 'ContainersReady', status: 'False' }]), {}, []],
    ['no gate of this binding', pod('a', '10.0.0.1', [containersReady], [`${READINESS_GATE_PREFIX}other`]), {}, []],
    ['on a Node not Ready', pod('a', '10.0.0.1', [containersReady]), { nodeName: 'node-2' }, []],
    ['terminating', pod('a', '10.0.0.1', [containersReady]), { terminating: true }, []],
  ])('%s', (_, p, options, expected) => {
    expect(targetsOf(p, options)).toEqual(expected);
  });
});

describe('the gate conditions', () => {
  const health = (ip: string, state: TargetHealth['state'], reason?: string, description?: string): TargetHealth => ({
    target: { id: ip, port: 8080 },
    state,
    ...(reason ? { reason } : {}),
    ...(description ? { description } : {}),
  });

  it('True only when healthy; ELB reason and description otherwise; only changes are written', () => {
    const pods = [
      pod('a', '10.0.0.1', []),
      pod('b', '10.0.0.2', [{ type: gate, status: 'True' }]),
      pod('c', '10.0.0.3', []),
      pod('d', '10.0.0.4', [], []),
    ];
    const decision = decideGates(
      pods,
      'web',
      [
        health('10.0.0.1', 'initial', 'Elb.RegistrationInProgress', 'Target registration is in progress'),
        health('10.0.0.2', 'healthy'),
        health('10.0.0.4', 'healthy'),
      ],
      () => 8080,
    );
    expect(decision.waiting).toBe(true);
    expect(decision.changes.map((c) => [c.pod.metadata.name, c.condition])).toEqual([
      [
        'a',
        {
          type: gate,
          status: 'False',
          reason: 'Elb.RegistrationInProgress',
          message: 'Target registration is in progress',
        },
      ],
      [
        'c',
        {
          type: gate,
          status: 'False',
          reason: 'Target.NotRegistered',
          message: 'the target is not registered in the target group',
        },
      ],
    ]);
    const settled = decideGates([pods[1]!], 'web', [health('10.0.0.2', 'healthy')], () => 8080);
    expect(settled).toEqual({ changes: [], waiting: false });
  });
});

describe('gates on the fakes', () => {
  let w: TgbWorld;
  let group: TargetGroup;
  beforeEach(async () => {
    w = createTgbWorld();
    w.addPodNode(1);
    w.putWebService();
    group = await w.targetGroup('web-ip');
    w.elbv2.initialDescribes = 1000;
  });
  const gateOf = (name: string) =>
    w.kube.workloads.get(NAMESPACE, name)?.status?.conditions?.find((c) => c.type === gate);

  it('a gated Pod is registered, held with ELB reason while initial, set True once healthy; requeued meanwhile', async () => {
    w.putPod('web-1', '10.0.20.11', { gates: ['web'], ready: false });
    w.putSlice([{ pod: 'web-1', ip: '10.0.20.11', ready: false }]);
    w.putBinding('web', { targetGroupARN: group.arn });
    expect(await w.reconcile('web')).toEqual({ requeueAfterSeconds: 10 });
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080']);
    expect(gateOf('web-1')).toMatchObject({ status: 'False', reason: 'Elb.RegistrationInProgress' });
    w.reset();
    expect(await w.reconcile('web')).toEqual({ requeueAfterSeconds: 10 });
    expect(w.writes()).toBe(0);
    w.elbv2.setTargetHealth(group.arn, '10.0.20.11', 'healthy');
    expect(await w.reconcile('web')).toBeUndefined();
    expect(gateOf('web-1')).toMatchObject({ status: 'True' });
    expect(gateOf('web-1')?.reason).toBeUndefined();
  });

  it('a binding the reference made for its own Service: the targets are left to that controller, the gates kept', async () => {
    await w.elbv2Port.registerTargets(group.arn, [w.target('10.0.20.11'), w.target('10.0.20.99')]);
    w.elbv2.setTargetHealth(group.arn, '10.0.20.11', 'healthy');
    w.putPod('web-1', '10.0.20.11', { gates: ['web'], ready: false });
    w.putSlice([{ pod: 'web-2', ip: '10.0.20.12' }]);
    w.putBinding(
      'web',
      { targetGroupARN: group.arn, targetType: 'ip' },
      {
        labels: { 'service.k8s.aws/stack-name': 'web', 'service.k8s.aws/stack-namespace': NAMESPACE },
        finalizers: [TGB_FINALIZER],
      },
    );
    w.reset();
    await w.reconcile('web');
    expect(w.elbv2.writeCallCount()).toBe(0);
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.99:8080']);
    expect(gateOf('web-1')).toMatchObject({ status: 'True' });
    // Deleted: only the finalizer goes.
    w.bindings.deleteBinding(NAMESPACE, 'web');
    await w.reconcile('web');
    expect(w.binding('web')).toBeUndefined();
    expect(w.registered(group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.99:8080']);
  });
});
