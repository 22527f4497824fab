import { LB_ANNOTATION, type ListenProtocol, type MemberLoadBalancerSettings } from './annotations.ts';
import { type Claim, claim, type GroupSettings } from './conflicts.ts';
import type { ModelAction, ModelListener, ModelRule, Problem } from './types.ts';

/**
 * The listeners of an IngressGroup's load balancer: the union of its built members' listen ports; on each, the
 * rules of every member that listens there, in group order; what the members say about each port (protocol,
 * sources, SSL policy, attributes, default backend) is shared, so each is a claim (conflicts.ts).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-listeners.html
 */

/** What a built member brings to the listeners. */
export interface ListenerContribution {
  member: string;
  ports: { port: number; protocol: ListenProtocol }[];
  rules: ModelRule[];
  /** Its spec.defaultBackend's actions, when it has one. */
  defaultActions?: ModelAction[];
  /** Its certificates for its HTTPS ports (given or discovered), in its order. */
  certificates: string[];
}

/** A fixed 404 with no body: what an ALB answers when no rule and no default backend matches. */
export const NOT_FOUND_ACTION: ModelAction = { type: 'fixed-response', statusCode: '404', contentType: 'text/plain' };

/** The redirect of every HTTP listener once a member sets ssl-redirect: same host, path and query, on HTTPS. */
export function sslRedirectAction(port: number): ModelAction {
  return {
    type: 'redirect',
    statusCode: 'HTTP_301',
    protocol: 'HTTPS',
    port: String(port),
    host: '#{host}',
    path: '/#{path}',
    query: '#{query}',
  };
}

const key = {
  protocol: (port: number) => `listener:${port}:protocol`,
  inboundCidrs: (port: number) => `listener:${port}:inboundCidrs`,
  prefixLists: (port: number) => `listener:${port}:prefixLists`,
  sslPolicy: (port: number) => `listener:${port}:sslPolicy`,
  defaultBackend: (port: number) => `listener:${port}:defaultBackend`,
  attributes: (port: number) => `listener:${port}:attribute:`,
  sslRedirect: 'sslRedirect',
};

/** The member's claims on the listeners it uses. */
export function listenerClaims(
  member: string,
  settings: MemberLoadBalancerSettings,
  hasDefaultBackend: boolean,
): Claim[] {
  const claims: Claim[] = [];
  for (const { port, protocol } of settings.listenPorts.value) {
    // Shown with the port, so a problem says which listener the members disagree on.
    const onPort = (c: Claim, what = c.shown) => claims.push({ ...c, shown: `${what} on port ${port}` });
    const unordered = { unordered: true };
    onPort(claim(key.protocol(port), settings.listenPorts.at, protocol));
    const { inboundCidrs, prefixLists, sslPolicy } = settings;
    if (inboundCidrs) onPort(claim(key.inboundCidrs(port), inboundCidrs.at, inboundCidrs.value, unordered));
    if (prefixLists) onPort(claim(key.prefixLists(port), prefixLists.at, prefixLists.value, unordered));
    if (protocol === 'HTTPS' && sslPolicy) onPort(claim(key.sslPolicy(port), sslPolicy.at, sslPolicy.value));
    for (const [name, attribute] of Object.entries(settings.listenerAttributes[`${protocol}-${port}`] ?? {})) {
      const c = claim(`${key.attributes(port)}${name}`, attribute.at, attribute.value);
      onPort(c, `${name}=${c.shown}`);
    }
    // Only one member may give a listener its default backend: its name is the value, so any second one disagrees.
    if (hasDefaultBackend)
      onPort(claim(key.defaultBackend(port), 'spec.defaultBackend', member), `default backend of ${member}`);
  }
  if (settings.sslRedirect) claims.push(claim(key.sslRedirect, settings.sslRedirect.at, settings.sslRedirect.value));
  return claims;
}

/**
 * Problems with the ssl-redirect the group would have once the member is in: the port must be an HTTPS listener of
 * the group (its own ports or those of the members before it).
 */
export function sslRedirectProblems(group: GroupSettings): { at: string; message: string }[] {
  const held = group.holder(key.sslRedirect);
  if (!held) return [];
  const port = held.value as number;
  const protocol = group.get<ListenProtocol>(key.protocol(port));
  if (protocol === 'HTTPS') return [];
  return [
    {
      at: held.at,
      message:
        protocol === undefined
          ? `port ${port} is not a listener of the group: list {"HTTPS": ${port}} in listen-ports`
          : `port ${port} is an HTTP listener of the group: ssl-redirect needs an HTTPS port`,
    },
  ];
}

/**
 * Members on an HTTPS listener none of whose members brings a certificate (none given, and no host to discover one
 * by), which AWS would refuse to create: a problem each, by member.
 */
export function listenersWithoutCertificate(
  contributions: readonly ListenerContribution[],
  group: GroupSettings,
): Map<string, Problem[]> {
  const out = new Map<string, Problem[]>();
  const ports = [...new Set(contributions.flatMap((c) => c.ports.map((p) => p.port)))].sort((a, b) => a - b);
  for (const port of ports) {
    if (group.get<ListenProtocol>(key.protocol(port)) !== 'HTTPS') continue;
    const on = contributions.filter((c) => c.ports.some((p) => p.port === port));
    if (on.some((c) => c.certificates.length > 0)) continue;
    for (const c of on) {
      out.set(c.member, [
        ...(out.get(c.member) ?? []),
        {
          at: LB_ANNOTATION.certificateArn,
          message: `the HTTPS listener on port ${port} would have no certificate: name one, or give the Ingress hosts an ISSUED ACM certificate covers`,
        },
      ]);
    }
  }
  return out;
}

/** The listeners of the group's built members, by port. */
export function assembleListeners(input: {
  contributions: readonly ListenerContribution[];
  group: GroupSettings;
  dualstack: boolean;
  defaultSslPolicy: string;
}): ModelListener[] {
  const { group } = input;
  const ports = [...new Set(input.contributions.flatMap((c) => c.ports.map((p) => p.port)))].sort((a, b) => a - b);
  const sslRedirect = group.get<number>(key.sslRedirect);
  return ports.map((port) => {
    const protocol = group.get<ListenProtocol>(key.protocol(port)) ?? 'HTTP';
    const on = input.contributions.filter((c) => c.ports.some((p) => p.port === port));
    const redirecting = protocol === 'HTTP' && sslRedirect !== undefined;
    const backendOwner = group.get<string>(key.defaultBackend(port));
    const backend = on.find((c) => c.member === backendOwner)?.defaultActions;
    const inboundCidrs = group.get<string[]>(key.inboundCidrs(port));
    const prefixLists = group.get<string[]>(key.prefixLists(port)) ?? [];
    const listener: ModelListener = {
      port,
      protocol,
      certificateArns: protocol === 'HTTPS' ? [...new Set(on.flatMap((c) => c.certificates))] : [],
      defaultActions: redirecting ? [sslRedirectAction(sslRedirect)] : (backend ?? [NOT_FOUND_ACTION]),
      rules: redirecting ? [] : on.flatMap((c) => c.rules),
      attributes: group.byPrefix<string>(key.attributes(port)),
      // Prefix lists are not supported (a Warning says so): the default ranges apply without inbound CIDRs.
      inboundCidrs: inboundCidrs ?? (input.dualstack ? ['0.0.0.0/0', '::/0'] : ['0.0.0.0/0']),
      prefixLists,
    };
    if (protocol === 'HTTPS') listener.sslPolicy = group.get<string>(key.sslPolicy(port)) ?? input.defaultSslPolicy;
    return listener;
  });
}
