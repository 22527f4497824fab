/**
 * HTTP proxies from the environment, honoured as the Go AWS SDK (and so the Go controllers and credential
 * provider) honours them: `HTTPS_PROXY` for HTTPS calls, `HTTP_PROXY` for plain HTTP ones, `NO_PROXY` for the
 * hosts that go direct, each also in lower case (which wins when both are set, as in Node.js). Used by the
 * processes that run on the cluster's side of its egress: the kubelet credential provider (kubelet passes its
 * environment on) and the relay (its Deployment's environment); and every other AWS client of the project.
 *
 * Node.js 22 does the proxying itself, CONNECT tunnels for HTTPS included, in an agent built with `proxyEnv`; this
 * module only decides when to build one, so a process without a proxy keeps its usual agents. Only AWS API calls
 * use it: IMDS is link-local and never proxied (the SDK's IMDS provider makes its own requests). The Lambdas and
 * the local mode's clients (shared/aws/clients.ts) use it too, for the same reason.
 */
import type { Agent as HttpAgent } from 'node:http';

export type ProxyEnv = Readonly<Record<string, string>>;

const PROXIES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'];
const VARIABLES = [...PROXIES, 'NO_PROXY', 'no_proxy'];

/** The proxy variables that are set, or undefined when no proxy is (a `NO_PROXY` alone changes nothing). */
export function proxyEnv(env: Readonly<Record<string, string | undefined>>): ProxyEnv | undefined {
  const set = Object.fromEntries(VARIABLES.flatMap((name) => (env[name] ? [[name, env[name]]] : [])));
  return PROXIES.some((name) => name in set) ? set : undefined;
}

/**
 * An agent that sends `protocol`'s requests through the proxy. `keepAlive` for a process that makes many calls, as
 * the SDK's own agents have it; a one-request process leaves it off.
 */
export function proxyAgent(protocol: string, proxies: ProxyEnv, { keepAlive = false } = {}): HttpAgent {
  const { Agent } = process.getBuiltinModule(protocol === 'https:' ? 'node:https' : 'node:http');
  // `proxyEnv` is in Node.js 22's agents (22.21 and later) but not yet in its type definitions.
  return new Agent({ proxyEnv: proxies, keepAlive } as ConstructorParameters<typeof Agent>[0]);
}

/** Both agents, for an AWS SDK client's `requestHandler` options. */
export function proxyAgents(proxies: ProxyEnv, options: { keepAlive?: boolean } = {}) {
  return { httpAgent: proxyAgent('http:', proxies, options), httpsAgent: proxyAgent('https:', proxies, options) };
}

/**
 * Keep-alive agents through the proxy `env` names, for a long-running process's AWS SDK clients (the relay, the
 * Lambdas, the local mode), or undefined when it names none: the clients then keep the SDK's own agents.
 */
export function envProxyAgents(env: Readonly<Record<string, string | undefined>>) {
  const proxies = proxyEnv(env);
  return proxies ? proxyAgents(proxies, { keepAlive: true }) : undefined;
}
