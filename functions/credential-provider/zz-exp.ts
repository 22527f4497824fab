import { spawnSync } from 'node:child_process';
import { startFakeAwsServer } from '/work/main/functions/credential-provider/fake-aws-server.ts';

const s = await startFakeAwsServer();
const env = {
  PATH: process.env.PATH,
  HOME: '/tmp/nohome',
  AWS_ACCESS_KEY_ID: 'AKIDFAKE',
  AWS_SECRET_ACCESS_KEY: 'fake',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_ENDPOINT_URL_ECR: s.url,
  AWS_ENDPOINT_URL_ECR_PUBLIC: s.url,
  AWS_ENDPOINT_URL_STS: s.url,
};
const run = (file: string, extraEnv = {}) => {
  const r = spawnSync('npx', ['tsx', 'functions/credential-provider/main.ts'], {
    input: require('node:fs').readFileSync(file),
    env: { ...env, ...extraEnv },
  });
  console.log(r.status, r.stdout.toString(), r.stderr.toString());
};
const { createRequire } = await import('node:module');
globalThis.require = createRequire(import.meta.url);
for (const f of ['request-v1.json', 'request-v1alpha1-public.json', 'request-v1-service-account.json'])
  run('/work/shared/fixtures/kubelet/' + f);
run('/work/shared/fixtures/kubelet/request-v1-service-account.json', {
  AWS_ACCESS_KEY_ID: '',
  AWS_SECRET_ACCESS_KEY: '',
});
for (const r of s.requests)
  console.log(r.operation, r.headers.authorization?.toString().slice(0, 80), r.body.slice(0, 200));
await s.close();
