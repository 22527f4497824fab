import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';
import { type KubeLab, startKubeLab } from '../helpers/kube-lab.ts';

/**
 * One real API server for the whole test run, shared by every worker, started only when a test file asks
 * for it: the setup listens on a loopback port (cheap) and starts the lab on the first `POST /lab`, which
 * `useKubeLab` (lab.ts) sends from a test file's beforeAll. Runs that need no API server start none. The
 * lab is stopped when the run ends. A lab that failed to start fails every later ask too, with its error,
 * instead of being started again by each file.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    /** `http://127.0.0.1:<port>`: where test files ask for the run's API server. */
    kubeLabControl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let lab: Promise<KubeLab> | undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/lab') {
      res.writeHead(404).end();
      return;
    }
    lab ??= startKubeLab();
    lab.then(
      ({ stop: _stop, ...access }) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(access)),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
    );
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  project.provide('kubeLabControl', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return async () => {
    server.closeAllConnections();
    await new Promise((closed) => server.close(closed));
    const started = await lab?.catch(() => undefined);
    await started?.stop();
  };
}
