import { expect } from 'vitest';
import { albHealthCheckDefaults } from '../../shared/aws/elbv2-defaults.ts';
import type { Rule, RuleAction, RuleCondition } from '../../shared/aws/elbv2-port.ts';
import {
  type DesiredApplicationListener,
  deleteUnwantedListeners,
  ensureApplicationListeners,
} from '../../shared/load-balancers/application-listeners.ts';
import { applyRules, type DesiredRule, sameRuleContent } from '../../shared/load-balancers/rules.ts';
import { elbv2Backends } from './backends.ts';
import { describeContract } from './contract.ts';
import { elbNetwork, OWNED, targetGroupInput } from './elbv2-network.ts';

/**
 * applyRules (shared/load-balancers/rules.ts) against each backend: rules added, removed, reordered, a backend
 * switched, rules made by the AWS Load Balancer Controller (numbered 1, 2, 3...) taken over; the end state read back
 * is the desired list in order, and applying it again writes nothing. On the emulator this is the check that the
 * moves never name a priority a rule holds (it refuses those even when the holder moves in the same call).
 * ensureApplicationListeners / deleteUnwantedListeners (shared/load-balancers/application-listeners.ts) likewise: an
 * HTTPS listener's certificates end as desired though the emulator drops the SNI list on ModifyListener.
 */

const NOT_FOUND: RuleAction = { type: 'fixed-response', statusCode: '404', contentType: 'text/plain' };
const forward = (arn: string): RuleAction => ({
  type: 'forward',
  targetGroups: [{ arn, weight: 1 }],
  stickiness: { enabled: false },
});
const path = (...values: string[]): RuleCondition => ({ field: 'path-pattern', values });
const host = (...values: string[]): RuleCondition => ({ field: 'host-header', values });

describeContract('applyRules: listener rules kept in line', elbv2Backends(), (backend, test) => {
  /** An ALB with an HTTP listener answering 404, and three HTTP target groups. */
  async function setup() {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await elbv2.createLoadBalancer({
      name: 'alb',
      type: 'application',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: network.subnets.a }, { subnetId: network.subnets.b }],
      securityGroups: [network.securityGroups[0]],
      tags: OWNED,
    });
    if (lb === 'name-taken') throw new Error('alb is taken');
    const groups: string[] = [];
    for (const name of ['g0', 'g1', 'g2']) {
      const created = await elbv2.createTargetGroup(
        targetGroupInput(network, name, { protocol: 'HTTP', port: 8080, healthCheck: albHealthCheckDefaults() }),
      );
      if (created === 'name-taken') throw new Error(`${name} is taken`);
      groups.push(created.arn);
    }
    const listener = await elbv2.createApplicationListener(
      lb.arn,
      { port: 80, protocol: 'HTTP', defaultActions: [NOT_FOUND] },
      OWNED,
    );
    const rule = (name: string, group: number, conditions = [path(`/${name}`, `/${name}/*`)]): DesiredRule => ({
      conditions,
      actions: [forward(groups[group]!)],
      tags: { ...OWNED, rule: name },
    });
    const rules = async (): Promise<Rule[]> => (await elbv2.describeRules(listener.arn)).filter((r) => !r.isDefault);
    const sync = async (desired: readonly DesiredRule[]) =>
      applyRules(listener.arn, desired, await elbv2.describeRules(listener.arn), elbv2);
    /** The rules read back are `desired` in order, and a second pass writes nothing. */
    const expectInLine = async (desired: readonly DesiredRule[]) => {
      const now = await rules();
      expect(now).toHaveLength(desired.length);
      for (const [i, r] of desired.entries()) expect(sameRuleContent(now[i]!, r), `rule ${i}`).toBe(true);
      expect((await sync(desired)).calls).toBe(0);
    };
    return { elbv2, lbArn: lb.arn, listener, groups, rule, rules, sync, expectInLine };
  }

  test('creates rules on an empty listener, tagged', async () => {
    const { elbv2, rule, rules, sync, expectInLine } = await setup();
    const desired = [rule('a', 0), rule('b', 1), rule('c', 2)];

    expect(await sync(desired)).toMatchObject({ created: 3, calls: 3 });

    await expectInLine(desired);
    const tags = await elbv2.describeTags((await rules()).map((r) => r.arn));
    expect([...tags.values()].map((t) => t.rule)).toEqual(['a', 'b', 'c']);
  });

  test('adds a rule in the middle with one create', async () => {
    const { rule, sync, expectInLine } = await setup();
    await sync([rule('a', 0), rule('b', 1), rule('c', 2)]);
    const desired = [rule('a', 0), rule('b', 1), rule('new', 0), rule('c', 2)];

    expect(await sync(desired)).toMatchObject({ created: 1, moved: 0, calls: 1 });

    await expectInLine(desired);
  });

  test('removes a rule from the middle with one delete', async () => {
    const { rule, sync, expectInLine } = await setup();
    await sync([rule('a', 0), rule('b', 1), rule('c', 2)]);
    const desired = [rule('a', 0), rule('c', 2)];

    expect(await sync(desired)).toMatchObject({ deleted: 1, calls: 1 });

    await expectInLine(desired);
  });

  test('reorders (two members’ blocks swapped) with one SetRulePriorities call', async () => {
    const { rule, sync, expectInLine } = await setup();
    const a = [rule('a1', 0), rule('a2', 0), rule('a3', 0)];
    const b = [rule('b1', 1), rule('b2', 1)];
    await sync([...a, ...b]);

    expect(await sync([...b, ...a])).toMatchObject({ moved: 2, calls: 1 });

    await expectInLine([...b, ...a]);
  });

  test('switches a backend in place and adds a host block', async () => {
    const { rule, rules, sync, expectInLine } = await setup();
    await sync([rule('a', 0), rule('b', 1)]);
    const arns = (await rules()).map((r) => r.arn);
    const desired = [
      rule('a', 2),
      rule('h1', 1, [host('h.example.com'), path('/one')]),
      rule('h2', 1, [host('h.example.com'), path('/two')]),
      rule('b', 1),
    ];

    expect(await sync(desired)).toMatchObject({ created: 2, modified: 1, deleted: 0 });

    await expectInLine(desired);
    expect((await rules()).map((r) => r.arn)).toEqual(expect.arrayContaining(arns));
  });

  test('takes over rules numbered 1, 2, 3... and inserts at the front, moving them in one call', async () => {
    const { elbv2, listener, rule, sync, expectInLine } = await setup();
    const old = [rule('a', 0), rule('b', 1), rule('c', 2)];
    for (const [i, r] of old.entries()) {
      await elbv2.createRule(listener.arn, { priority: i + 1, conditions: r.conditions, actions: r.actions }, r.tags);
    }
    const desired = [rule('first', 2), ...old.slice(1), old[0]!];

    expect(await sync(desired)).toMatchObject({ created: 1, calls: 2 });

    await expectInLine(desired);
  });

  test('follows a seeded series of random changes, each ending in line', async () => {
    const { rule, sync, expectInLine } = await setup();
    // A small linear congruential generator: the same series on every run and backend.
    let seed = 20_261_204;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    let list = names.slice(0, 5).map((n, i) => rule(n, i % 3));
    await sync(list);
    for (let step = 0; step < 6; step++) {
      const kind = next(4);
      const at = next(list.length + 1);
      if (kind === 0) list.splice(at, 0, rule(`${names[next(names.length)]}${step}`, next(3)));
      else if (kind === 1 && list.length > 1) list.splice(at % list.length, 1);
      else if (kind === 2) list.splice(next(list.length), 0, ...list.splice(at % list.length, 1));
      else list[at % list.length] = rule(`${names[next(names.length)]}`, next(3));
      list = [...list];
      await sync(list);
      await expectInLine(list);
    }
  });

  test('makes HTTP and HTTPS listeners with SNI certificates; a new default certificate keeps the SNI list', async () => {
    const { elbv2, elbSeed } = backend();
    const { lbArn, groups } = await setup();
    const [a, b, c] = [
      await elbSeed.certificate('a.example.com'),
      await elbSeed.certificate('b.example.com'),
      await elbSeed.certificate('c.example.com'),
    ];
    const listener = (port: number, certs: string[]): DesiredApplicationListener => ({
      port,
      protocol: certs.length > 0 ? 'HTTPS' : 'HTTP',
      certificateArns: certs,
      defaultActions: [forward(groups[0]!)],
      attributes: {},
      tags: OWNED,
    });
    const sni = async (arn: string) =>
      (await elbv2.describeListenerCertificates(arn))
        .filter((x) => !x.isDefault)
        .map((x) => x.certificateArn)
        .sort();
    const ensure = async (desired: DesiredApplicationListener[]) =>
      ensureApplicationListeners(lbArn, desired, await elbv2.describeListeners(lbArn), elbv2);

    const made = await ensure([listener(8080, []), listener(443, [a, b])]);
    expect(await sni(made.get(443)!.arn)).toEqual([b]);

    await ensure([listener(8080, []), listener(443, [c, a, b])]);

    const https = (await elbv2.describeListeners(lbArn)).find((l) => l.port === 443)!;
    // The default certificate (the emulator lists the SNI ones after it: docs/emulator-differences.md
    // `elbv2.listener-sni-certificates`).
    expect(https.certificateArns[0]).toBe(c);
    expect(await sni(https.arn)).toEqual([a, b].sort());
  });

  test('deletes the listeners of ports no longer wanted', async () => {
    const { elbv2 } = backend();
    const { lbArn, listener } = await setup();

    expect(await deleteUnwantedListeners([], await elbv2.describeListeners(lbArn), elbv2)).toBe(1);

    expect(await elbv2.describeListeners(lbArn)).toEqual([]);
    expect(listener.port).toBe(80);
  });
});
