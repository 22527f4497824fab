import type { Elbv2Port, TargetGroup } from '../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../shared/aws/fakes/ec2/fake-ec2.ts';
import type { FakeElbv2 } from '../shared/aws/fakes/elbv2/fake-elbv2.ts';
import type { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import type { FakeTargetGroupBindings } from '../shared/k8s/fakes/target-group-bindings.ts';
import { isNodeReady } from '../shared/k8s/node-helpers.ts';
import { READINESS_GATE_INJECT_LABEL, READINESS_GATE_PREFIX } from '../shared/k8s/tgb-types.ts';
import type { Pod } from '../shared/k8s/types.ts';
import { LBC_TCP_HEALTH_CHECK } from '../shared/load-balancers/health-check.ts';
import type { Log } from '../shared/observability/log.ts';

/**
 * The simulation's TargetGroupBinding: a target group made outside the cluster (as Terraform would, behind an
 * internal Network Load Balancer) is bound to the Service `payments/ledger`, whose Deployment runs 2 replicas. The
 * Deployment scales up to 3, and the binding follows (3 targets). Then the namespace asks for readiness gates
 * (`elbv2.k8s.aws/pod-readiness-gate-inject: enabled`) and the Deployment rolls out a new version, one Pod at a time
 * (maxSurge 1, maxUnavailable 0): each new Pod gets the binding's gate at creation (as the relay's webhook
 * `mpod.elbv2.k8s.aws` adds it), is registered while its gate holds it back, and is Ready only once its target is
 * healthy; only then does an old Pod go. So the target group never has fewer than 3 healthy targets. This file plays
 * the Deployment, ReplicaSet, kubelet and EndpointSlice controllers; the relay and the binding controller are the
 * real ones (bin/simulation.ts).
 */

export const SIM_TGB = {
  namespace: 'payments',
  service: 'ledger',
  binding: 'ledger',
  targetGroup: 'ledger-ip',
  /** Replicas after the scale-up, and the rollout's budget: never fewer healthy targets than this. */
  replicas: 3,
} as const;

const TARGET_PORT = 8080;
const GATE = `${READINESS_GATE_PREFIX}${SIM_TGB.binding}`;

export interface TgbHost {
  kube: FakeKubernetes;
  bindings: FakeTargetGroupBindings;
  elbv2: FakeElbv2;
  /** What "Terraform" makes the target group with. */
  elbv2Port: Elbv2Port;
  vpcId: string;
  log: Log;
  /** A scenario step `seconds` after the start. */
  at(seconds: number, what: string, run: () => void | Promise<void>): void;
}

interface Replica {
  name: string;
  ip: string;
  version: 1 | 2;
  ready: boolean;
}

export function tgbScenario(host: TgbHost, startAt: number) {
  const { kube, bindings, elbv2, elbv2Port, vpcId, log, at } = host;
  const found: string[] = [];
  const replicas: Replica[] = [];
  let group: TargetGroup | undefined;
  let nextIp = 10;
  let rollout: 'idle' | 'rolling' | 'done' = 'idle';
  /** The fewest healthy targets seen once the scale-up was served, and during the rollout. */
  let fewestHealthy: number | undefined;
  let scaledUpTargets: number | undefined;

  const nodeName = () =>
    [...kube.nodes.values()].find((n) => isNodeReady(n) && !n.metadata.deletionTimestamp)?.metadata.name;

  /** The EndpointSlice controller: every live replica's address, ready as its Pod is. */
  const writeSlice = () =>
    kube.putEndpointSlice({
      metadata: {
        name: `${SIM_TGB.service}-x7k2p`,
        namespace: SIM_TGB.namespace,
        labels: { 'kubernetes.io/service-name': SIM_TGB.service },
      },
      addressType: 'IPv4',
      endpoints: replicas.map((r) => ({
        addresses: [r.ip],
        conditions: { ready: r.ready, serving: r.ready, terminating: false },
        nodeName: nodeName(),
        targetRef: { kind: 'Pod', name: r.name, namespace: SIM_TGB.namespace },
      })),
      ports: [{ name: 'http', port: TARGET_PORT, protocol: 'TCP' }],
    });

  /** The kubelet's view of a replica's Pod; `gated`: created with the binding's readiness gate. */
  const writePod = (r: Replica, gated: boolean, gate?: 'True' | 'False') => {
    const conditions = [
      { type: 'ContainersReady', status: 'True' },
      { type: 'Ready', status: r.ready ? 'True' : 'False' },
      ...(gate ? [{ type: GATE, status: gate }] : []),
    ];
    kube.putPod({
      metadata: {
        name: r.name,
        namespace: SIM_TGB.namespace,
        labels: { app: SIM_TGB.service, version: `v${r.version}` },
      },
      spec: { nodeName: nodeName(), ...(gated ? { readinessGates: [{ conditionType: GATE }] } : {}) },
      status: { phase: 'Running', podIP: r.ip, podIPs: [{ ip: r.ip }], conditions },
    } as Pod);
  };

  /** A new replica: Ready at once without a gate; with one, Ready only once the controller sets its condition. */
  const addReplica = (version: 1 | 2) => {
    const gated = kube.workloads.getNamespaceRequest(SIM_TGB.namespace)?.metadata.labels?.[READINESS_GATE_INJECT_LABEL];
    const r: Replica = {
      name: `${SIM_TGB.service}-v${version}-${nextIp}`,
      ip: `10.0.30.${nextIp++}`,
      version,
      ready: !gated,
    };
    replicas.push(r);
    writePod(r, gated === 'enabled');
    writeSlice();
    return r;
  };

  const healthy = () => (group ? elbv2.targetsOf(group.arn).filter((t) => t.state === 'healthy').length : 0);
  const registered = () =>
    group
      ? elbv2
          .targetsOf(group.arn)
          .filter((t) => t.state !== 'draining')
          .map((t) => t.target.id)
          .sort()
      : [];

  at(
    startAt,
    `Terraform makes target group ${SIM_TGB.targetGroup}; Deployment ${SIM_TGB.namespace}/${SIM_TGB.service} runs 2 replicas; TargetGroupBinding ${SIM_TGB.binding} binds them`,
    async () => {
      kube.workloads.putNamespace({ metadata: { name: SIM_TGB.namespace } });
      const created = await elbv2Port.createTargetGroup({
        name: SIM_TGB.targetGroup,
        protocol: 'TCP',
        port: TARGET_PORT,
        targetType: 'ip',
        vpcId,
        healthCheck: LBC_TCP_HEALTH_CHECK,
        tags: { owner: 'terraform' },
      });
      if (created === 'name-taken') throw new Error(`simulation: target group ${SIM_TGB.targetGroup} exists`);
      group = created;
      // Behind a listener, so its targets are health-checked.
      const lb = elbv2.putLoadBalancer({
        name: 'ledger-internal',
        scheme: 'internal',
        subnetMappings: [{ subnetId: makeSubnet({ index: 100, zone: 'eu-west-1a' }).subnetId }],
        securityGroups: [],
        tags: { owner: 'terraform' },
        state: 'active',
      });
      await elbv2Port.createListener(lb.arn, { port: 443, protocol: 'TCP', targetGroupArn: group.arn }, {});
      kube.putService({
        metadata: { name: SIM_TGB.service, namespace: SIM_TGB.namespace },
        spec: {
          type: 'ClusterIP',
          selector: { app: SIM_TGB.service },
          ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: TARGET_PORT }],
        },
      });
      addReplica(1);
      addReplica(1);
      bindings.putBinding({
        metadata: { name: SIM_TGB.binding, namespace: SIM_TGB.namespace },
        spec: { serviceRef: { name: SIM_TGB.service, port: 80 }, targetGroupARN: group.arn },
      });
    },
  );
  at(startAt + 30, `Deployment ${SIM_TGB.namespace}/${SIM_TGB.service} scales up to ${SIM_TGB.replicas}`, () => {
    while (replicas.length < SIM_TGB.replicas) addReplica(1);
  });
  at(
    startAt + 60,
    `check: the binding follows the scale-up; namespace ${SIM_TGB.namespace} asks for readiness gates, and a rollout starts`,
    async () => {
      // The health checks have run since (30 s at 10 s intervals): looks move the fake's targets on as time would.
      for (let look = 0; group && look < 3 && healthy() < registered().length; look++) {
        await elbv2Port.describeTargetHealth(group.arn);
      }
      const ips = replicas.map((r) => r.ip).sort();
      scaledUpTargets = registered().length;
      if (JSON.stringify(registered()) !== JSON.stringify(ips))
        found.push(
          `after the scale-up, target group ${SIM_TGB.targetGroup} has ${registered().join(',')}, not ${ips.join(',')}`,
        );
      kube.workloads.putNamespace({
        metadata: { name: SIM_TGB.namespace, labels: { [READINESS_GATE_INJECT_LABEL]: 'enabled' } },
      });
      fewestHealthy = healthy();
      rollout = 'rolling';
      addReplica(2);
    },
  );

  /**
   * The Deployment controller between steps: once the new Pod's gate is True the kubelet marks it Ready, then an old
   * Pod goes and the next new one comes (maxSurge 1, maxUnavailable 0).
   */
  function tick(): void {
    if (rollout !== 'rolling') return;
    fewestHealthy = Math.min(fewestHealthy ?? Infinity, healthy());
    const waiting = replicas.find((r) => r.version === 2 && !r.ready);
    if (waiting) {
      const pod = kube.workloads.get(SIM_TGB.namespace, waiting.name);
      if (pod?.status?.conditions?.find((c) => c.type === GATE)?.status !== 'True') return;
      waiting.ready = true;
      writePod(waiting, true, 'True');
      const old = replicas.findIndex((r) => r.version === 1);
      if (old >= 0) {
        const [gone] = replicas.splice(old, 1);
        void kube.deletePod(SIM_TGB.namespace, gone!.name);
      }
      writeSlice();
    }
    if (replicas.filter((r) => r.version === 2).length < SIM_TGB.replicas) addReplica(2);
    else if (replicas.every((r) => r.version === 2 && r.ready)) {
      rollout = 'done';
      log.info(`TargetGroupBinding ${SIM_TGB.namespace}/${SIM_TGB.binding}: ${summary()}`);
    }
  }

  /** What the binding did, in a line (the exit summary's row). */
  function summary(): string {
    if (rollout === 'idle') return 'not started';
    if (rollout === 'rolling') return `followed the scale-up to ${scaledUpTargets} targets; rollout under way`;
    return `followed the scale-up to ${scaledUpTargets} targets; rolled out ${SIM_TGB.replicas} gated Pods, never fewer than ${fewestHealthy} healthy targets`;
  }

  return {
    tick,
    summary,
    /** The fewest healthy targets during the rollout (undefined before it). */
    fewestHealthy: () => fewestHealthy,
    scaledUpTargets: () => scaledUpTargets,
    rollout: () => rollout,
    problems(): string[] {
      const out = [...found];
      if (rollout !== 'done') out.push(`the gated rollout of ${SIM_TGB.namespace}/${SIM_TGB.service} did not finish`);
      const ips = replicas.map((r) => r.ip).sort();
      if (JSON.stringify(registered()) !== JSON.stringify(ips))
        out.push(
          `target group ${SIM_TGB.targetGroup} has ${registered().join(',')}, not the new Pods ${ips.join(',')}`,
        );
      if ((fewestHealthy ?? 0) < SIM_TGB.replicas)
        out.push(`the rollout went down to ${fewestHealthy} healthy targets (budget: ${SIM_TGB.replicas})`);
      if (!bindings.bindings.get(`${SIM_TGB.namespace}/${SIM_TGB.binding}`)?.metadata.finalizers?.length)
        out.push(`TargetGroupBinding ${SIM_TGB.binding} has no finalizer`);
      return out;
    },
  };
}
