import { FakeTargetGroupBindings, fakeStackBindings } from '../../../shared/k8s/fakes/target-group-bindings.ts';
import type { TargetGroupBinding } from '../../../shared/k8s/tgb-types.ts';
import type { EndpointSlice, Pod, ServicePortSpec } from '../../../shared/k8s/types.ts';
import type { ServiceWorld } from '../../../test/helpers/service-world.ts';
import { putGatedPod, tgbDepsOn } from '../../target-group-binding/testing/world.ts';
import { ANNOTATION } from '../annotations.ts';
import type { ServiceDeps } from '../deps.ts';
import { lbcWorld, putLbcService } from './lbc.ts';

/**
 * A service world's controller with SERVICE_LBC_SERVICES and stack bindings on (STACK_TARGET_GROUP_BINDINGS): the
 * bindings live in a FakeTargetGroupBindings, the Pods in the world's FakeKubernetes. Helpers put the reference's ip
 * Service `web` (selector `app: web`), its Pods (with readiness gates, as the relay's webhook gives them) and its
 * EndpointSlice (endpoints naming their Pod and Node, as the EndpointSlice controller writes them).
 */
export function stackWorld(w: ServiceWorld) {
  const bindings = new FakeTargetGroupBindings(w.clock);
  const lbc = lbcWorld(w);
  const deps: ServiceDeps = { ...lbc.deps, stackBindings: fakeStackBindings(bindings, w.kube) };
  return {
    bindings,
    deps,
    /** The binding controller's deps on the same fakes (it keeps the stack bindings' readiness gates). */
    tgbDeps: tgbDepsOn(w, bindings),
    pass: (name = 'web', options: { deps?: ServiceDeps } = {}) => lbc.pass(name, { deps: options.deps ?? deps }),
    converge: (name = 'web', options: { deps?: ServiceDeps } = {}) =>
      lbc.converge(name, { deps: options.deps ?? deps }),
    /** The bindings of namespace `default`, by name. */
    list: (): TargetGroupBinding[] =>
      [...bindings.bindings.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)),
  };
}

/** The reference's ip Service `web` (type `external`, `nlb-target-type: ip`): port 80 -> 8080 unless told. */
export function putIpService(w: ServiceWorld, ports?: ServicePortSpec[]) {
  return putLbcService(w, {
    byClass: false,
    annotations: { [ANNOTATION.type]: 'external', [ANNOTATION.nlbTargetType]: 'ip' },
    ...(ports ? { ports } : {}),
  });
}

/** A running Pod of `web`: containers ready; Ready unless told; with the gates of these bindings. */
export function putWebPod(
  w: ServiceWorld,
  name: string,
  ip: string,
  options: { node?: string; ready?: boolean; gates?: readonly string[]; deleting?: boolean } = {},
): Pod {
  return putGatedPod(w, 'default', name, ip, options);
}

/** The EndpointSlice of `web`: each Pod's address on 8080 (`http`) and 8443 (`https`), ready as told. */
export function putWebSlice(
  w: ServiceWorld,
  endpoints: readonly { pod: string; ip: string; ready?: boolean; terminating?: boolean; node?: string }[],
) {
  return w.kube.putEndpointSlice({
    metadata: { name: 'web-abc12', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, serving: e.ready ?? true, terminating: e.terminating ?? false },
      nodeName: e.node ?? 'node-1',
      targetRef: { kind: 'Pod', name: e.pod, namespace: 'default' },
    })),
    ports: [
      { name: 'http', protocol: 'TCP', port: 8080 },
      { name: 'https', protocol: 'TCP', port: 8443 },
    ],
  } satisfies EndpointSlice);
}
