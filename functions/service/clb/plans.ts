import type { SecurityGroup, SecurityGroupRule } from '../../../shared/aws/ec2-port.ts';
import type {
  ClassicAttributes,
  ClassicHealthCheck,
  ClassicListener,
  ClassicLoadBalancer,
} from '../../../shared/aws/elb-port.ts';
import { ruleKey } from '../../../shared/load-balancers/security-rules.ts';
import { PROXY_PROTOCOL_POLICY } from './model.ts';

/** Pure plans for a Classic ELB: what to change, from what it has and what its spec wants. */

/** The reference's DNS names: `<name>-<n>.<region>.elb.amazonaws.com`, `internal-` first for an internal one. */
export function classicNameFromHostname(hostname: string | undefined): string | undefined {
  const match = hostname
    ? /^(?:internal-)?([a-z0-9-]+)-\d+\.[a-z0-9-]+\.elb\.amazonaws\.com(?:\.cn)?$/i.exec(hostname)
    : null;
  return match?.[1];
}

const sameListener = (a: ClassicListener, b: ClassicListener) =>
  a.protocol === b.protocol &&
  a.instancePort === b.instancePort &&
  a.instanceProtocol === b.instanceProtocol &&
  (a.sslCertificateId ?? '') === (b.sslCertificateId ?? '');

/**
 * What the listeners need, by port: `add` on ports that have none, `replace` where the one there differs (a Classic
 * ELB cannot change a listener: it is deleted, then created again, as the reference does), `remove` on ports no
 * longer wanted. Applied in that order, so a port that keeps serving never waits on another's change.
 */
export interface ClassicListenerPlan {
  add: ClassicListener[];
  replace: { from: ClassicListener & { policyNames?: string[] }; to: ClassicListener }[];
  remove: number[];
}

export function planClassicListeners(
  wanted: readonly ClassicListener[],
  current: readonly (ClassicListener & { policyNames?: string[] })[],
): ClassicListenerPlan {
  const byPort = new Map(current.map((l) => [l.loadBalancerPort, l]));
  const wantedPorts = new Set(wanted.map((l) => l.loadBalancerPort));
  const plan: ClassicListenerPlan = { add: [], replace: [], remove: [] };
  for (const listener of wanted) {
    const have = byPort.get(listener.loadBalancerPort);
    if (!have) plan.add.push(listener);
    else if (!sameListener(have, listener)) plan.replace.push({ from: have, to: listener });
  }
  plan.remove = current
    .filter((l) => !wantedPorts.has(l.loadBalancerPort))
    .map((l) => l.loadBalancerPort)
    .sort((a, b) => a - b);
  return plan;
}

export const listenersInLine = (plan: ClassicListenerPlan) =>
  plan.add.length === 0 && plan.replace.length === 0 && plan.remove.length === 0;

export function sameHealthCheck(a: ClassicHealthCheck, b: ClassicHealthCheck): boolean {
  return (
    a.target === b.target &&
    a.intervalSeconds === b.intervalSeconds &&
    a.timeoutSeconds === b.timeoutSeconds &&
    a.healthyThreshold === b.healthyThreshold &&
    a.unhealthyThreshold === b.unhealthyThreshold
  );
}

export function sameAttributes(a: ClassicAttributes, b: ClassicAttributes): boolean {
  return (
    a.crossZone === b.crossZone &&
    a.idleTimeoutSeconds === b.idleTimeoutSeconds &&
    a.connectionDraining.enabled === b.connectionDraining.enabled &&
    (!a.connectionDraining.enabled || a.connectionDraining.timeoutSeconds === b.connectionDraining.timeoutSeconds) &&
    a.accessLog.enabled === b.accessLog.enabled &&
    (!a.accessLog.enabled ||
      ((a.accessLog.s3BucketName ?? '') === (b.accessLog.s3BucketName ?? '') &&
        (a.accessLog.s3BucketPrefix ?? '') === (b.accessLog.s3BucketPrefix ?? '') &&
        (a.accessLog.emitIntervalMinutes ?? 60) === (b.accessLog.emitIntervalMinutes ?? 60)))
  );
}

/** Subnets named by the annotation: attach the missing ones, detach the others. Without it nothing moves. */
export function planClassicSubnets(
  wanted: readonly string[] | undefined,
  current: readonly string[],
): { attach: string[]; detach: string[] } {
  if (!wanted) return { attach: [], detach: [] };
  return {
    attach: wanted.filter((s) => !current.includes(s)),
    detach: current.filter((s) => !wanted.includes(s)),
  };
}

/**
 * Back ends (instance ports) whose policy list must change: every one gets the proxy protocol policy when
 * it is wanted, and loses it (and only it) when not.
 */
export function planBackendPolicies(
  lb: Pick<ClassicLoadBalancer, 'backendPolicies'>,
  instancePorts: readonly number[],
  proxyProtocol: boolean,
): { instancePort: number; policyNames: string[] }[] {
  const changes: { instancePort: number; policyNames: string[] }[] = [];
  const current = new Map(lb.backendPolicies.map((b) => [b.instancePort, b.policyNames]));
  const ports = new Set([...instancePorts, ...current.keys()]);
  for (const port of [...ports].sort((a, b) => a - b)) {
    const have = current.get(port) ?? [];
    const others = have.filter((p) => p !== PROXY_PROTOCOL_POLICY);
    const want = proxyProtocol && instancePorts.includes(port) ? [...others, PROXY_PROTOCOL_POLICY] : others;
    if (want.length !== have.length || want.some((p) => !have.includes(p)))
      changes.push({ instancePort: port, policyNames: want });
  }
  return changes;
}

/** Listeners (SSL/HTTPS) whose negotiation policy must change to `wanted` (or to none of ours). */
export function planListenerPolicies(
  lb: Pick<ClassicLoadBalancer, 'listeners'>,
  wanted: string | undefined,
  isOurs: (policyName: string) => boolean,
): { loadBalancerPort: number; policyNames: string[] }[] {
  const changes: { loadBalancerPort: number; policyNames: string[] }[] = [];
  for (const listener of lb.listeners) {
    if (listener.protocol !== 'SSL' && listener.protocol !== 'HTTPS') continue;
    const others = listener.policyNames.filter((p) => !isOurs(p));
    const want = wanted ? [...others, wanted] : others;
    const have = listener.policyNames;
    if (want.length !== have.length || want.some((p) => !have.includes(p))) {
      changes.push({ loadBalancerPort: listener.loadBalancerPort, policyNames: want });
    }
  }
  return changes;
}

/** The rule that lets the load balancer's group reach the Nodes: every protocol, from that group. */
export function classicNodeRule(sourceGroupId: string): SecurityGroupRule {
  return { protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId };
}

/**
 * The group whose all-traffic rule on the Nodes' groups lets a Classic ELB made the reference's way reach them: its
 * own `k8s-elb-<name>` group, or, made with `aws-load-balancer-security-groups`, the first of its groups in the
 * annotation's order (the reference sorts them so before choosing), the first one when the annotation is not known
 * (the Service is gone). None for one made this controller's way: the cluster's backend group (`backendName`) lets
 * it in, by rules of its own.
 */
export function referenceRuleSource(
  lb: Pick<ClassicLoadBalancer, 'name' | 'securityGroups'>,
  groups: readonly Pick<SecurityGroup, 'groupId' | 'groupName'>[],
  names: { managed: string; backend: string },
  annotated: readonly string[] = [],
): string | undefined {
  const attached = groups.filter((g) => lb.securityGroups.includes(g.groupId));
  const managed = attached.find((g) => g.groupName === names.managed);
  if (managed) return managed.groupId;
  if (attached.some((g) => g.groupName === names.backend)) return undefined;
  const rank = (id: string) => {
    const group = groups.find((g) => g.groupId === id);
    const at = annotated.findIndex((a) => a === id || a === group?.groupName);
    return at < 0 ? annotated.length : at;
  };
  return [...lb.securityGroups].sort((a, b) => rank(a) - rank(b))[0];
}

/**
 * Whether another Classic ELB may still need the all-traffic rule from `source`: one made the reference's way (not
 * carrying the cluster's backend group) that has it among its groups. A user's group can serve several Services, and
 * revoking its rule would cut the others off until their next full pass puts it back.
 */
export function ruleStillNeeded(
  source: string,
  others: readonly Pick<ClassicLoadBalancer, 'securityGroups'>[],
  backendGroupId: string | undefined,
): boolean {
  return others.some((o) => o.securityGroups.includes(source) && !o.securityGroups.includes(backendGroupId ?? ''));
}

/** The Nodes' groups that lack the rule. */
export function groupsMissingRule(groups: readonly SecurityGroup[], rule: SecurityGroupRule): SecurityGroup[] {
  return groups.filter((g) => !g.ingress.some((r) => ruleKey(r) === ruleKey(rule)));
}
