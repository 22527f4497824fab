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
const keepsTargets = (bad: BadBinding) => bad.names.includes('networking');

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
  // BUG (functions/target-group-binding/networking.ts): a peer's CIDR is not checked before it goes to EC2, so a bad
  // one is told only as EC2's own error ("authorizing ingress on sg-...: CIDR block ... is malformed"), which names
  // no field of the binding; and a CIDR whose prefix length is past 32 (which EC2 refuses, but the fake EC2 takes:
  // shared/aws/fakes/ec2/rules.ts only looks for a '/') is authorized, the binding Ready.
  [
    'a networking CIDR that is no CIDR',
    (w) => ({
      spec: {
        targetGroupARN: w.arn('bad-ip'),
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.300' } }], ports: [{ port: 8080 }] }] },
      },
      names: 'networking',
    }),
  ],
  [
    'a networking CIDR with a prefix length past 32',
    (w) => ({
      spec: {
        targetGroupARN: w.arn('bad-ip'),
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }], ports: [{ port: 8080 }] }] },
      },
      names: 'networking',
    }),
  ],
  [
    'a networking port name that resolves to no port',
    (w) => ({
      spec: {
        targetGroupARN: w.arn('bad-ip'),
        networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 'nope' }] }] },
      },
      names: 'networking port nope',
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
