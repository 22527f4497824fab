import { beforeEach, describe, expect, it } from 'vitest';
import { createServiceWorld, type ServiceWorld } from '../../test/helpers/service-world.ts';
import type { ServiceDeps } from './deps.ts';
import { serviceTesting } from './testing/service.ts';
import { putIpService, putWebPod, putWebSlice, stackWorld } from './testing/stack.ts';

/**
 * A Pod behind the reference's ip Service that waits only for the readiness gate of its target group's binding is not
 * Ready, so its endpoint is not ready; yet its target must be registered, or the gate is never met. The full pass
 * registers it, and the Node-set change's short pass and the resync's quick look keep it (the binding controller
 * registers it too: none of them may deregister it).
 */

let w: ServiceWorld;
let stack: ReturnType<typeof stackWorld>;
let group: string;
let groupArn: string;
const { onlyLb, targetsOf } = serviceTesting(() => w);
const elbv2Calls = () => Object.fromEntries([...w.elbv2.calls.entries()].filter(([, n]) => n > 0));

/** web-1 and web-2 serve; web-3 is new: containers ready, its gate (`gates`) not yet True, on `node`. */
async function withNewPod(options: { gates?: 'group' | 'none' | 'other'; node?: string; containers?: boolean } = {}) {
  const gates = options.gates ?? 'group';
  putWebPod(w, 'web-3', '10.0.20.13', {
    ready: false,
    node: options.node ?? 'node-1',
    gates: gates === 'group' ? [group] : gates === 'other' ? ['another-binding'] : [],
  });
  if (options.containers === false) {
    const pod = w.kube.workloads.get('default', 'web-3')!;
    pod.status!.conditions = [
      { type: 'ContainersReady', status: 'False' },
      { type: 'Ready', status: 'False' },
    ];
    w.kube.putPod(pod);
  }
  putWebSlice(w, [
    { pod: 'web-1', ip: '10.0.20.11' },
    { pod: 'web-2', ip: '10.0.20.12' },
    { pod: 'web-3', ip: '10.0.20.13', ready: false, node: options.node ?? 'node-1' },
  ]);
}

beforeEach(async () => {
  w = createServiceWorld();
  stack = stackWorld(w);
  w.addNode(1);
  w.addNode(2, { ready: false });
  putWebPod(w, 'web-1', '10.0.20.11');
  putWebPod(w, 'web-2', '10.0.20.12');
  putWebSlice(w, [
    { pod: 'web-1', ip: '10.0.20.11' },
    { pod: 'web-2', ip: '10.0.20.12' },
  ]);
  putIpService(w);
  await stack.converge();
  const binding = stack.list()[0]!;
  group = binding.metadata.name;
  groupArn = binding.spec.targetGroupARN!;
  expect(w.elbv2.listenersOf(onlyLb().arn).map((l) => l.targetGroupArn)).toEqual([groupArn]);
});

const ALL = ['10.0.20.11:8080', '10.0.20.12:8080', '10.0.20.13:8080'];
const SERVING = ['10.0.20.11:8080', '10.0.20.12:8080'];

describe('a Pod waiting only for its target group gate', () => {
  it('is registered by the full pass, its Pods read once', async () => {
    await withNewPod();
    w.resetCounters();
    await stack.pass();
    expect(targetsOf(groupArn)).toEqual(ALL);
    expect(w.kube.callCount('listPods')).toBe(1);
  });

  it('is kept by the Node-set change short pass, which reads no listener', async () => {
    await withNewPod();
    await stack.pass();
    w.addNode(3);
    w.resetCounters();
    await w.converge(w.nodeSetKeys(['web']), { ...stack.deps, resyncQuickCheck: true });
    expect(elbv2Calls().DescribeListeners).toBeUndefined();
    expect(elbv2Calls().DescribeTargetHealth).toBe(1);
    expect(targetsOf(groupArn)).toEqual(ALL);
    expect(elbv2Calls().DeregisterTargets).toBeUndefined();
  });

  it('is registered by the Node-set change short pass when the full pass has not seen it yet', async () => {
    await withNewPod();
    w.resetCounters();
    await w.converge(w.nodeSetKeys(['web']), { ...stack.deps, resyncQuickCheck: true });
    expect(elbv2Calls().DescribeListeners).toBeUndefined();
    expect(targetsOf(groupArn)).toEqual(ALL);
  });

  it("is kept by the resync's quick look, which writes nothing", async () => {
    await withNewPod();
    await stack.pass();
    w.resetCounters();
    const deps: ServiceDeps = { ...stack.deps, resyncQuickCheck: true };
    await stack.pass('web', { deps });
    expect(elbv2Calls().DescribeListeners).toBeUndefined();
    expect(w.awsWrites()).toBe(0);
    expect(targetsOf(groupArn)).toEqual(ALL);
  });

  it('is deregistered once it no longer waits (deleted), as any target', async () => {
    await withNewPod();
    await stack.pass();
    w.kube.workloads.delete('default', 'web-3', { gracePeriodSeconds: 0 });
    putWebSlice(w, [
      { pod: 'web-1', ip: '10.0.20.11' },
      { pod: 'web-2', ip: '10.0.20.12' },
    ]);
    await stack.pass();
    expect(targetsOf(groupArn)).toEqual(SERVING);
  });
});

describe('a not-ready Pod that is not registered', () => {
  it.each([
    ['without the gate', { gates: 'none' as const }],
    ["with another binding's gate", { gates: 'other' as const }],
    ['with its containers not ready', { containers: false }],
    ['on a Node that is not Ready', { node: 'node-2' }],
  ])('%s', async (_, options) => {
    await withNewPod(options);
    await stack.pass();
    expect(targetsOf(groupArn)).toEqual(SERVING);
  });

  it('behind a Service of the reference without stack bindings: its Pods are never read', async () => {
    await withNewPod();
    w.resetCounters();
    const { stackBindings: _, ...deps } = stack.deps;
    await stack.pass('web', { deps });
    expect(targetsOf(groupArn)).toEqual(SERVING);
    expect(w.kube.callCount('listPods')).toBe(0);
  });
});
