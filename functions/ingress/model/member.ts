import type { GroupId } from '../../../shared/ingress/membership.ts';
import type { Ingress, IngressClassParams } from '../../../shared/k8s/ingress-types.ts';
import type { ModelAction, ModelReads, ModelRule, ModelSettings, ModelTargetGroup, Problem } from './types.ts';

/**
 * The per-member half of an IngressGroup's model: one Ingress's rules, default backend, target groups and hosts.
 * The group half (build.ts) places the rules on the member's listeners.
 */

export interface MemberInput {
  ingress: Ingress;
  group: GroupId;
  /** The member's class params, if any. */
  params?: IngressClassParams;
  reads: ModelReads;
  settings: ModelSettings;
}

export interface MemberRules {
  /** The member's rules in its own order; the caller places them on each of the member's listen ports. */
  rules: ModelRule[];
  /** Actions of spec.defaultBackend, when it has one. */
  defaultActions?: ModelAction[];
  /** Every target group its rules and default backend forward to (one per (Ingress, Service, service port)). */
  targetGroups: ModelTargetGroup[];
  /** spec.rules[].host and spec.tls[].hosts, deduplicated (certificate discovery). */
  hosts: string[];
  /** Anything that stops the member from being built: it is then kept as it was, with a Warning. */
  problems: Problem[];
  /** Annotations it uses that we do not support or that are ignored: a Warning each. */
  warnings: Problem[];
}

export async function buildMemberRules(input: MemberInput): Promise<MemberRules> {
  // Being written: the first commit fixes the signature the group half calls.
  void input;
  return {
    rules: [],
    targetGroups: [],
    hosts: [],
    problems: [{ at: 'member', message: 'not built yet' }],
    warnings: [],
  };
}
