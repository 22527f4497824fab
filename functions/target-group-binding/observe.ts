import type { Instance } from '../../shared/aws/ec2-port.ts';
import type { Target } from '../../shared/aws/elbv2-port.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { podAddresses } from '../../shared/k8s/pod-readiness.ts';
import type { TargetGroupBinding, TgbIpAddressType, TgbTargetType } from '../../shared/k8s/tgb-types.ts';
import type { EndpointSlice, Node, Pod, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import type { TgbDeps } from './deps.ts';
import { servicePortOf, wantedInstanceIds, wantedIpTargets } from './targets.ts';

/**
 * What a binding's targets are made from, read from Kubernetes (and EC2, for instance targets): its Service, the
 * port, the EndpointSlices and Pods, or the Nodes and their instances; and the wanted targets from them.
 */

export type Backend =
  | { kind: 'missing'; message: string }
  | { kind: 'problem'; field: string; message: string }
  | {
      kind: 'found';
      service: Service;
      servicePort: ServicePortSpec;
      targets: Target[];
      /** Instance targets: the candidate instances as read (their interfaces give the rules' groups). */
      instances?: Map<string, Instance>;
      /** The Pods the Service selects (ip targets), for the readiness gates. */
      pods: Pod[];
      /** A networking port's name, resolved against the targets. */
      resolvePort: (name: string) => number | undefined;
      /** The port a Pod's target is registered on (ip targets). */
      podTargetPort: (pod: Pod) => number | undefined;
    };

type ObserveDeps = Pick<TgbDeps, 'kube' | 'ec2'>;

async function read<T>(doing: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw classifyKubernetesError(doing, err);
  }
}

export async function readService(binding: TargetGroupBinding, deps: ObserveDeps): Promise<Service | undefined> {
  const namespace = binding.metadata.namespace ?? 'default';
  const name = binding.spec.serviceRef.name;
  return read(`reading service ${namespace}/${name}`, () => deps.kube.getService(namespace, name));
}

export async function readPods(namespace: string, service: Service, deps: ObserveDeps): Promise<Pod[]> {
  const selector = service.spec?.selector;
  if (!selector || Object.keys(selector).length === 0) return [];
  return read(`listing the pods of service ${namespace}/${service.metadata.name}`, () =>
    deps.kube.listPods(namespace, selector),
  );
}

export async function observeBackend(
  binding: TargetGroupBinding,
  shape: { targetType: TgbTargetType; ipAddressType: TgbIpAddressType },
  deps: ObserveDeps,
): Promise<Backend> {
  const namespace = binding.metadata.namespace ?? 'default';
  const ref = binding.spec.serviceRef;
  const service = await readService(binding, deps);
  if (!service) return { kind: 'missing', message: `backend service ${namespace}/${ref.name} not found` };
  const servicePort = servicePortOf(service, ref.port);
  if (!servicePort) {
    return {
      kind: 'problem',
      field: 'spec.serviceRef.port',
      message: `service ${namespace}/${ref.name} has no port ${ref.port}`,
    };
  }
  if (shape.targetType === 'instance') return instanceBackend(binding, service, servicePort, deps);
  const slices = await read(`listing endpoint slices of ${namespace}/${ref.name}`, () =>
    deps.kube.listEndpointSlices(namespace, ref.name),
  );
  const pods = await readPods(namespace, service, deps);
  const notReady = slices.some((s) => s.endpoints?.some((e) => e.conditions?.ready === false));
  const nodes = notReady ? await read('listing nodes', () => deps.kube.listNodes()) : [];
  const targets = wantedIpTargets({
    servicePort,
    ipAddressType: shape.ipAddressType,
    slices,
    pods: new Map(pods.map((p) => [p.metadata.name, p])),
    nodes: new Map(nodes.map((n) => [n.metadata.name, n])),
    bindingName: binding.metadata.name,
  });
  const portOfAddress = new Map(targets.map((t) => [t.id, t.port]));
  return {
    kind: 'found',
    service,
    servicePort,
    targets,
    pods,
    resolvePort: (name) => containerPort(pods, name) ?? namedIpPort(name, servicePort, slices, targets),
    podTargetPort: (pod) =>
      podAddresses(pod)
        .map((a) => portOfAddress.get(a))
        .find((p) => p !== undefined) ?? slicePort(servicePort, slices),
  };
}

async function instanceBackend(
  binding: TargetGroupBinding,
  service: Service,
  servicePort: ServicePortSpec,
  deps: ObserveDeps,
): Promise<Backend> {
  const namespace = binding.metadata.namespace ?? 'default';
  const nodePort = servicePort.nodePort;
  if (!nodePort) {
    return {
      kind: 'problem',
      field: 'spec.serviceRef.port',
      message:
        `service ${namespace}/${service.metadata.name} port ${binding.spec.serviceRef.port} has no nodePort: ` +
        'instance targets need a NodePort or LoadBalancer service',
    };
  }
  const nodes: Node[] = await read('listing nodes', () => deps.kube.listNodes());
  const candidates = wantedInstanceIds(nodes, binding.spec.nodeSelector, () => true);
  const instances = candidates.length > 0 ? await deps.ec2.describeInstances(candidates) : new Map();
  const ids = candidates.filter((id) => instances.get(id)?.state === 'running');
  return {
    kind: 'found',
    service,
    servicePort,
    targets: ids.map((id) => ({ id, port: nodePort })),
    instances,
    pods: [],
    // The reference takes port numbers only with instance targets: a name resolves to nothing, a problem named.
    resolvePort: () => undefined,
    podTargetPort: () => undefined,
  };
}

/**
 * A port name of the Pods (`spec.containers[].ports[].name`), as the reference resolves the networking ports of ip
 * targets. https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/spec/
 */
function containerPort(pods: readonly Pod[], name: string): number | undefined {
  for (const pod of pods) {
    const containers = (pod.spec?.containers ?? []) as { ports?: { name?: string; containerPort?: number }[] }[];
    for (const c of containers) {
      const port = c.ports?.find((p) => p.name === name)?.containerPort;
      if (port !== undefined) return port;
    }
  }
  return undefined;
}

/** The port of the slices for the Service port (by the port's name, as EndpointSlices name them). */
function slicePort(servicePort: ServicePortSpec, slices: readonly EndpointSlice[]): number | undefined {
  for (const slice of slices) {
    const port = (slice.ports ?? []).find((p) => (p.name ?? '') === (servicePort.name ?? ''))?.port;
    if (port !== undefined) return port;
  }
  return undefined;
}

/** A networking port name: the Service port's (or its named target port), else a port the slices name. */
function namedIpPort(
  name: string,
  servicePort: ServicePortSpec,
  slices: readonly EndpointSlice[],
  targets: readonly Target[],
): number | undefined {
  if (name === servicePort.name || name === servicePort.targetPort) {
    return slicePort(servicePort, slices) ?? targets[0]?.port;
  }
  for (const slice of slices) {
    const port = (slice.ports ?? []).find((p) => p.name === name)?.port;
    if (port !== undefined) return port;
  }
  return undefined;
}
