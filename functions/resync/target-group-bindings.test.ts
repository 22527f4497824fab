import { beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../shared/clock.ts';
import { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { parseKeyMessage } from '../../shared/queue/message.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { type ResyncDeps, resync } from './resync.ts';
import { targetGroupBindingKeys } from './target-group-bindings.ts';

/** The resync's TargetGroupBinding keys: every binding of every namespace, once each. */

let w: World;
let fake: FakeTargetGroupBindings;
const hint = { eventType: 'RESYNC' as const, eventId: 'round-1' };

const bind = (namespace: string, name: string) =>
  fake.putBinding({
    metadata: { namespace, name },
    spec: {
      serviceRef: { name: 'web', port: 80 },
      targetGroupARN: `arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/${name}/0123456789abcdef`,
    },
  });

beforeEach(() => {
  w = createWorld();
  w.sqs.createQueue('target-group-binding.fifo', { maxReceiveCount: 5 });
  fake = new FakeTargetGroupBindings(systemClock);
});

describe('the resync: TargetGroupBindings', () => {
  it('one key per binding of every namespace, those being deleted too', async () => {
    bind('shop', 'web');
    bind('payments', 'ledger');
    bind('shop', 'api');
    fake.mutateBinding('shop', 'api', (b) => {
      b.metadata.finalizers = [TGB_FINALIZER];
    });
    fake.deleteBinding('shop', 'api');
    expect(fake.bindings.get('shop/api')?.metadata.deletionTimestamp).toBeDefined();

    const keys = await targetGroupBindingKeys(fake, hint);
    expect(keys.map((k) => `${k.namespace}/${k.name}`).sort()).toEqual(['payments/ledger', 'shop/api', 'shop/web']);
    // Each a valid queue message of the binding's kind.
    for (const key of keys) {
      expect(parseKeyMessage(JSON.stringify(key))).toMatchObject({ ok: true, message: { kind: 'TargetGroupBinding' } });
    }
  });

  it('none when the CustomResourceDefinition is not installed', async () => {
    bind('shop', 'web');
    fake.crdInstalled = false;
    expect(await targetGroupBindingKeys(fake, hint)).toEqual([]);
  });

  it('resync sends them to the binding queue, beside the other controllers; nothing without the port', async () => {
    bind('shop', 'web');
    bind('payments', 'ledger');
    const deps: ResyncDeps = {
      kube: w.kube,
      targetGroupBindings: fake,
      sqs: w.sqs,
      queues: { targetGroupBinding: w.sqs.urlOf('target-group-binding.fifo'), route: w.sqs.urlOf('route.fifo') },
      log: w.runner.log,
      metrics: w.metrics,
    };
    expect(await resync('round-1', deps)).toEqual({ sent: 3 });
    const bodies = w.sqs.bodies('target-group-binding.fifo').map((b) => JSON.parse(b));
    expect(bodies.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { kind: 'TargetGroupBinding', namespace: 'payments', name: 'ledger', hint },
      { kind: 'TargetGroupBinding', namespace: 'shop', name: 'web', hint },
    ]);
    expect(w.metrics.total(MetricName.KeysSent, { source: 'resync' })).toBe(3);

    expect(await resync('round-2', { ...deps, targetGroupBindings: undefined })).toEqual({ sent: 1 });
  });
});
