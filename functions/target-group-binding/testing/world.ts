import type { Target, TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeTargetGroupBindings, fakeTgbControllerKube } from '../../../shared/k8s/fakes/target-group-bindings.ts';
import {
  READINESS_GATE_PREFIX,
  type TargetGroupBinding,
  type TargetGroupBindingSpec,
} from '../../../shared/k8s/tgb-types.ts';
import type { EndpointSlice, Pod } from '../../../shared/k8s/types.ts';
import { LBC_TCP_HEALTH_CHECK } from '../../../shared/load-balancers/health-check.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld, VPC } from '../../../test/helpers/service-world.ts';
import { CLUSTER } from '../../../test/helpers/world.ts';
import type { TgbDeps } from '../deps.ts';
import { targetGroupBindingReconciler } from '../reconciler.ts';

export const NAMESPACE = 'shop';

/** The binding controller's deps on a service world's fakes and these bindings (the lease not checked). */
export function tgbDepsOn(w: ServiceWorld, bindings: FakeTargetGroupBindings): TgbDeps {
  return {
    clusterName: CLUSTER,
    vpcId: VPC,
    readinessRequeueSeconds: 10,
    checkLbcLease: false,
    kube: fakeTgbControllerKube(bindings, w.kube),
    ec2: w.ec2Port,
    elbv2: w.elbv2Port,
    clock: w.clock,
    log: w.serviceDeps.log,
    metrics: w.metrics,
  };
}

export interface GatedPodOptions {
  node?: string;
  ready?: boolean;
  containersReady?: boolean;
  /** Binding names: the Pod gets `target-health.elbv2.k8s.aws/<name>` for each. */
  gates?: readonly string[];
  deleting?: boolean;
}

/** A running Pod `app: web` on a Node (node-1 unless told): containers ready and Ready unless told, with these gates. */
export function putGatedPod(
  w: ServiceWorld,
  namespace: string,
  name: string,
  ip: string,
  options: GatedPodOptions = {},
): Pod {
  return w.kube.putPod({
    metadata: {
      name,
      namespace,
      labels: { app: 'web' },
      ...(options.deleting ? { deletionTimestamp: new Date(w.clock.now()).toISOString() } : {}),
    },
    spec: {
      nodeName: options.node ?? 'node-1',
      readinessGates: (options.gates ?? []).map((b) => ({ conditionType: READINESS_GATE_PREFIX + b })),
    },
    status: {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [
        { type: 'ContainersReady', status: (options.containersReady ?? true) ? 'True' : 'False' },
        { type: 'Ready', status: (options.ready ?? true) ? 'True' : 'False' },
      ],
    },
  });
}

/**
 * The service world (a VPC, a cluster-tagged Node group, FakeEc2, FakeElbv2, FakeKubernetes) plus what bindings need:
 * FakeTargetGroupBindings, the controller's deps on them, target groups someone else made (as Terraform would), a
 * Service with its Pods and EndpointSlice, and a pass (`reconcile`) answering the reconciler's result.
 */
export function createTgbWorld() {
  const w = createServiceWorld();
  const bindings = new FakeTargetGroupBindings(w.clock);
  const deps = tgbDepsOn(w, bindings);

  /** A target group made outside the cluster, behind a listener of a load balancer (so its targets get checked). */
  const targetGroup = async (
    name: string,
    options: { targetType?: 'ip' | 'instance'; port?: number; listener?: boolean; vpcId?: string; ipv6?: boolean } = {},
  ): Promise<TargetGroup> => {
    const group = await w.elbv2Port.createTargetGroup({
      name,
      protocol: 'TCP',
      port: options.port ?? 8080,
      targetType: options.targetType ?? 'ip',
      ...(options.ipv6 ? { ipAddressType: 'ipv6' as const } : {}),
      vpcId: options.vpcId ?? VPC,
      healthCheck: LBC_TCP_HEALTH_CHECK,
      tags: { owner: 'terraform' },
    });
    if (group === 'name-taken') throw new Error(`target group ${name} exists`);
    if (options.listener !== false) {
      const lb = w.elbv2.putLoadBalancer({
        name: `lb-${name}`,
        scheme: 'internal',
        ...(options.ipv6 ? { ipAddressType: 'dualstack' as const } : {}),
        subnetMappings: [{ subnetId: makeSubnet({ index: 20, zone: 'eu-west-1a' }).subnetId }],
        securityGroups: [],
        tags: {},
        state: 'active',
      });
      await w.elbv2Port.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    }
    // Moves with the test's own helpers and writes only: the counters start at 0 for the controller.
    w.elbv2.resetCalls();
    return group;
  };

  /** A binding as a user applies it. */
  const putBinding = (
    name: string,
    spec: Partial<TargetGroupBindingSpec>,
    metadata: Partial<TargetGroupBinding['metadata']> = {},
  ) =>
    bindings.putBinding({
      metadata: { name, namespace: NAMESPACE, ...metadata },
      spec: { serviceRef: { name: 'web', port: 80 }, ...spec },
    });

  const binding = (name: string) => bindings.bindings.get(`${NAMESPACE}/${name}`);

  /** The Service `web` selecting `app: web`, port 80 (`http`) -> 8080, node port 30080. */
  const putWebService = (spec: Record<string, unknown> = {}) =>
    w.kube.putService({
      metadata: { name: 'web', namespace: NAMESPACE },
      spec: {
        type: 'NodePort',
        selector: { app: 'web' },
        ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
        ...spec,
      },
    });

  /** A running Pod of `web` on a Node: ready unless told, with the readiness gate of these bindings. */
  const putPod = (name: string, ip: string, options: GatedPodOptions = {}): Pod =>
    putGatedPod(w, NAMESPACE, name, ip, options);

  /** The EndpointSlice of `web`: each Pod's address on 8080, ready as told. */
  const putSlice = (endpoints: { pod: string; ip: string; ready?: boolean; terminating?: boolean; node?: string }[]) =>
    w.kube.putEndpointSlice({
      metadata: { name: 'web-abc12', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      endpoints: endpoints.map((e) => ({
        addresses: [e.ip],
        conditions: { ready: e.ready ?? true, serving: e.ready ?? true, terminating: e.terminating ?? false },
        nodeName: e.node ?? 'node-1',
        targetRef: { kind: 'Pod', name: e.pod, namespace: NAMESPACE },
      })),
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    } satisfies EndpointSlice);

  /**
   * A Ready Node `node-<index>` whose instance's primary interface (in `group`) also holds these Pod addresses, as
   * the VPC CNI gives Pods secondary addresses of the Node's interfaces.
   */
  const addPodNode = (index: number, podIps: readonly string[] = [], group = NODE_GROUP) => {
    const { instance, node } = w.addNode(index, { group });
    const withPods = {
      ...instance,
      networkInterfaces: instance.networkInterfaces.map((e) =>
        e.deviceIndex === 0
          ? {
              ...e,
              privateIpAddresses: [...e.privateIpAddresses, ...podIps.map((address) => ({ address, primary: false }))],
            }
          : e,
      ),
    };
    w.ec2.putInstance(withPods);
    return { instance: withPods, node };
  };

  /** One pass of the reconciler over a binding. */
  const reconcile = (name: string, d: TgbDeps = deps): Promise<ReconcileResult | undefined> =>
    targetGroupBindingReconciler.reconcile({ kind: 'TargetGroupBinding', namespace: NAMESPACE, name }, d, undefined, {
      hints: [],
      payloads: [],
      receiveCount: 1,
    });

  /** Registered targets, draining ones left out, as `id:port`. */
  const registered = (arn: string) =>
    w.elbv2
      .targetsOf(arn)
      .filter((t) => t.state !== 'draining')
      .map((t) => `${t.target.id}:${t.target.port}`)
      .sort();

  const healthy = (arn: string) => w.elbv2.targetsOf(arn).filter((t) => t.state === 'healthy').length;

  const eventsOf = (name: string, reason?: string) =>
    w.kube.eventsFor('TargetGroupBinding', name, reason).map((e) => `${e.reason}: ${e.message}`);

  /** Every write the controller made since the last reset: AWS, Kubernetes and bindings. */
  const writes = () => w.awsWrites() + w.kube.writeCount() + bindings.writeCount();
  const reset = () => {
    w.resetCounters();
    bindings.resetCalls();
  };

  const target = (id: string, port = 8080): Target => ({ id, port });

  return {
    ...w,
    bindings,
    deps,
    targetGroup,
    putBinding,
    binding,
    putWebService,
    putPod,
    putSlice,
    addPodNode,
    reconcile,
    registered,
    healthy,
    eventsOf,
    writes,
    reset,
    target,
    NODE_GROUP,
  };
}

export type TgbWorld = ReturnType<typeof createTgbWorld>;
