import { describe, expect, it } from 'vitest';
import type { ClassicListener } from '../../../shared/aws/elb-port.ts';
import { PROXY_PROTOCOL_POLICY } from './model.ts';
import {
  classicNameFromHostname,
  planBackendPolicies,
  planClassicListeners,
  planClassicSubnets,
  planListenerPolicies,
} from './plans.ts';

const tcp = (port: number, instancePort: number): ClassicListener => ({
  loadBalancerPort: port,
  protocol: 'TCP',
  instancePort,
  instanceProtocol: 'TCP',
});

describe('Classic ELB plans', () => {
  it.each([
    ['a5e1f3b2a9c4d4e6f8a7b0c1d2e3f4a5-1234567890.eu-west-1.elb.amazonaws.com', 'a5e1f3b2a9c4d4e6f8a7b0c1d2e3f4a5'],
    ['internal-my-elb-99.eu-west-1.elb.amazonaws.com', 'my-elb'],
    ['web-0123456789abcdef.elb.eu-west-1.amazonaws.com', undefined],
    [undefined, undefined],
  ])('the name in %s is %s', (hostname, name) => {
    expect(classicNameFromHostname(hostname)).toBe(name);
  });

  it('listeners: a new port added, a changed one replaced by port (its old one kept to put back), a removed one deleted, an equal one left', () => {
    expect(planClassicListeners([tcp(80, 30080), tcp(443, 30443)], [tcp(80, 30080), tcp(8080, 30081)])).toEqual({
      add: [tcp(443, 30443)],
      replace: [],
      remove: [8080],
    });
    expect(planClassicListeners([tcp(80, 31000)], [{ ...tcp(80, 30080), policyNames: ['p'] }])).toEqual({
      add: [],
      replace: [{ from: { ...tcp(80, 30080), policyNames: ['p'] }, to: tcp(80, 31000) }],
      remove: [],
    });
    expect(planClassicListeners([tcp(80, 30080)], [tcp(80, 30080)])).toEqual({ add: [], replace: [], remove: [] });
  });

  it('subnets move only when the annotation names them: attach first, detach the rest', () => {
    expect(planClassicSubnets(undefined, ['subnet-a'])).toEqual({ attach: [], detach: [] });
    expect(planClassicSubnets(['subnet-b', 'subnet-c'], ['subnet-a', 'subnet-b'])).toEqual({
      attach: ['subnet-c'],
      detach: ['subnet-a'],
    });
  });

  it('proxy protocol on every back end when wanted; off again (others kept) when not', () => {
    const lb = { backendPolicies: [{ instancePort: 30080, policyNames: ['theirs'] }] };
    expect(planBackendPolicies(lb, [30080, 30443], true)).toEqual([
      { instancePort: 30080, policyNames: ['theirs', PROXY_PROTOCOL_POLICY] },
      { instancePort: 30443, policyNames: [PROXY_PROTOCOL_POLICY] },
    ]);
    const on = { backendPolicies: [{ instancePort: 30080, policyNames: ['theirs', PROXY_PROTOCOL_POLICY] }] };
    expect(planBackendPolicies(on, [30080], false)).toEqual([{ instancePort: 30080, policyNames: ['theirs'] }]);
    expect(planBackendPolicies(on, [30080], true)).toEqual([]);
  });

  it('SSL negotiation policy on SSL and HTTPS listeners only; ours replaced, others kept', () => {
    const ours = (name: string) => name.startsWith('k8s-SSLNegotiationPolicy-');
    const lb = {
      listeners: [
        { ...tcp(80, 30080), policyNames: [] },
        { ...tcp(443, 30443), protocol: 'SSL' as const, policyNames: ['k8s-SSLNegotiationPolicy-old'] },
      ],
    };
    expect(planListenerPolicies(lb, 'k8s-SSLNegotiationPolicy-new', ours)).toEqual([
      { loadBalancerPort: 443, policyNames: ['k8s-SSLNegotiationPolicy-new'] },
    ]);
    expect(planListenerPolicies(lb, undefined, ours)).toEqual([{ loadBalancerPort: 443, policyNames: [] }]);
  });
});
