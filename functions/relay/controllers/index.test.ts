import { describe, expect, it } from 'vitest';
import { QUEUE_URL_VARIABLES } from '../config.ts';
import { KIND_INFO, WATCHED_KINDS, type WatchedKind } from '../kinds.ts';
import { router } from '../testing/router.ts';
import { CONTROLLERS, controller, RECONCILERS } from './index.ts';

/**
 * The table of controller modules keeps what the rest of the relay derives from it sound: a module reads a kind
 * once and routes every kind it reads, and no two modules share a queue or disagree on a kind (kinds.ts refuses a
 * kind declared twice when it loads).
 */

describe('the table of controllers', () => {
  it.each(RECONCILERS)('%s reads each kind once and routes every kind it reads', (reconciler) => {
    const module = controller(reconciler);
    const kinds = module.rules.map((rule) => rule.kind.name);
    expect(new Set(kinds).size).toBe(kinds.length);
    const { r } = router({ reconcilers: [reconciler] });
    expect(r.kinds()).toEqual(WATCHED_KINDS.filter((kind) => kinds.includes(kind)));
    for (const rule of module.rules) expect(KIND_INFO[rule.kind.name as WatchedKind]).toBe(rule.kind);
  });

  it('gives every controller a queue variable of its own', () => {
    const variables = Object.values(QUEUE_URL_VARIABLES);
    expect(new Set(variables).size).toBe(RECONCILERS.length);
    expect(Object.keys(QUEUE_URL_VARIABLES)).toEqual(Object.keys(CONTROLLERS));
  });

  it('watches the kinds in the order the table first reads them', () => {
    expect(WATCHED_KINDS).toEqual([
      'Node',
      'Service',
      'EndpointSlice',
      'Pod',
      'ConfigMap',
      'Ingress',
      'IngressClass',
      'IngressClassParams',
      'TargetGroupBinding',
    ]);
  });
});
