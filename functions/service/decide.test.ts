import { describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { ANNOTATION } from './annotations.ts';
import { decide, isClassicHostname } from './decide.ts';
import { svc } from './testing/model.ts';

describe('decide', () => {
  const withFinalizer = { finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP] };
  it.each([
    ['a LoadBalancer Service', svc(), undefined, { action: 'ensure' }],
    ['type nlb', svc({ annotations: { [ANNOTATION.type]: 'nlb' } }), undefined, { action: 'ensure' }],
    ['our class', svc({ spec: { loadBalancerClass: 'x/nlb' } }), 'x/nlb', { action: 'ensure' }],
    ['another class', svc({ spec: { loadBalancerClass: 'y/nlb' } }), 'x/nlb', { action: 'ignore', why: 'other-class' }],
    [
      'external',
      svc({ annotations: { [ANNOTATION.type]: 'external' } }),
      undefined,
      { action: 'ignore', why: 'other-controller' },
    ],
    [
      'nlb-ip',
      svc({ annotations: { [ANNOTATION.type]: 'nlb-ip' } }),
      undefined,
      { action: 'ignore', why: 'other-controller' },
    ],
    ['ClusterIP', svc({ spec: { type: 'ClusterIP' } }), undefined, { action: 'ignore', why: 'not-a-load-balancer' }],
    [
      'ClusterIP with our finalizer',
      svc({ spec: { type: 'ClusterIP' }, meta: withFinalizer }),
      undefined,
      { action: 'delete', why: 'not-ours-any-more' },
    ],
    [
      'handed over with our finalizer',
      svc({ annotations: { [ANNOTATION.type]: 'external' }, meta: withFinalizer }),
      undefined,
      { action: 'delete', why: 'not-ours-any-more' },
    ],
    [
      'deleting with our finalizer',
      svc({ meta: { ...withFinalizer, deletionTimestamp: '2026-11-02T08:00:00Z' } }),
      undefined,
      { action: 'delete', why: 'deleting' },
    ],
    [
      'deleting without it',
      svc({ meta: { deletionTimestamp: '2026-11-02T08:00:00Z' } }),
      undefined,
      { action: 'ignore', why: 'deleting' },
    ],
    [
      "a Classic ELB (which kind is the reconciler's choice)",
      svc({ hostname: 'a123-456.eu-west-1.elb.amazonaws.com', meta: withFinalizer }),
      undefined,
      { action: 'ensure' },
    ],
    [
      'an NLB hostname',
      svc({ hostname: 'web-0123456789abcdef.elb.eu-west-1.amazonaws.com' }),
      undefined,
      { action: 'ensure' },
    ],
  ])('%s', (_, service, loadBalancerClass, expected) => {
    expect(decide(service, loadBalancerClass)).toEqual(expected);
  });

  it.each([
    ['a-1.eu-west-1.elb.amazonaws.com', true],
    ['a-1.cn-north-1.elb.amazonaws.com.cn', true],
    ['a-0123456789abcdef.elb.eu-west-1.amazonaws.com', false],
    [undefined, false],
  ])('Classic hostname %s: %s', (hostname, classic) => {
    expect(isClassicHostname(hostname)).toBe(classic);
  });
});
