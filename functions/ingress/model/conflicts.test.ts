import { describe, expect, it } from 'vitest';
import { claim, GroupSettings } from './conflicts.ts';

describe('claim', () => {
  it.each([
    [['b', 'a'], ['a', 'b'], true, true],
    [['b', 'a'], ['a', 'b'], false, false],
    [['a', 'a', 'b'], ['b', 'a'], true, true],
    [{ y: 1, x: 2 }, { x: 2, y: 1 }, false, true],
    ['internal', 'internet-facing', false, false],
    [443, 443, false, true],
  ])('%j vs %j (unordered %s): same %s', (a, b, unordered, same) => {
    expect(claim('k', 'at', a, { unordered }).same === claim('k', 'at', b, { unordered }).same).toBe(same);
  });

  it('shows lists as the user writes them', () => {
    expect(claim('k', 'at', ['sg-1', 'sg-2']).shown).toBe('sg-1,sg-2');
    expect(claim('k', 'at', 'internal').shown).toBe('internal');
  });
});

describe('GroupSettings', () => {
  it('the first member that sets a value holds it; a later equal value agrees', () => {
    const group = new GroupSettings();
    group.commit('shop/a', [claim('scheme', 'alb.ingress.kubernetes.io/scheme', 'internet-facing')]);
    expect(group.disagreements([claim('scheme', 'x', 'internet-facing')])).toEqual([]);
    group.commit('shop/b', [claim('scheme', 'x', 'internal')]);
    expect(group.get('scheme')).toBe('internet-facing');
    expect(group.holder('scheme')?.member).toBe('shop/a');
  });

  it('a different value is a problem at the later setting, naming the member that wins', () => {
    const group = new GroupSettings();
    group.commit('shop/a', [claim('scheme', 'alb.ingress.kubernetes.io/scheme', 'internet-facing')]);
    expect(
      group.disagreements([
        claim('scheme', 'IngressClassParams p: spec.scheme', 'internal'),
        claim('ipAddressType', 'alb.ingress.kubernetes.io/ip-address-type', 'dualstack'),
      ]),
    ).toEqual([
      {
        at: 'IngressClassParams p: spec.scheme',
        message:
          '"internal" conflicts with "internet-facing" set by shop/a (alb.ingress.kubernetes.io/scheme), which comes first in the group and wins',
      },
    ]);
  });

  it('a clone takes claims without changing the original', () => {
    const group = new GroupSettings();
    group.commit('shop/a', [claim('tag:Team', 't', 'shop')]);
    const trial = group.clone();
    trial.commit('shop/b', [claim('tag:Env', 't', 'prod')]);
    expect(trial.byPrefix('tag:')).toEqual({ Team: 'shop', Env: 'prod' });
    expect(group.byPrefix('tag:')).toEqual({ Team: 'shop' });
  });
});
