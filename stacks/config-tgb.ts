import * as z from 'zod';
import { configSchema } from '../shared/config/config.ts';

/**
 * The TargetGroupBinding controller's stage settings (functions/target-group-binding), and the switch that lets the
 * service controller serve the AWS Load Balancer Controller's Services, apart from config.ts's so that file stays
 * about the whole stage.
 *
 * `CCM_TARGET_GROUP_BINDING=true` deploys the binding controller: its queue, its function, and the queue URL the
 * relay and the resync send TargetGroupBinding keys to. It is never on by default: TargetGroupBindings are the AWS
 * Load Balancer Controller's objects (docs/target-group-binding.md). It needs no VPC of its own: with `CCM_VPC_ID` a
 * binding whose target group lies in another VPC is refused. `CCM_TGB_READINESS_REQUEUE_SECONDS` is its runtime
 * setting in the CCM_ form, refused without the switch. It also has the Ingress and service functions keep a
 * TargetGroupBinding per target group they make (STACK_TARGET_GROUP_BINDINGS, stacks/ingress.ts and service.ts), so
 * the Pods behind them get readiness gates; without the binding controller nobody would serve those bindings.
 *
 * `CCM_LBC_SERVICES=true` makes the service controller (deployed with `CCM_VPC_ID`) serve the Services of
 * `aws-load-balancer-type: external` or `nlb-ip` and of class `service.k8s.aws/nlb` too, and grants its role the
 * adoption of what the reference made for them (stacks/service.ts); refused without `CCM_VPC_ID`.
 */
const runtime = configSchema().shape;
const bool = z.stringbool({ error: 'must be true or false' });

export const TGB_STAGE_SCHEMA = {
  CCM_TARGET_GROUP_BINDING: bool.default(false),
  CCM_TGB_READINESS_REQUEUE_SECONDS: runtime.TGB_READINESS_REQUEUE_SECONDS,
  CCM_LBC_SERVICES: bool.default(false),
};

/** Settings only the binding controller reads. */
export const TGB_SETTINGS = [
  'CCM_TGB_READINESS_REQUEUE_SECONDS',
] as const satisfies readonly (keyof typeof TGB_STAGE_SCHEMA)[];

export interface TgbStage {
  /** The cluster's VPC when the stage sets one (CCM_VPC_ID): bindings of target groups elsewhere are refused. */
  vpcId?: string;
  /** Seconds between looks at a binding while a gated Pod's target is not yet healthy. */
  readinessRequeueSeconds: number;
}

type Parsed = z.output<z.ZodObject<typeof TGB_STAGE_SCHEMA>> & { CCM_VPC_ID?: string | undefined };

/**
 * The problems of these settings, each as [setting, message]: the binding controller's settings without its switch,
 * CCM_LBC_SERVICES without the service controller.
 */
export function tgbProblems(input: Readonly<Record<string, string>>, c: Parsed): [string, string][] {
  const problems: [string, string][] = [];
  if (!c.CCM_TARGET_GROUP_BINDING) {
    for (const s of TGB_SETTINGS.filter((s) => input[s] !== undefined)) {
      problems.push([s, 'has no effect without CCM_TARGET_GROUP_BINDING=true, which deploys the binding controller']);
    }
  }
  if (c.CCM_LBC_SERVICES && !c.CCM_VPC_ID) {
    problems.push([
      'CCM_LBC_SERVICES',
      'has no effect without CCM_VPC_ID, which deploys the service controller that would serve those Services',
    ]);
  }
  return problems;
}

/** The binding controller's part of the StageConfig: undefined unless CCM_TARGET_GROUP_BINDING is on. */
export function tgbStage(c: Parsed): TgbStage | undefined {
  if (!c.CCM_TARGET_GROUP_BINDING) return undefined;
  return {
    ...(c.CCM_VPC_ID ? { vpcId: c.CCM_VPC_ID } : {}),
    readinessRequeueSeconds: c.CCM_TGB_READINESS_REQUEUE_SECONDS,
  };
}

/** The function's own environment: what `shared/config/config.ts` reads back. */
export function tgbEnvironment(stage: TgbStage): Record<string, string> {
  return {
    ...(stage.vpcId ? { VPC_ID: stage.vpcId } : {}),
    TGB_READINESS_REQUEUE_SECONDS: String(stage.readinessRequeueSeconds),
  };
}
