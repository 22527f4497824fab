import * as z from 'zod';
import { configSchema } from '../shared/config/config.ts';
import type { InterruptionActionOverrides } from '../shared/config/schemas.ts';

/**
 * The interruption controller's stage settings, apart from config.ts's so that file stays about the whole
 * stage. `CCM_INTERRUPTION=true` deploys the controller (its queue, function and the extra EC2 event rules);
 * the others are its runtime settings in their CCM_ form, refused without it like the service
 * controller's are without CCM_VPC_ID.
 */
const runtime = configSchema().shape;

export const INTERRUPTION_STAGE_SCHEMA = {
  CCM_INTERRUPTION: z.stringbool({ error: 'must be true or false' }).default(false),
  CCM_INTERRUPTION_ACTIONS: runtime.INTERRUPTION_ACTIONS,
  CCM_INTERRUPTION_OUT_OF_SERVICE_TAINT: runtime.INTERRUPTION_OUT_OF_SERVICE_TAINT,
  CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: runtime.INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS,
  CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS: runtime.INTERRUPTION_DRAIN_REQUEUE_SECONDS,
};

/** Settings only the interruption controller reads. */
export const INTERRUPTION_SETTINGS = [
  'CCM_INTERRUPTION_ACTIONS',
  'CCM_INTERRUPTION_OUT_OF_SERVICE_TAINT',
  'CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS',
  'CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS',
] as const satisfies readonly (keyof typeof INTERRUPTION_STAGE_SCHEMA)[];

export interface InterruptionStage {
  /** Kinds whose action differs from the controller's defaults; empty: the defaults throughout. */
  actions: InterruptionActionOverrides;
  outOfServiceTaint: boolean;
  excludeFromLoadBalancers: boolean;
  drainRequeueSeconds: number;
}

type Parsed = z.output<z.ZodObject<typeof INTERRUPTION_STAGE_SCHEMA>>;

/** The controller's part of the StageConfig: undefined unless CCM_INTERRUPTION is on. */
export function interruptionStage(c: Parsed): InterruptionStage | undefined {
  if (!c.CCM_INTERRUPTION) return undefined;
  return {
    actions: c.CCM_INTERRUPTION_ACTIONS,
    outOfServiceTaint: c.CCM_INTERRUPTION_OUT_OF_SERVICE_TAINT,
    excludeFromLoadBalancers: c.CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS,
    drainRequeueSeconds: c.CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS,
  };
}

/** The function's environment: what `shared/config/config.ts` reads back (INTERRUPTION_ACTIONS only if set). */
export function interruptionEnvironment(stage: InterruptionStage): Record<string, string> {
  const actions = Object.entries(stage.actions).map(([kind, action]) => `${kind}=${action}`);
  return {
    ...(actions.length > 0 ? { INTERRUPTION_ACTIONS: actions.join(',') } : {}),
    INTERRUPTION_OUT_OF_SERVICE_TAINT: String(stage.outOfServiceTaint),
    INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: String(stage.excludeFromLoadBalancers),
    INTERRUPTION_DRAIN_REQUEUE_SECONDS: String(stage.drainRequeueSeconds),
  };
}
