import { describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { ANNOTATION } from './annotations.ts';
import { decide } from './decide.ts';
import { parseLbcAnnotations, servedAsLbc } from './lbc/options.ts';
import { svc } from './testing/model.ts';

/** Which Services are the AWS Load Balancer Controller's, with SERVICE_LBC_SERVICES on and off, and their defaults. */

const lbcFinalizer = { finalizers: ['service.k8s.aws/resources'] };
const inTreeFinalizer = { finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP] };
const deleting = { deletionTimestamp: '2026-01-01T00:00:00Z' };
const byClass = { spec: { loadBalancerClass: 'service.k8s.aws/nlb' } };
const external = { annotations: { [ANNOTATION.type]: 'external' } };

describe('decide, the switch on', () => {
  it.each([
    ['class service.k8s.aws/nlb', svc(byClass), { action: 'ensure', lbc: true }],
    ['type external', svc(external), { action: 'ensure', lbc: true }],
    ['type nlb-ip', svc({ annotations: { [ANNOTATION.type]: 'nlb-ip' } }), { action: 'ensure', lbc: true }],
    [
      'type external with another class',
      svc({ ...external, spec: { loadBalancerClass: 'example.com/lb' } }),
      { action: 'ignore', why: 'other-class' },
    ],
    [
      'class service.k8s.aws/nlb, not a LoadBalancer',
      svc({ spec: { ...byClass.spec, type: 'NodePort' } }),
      { action: 'ignore', why: 'not-a-load-balancer' },
    ],
    ['an in-tree Service', svc(), { action: 'ensure' }],
    [
      'deleting, the reference finalizer',
      svc({ ...byClass, meta: { ...lbcFinalizer, ...deleting } }),
      { action: 'delete', why: 'deleting', lbc: true },
    ],
    [
      'handed over from in-tree (our in-tree finalizer): built the reference way, the old one replaced',
      svc({ ...external, meta: inTreeFinalizer }),
      { action: 'ensure', lbc: true },
    ],
    [
      'handed back to in-tree with the reference finalizer: built in-tree, the old one replaced',
      svc({ meta: lbcFinalizer }),
      { action: 'ensure' },
    ],
    [
      'handed back to in-tree, deleting with both finalizers: the reference way first',
      svc({ meta: { finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP, 'service.k8s.aws/resources'], ...deleting } }),
      { action: 'delete', why: 'deleting', lbc: true },
    ],
    [
      'no longer a LoadBalancer, the reference finalizer',
      svc({ spec: { type: 'ClusterIP' }, meta: lbcFinalizer }),
      { action: 'delete', why: 'not-ours-any-more', lbc: true },
    ],
  ] as const)('%s', (_, service, decision) => {
    expect(decide(service, undefined, true)).toEqual(decision);
  });
});

describe('decide, the switch off (as before)', () => {
  it.each([
    ['class service.k8s.aws/nlb', svc(byClass), { action: 'ignore', why: 'other-class' }],
    ['type external', svc(external), { action: 'ignore', why: 'other-controller' }],
    [
      'the reference finalizer, deleting',
      svc({ ...byClass, meta: { ...lbcFinalizer, ...deleting } }),
      { action: 'ignore', why: 'deleting' },
    ],
  ] as const)('%s', (_, service, decision) => {
    expect(decide(service, undefined, false)).toEqual(decision);
  });
});

describe('servedAsLbc', () => {
  it.each([
    ['switch off', svc(byClass), false, false],
    ['the reference finalizer', svc({ meta: lbcFinalizer }), true, true],
    ['the in-tree finalizer still on a Service handed over', svc({ ...external, meta: inTreeFinalizer }), true, false],
    ['a Service handed over', svc(external), true, true],
  ] as const)('%s', (_, service, on, served) => {
    expect(servedAsLbc(service, on)).toBe(served);
  });
});

describe('the reference defaults', () => {
  it.each([
    [{}, 'internal', 'instance'],
    [{ [ANNOTATION.scheme]: 'internet-facing' }, 'internet-facing', 'instance'],
    [{ [ANNOTATION.internal]: 'false' }, 'internet-facing', 'instance'],
    [{ [ANNOTATION.internal]: 'true' }, 'internal', 'instance'],
    [{ [ANNOTATION.nlbTargetType]: 'ip' }, 'internal', 'ip'],
    [{ [ANNOTATION.type]: 'nlb-ip', [ANNOTATION.nlbTargetType]: 'instance' }, 'internal', 'ip'],
  ])('%o: %s, %s targets', (annotations, scheme, targetType) => {
    const { options, problems } = parseLbcAnnotations(svc({ annotations }));
    expect(problems).toEqual([]);
    expect([options.scheme, options.targetType]).toEqual([scheme, targetType]);
  });

  it('manage-backend-security-group-rules: on with the managed group; with the user groups only when "true"', () => {
    const manage = (annotations: Record<string, string>) =>
      parseLbcAnnotations(svc({ annotations })).options.lbc!.manageBackendSecurityGroupRules;
    expect(manage({})).toBe(true);
    expect(manage({ [ANNOTATION.securityGroups]: 'sg-0123' })).toBe(false);
    expect(
      manage({ [ANNOTATION.securityGroups]: 'sg-0123', [ANNOTATION.manageBackendSecurityGroupRules]: 'true' }),
    ).toBe(true);
  });

  it('an in-tree Service keeps the in-tree defaults', () => {
    expect(decide(svc(), undefined, true)).toEqual({ action: 'ensure' });
  });
});
