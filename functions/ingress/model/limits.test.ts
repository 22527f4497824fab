import { describe, expect, it } from 'vitest';
import { RULE_LIMITS } from '../../../shared/aws/elbv2-port.ts';
import { ALB_LIMITS, countExtraCertificates, countRules, countTargetGroups, limitProblems } from './limits.ts';
import type { ModelAction, ModelListener, ModelRule, ModelTargetGroup } from './types.ts';

const forward = (...refs: object[]): ModelAction => ({
  type: 'forward',
  targetGroups: refs.map((ref) => ({ ref: ref as { resourceId: string }, weight: 1 })),
  stickiness: { enabled: false },
});
const rule = (action: ModelAction): ModelRule => ({
  conditions: [{ field: 'path-pattern', values: ['/*'] }] as ModelRule['conditions'],
  actions: [action],
  member: 'shop/a',
});
const listener = (port: number, rules: ModelRule[], certificateArns: string[] = []): ModelListener => ({
  port,
  protocol: certificateArns.length ? 'HTTPS' : 'HTTP',
  certificateArns,
  defaultActions: [{ type: 'fixed-response', statusCode: '404', contentType: 'text/plain' }],
  rules,
  attributes: {},
  inboundCidrs: ['0.0.0.0/0'],
  prefixLists: [],
});
const tg = (resourceId: string) => ({ resourceId }) as ModelTargetGroup;
const certs = (n: number) => Array.from({ length: n }, (_, i) => `arn:aws:acm:eu-west-1:1:certificate/${i}`);

describe('counts', () => {
  it('rules on every listener', () => {
    const r = rule(forward({ resourceId: 'a' }));
    expect(countRules([listener(80, [r, r]), listener(443, [r], certs(1))])).toBe(3);
  });

  it('distinct target groups: the model and the ones actions name', () => {
    const rules = [
      rule(forward({ resourceId: 'a' }, { arn: 'arn:tg/x' })),
      rule(forward({ resourceId: 'a' }, { name: 'other' })),
      rule({ type: 'fixed-response', statusCode: '503' }),
    ];
    expect(countTargetGroups([listener(80, rules), listener(8080, rules)], [tg('a'), tg('b')])).toBe(4);
  });

  it('certificates besides each listener default', () => {
    expect(countExtraCertificates([listener(443, [], certs(3)), listener(8443, [], certs(1)), listener(80, [])])).toBe(
      2,
    );
  });
});

describe('limitProblems', () => {
  it('uses AWS default quotas', () => {
    expect(ALB_LIMITS.rulesPerLoadBalancer).toBe(RULE_LIMITS.rulesPerLoadBalancer);
    expect(ALB_LIMITS).toMatchObject({
      targetGroupsPerLoadBalancer: 100,
      certificatesPerLoadBalancer: 25,
      listenersPerLoadBalancer: 50,
    });
  });

  it('nothing at the limits', () => {
    const r = rule(forward({ resourceId: 'tg-0' }));
    const rules = Array.from({ length: 50 }, () => r);
    const groups = Array.from({ length: 100 }, (_, i) => tg(`tg-${i}`));
    expect(limitProblems([listener(80, rules), listener(443, rules, certs(26))], groups)).toEqual([]);
  });

  it('one problem per quota crossed, naming it', () => {
    const r = rule(forward({ resourceId: 'tg-0' }));
    const rules = Array.from({ length: 52 }, () => r);
    const groups = Array.from({ length: 101 }, (_, i) => tg(`tg-${i}`));
    expect(limitProblems([listener(80, rules), listener(443, rules, certs(27))], groups)).toEqual([
      { at: 'spec.rules', message: 'TooManyRules: the group would have 104 rules, AWS allows 100 per load balancer' },
      {
        at: 'spec.rules',
        message: 'TooManyTargetGroups: the group would use 101 target groups, AWS allows 100 per load balancer',
      },
      {
        at: 'alb.ingress.kubernetes.io/certificate-arn',
        message:
          "TooManyCertificates: the group would have 26 certificates besides each listener's default, AWS allows 25 per load balancer",
      },
    ]);
  });

  it('more than 50 listeners', () => {
    const listeners = Array.from({ length: 51 }, (_, i) => listener(8000 + i, []));
    expect(limitProblems(listeners, [])).toEqual([
      {
        at: 'alb.ingress.kubernetes.io/listen-ports',
        message: 'TooManyListeners: the group would have 51 listeners, AWS allows 50 per load balancer',
      },
    ]);
    expect(limitProblems(listeners.slice(1), [])).toEqual([]);
  });

  it('takes other quotas', () => {
    const r = rule(forward({ resourceId: 'a' }));
    const limits = {
      rulesPerLoadBalancer: 1,
      targetGroupsPerLoadBalancer: 100,
      certificatesPerLoadBalancer: 25,
      listenersPerLoadBalancer: 50,
    };
    expect(limitProblems([listener(80, [r, r])], [], limits).map((p) => p.message)).toEqual([
      'TooManyRules: the group would have 2 rules, AWS allows 1 per load balancer',
    ]);
  });
});
