import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { stubCode } from './code.ts';
import type { PolicyStatementJson } from './policy-rules.ts';
import { synthesizeOffline } from './synth.ts';

/**
 * For the stack tests of one optional controller (interruption.test.ts, ipam.test.ts): synthesize a stage offline with
 * placeholder code, and find resources, roles and settings in the template by the names the stack gives them.
 */

export type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
}

export const STAGE = 'test';

/** `synth(env)` writes each stage's output to a directory of its own, removed after the test file. */
export function offlineSynth(name: string): (env: Record<string, string>) => Promise<Json> {
  const work = mkdtempSync(join(tmpdir(), `ccm-${name}-stack-`));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  let synths = 0;
  return async (env) => {
    const dir = join(work, String(synths++));
    const out = await synthesizeOffline({
      stage: STAGE,
      env,
      outdir: join(dir, 'cdk.out'),
      code: stubCode(join(dir, 'code')),
    });
    return out.template;
  };
}

export function ofType(template: Json, type: string): [string, Json][] {
  return Object.entries(template.Resources as Record<string, Resource>)
    .filter(([, r]) => r.Type === type)
    .map(([id, r]) => [id, r.Properties ?? {}]);
}

export function props(template: Json, id: string): Json {
  const r = (template.Resources as Record<string, Resource>)[id];
  if (!r) throw new Error(`no resource ${id}`);
  return r.Properties ?? {};
}

export function refId(value: unknown): string {
  const v = value as { 'Fn::GetAtt'?: [string, string]; Ref?: string } | undefined;
  const id = v?.['Fn::GetAtt']?.[0] ?? v?.Ref;
  if (!id) throw new Error(`not a reference: ${JSON.stringify(value)}`);
  return id;
}

function named(template: Json, type: string, key: string, name: string): string {
  const found = ofType(template, type).find(([, p]) => p[key] === name);
  if (!found) throw new Error(`no ${type} named ${name}`);
  return found[0];
}
export const queueId = (t: Json, name: string) => named(t, 'AWS::SQS::Queue', 'QueueName', name);
export const functionId = (t: Json, name: string) => named(t, 'AWS::Lambda::Function', 'FunctionName', name);

export function roleStatements(template: Json, functionName: string): PolicyStatementJson[] {
  const roleId = refId(props(template, functionId(template, functionName)).Role);
  const policies = (props(template, roleId).Policies ?? []) as {
    PolicyDocument: { Statement: PolicyStatementJson[] };
  }[];
  return policies.flatMap((p) => p.PolicyDocument.Statement);
}

export const env = (template: Json, functionName: string) =>
  (props(template, functionId(template, functionName)).Environment as { Variables: Record<string, unknown> }).Variables;
