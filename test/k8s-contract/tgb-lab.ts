import { afterAll, beforeAll } from 'vitest';
import { type KubeLab, startKubeLab } from '../helpers/kube-lab.ts';
import { AdminApi } from './backends.ts';
import type { KubeServer } from './clients.ts';
import { installCrd, TGB_CRD_FILE } from './ingress-lab.ts';
import { useKubeLab } from './lab.ts';

/**
 * The real API servers of the TargetGroupBinding contract tests (tgb-port.test.ts, stack-bindings.test.ts). Call
 * each inside the describe it serves, only where the lab is available (`KUBE_LAB_AVAILABLE`).
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
