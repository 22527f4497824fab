import * as z from 'zod';
import { configSchema } from '../shared/config/config.ts';

/**
 * The Windows IP address manager's stage settings (functions/ipam), apart from config.ts's so that file stays
 * about the whole stage. `CCM_IPAM=true` deploys it: its queue, its function, and the queue URL the relay and the
 * resync send Windows Node keys to. It works in the cluster's VPC, `CCM_VPC_ID`, which its grants are limited to,
 * so it needs that setting too. `CCM_IPAM_COOLDOWN_SECONDS` is its runtime setting in the CCM_ form, refused
 * without `CCM_IPAM=true` like the interruption controller's are without theirs.
 */
const runtime = configSchema().shape;

export const IPAM_STAGE_SCHEMA = {
  CCM_IPAM: z.stringbool({ error: 'must be true or false' }).default(false),
  CCM_IPAM_COOLDOWN_SECONDS: runtime.IPAM_COOLDOWN_SECONDS,
};

/** Settings only the IP address manager reads. */
export const IPAM_SETTINGS = [
  'CCM_IPAM_COOLDOWN_SECONDS',
] as const satisfies readonly (keyof typeof IPAM_STAGE_SCHEMA)[];

export interface IpamStage {
  /** The cluster's VPC (CCM_VPC_ID): the only VPC whose network interfaces the manager may change. */
  vpcId: string;
  /** Seconds a released Pod address waits before another Pod gets it. */
  cooldownSeconds: number;
}

type Parsed = z.output<z.ZodObject<typeof IPAM_STAGE_SCHEMA>> & { CCM_VPC_ID?: string | undefined };

/** The problems of the IPAM settings, each as [setting, message]: settings without CCM_IPAM, CCM_IPAM without a VPC. */
export function ipamProblems(input: Readonly<Record<string, string>>, c: Parsed): [string, string][] {
  if (!c.CCM_IPAM) {
    return IPAM_SETTINGS.filter((s) => input[s] !== undefined).map((s) => [
      s,
      'has no effect without CCM_IPAM=true, which deploys the Windows IP address manager',
    ]);
  }
  if (!c.CCM_VPC_ID) {
    return [
      [
        'CCM_VPC_ID',
        "is required when CCM_IPAM=true: the cluster's VPC, the only one whose network interfaces the IP address manager may change",
      ],
    ];
  }
  return [];
}

/** The manager's part of the StageConfig: undefined unless CCM_IPAM is on (and CCM_VPC_ID set, ipamProblems). */
export function ipamStage(c: Parsed): IpamStage | undefined {
  if (!c.CCM_IPAM || !c.CCM_VPC_ID) return undefined;
  return { vpcId: c.CCM_VPC_ID, cooldownSeconds: c.CCM_IPAM_COOLDOWN_SECONDS };
}

/** The function's environment: what `shared/config/config.ts` reads back. */
export function ipamEnvironment(stage: IpamStage): Record<string, string> {
  return { VPC_ID: stage.vpcId, IPAM_COOLDOWN_SECONDS: String(stage.cooldownSeconds) };
}
