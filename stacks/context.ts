import type { Code } from 'aws-cdk-lib/aws-lambda';
import type { FunctionName, StageConfig } from './config.ts';

/** Where a function's deployment package comes from: the esbuild bundle, or a stub in tests. */
export type CodeSource = (name: FunctionName) => Code;

/** What every construct of the control plane is built from. */
export interface ControlPlaneContext {
  stage: string;
  config: StageConfig;
  code: CodeSource;
  /** `<stage>-serverless-ccm-<suffix>`: names an operator can tell apart across stages in one account. */
  name(suffix: string): string;
}

/** Longest names AWS accepts (Lambda function names; SQS queue names include the `.fifo` suffix). */
export const NAME_LIMITS = { function: 64, queue: 80 } as const;

/** Names are fixed at synth time, so a stage too long for them fails here rather than half-way through a deploy. */
export function checkedName(kind: keyof typeof NAME_LIMITS, name: string, stage: string): string {
  const limit = NAME_LIMITS[kind];
  if (name.length > limit) {
    throw new Error(
      `stage "${stage}" is too long: the ${kind} name "${name}" has ${name.length} characters, AWS allows ${limit}`,
    );
  }
  return name;
}
