import { afterEach, beforeEach, describe, it } from 'vitest';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { fakeWorld, type KubeBackendKind, type KubeWorld, realWorld } from './backends.ts';
import { KUBE_CLIENTS, type KubeClient } from './clients.ts';
import { useKubeLab } from './lab.ts';

/** How the Kubernetes contract suite runs: each behaviour on both backends (backends.ts), through both clients. */

/**
 * Behaviours FakeKubernetes answers differently from the API server, one per row of the "Kubernetes API server"
 * section of docs/emulator-differences.md (the key opens the row's behaviour column). A test of such a behaviour
 * runs on the fake as a test that must fail: should the fake start to behave like the API server, that test fails
 * and the row can go.
 */
export const KUBE_DIFFERENCES = {
  'k8s.node-not-ready-taint': 'the taints of a new Node',
  'k8s.list-items-untyped': 'the items of a list',
  'k8s.service-type-change': 'a change of type away from LoadBalancer',
  'k8s.lease-update-creates': 'a replace of a Lease that does not exist',
  'k8s.watch-selector-transition': 'an object that comes to match the field selector of a watch',
} as const satisfies Record<string, string>;

export type KubeDifference = keyof typeof KUBE_DIFFERENCES;

type TestBody = () => Promise<void>;

/**
 * The `it` of the suite: `test(name, fn)` runs on both backends; `test.differs(key, name, fn)` is a behaviour the
 * fake gets wrong (KUBE_DIFFERENCES): on the real API server it must pass, on the fake it must fail.
 */
export function kubeTest(kind: KubeBackendKind) {
  const test = (name: string, fn: TestBody, timeout?: number) => it(name, fn, timeout);
  test.differs = (key: KubeDifference, name: string, fn: TestBody, timeout?: number) => {
    if (kind === 'real') return it(name, fn, timeout);
    const title = `${name} [FakeKubernetes differs: ${key}, docs/emulator-differences.md]`;
    // K8S_CONTRACT_SHOW_DIFFERENCES=1 runs them as ordinary tests, to read how the fake answers.
    if (process.env.K8S_CONTRACT_SHOW_DIFFERENCES) it(title, fn, timeout);
    else it.fails(title, fn, timeout);
  };
  return test;
}

export type KubeTest = ReturnType<typeof kubeTest>;

/** The describe titles name the backend: `.ci/suites-ran.mjs` can tell the real API server's tests by it. */
export const BACKEND_LABELS: Record<KubeBackendKind, string> = {
  fake: 'FakeKubernetes',
  real: 'real API server',
};

/**
 * One contract suite: run on each backend (the real one where the lab is available, else one skipped test that
 * says why), through each client, every test in a fresh world (its own namespace; on the fake, its own fake).
 */
export function describeKube(
  title: string,
  body: (world: () => KubeWorld, client: KubeClient, test: KubeTest, kind: KubeBackendKind) => void,
): void {
  for (const kind of ['fake', 'real'] as const) describeOn(kind, title, body);
}

function describeOn(
  kind: KubeBackendKind,
  title: string,
  body: (world: () => KubeWorld, client: KubeClient, test: KubeTest, kind: KubeBackendKind) => void,
): void {
  describe(`${title} (${BACKEND_LABELS[kind]})`, () => {
    if (kind === 'real' && !KUBE_LAB_AVAILABLE) {
      it.skip(KUBE_LAB_SKIPPED_MESSAGE);
      return;
    }
    const lab = kind === 'real' ? useKubeLab() : undefined;
    describe.each(KUBE_CLIENTS)('through the $name', (client) => {
      let current: KubeWorld | undefined;
      beforeEach(async () => {
        current = lab ? await realWorld(lab()) : await fakeWorld();
      });
      afterEach(async () => {
        await current?.close();
        current = undefined;
      });
      const world = () => {
        if (!current) throw new Error('no world: the test runs outside its describe');
        return current;
      };
      body(world, client, kubeTest(kind), kind);
    });
  });
}
