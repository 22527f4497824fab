import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, makeIngress, makeService, path, rule } from '../../functions/ingress/model/testing/builders.ts';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator, startEmulator } from '../helpers/emulator.ts';
import { INGRESS_QUEUE } from '../helpers/ingress-world.ts';
import { CLUSTER } from '../helpers/world.ts';
import { emulatorAccount, fakeAccount, type IngressAccount, WEB_ACL_NAME } from './ingress-backends.ts';
import { type StackSnapshot, snapshotStack } from './ingress-snapshot.ts';

/**
 * The Ingress controller's reconciler against the AWS API emulator through the real adapters, Kubernetes on the
 * fakes, and the same scenario on the fakes of ingress-world.ts: a group of two Ingresses, a path added, a member
 * removed, a web ACL by name, the group deleted. Each step's end state is described through the ports and must be
 * the same on both; the ELBv2, ACM and WAFv2 operations the controller sent must be the same set on both.
 */
const SHOP: GroupId = { explicit: true, name: 'shop' };
const HOST = 'shop.example.com';
const group = { 'group.name': 'shop', scheme: 'internet-facing' };

function web(extra: Record<string, string> = {}) {
  return makeIngress({
    name: 'web',
    annotations: {
      ...group,
      'listen-ports': '[{"HTTP":80},{"HTTPS":443}]',
      'actions.maintenance':
        '{"type":"fixed-response","fixedResponseConfig":{"contentType":"text/plain","statusCode":"503","messageBody":"down"}}',
      'actions.old-shop': '{"type":"redirect","redirectConfig":{"host":"new.example.com","statusCode":"HTTP_301"}}',
      'conditions.web': '[{"field":"http-header","httpHeaderConfig":{"httpHeaderName":"X-Shop","values":["on"]}}]',
      ...extra,
    },
    rules: [
      rule(
        HOST,
        path('/maintenance', 'Prefix', backend('maintenance', 'use-annotation')),
        path('/old', 'Prefix', backend('old-shop', 'use-annotation')),
        path('/', 'Prefix', backend('web', 80)),
      ),
    ],
  });
}

function api(paths = [path('/api', 'Prefix', backend('split', 'use-annotation'))]) {
  return makeIngress({
    name: 'api',
    annotations: {
      ...group,
      'listen-ports': '[{"HTTP":80}]',
      'actions.split':
        '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"api","servicePort":"80","weight":80},{"serviceName":"web","servicePort":"80","weight":20}]}}',
    },
    rules: [rule(HOST, ...paths)],
  });
}

interface Run {
  steps: Record<string, StackSnapshot>;
  operations: Set<string>;
}

/** The scenario on one account: each step converges the group and describes what it left. */
async function scenario(account: IngressAccount): Promise<Run> {
  const { world, deps } = account;
  world.kube.putService(makeService({ name: 'web' }));
  world.kube.putService(
    makeService({
      name: 'api',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 9090, nodePort: 30090 }],
    }),
  );
  const steps: Record<string, StackSnapshot> = {};
  const step = async (name: string) => {
    await world.converge([SHOP], deps);
    steps[name] = await snapshotStack(account, 'shop');
  };
  world.ingresses.putIngress(web());
  world.ingresses.putIngress(api());
  await step('created');
  world.ingresses.putIngress(api([path('/v2', 'Prefix', backend('api', 80)), ...api().spec!.rules![0]!.http!.paths]));
  await step('path added');
  world.ingresses.deleteIngress('default', 'api');
  await step('member removed');
  world.ingresses.putIngress(web({ 'wafv2-acl-name': WEB_ACL_NAME }));
  await step('web ACL');
  world.ingresses.deleteIngress('default', 'web');
  await step('deleted');
  expect(world.ingresses.ingresses.size).toBe(0);
  expect(world.sqs.nextVisibleInMs(INGRESS_QUEUE)).toBeUndefined();
  return { steps, operations: account.operations };
}

/** What both accounts must show at each step. */
function checkSteps(steps: Record<string, StackSnapshot>) {
  const created = steps.created!;
  expect(created.loadBalancers).toHaveLength(1);
  const [lb] = created.loadBalancers;
  expect(lb!.tags).toMatchObject({
    'elbv2.k8s.aws/cluster': CLUSTER,
    'ingress.k8s.aws/stack': 'shop',
    'ingress.k8s.aws/resource': 'LoadBalancer',
  });
  expect(lb!.listeners.map((l) => `${l.protocol}:${l.port}`)).toEqual(['HTTP:80', 'HTTPS:443']);
  expect(lb!.listeners[1]!.certificates).toEqual(['certificate (default)']);
  const http = lb!.listeners[0]!.rules;
  expect(
    http.map((r) => (r.conditions.find((c) => c.field === 'path-pattern') as { values: string[] })?.values),
  ).toEqual([['/api', '/api/*'], ['/maintenance', '/maintenance/*'], ['/old', '/old/*'], ['/*']]);
  expect(http[0]!.actions).toEqual([
    expect.objectContaining({
      type: 'forward',
      targetGroups: [expect.objectContaining({ weight: 80 }), expect.objectContaining({ weight: 20 })],
    }),
  ]);
  expect(http[1]!.actions[0]).toMatchObject({ type: 'fixed-response', statusCode: '503' });
  expect(http[2]!.actions[0]).toMatchObject({ type: 'redirect', host: 'new.example.com', statusCode: 'HTTP_301' });
  expect(http[3]!.conditions).toContainEqual({ field: 'http-header', headerName: 'X-Shop', values: ['on'] });
  // Every target group has both Nodes on its Service's node port.
  for (const g of created.targetGroups) expect(g.targets.map((t) => t.split(':')[0])).toEqual(['node-1', 'node-2']);
  for (const g of created.targetGroups) expect(g.tags).toMatchObject({ 'ingress.k8s.aws/stack': 'shop' });
  expect(created.securityGroups.map((g) => g.name)).toEqual([expect.stringMatching(/^k8s-shop-[0-9a-f]{10}$/)]);
  expect(lb!.securityGroups).toContain(created.securityGroups[0]!.name);
  expect(created.nodeGroupRules.length).toBeGreaterThan(0);
  expect(steps['path added']!.loadBalancers[0]!.listeners[0]!.rules).toHaveLength(5);
  const removed = steps['member removed']!;
  expect(removed.loadBalancers[0]!.listeners[0]!.rules).toHaveLength(3);
  expect(removed.targetGroups.map((g) => g.name)).toEqual([expect.stringMatching(/^k8s-default-web-/)]);
  expect(steps['web ACL']!.loadBalancers[0]!.webAcl).toBe('web-acl');
  // No leak: nothing of the stack is left. The Node group keeps the rule from the cluster's shared backend group
  // (k8s-traffic-*), which outlives the group (see the report / docs of the shared backend group).
  expect(steps.deleted).toMatchObject({ loadBalancers: [], targetGroups: [], securityGroups: [] });
}

let fake: Run | undefined;
let emulated: Run | undefined;

describe('the Ingress pass on the fakes (ingress-world)', () => {
  it('creates, changes and deletes the group as asked', async () => {
    fake = await scenario(await fakeAccount());
    checkSteps(fake.steps);
  }, 60_000);
});

describe('the Ingress pass on the emulator, through the real adapters', () => {
  if (!EMULATOR_AVAILABLE) {
    it.skip(EMULATOR_SKIPPED_MESSAGE);
    return;
  }
  let emulator: Emulator | undefined;
  beforeAll(async () => {
    emulator = await startEmulator();
  }, 30_000);
  afterAll(() => emulator?.stop());

  it('creates, changes and deletes the group as asked', async () => {
    emulated = await scenario(await emulatorAccount(emulator!));
    checkSteps(emulated.steps);
  }, 120_000);

  it('leaves at each step what the fakes leave', () => {
    expect(emulated && fake).toBeDefined();
    expect(emulated!.steps).toEqual(fake!.steps);
  });

  it('sends the same ELBv2, ACM and WAFv2 operations as on the fakes', () => {
    expect(emulated && fake).toBeDefined();
    expect([...emulated!.operations].sort()).toEqual([...fake!.operations].sort());
  });
});
