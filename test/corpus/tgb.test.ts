import { describe, expect, it } from 'vitest';
import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import { createTgbWorld, NAMESPACE, type TgbWorld } from '../../functions/target-group-binding/testing/world.ts';
import type { TargetGroupBindingSpec } from '../../shared/k8s/tgb-types.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';

/**
 * TargetGroupBindings with bad specs, each beside a good binding: the bad one gets a False Ready condition and a
 * Warning Event naming the field, nothing crashes or dead-letters, nothing is registered in its target group, and
 * the good binding is served (its target group holds exactly its Service's ready endpoints). Specs are stored as the
 * webhook would have let them through (or with the webhook not running): the controller must not trust it.
 */

const QUEUE = 'target-group-binding.fifo';
const DLQ = 'target-group-binding-dlq.fifo';
const POD_IPS = ['10.0.20.11', '10.0.20.12', '10.0.20.13'];
const OTHER_VPC = 'vpc-0fedcba987654321';

interface BadBinding {
  spec: Partial<TargetGroupBindingSpec>;
  /** What the Warning and the condition must name. */
  names: string;
}

/** A networking problem keeps the targets (they serve; only the rules are missing), as the reference does. */
const keepsTargets = (bad: BadBinding) => bad.names.startsWith('spec.networking');

type World = TgbWorld & { converge: () => Promise<void>; arn: (name: string) => string };

async function world(): Promise<World> {
  const w = createTgbWorld();
  w.sqs.createQueue(QUEUE, { maxReceiveCount: 50, deadLetterQueue: DLQ });
  w.addPodNode(1, POD_IPS);
  w.putWebService();
  w.putSlice(POD_IPS.map((ip, i) => ({ pod: `web-${i + 1}`, ip })));
  // A Service with no node port (ClusterIP): no instance target can take its traffic.
  w.kube.putService({
    metadata: { name: 'plain', namespace: NAMESPACE },
    spec: {
      type: 'ClusterIP',
      selector: { app: 'web' },
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    },
  });
  const groups = new Map<string, string>();
  for (const [name, options] of [
    ['good-ip', {}],
    ['bad-ip', {}],
    ['bad-inst', { targetType: 'instance' as const, port: 30080 }],
    ['far-ip', { vpcId: OTHER_VPC, listener: false }],
  ] as const) {
    groups.set(name, (await w.targetGroup(name, options)).arn);
  }
  w.putBinding('good', { targetGroupARN: groups.get('good-ip')! });
  let sent = 0;
  const converge = async () => {
    const keys: KeyMessage[] = [...w.bindings.bindings.values()].map((b) => ({
      kind: 'TargetGroupBinding',
      namespace: b.metadata.namespace,
      name: b.metadata.name,
      hint: { eventType: 'RESYNC', eventId: `converge-${++sent}` },
    }));
    await w.enqueue(QUEUE, keys);
    await w.drain(QUEUE, targetGroupBindingReconciler, w.deps, 500);
  };
  return Object.assign(w, { converge, arn: (name: string) => groups.get(name)! });
}

const UNKNOWN_ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/nope/0123456789abcdef';

const BAD: [string, (w: World) => BadBinding][] = [
  ['neither targetGroupARN nor targetGroupName', () => ({ spec: {}, names: 'spec.targetGroupARN' })],
  [
    'a targetGroupARN that does not exist',
    () => ({ spec: { targetGroupARN: UNKNOWN_ARN }, names: 'spec.targetGroupARN' }),
  ],
  [
    'a targetGroupName that does not exist',
    () => ({ spec: { targetGroupName: 'nope' }, names: 'spec.targetGroupName' }),
  ],
  [
    'targetType instance for a group of ip targets',
    (w) => ({ spec: { targetGroupARN: w.arn('bad-ip'), targetType: 'instance' }, names: 'spec.targetType' }),
  ],
  [
    'a nodeSelector with ip targets',
    (w) => ({
      spec: { targetGroupARN: w.arn('bad-ip'), nodeSelector: { matchLabels: { pool: 'edge' } } },
      names: 'spec.nodeSelector',
    }),
  ],
  [
    'a serviceRef port number the Service lacks',
    (w) => ({
      spec: { targetGroupARN: w.arn('bad-ip'), serviceRef: { name: 'web', port: 81 } },
      names: 'spec.serviceRef.port',
    }),
  ],
  [
    'a serviceRef port name the Service lacks',
    (w) => ({
      spec: { targetGroupARN: w.arn('bad-ip'), serviceRef: { name: 'web', port: 'grpc' } },
      names: 'spec.serviceRef.port',
    }),
  ],
  [
    'instance targets of a Service without a nodePort',
    (w) => ({
      spec: { targetGroupARN: w.arn('bad-inst'), serviceRef: { name: 'plain', port: 80 } },
      names: 'spec.serviceRef.port',
    }),
  ],
  // A peer's CIDR is checked before it goes to EC2 (the fake EC2 would take a /33: shared/aws/fakes/ec2/rules.ts
  // only looks for a '/'), and told naming the peer's field, as a port name that resolves to nothing.
  [
    'a networking CIDR that is no CIDR',
    (w) => ({
      spec: {
        targetGroupARN: w.arn('bad-ip'),
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.300' } }], ports: [{ port: 8080 }] }] },
      },
      names: 'spec.networking.ingress[0].from[0]',
    }),
  ],
  [
    'a networking CIDR with a prefix length past 32',
    (w) => ({
      spec: {
        targetGroupARN: w.arn('bad-ip'),
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }], ports: [{ port: 8080 }] }] },
      },
      names: 'spec.networking.ingress[0].from[0]',
    }),
  ],
  [
    'a networking port name that resolves to no port',
    (w) => ({
      spec: {
        targetGroupARN: w.arn('bad-ip'),
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 'nope' }] }] },
      },
      names: 'spec.networking.ingress[0].ports[0].port',
    }),
  ],
  [
    "a vpcID other than the target group's",
    (w) => ({ spec: { targetGroupARN: w.arn('bad-ip'), vpcID: OTHER_VPC }, names: 'spec.vpcID' }),
  ],
  [
    "a target group outside the cluster's VPC",
    () => ({ spec: { targetGroupName: 'far-ip' }, names: 'spec.targetGroupName' }),
  ],
];

function expectGoodServedNothingLost(w: World) {
  expect(w.sqs.depth(QUEUE)).toBe(0);
  expect(w.sqs.bodies(DLQ)).toEqual([]);
  expect(w.registered(w.arn('good-ip'))).toEqual(POD_IPS.map((ip) => `${ip}:8080`));
  expect(w.binding('good')!.status?.conditions).toMatchObject([{ type: 'Ready', status: 'True' }]);
  expect(w.kube.eventsFor('TargetGroupBinding', 'good').filter((e) => e.type === 'Warning')).toEqual([]);
  // The user's target groups are never touched beyond their targets.
  for (const name of ['good-ip', 'bad-ip', 'bad-inst', 'far-ip']) {
    expect([...w.elbv2.targetGroups.values()].some((g) => g.tg.name === name)).toBe(true);
  }
}

describe('a TargetGroupBinding with a bad spec, beside a good one', () => {
  it.each(BAD)('%s: a False condition and a Warning naming the field, the good binding served', async (_l, make) => {
    const w = await world();
    const bad = make(w);
    // As the API server stores it: the CRD's schema lets every one of these through; the webhook may not be running.
    w.putBinding('bad', bad.spec);
    await w.converge();

    expectGoodServedNothingLost(w);
    const ready = w.binding('bad')!.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False' });
    expect(ready?.message).toContain(bad.names);
    const warnings = w.kube.eventsFor('TargetGroupBinding', 'bad').filter((e) => e.type === 'Warning');
    expect(warnings.map((e) => e.message).join('\n')).toContain(bad.names);
    // Nothing registered for it (but for a networking problem): its groups hold no target.
    if (!keepsTargets(bad)) {
      for (const name of ['bad-ip', 'bad-inst', 'far-ip']) expect(w.registered(w.arn(name))).toEqual([]);
    }
  });

  it('its Service gone: BackendNotFound naming the Service, its targets deregistered, the good binding served', async () => {
    const w = await world();
    w.kube.putService({
      metadata: { name: 'old', namespace: NAMESPACE },
      spec: {
        type: 'NodePort',
        selector: { app: 'web' },
        ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30081 }],
      },
    });
    w.kube.putEndpointSlice({
      metadata: { name: 'old-1', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'old' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [POD_IPS[0]!], conditions: { ready: true } }],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    w.putBinding('bad', { targetGroupARN: w.arn('bad-ip'), serviceRef: { name: 'old', port: 80 } });
    await w.converge();
    expect(w.registered(w.arn('bad-ip'))).toEqual([`${POD_IPS[0]}:8080`]);
    w.kube.deleteService(NAMESPACE, 'old');
    await w.converge();

    expectGoodServedNothingLost(w);
    expect(w.registered(w.arn('bad-ip'))).toEqual([]);
    expect(w.binding('bad')!.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
    expect(w.eventsOf('bad', 'BackendNotFound').join('\n')).toContain(`${NAMESPACE}/old`);
  });

  it('its target group deleted by its owner: a Warning naming the ARN, and deleting the binding still lets it go', async () => {
    const w = await world();
    w.putBinding('bad', { targetGroupARN: w.arn('bad-ip') });
    await w.converge();
    expect(w.registered(w.arn('bad-ip'))).toHaveLength(POD_IPS.length);
    w.elbv2.targetGroups.delete(w.arn('bad-ip'));
    await w.converge();
    expect(w.binding('bad')!.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'TargetGroupNotFound' });
    expect(
      w
        .eventsOf('bad')
        .filter((e) => e.startsWith('FailedReconcile'))
        .join('\n'),
    ).toContain('spec.targetGroupARN');
    w.bindings.deleteBinding(NAMESPACE, 'bad');
    await w.converge();
    expect(w.binding('bad')).toBeUndefined();
    expect(w.sqs.bodies(DLQ)).toEqual([]);
    expect(w.registered(w.arn('good-ip'))).toEqual(POD_IPS.map((ip) => `${ip}:8080`));
  });

  it('once corrected, the same binding is served and its condition turns True', async () => {
    const w = await world();
    w.putBinding('bad', { targetGroupARN: w.arn('bad-ip'), serviceRef: { name: 'web', port: 81 } });
    await w.converge();
    expect(w.binding('bad')!.status?.conditions?.[0]).toMatchObject({ status: 'False' });
    w.bindings.mutateBinding(NAMESPACE, 'bad', (b) => {
      b.spec.serviceRef = { name: 'web', port: 80 };
    });
    await w.converge();
    expectGoodServedNothingLost(w);
    expect(w.registered(w.arn('bad-ip'))).toEqual(POD_IPS.map((ip) => `${ip}:8080`));
    expect(w.binding('bad')!.status?.conditions?.[0]).toMatchObject({ status: 'True' });
  });
});
