import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_RULE_DESCRIPTION } from '../../functions/target-group-binding/networking.ts';
import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import { TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator, startEmulator } from '../helpers/emulator.ts';
import { differenceRow, hasTest } from './difference-rows.ts';
import { emulatorAccount, fakeAccount, POD_IPS, type TgbAccount } from './tgb-backends.ts';

/**
 * The TargetGroupBinding controller's passes against the AWS API emulator through the real adapters, Kubernetes on
 * the fakes, and the same scenario on the fakes of the binding world: target groups made as Terraform would, an ip
 * binding created, its Service's endpoints scaled up and down, an instance binding, networking rules asked for then
 * dropped, both bindings deleted. Each step's end state is described through the ports and must be the same on both
 * (targets, the rules on the Nodes' group, the bindings), and so must the set of EC2 and ELBv2 operations each step
 * sent. Target health is not compared: the emulator has every target `healthy` at once and forgets a deregistered
 * one at once (docs/emulator-differences.md, `elbv2.target-unused`, `elbv2.target-draining`); draining targets are
 * left out of the description on both. An ip binding's rules are tested apart (`ipBindingRules`).
 */

const QUEUE = 'target-group-binding.fifo';
const NAMESPACE = 'shop';

interface Snapshot {
  targetGroups: { name: string; targetType: string; port: number; targets: string[] }[];
  /** The Nodes' group's rules, but the one admitting the Nodes themselves. */
  nodeGroupRules: string[];
  bindings: { name: string; finalizers: string[]; ready?: string; filled: string[] }[];
}

interface Run {
  steps: Record<string, Snapshot>;
  operations: Record<string, string[]>;
}

async function snapshot(account: TgbAccount, arns: readonly string[]): Promise<Snapshot> {
  const { ec2, elbv2 } = account.look;
  const names = new Map([
    [account.nodeGroupId, 'nodes'],
    [account.clientsGroupId, 'clients'],
  ]);
  const groups = await elbv2.describeTargetGroupsByArn(arns);
  const targetGroups = [];
  for (const g of groups) {
    const health = await elbv2.describeTargetHealth(g.arn);
    const targets = health
      .filter((h) => h.state !== 'draining')
      .map((h) => `${account.nodeOf.get(h.target.id) ?? h.target.id}:${h.target.port}`)
      .sort();
    targetGroups.push({ name: g.name, targetType: g.targetType, port: g.port, targets });
  }
  const [nodes] = await ec2.findSecurityGroups({ groupIds: [account.nodeGroupId] });
  const nodeGroupRules = (nodes?.ingress ?? [])
    .filter((r) => r.sourceGroupId !== account.nodeGroupId)
    .map(
      (r) =>
        `${r.protocol}:${r.fromPort}-${r.toPort} from ${r.cidrIpv4 ?? names.get(r.sourceGroupId ?? '') ?? r.sourceGroupId} (${r.description ?? ''})`,
    )
    .sort();
  const bindings = [...account.world.bindings.bindings.values()]
    .map((b) => {
      const ready = b.status?.conditions?.find((c) => c.type === 'Ready');
      return {
        name: b.metadata.name,
        finalizers: b.metadata.finalizers ?? [],
        ready: ready && `${ready.status} ${ready.reason}`,
        filled: (['targetGroupARN', 'targetType', 'ipAddressType', 'vpcID'] as const).filter((f) => b.spec[f]),
      };
    })
    .sort((x, y) => x.name.localeCompare(y.name));
  return { targetGroups: targetGroups.sort((x, y) => x.name.localeCompare(y.name)), nodeGroupRules, bindings };
}

const healthCheck = {
  protocol: 'TCP' as const,
  port: 'traffic-port',
  intervalSeconds: 10,
  timeoutSeconds: 10,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
};

/** The scenario on one account: each step converges every binding and describes what it left. */
async function scenario(account: TgbAccount): Promise<Run> {
  const { world: w, look } = account;
  w.sqs.createQueue(QUEUE, { maxReceiveCount: 50, deadLetterQueue: 'target-group-binding-dlq.fifo' });
  const made: string[] = [];
  for (const [name, targetType, port] of [
    ['tf-ip', 'ip', 8080],
    ['tf-inst', 'instance', 30080],
  ] as const) {
    const g = await look.elbv2.createTargetGroup({
      name,
      protocol: 'TCP',
      port,
      targetType,
      vpcId: account.vpcId,
      healthCheck,
      tags: { owner: 'terraform' },
    });
    if (g === 'name-taken') throw new Error(`target group ${name} exists`);
    made.push(g.arn);
  }
  w.putWebService();
  const slice = (n: number) => w.putSlice(POD_IPS.slice(0, n).map((ip, i) => ({ pod: `web-${i + 1}`, ip })));
  slice(2);

  const steps: Record<string, Snapshot> = {};
  const operations: Record<string, string[]> = {};
  let sent = 0;
  const step = async (name: string) => {
    account.operations.clear();
    const keys = [...w.bindings.bindings.values()].map((b) => ({
      kind: 'TargetGroupBinding' as const,
      namespace: NAMESPACE,
      name: b.metadata.name,
      hint: { eventType: 'RESYNC' as const, eventId: `step-${++sent}` },
    }));
    await w.enqueue(QUEUE, keys);
    await w.drain(QUEUE, targetGroupBindingReconciler, account.deps, 200);
    operations[name] = [...account.operations].sort();
    steps[name] = await snapshot(account, made);
  };

  w.putBinding('web-ip', { targetGroupARN: made[0] });
  await step('ip binding');
  slice(3);
  await step('scaled up');
  slice(1);
  await step('scaled down');
  w.putBinding('web-inst', { targetGroupName: 'tf-inst' });
  await step('instance binding');
  // The instance binding's rules (the reference takes port numbers only for them; an ip binding's: see below).
  w.bindings.mutateBinding(NAMESPACE, 'web-inst', (b) => {
    b.spec.networking = {
      ingress: [
        {
          from: [{ ipBlock: { cidr: '10.2.0.0/16' } }, { securityGroup: { groupID: account.clientsGroupId } }],
          ports: [{ protocol: 'TCP', port: 30080 }],
        },
      ],
    };
  });
  await step('networking');
  w.bindings.mutateBinding(NAMESPACE, 'web-inst', (b) => {
    b.spec.networking = { ingress: [{ from: [{ ipBlock: { cidr: '10.3.0.0/16' } }], ports: [{ port: 30080 }] }] };
  });
  await step('rules changed');
  w.bindings.deleteBinding(NAMESPACE, 'web-ip');
  w.bindings.deleteBinding(NAMESPACE, 'web-inst');
  await step('deleted');
  expect(w.sqs.depth('target-group-binding-dlq.fifo')).toBe(0);
  return { steps, operations };
}

const rule = (ports: string, from: string) => `tcp:${ports} from ${from} (${SHARED_RULE_DESCRIPTION})`;

/** What both accounts must show at each step. */
function checkSteps(steps: Record<string, Snapshot>) {
  const ip = (s: string) => steps[s]!.targetGroups.find((g) => g.name === 'tf-ip')!.targets;
  const inst = (s: string) => steps[s]!.targetGroups.find((g) => g.name === 'tf-inst')!.targets;
  expect(ip('ip binding')).toEqual(POD_IPS.slice(0, 2).map((a) => `${a}:8080`));
  expect(steps['ip binding']!.bindings).toEqual([
    {
      name: 'web-ip',
      finalizers: [TGB_FINALIZER],
      ready: 'True Reconciled',
      filled: ['targetGroupARN', 'targetType', 'ipAddressType', 'vpcID'],
    },
  ]);
  expect(ip('scaled up')).toEqual(POD_IPS.map((a) => `${a}:8080`));
  expect(ip('scaled down')).toEqual([`${POD_IPS[0]}:8080`]);
  expect(inst('instance binding')).toEqual(['node-1:30080', 'node-2:30080']);
  expect(steps['instance binding']!.nodeGroupRules).toEqual([]);
  expect(steps.networking!.nodeGroupRules).toEqual([
    rule('30080-30080', '10.2.0.0/16'),
    rule('30080-30080', 'clients'),
  ]);
  expect(steps['rules changed']!.nodeGroupRules).toEqual([rule('30080-30080', '10.3.0.0/16')]);
  // Deleted: no target, no rule, no binding; the target groups are still there, untouched.
  expect(steps.deleted).toEqual({
    targetGroups: [
      { name: 'tf-inst', targetType: 'instance', port: 30080, targets: [] },
      { name: 'tf-ip', targetType: 'ip', port: 8080, targets: [] },
    ],
    nodeGroupRules: [],
    bindings: [],
  });
}

/**
 * An ip binding's rules alone: they go on the group of the interface holding its Pods' addresses, found by those
 * addresses (secondary ones, as the VPC CNI gives Pods). The emulator finds an interface by its primary address
 * only (`eni.secondary-address-filter`), so it is kept out of the scenario above.
 */
async function ipBindingRules(account: TgbAccount): Promise<string[]> {
  const { world: w, look } = account;
  w.sqs.createQueue(QUEUE, { maxReceiveCount: 50, deadLetterQueue: 'target-group-binding-dlq.fifo' });
  const g = await look.elbv2.createTargetGroup({
    name: 'tf-ip',
    protocol: 'TCP',
    port: 8080,
    targetType: 'ip',
    vpcId: account.vpcId,
    healthCheck,
    tags: { owner: 'terraform' },
  });
  if (g === 'name-taken') throw new Error('target group tf-ip exists');
  w.putWebService();
  w.putSlice(POD_IPS.map((ip, i) => ({ pod: `web-${i + 1}`, ip })));
  w.putBinding('web-ip', {
    targetGroupARN: g.arn,
    networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 'http' }] }] },
  });
  await w.enqueue(QUEUE, [
    { kind: 'TargetGroupBinding', namespace: NAMESPACE, name: 'web-ip', hint: { eventType: 'RESYNC', eventId: 'ip' } },
  ]);
  await w.drain(QUEUE, targetGroupBindingReconciler, account.deps, 200);
  return (await snapshot(account, [g.arn])).nodeGroupRules;
}

const SECONDARY_FILTER = 'eni.secondary-address-filter';
const IP_RULES_TEST = "an ip binding's rules go on the group of the interface holding its Pods' addresses";
const SAME_OPERATIONS_TEST = 'sends the same EC2 and ELBv2 operations at each step as on the fakes';

let fake: Run | undefined;
let emulated: Run | undefined;

describe('the binding passes on the fakes (target-group-binding world)', () => {
  it('registers, follows, opens and lets go as asked', async () => {
    fake = await scenario(await fakeAccount());
    checkSteps(fake.steps);
  }, 60_000);

  it(IP_RULES_TEST, async () => {
    expect(await ipBindingRules(await fakeAccount())).toEqual([rule('8080-8080', '10.1.0.0/16')]);
  });
});

describe('the binding passes on the emulator, through the real adapters', () => {
  if (!EMULATOR_AVAILABLE) {
    it.skip(EMULATOR_SKIPPED_MESSAGE);
    return;
  }
  let emulator: Emulator | undefined;
  beforeAll(async () => {
    emulator = await startEmulator();
  }, 30_000);
  afterAll(() => emulator?.stop());

  it('registers, follows, opens and lets go as asked', async () => {
    emulated = await scenario(await emulatorAccount(emulator!));
    checkSteps(emulated.steps);
  }, 120_000);

  it('leaves at each step what the fakes leave', () => {
    expect(emulated && fake).toBeDefined();
    expect(emulated!.steps).toEqual(fake!.steps);
  });

  it('sends the same EC2 and ELBv2 operations at each step as on the fakes, the known difference aside', () => {
    expect(emulated && fake).toBeDefined();
    // eni.secondary-address-filter: the first pass over the ip binding looks at its rules once (its spec is new); the
    // emulator finds no interface by a Pod's address, so it reads no security group there.
    const known = structuredClone(fake!.operations);
    known['ip binding'] = known['ip binding']!.filter((op) => op !== 'ec2:DescribeSecurityGroups');
    expect(emulated!.operations).toEqual(known);
  });

  (process.env.CONTRACT_SHOW_DIFFERENCES ? it : it.fails)(
    `${SAME_OPERATIONS_TEST} [emulator differs: ${SECONDARY_FILTER}]`,
    () => {
      expect(emulated!.operations).toEqual(fake!.operations);
    },
  );

  // A test that must fail on the emulator while it differs (CONTRACT_SHOW_DIFFERENCES=1 runs it as any other).
  (process.env.CONTRACT_SHOW_DIFFERENCES ? it : it.fails)(
    `${IP_RULES_TEST} [emulator differs: ${SECONDARY_FILTER}]`,
    async () => {
      expect(await ipBindingRules(await emulatorAccount(emulator!))).toEqual([rule('8080-8080', '10.1.0.0/16')]);
    },
    60_000,
  );
});

describe('the rows of the differences table (docs) for this suite', () => {
  it(`${SECONDARY_FILTER} has its row, naming tests of this file`, () => {
    const row = differenceRow(SECONDARY_FILTER);
    expect(row?.file).toBe('tgb-pass.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    const source = readFileSync(import.meta.filename, 'utf8');
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
