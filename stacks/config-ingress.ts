import * as z from 'zod';
import { configSchema } from '../shared/config/config.ts';
import type { INGRESS_TARGET_TYPES } from '../shared/config/schemas.ts';

/**
 * The Ingress controller's stage settings (functions/ingress), apart from config.ts's so that file stays about the
 * whole stage. `CCM_INGRESS=true` deploys it: its queue, its function, and the queue URL the relay and the resync
 * send IngressGroup keys to. It is never on by default: a cluster still running the AWS Load Balancer Controller
 * must not get a second controller of its Ingresses. It works in the cluster's VPC, `CCM_VPC_ID`, so it needs that
 * setting too, and shares the service controller's `CCM_SERVICE_*` waits, node port range and externally managed
 * tags. `CCM_INGRESS_WAF=true` grants the WAFv2 calls the `wafv2-acl-arn` / `wafv2-acl-name` annotations need; off,
 * the function's role has none of them. The other settings are its runtime settings in their CCM_ form, refused
 * without `CCM_INGRESS=true` as the other controllers' are without theirs.
 */
const runtime = configSchema().shape;
const bool = z.stringbool({ error: 'must be true or false' });

export const INGRESS_STAGE_SCHEMA = {
  CCM_INGRESS: bool.default(false),
  CCM_INGRESS_WAF: bool.default(false),
  CCM_INGRESS_DEFAULT_SSL_POLICY: runtime.INGRESS_DEFAULT_SSL_POLICY,
  CCM_INGRESS_DEFAULT_TARGET_TYPE: runtime.INGRESS_DEFAULT_TARGET_TYPE,
  CCM_INGRESS_DEFAULT_TAGS: runtime.INGRESS_DEFAULT_TAGS,
};

/** Settings only the Ingress controller reads. */
export const INGRESS_SETTINGS = [
  'CCM_INGRESS_WAF',
  'CCM_INGRESS_DEFAULT_SSL_POLICY',
  'CCM_INGRESS_DEFAULT_TARGET_TYPE',
  'CCM_INGRESS_DEFAULT_TAGS',
] as const satisfies readonly (keyof typeof INGRESS_STAGE_SCHEMA)[];

export interface IngressStage {
  /** The cluster's VPC (CCM_VPC_ID): its load balancers, target groups and security groups go in it. */
  vpcId: string;
  /** Whether its role may read and change the WAFv2 web ACL of its load balancers (CCM_INGRESS_WAF). */
  waf: boolean;
  defaultSslPolicy: string;
  defaultTargetType: (typeof INGRESS_TARGET_TYPES)[number];
  /** Tags on every resource it makes; empty: none. */
  defaultTags: Record<string, string>;
}

type Parsed = z.output<z.ZodObject<typeof INGRESS_STAGE_SCHEMA>> & {
  CCM_VPC_ID?: string | undefined;
  CCM_SERVICE_EXTERNAL_MANAGED_TAGS?: string[] | undefined;
};

/**
 * The problems of the Ingress settings, each as [setting, message]: settings without CCM_INGRESS, CCM_INGRESS
 * without a VPC, a default tag another tool is said to manage.
 */
export function ingressProblems(input: Readonly<Record<string, string>>, c: Parsed): [string, string][] {
  if (!c.CCM_INGRESS) {
    return INGRESS_SETTINGS.filter((s) => input[s] !== undefined).map((s) => [
      s,
      'has no effect without CCM_INGRESS=true, which deploys the Ingress controller',
    ]);
  }
  const problems: [string, string][] = [];
  if (!c.CCM_VPC_ID) {
    problems.push([
      'CCM_VPC_ID',
      "is required when CCM_INGRESS=true: the cluster's VPC, where the Ingress controller's load balancers go",
    ]);
  }
  const managed = Object.keys(c.CCM_INGRESS_DEFAULT_TAGS).filter((key) =>
    c.CCM_SERVICE_EXTERNAL_MANAGED_TAGS?.includes(key),
  );
  if (managed.length > 0) {
    problems.push([
      'CCM_INGRESS_DEFAULT_TAGS',
      `${managed.join(', ')}: also in CCM_SERVICE_EXTERNAL_MANAGED_TAGS (tags another tool manages)`,
    ]);
  }
  return problems;
}

/** The controller's part of the StageConfig: undefined unless CCM_INGRESS is on (and CCM_VPC_ID set). */
export function ingressStage(c: Parsed): IngressStage | undefined {
  if (!c.CCM_INGRESS || !c.CCM_VPC_ID) return undefined;
  return {
    vpcId: c.CCM_VPC_ID,
    waf: c.CCM_INGRESS_WAF,
    defaultSslPolicy: c.CCM_INGRESS_DEFAULT_SSL_POLICY,
    defaultTargetType: c.CCM_INGRESS_DEFAULT_TARGET_TYPE,
    defaultTags: c.CCM_INGRESS_DEFAULT_TAGS,
  };
}

/** The function's own environment: what `shared/config/config.ts` reads back (INGRESS_DEFAULT_TAGS only if any). */
export function ingressEnvironment(stage: IngressStage): Record<string, string> {
  const tags = Object.entries(stage.defaultTags).map(([key, value]) => `${key}=${value}`);
  return {
    VPC_ID: stage.vpcId,
    INGRESS_DEFAULT_SSL_POLICY: stage.defaultSslPolicy,
    INGRESS_DEFAULT_TARGET_TYPE: stage.defaultTargetType,
    ...(tags.length > 0 ? { INGRESS_DEFAULT_TAGS: tags.join(',') } : {}),
  };
}
