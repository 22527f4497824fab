import { afterAll, beforeAll, describe, it } from 'vitest';
import { systemClock } from '../../shared/clock.ts';
import { FAKE_API_SERVER_CA_DATA } from '../../shared/k8s/fakes/api-server.ts';
import { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { type FakeTgbServer, startFakeTgbServer } from '../../shared/k8s/fakes/tgb-server.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE, type KubeLab, startKubeLab } from '../helpers/kube-lab.ts';
import { AdminApi } from './backends.ts';
import type { KubeServer } from './clients.ts';
import { installCrd, TGB_CRD_FILE } from './ingress-lab.ts';
import { useKubeLab } from './lab.ts';

/**
 * The API servers of the TargetGroupBinding contract tests (tgb-port.test.ts, stack-bindings.test.ts): the run's lab
 * with the CRD, and without the CRD one of its own or the fake. Call the `use…` ones inside the describe they serve,
 * only where the lab is available (`KUBE_LAB_AVAILABLE`).
 */

/** The run's lab (test/k8s-contract/lab.ts) with deploy/crds/targetgroupbindings.yaml installed. */
export function useTgbLab(): () => KubeServer {
  const lab = useKubeLab();
  const server = (): KubeServer => {
    const access = lab();
    return { url: access.url, caData: access.caData, token: access.token };
  };
  beforeAll(async () => {
    await installCrd(new AdminApi(server()), TGB_CRD_FILE);
  }, 30_000);
  return server;
}

/** An API server of its own, without the CRD (the run's has it installed), stopped after the describe. */
export function useLabWithoutCrd(): () => KubeServer {
  let lab: KubeLab | undefined;
  beforeAll(async () => {
    lab = await startKubeLab();
  }, 90_000);
  afterAll(async () => {
    await lab?.stop();
  });
  return () => {
    if (!lab) throw new Error('no API server: useLabWithoutCrd() is read outside its describe');
    return { url: lab.url, caData: lab.caData, token: lab.token };
  };
}

/** FakeTargetGroupBindings without the CRD (`crdInstalled = false`), served over HTTPS for the time of `use`. */
export async function onFakeWithoutCrd(
  use: (server: KubeServer, served: FakeTgbServer) => Promise<void>,
): Promise<void> {
  const fake = new FakeTargetGroupBindings(systemClock);
  fake.crdInstalled = false;
  const served = await startFakeTgbServer(fake);
  try {
    await use({ url: served.url, caData: FAKE_API_SERVER_CA_DATA, token: 'test-token' }, served);
  } finally {
    await served.close();
  }
}

/** A describe on an API server of its own, without the CRD (skipped where the lab is not available). */
export function describeWithoutCrd(title: string, body: (server: () => KubeServer) => void): void {
  describe(title, () => {
    if (!KUBE_LAB_AVAILABLE) {
      it.skip(KUBE_LAB_SKIPPED_MESSAGE);
      return;
    }
    body(useLabWithoutCrd());
  });
}
