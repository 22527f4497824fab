import { TAG } from '../../functions/ingress/apply/tags.ts';
import { targetGroupResourceId } from '../../functions/ingress/model/names.ts';
import { stackName } from '../../shared/ingress/membership.ts';
import type { Cluster } from './cluster.ts';
import { groupOfIndex, HOST, INGRESS_NAMES, INGRESS_NAMESPACE, type IngressTruth } from './ingress-ops.ts';

/**
 * What the property checks of Ingresses: at quiescence every live Ingress names an ALB of its group that routes each
 * of its paths to a target group of its Service, no stack outlives its group's last member, every deleted Ingress is
 * gone; and, at every AWS state on the way, no path a group's ALB served stops being served while the group still
 * wants it (no 404 window).
 */

/** The ALB of a stack, and its port-80 listener. */
function albOf(c: Cluster, stack: string) {
  const found = [...c.elbv2.loadBalancers.values()].find(
    (l) => l.lb.type === 'application' && l.tags[TAG.stack] === stack && l.tags[TAG.resource] === 'LoadBalancer',
  );
  if (!found) return undefined;
  const listener = c.elbv2.listenersOf(found.lb.arn).find((l) => l.port === 80);
  return { lb: found.lb, listener };
}

/** Where a request for `path` to the stack's ALB goes: the target groups' resource tags, or undefined (a 404). */
function routeOf(c: Cluster, stack: string, path: string): string[] | undefined {
  const alb = albOf(c, stack);
  if (!alb?.listener) return undefined;
  const action = c.elbv2.route(alb.listener.arn, { host: HOST, path }).actions[0];
  if (action?.type !== 'forward') return undefined;
  return action.targetGroups.map((g) => {
    const tg = [...c.elbv2.targetGroups.values()].find((x) => x.tg.arn === g.arn);
    return tg?.tags[TAG.resource] ?? `missing:${g.arn}`;
  });
}

/** The settled cluster's Ingress invariants. */
export function ingressViolations(c: Cluster, truth: IngressTruth): string[] {
  const out: string[] = [];
  for (const k of truth.deleted) {
    const key = `${INGRESS_NAMESPACE}/${INGRESS_NAMES[k]}`;
    if (c.ingresses.ingresses.has(key)) out.push(`Ingress ${key} deleted but still there (finalizer kept)`);
  }
  const wanted = truth.wanted();
  for (const [k] of truth.live) {
    const name = INGRESS_NAMES[k]!;
    const ingress = c.ingresses.ingresses.get(`${INGRESS_NAMESPACE}/${name}`);
    const stack = stackName(groupOfIndex(k, truth.live.get(k)!.group));
    if (!ingress) {
      out.push(`Ingress ${name} lost`);
      continue;
    }
    const alb = albOf(c, stack);
    const hostname = ingress.status?.loadBalancer?.ingress?.[0]?.hostname;
    if (!alb) out.push(`Ingress ${name}: no ALB for its group ${stack}`);
    else if (hostname !== alb.lb.dnsName.toLowerCase())
      out.push(`Ingress ${name}: status names ${hostname ?? 'nothing'}, not its group's ALB ${alb.lb.dnsName}`);
    for (const [path, service] of wanted.get(stack)!) {
      if (!path.startsWith(`/${name}/`)) continue;
      const to = routeOf(c, stack, path);
      const expected = targetGroupResourceId({ namespace: INGRESS_NAMESPACE, name }, service, 80);
      if (to?.length !== 1 || to[0] !== expected)
        out.push(`Ingress ${name}: ${path} on ${stack} goes to ${to?.join(',') ?? 'a 404'}, not ${expected}`);
    }
  }
  // No leak: nothing tagged for a stack no live member wants.
  const stacks = new Set(wanted.keys());
  const leaked = (tags: Record<string, string>) => tags[TAG.stack] !== undefined && !stacks.has(tags[TAG.stack]!);
  for (const { lb, tags } of c.elbv2.loadBalancers.values())
    if (leaked(tags)) out.push(`ALB ${lb.name} of ${tags[TAG.stack]} leaked`);
  for (const { tg, tags } of c.elbv2.targetGroups.values())
    if (leaked(tags)) out.push(`target group ${tg.name} of ${tags[TAG.stack]} leaked`);
  for (const g of c.ec2.securityGroups.values())
    if (leaked(g.tags)) out.push(`security group ${g.groupName} of ${g.tags[TAG.stack]} leaked`);
  return out;
}

/**
 * Watches every AWS state (before each ELBv2 call, and after each step and poll): once a stack's ALB serves a path
 * its group wants, it serves it at every later state until the group stops wanting it.
 */
export class No404Watch {
  /** `stack path` -> served since the group last started wanting it. */
  private served = new Set<string>();
  readonly violations: string[] = [];
  private states = 0;

  constructor(
    private readonly c: Cluster,
    private readonly truth: IngressTruth,
  ) {
    c.elbv2.beforeCall = () => this.look();
  }

  /** The history changed what is wanted: forget what is no longer wanted. */
  wantedChanged(): void {
    const wanted = this.truth.wanted();
    for (const key of [...this.served]) {
      const [stack, path] = key.split(' ') as [string, string];
      if (!wanted.get(stack)?.has(path)) this.served.delete(key);
    }
  }

  look(): void {
    const wanted = this.truth.wanted();
    if (wanted.size === 0) return;
    const state = ++this.states;
    for (const [stack, probes] of wanted) {
      for (const path of probes.keys()) {
        const key = `${stack} ${path}`;
        const served = routeOf(this.c, stack, path) !== undefined;
        if (served) this.served.add(key);
        else if (this.served.has(key) && this.violations.length < 5) {
          this.violations.push(`404 window: ${path} on ${stack} served, then not at AWS state ${state}`);
          this.served.delete(key);
        }
      }
    }
  }
}
