import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['functions/**/*.test.ts', 'shared/**/*.test.ts', 'stacks/**/*.test.ts', 'test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    pool: 'forks',
    // One real kube-apiserver for the run, started only when a test file asks for it (test/k8s-contract/lab.ts).
    globalSetup: ['test/k8s-contract/global-setup.ts'],
  },
});
