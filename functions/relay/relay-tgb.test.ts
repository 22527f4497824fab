import { afterEach, describe, expect, it } from 'vitest';
import { READINESS_GATE_PREFIX, TGB_API_VERSION } from '../../shared/k8s/tgb-types.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import type { KubeObject } from './kinds.ts';
import { keysOn, makePod, makeService, makeSlice, reconcilerQueues, until } from './testing/objects.ts';
import { cluster, relayFor, serve, settled, start, stopStarted } from './testing/relay.ts';

/**
 * The relay end to end for the TargetGroupBinding controller: bindings, their Services, slices and gated Pods listed
 * and watched over the REST clients of a relay in a Pod, binding keys on its queue; a cluster without the
 * TargetGroupBinding CustomResourceDefinition leaves the relay ready, and its bindings are sent once it is installed.
 */

afterEach(stopStarted);

const names = (keys: KeyMessage[]) => [...new Set(keys.map((k) => `${k.kind}/${k.namespace ?? ''}/${k.name}`))].sort();

function binding(namespace: string, name: string, service = 'web') {
  return {
    apiVersion: TGB_API_VERSION,
    kind: 'TargetGroupBinding',
    metadata: { namespace, name },
    spec: { serviceRef: { name: service, port: 80 }, targetGroupName: name, targetType: 'ip' },
  } as unknown as KubeObject;
}

function tgbCluster() {
  const c = cluster();
  c.apply('Service', makeService('shop', 'web', 'ClusterIP'));
  c.apply('EndpointSlice', makeSlice('shop', 'web', 'a', ['10.0.0.1']));
  c.apply('TargetGroupBinding', binding('shop', 'web'));
  c.apply('TargetGroupBinding', binding('shop', 'api', 'api'));
  return c;
}

const TIMING = {
  pageSize: 500,
  watchTimeoutSeconds: 60,
  inactivityMs: 5_000,
  relistIntervalMs: 0,
  backoffBaseMs: 20,
  backoffMaxMs: 200,
};

describe('relay: TargetGroupBinding keys', () => {
  it('lists and watches what the bindings use; slices, Services and gated Pods send the bindings they concern', async () => {
    const c = tgbCluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, { 'target-group-binding': urls['target-group-binding'] }));
    await settled(relay, c);
    expect(relay.kinds).toEqual(['Node', 'Service', 'EndpointSlice', 'Pod', 'TargetGroupBinding']);
    expect(names(keysOn(sqs, 'target-group-binding'))).toEqual([
      'TargetGroupBinding/shop/api',
      'TargetGroupBinding/shop/web',
    ]);

    // A Pod of the Service scaled up: its endpoint, then its readiness gate's condition.
    let from = keysOn(sqs, 'target-group-binding').length;
    c.apply('EndpointSlice', makeSlice('shop', 'web', 'a', ['10.0.0.1', '10.0.0.2']));
    const pod = makePod('shop', 'web-2', 'n1') as KubeObject & {
      spec: Record<string, unknown>;
      status: { conditions: { type: string; status: string }[] };
    };
    pod.spec.readinessGates = [{ conditionType: `${READINESS_GATE_PREFIX}web` }];
    c.apply('Pod', pod);
    await settled(relay, c);
    expect(names(keysOn(sqs, 'target-group-binding').slice(from))).toEqual(['TargetGroupBinding/shop/web']);
    from = keysOn(sqs, 'target-group-binding').length;
    c.mutate<typeof pod>('Pod', 'shop/web-2', (p) => {
      p.status.conditions.push({ type: `${READINESS_GATE_PREFIX}web`, status: 'True' });
    });
    await settled(relay, c);
    expect(names(keysOn(sqs, 'target-group-binding').slice(from))).toEqual(['TargetGroupBinding/shop/web']);

    // An ungated Pod is none of its business; the binding deleted sends its own key once more.
    from = keysOn(sqs, 'target-group-binding').length;
    c.apply('Pod', makePod('shop', 'other-1', 'n1'));
    c.remove('TargetGroupBinding', 'shop/api');
    await settled(relay, c);
    const after = keysOn(sqs, 'target-group-binding').slice(from);
    expect(names(after)).toEqual(['TargetGroupBinding/shop/api']);
    expect(after[0]!.hint?.eventType).toBe('DELETED');
  });

  it('without the TargetGroupBinding definition the relay is ready; once installed, its bindings are sent', async () => {
    const c = cluster();
    c.apply('Service', makeService('shop', 'web', 'ClusterIP'));
    const api = await serve(c);
    api.failNext((r) => r.kind === 'TargetGroupBinding', 404, 3);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(
      relayFor(
        api,
        sqs,
        { 'target-group-binding': urls['target-group-binding'] },
        { listWatch: { ...TIMING, absentRelistMs: 50 } },
      ),
    );
    await until(() => relay.status().ready && relay.status().pending === 0, 'ready');
    expect(keysOn(sqs, 'target-group-binding')).toEqual([]);
    c.apply('TargetGroupBinding', binding('shop', 'web'));
    await until(
      () => names(keysOn(sqs, 'target-group-binding')).includes('TargetGroupBinding/shop/web'),
      'the binding listed',
      3_000,
    );
    expect(api.requests.filter((r) => r.kind === 'TargetGroupBinding' && !r.watch).length).toBeGreaterThanOrEqual(4);
  });
});
