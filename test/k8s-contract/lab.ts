import { afterAll, beforeAll, inject } from 'vitest';
import { type KubeLab, type KubeLabAccess, startKubeLab } from '../helpers/kube-lab.ts';

/**
 * The run's real API server, for the describe it is called in: asked of the global setup (global-setup.ts),
 * which starts one for the whole run, or, where a file runs without that setup, started for this file and
 * stopped after it. Call it only where the lab is available (`KUBE_LAB_AVAILABLE`).
 */
export function useKubeLab(): () => KubeLabAccess {
  let access: KubeLabAccess | undefined;
  let own: KubeLab | undefined;
  beforeAll(async () => {
    const control = inject('kubeLabControl') as string | undefined;
    if (control) {
      const answer = await fetch(`${control}/lab`, { method: 'POST' });
      if (!answer.ok) throw new Error(`the run's kube lab did not start: ${await answer.text()}`);
      access = (await answer.json()) as KubeLabAccess;
    } else {
      own = await startKubeLab();
      access = own;
    }
  }, 90_000);
  afterAll(async () => {
    await own?.stop();
  });
  return () => {
    if (!access) throw new Error('no kube lab: useKubeLab() is read outside its describe');
    return access;
  };
}
