/**
 * HTTP proxies from the environment, honoured as the Go provider honours them (its SDK's client reads the same
 * variables): `HTTPS_PROXY` for HTTPS calls, `HTTP_PROXY` for plain HTTP ones, `NO_PROXY` for the hosts that go
 * direct, each also in lower case (which wins when both are set, as in Node.js). kubelet passes its environment on
 * to the provider, and a provider config can set them in its `env`.
 *
 * Node.js 22 does the proxying itself, CONNECT tunnels for HTTPS included, in an agent built with `proxyEnv`; this
 * module only decides when to build one, so a run without a proxy keeps its one agent-less request. Only the calls
 * to ECR, ECR Public and STS use it: IMDS is link-local and never proxied (the SDK's IMDS provider makes its own
 * requests).
 */
import type { Agent as HttpAgent } from 'node:http';

export type ProxyEnv = Readonly<Record<string, string>>;

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];

/** The proxy variables that are set, or undefined when no proxy is (a `NO_PROXY` alone changes nothing). */
export function proxyEnv(env: Readonly<Record<string, string | undefined>>): ProxyEnv | undefined {
  const set = Object.fromEntries(PROXY_VARIABLES.flatMap((name) => (env[name] ? [[name, env[name]]] : [])));
  const proxies = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => name in set);
  return proxies ? set : undefined;
}

/** An agent that sends `protocol`'s requests through the proxy, or false (no agent) when none is set. */
export function proxyAgent(protocol: string, proxies: ProxyEnv | undefined): HttpAgent | false {
  if (!proxies) return false;
  const { Agent } = process.getBuiltinModule(protocol === 'https:' ? 'node:https' : 'node:http');
  // `proxyEnv` is in Node.js 22's agents (22.21 and later) but not yet in its type definitions.
  return new Agent({ proxyEnv: proxies } as ConstructorParameters<typeof Agent>[0]);
}
