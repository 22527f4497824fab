import { describe, expect, it } from 'vitest';
import { SIM_INGRESS_GROUP } from '../bin/sim-ingress.ts';
import { SIM_WORKLOAD } from '../bin/sim-interruption.ts';
import { SIM_IPAM_COOLDOWN_SECONDS, SIM_WINDOWS } from '../bin/sim-ipam.ts';
import { SIM_TGB } from '../bin/sim-tgb.ts';
import { createSimulation, SIM_CLASSIC_SERVICE, SIM_SERVICE, SIM_WINDOWS_NODES } from '../bin/simulation.ts';
import { readRecord } from '../functions/ipam/record.ts';
import { POD_IP_ANNOTATION } from '../shared/k8s/ipam-names.ts';
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { READINESS_GATE_PREFIX, TGB_FINALIZER } from '../shared/k8s/tgb-types.ts';
import type { Pod } from '../shared/k8s/types.ts';
import { silentLog } from '../shared/observability/log.ts';
import { MetricName } from '../shared/observability/metrics.ts';

/** What of a Pod the readiness gate scenario reads (the shared Pod type leaves these fields out). */
const gatesOf = (pod: Pod) =>
  (pod.spec as { readinessGates?: { conditionType: string }[] } | undefined)?.readinessGates ?? [];
const podIp = (pod: Pod) => String((pod.status as { podIP?: string } | undefined)?.podIP);

describe('npm start scenario (embedded simulation)', () => {
  it('converges: Nodes initialized and routed, stopped one tainted, terminated one deleted, load balancer active, no DLQ', async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 2, log: silentLog });
    await sim.runToCompletion();

    expect(sim.problems()).toEqual([]);
    // Every key reached a controller that takes it (a Node-set round's IngressGroup and TargetGroupBinding keys too):
    // none was refused as terminal.
    expect(sim.metrics.total(MetricName.TerminalErrors)).toBe(0);
    const [first, stopped, terminated, interrupted, ...rest] = sim.instances;
    const running = [first!, ...rest];
    expect(sim.kube.nodes.has(terminated!.privateDnsName!)).toBe(false);
    expect(sim.kube.nodes.has(interrupted!.privateDnsName!)).toBe(false);
    expect(sim.kube.nodes.get(stopped!.privateDnsName!)!.spec?.taints?.map((t) => t.key)).toEqual([TAINT_SHUTDOWN]);
    for (const instance of running) {
      const node = sim.kube.nodes.get(instance.privateDnsName!)!;
      expect(node.spec?.providerID).toBe(`aws:///${instance.availabilityZone}/${instance.instanceId}`);
      expect(node.spec?.taints?.some((t) => t.key === TAINT_UNINITIALIZED)).toBe(false);
      expect(node.metadata.labels?.['topology.kubernetes.io/zone']).toBe(instance.availabilityZone);
    }
    const routes = [...sim.ec2.routeTables.values()][0]!.routes;
    for (const instance of [stopped!, ...running]) {
      const node = sim.kube.nodes.get(instance.privateDnsName!)!;
      expect(routes).toContainEqual(
        expect.objectContaining({
          destination: node.spec?.podCIDR,
          target: expect.objectContaining({ instanceId: instance.instanceId }),
        }),
      );
      expect(node.status?.conditions).toContainEqual(
        expect.objectContaining({ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }),
      );
    }
    expect(routes.filter((r) => r.destination.startsWith('10.244.'))).toHaveLength(7);
    expect(sim.kube.events.filter((e) => e.reason === 'Synced')).toHaveLength(9);

    // The LoadBalancer Service: an active NLB, its hostname in the status, the ready Nodes as targets.
    const service = sim.kube.services.get(`${SIM_SERVICE.namespace}/${SIM_SERVICE.name}`)!;
    const hostname = service.status?.loadBalancer?.ingress?.[0]?.hostname;
    // The Service's NLB (the IngressGroup's Application Load Balancer is checked below; the one in front of the
    // TargetGroupBinding's target group is Terraform's, in its own test).
    const lbs = [...sim.elbv2.loadBalancers.values()].filter((l) => l.lb.type === 'network' && !l.tags.owner);
    expect(lbs).toHaveLength(1);
    expect(lbs[0]!.lb).toMatchObject({ dnsName: hostname, state: 'active', scheme: 'internet-facing' });
    expect(service.metadata.finalizers).toContain('service.kubernetes.io/load-balancer-cleanup');
    const targets = [...sim.elbv2.targetGroups.values()]
      .filter((tg) => sim.elbv2.targetGroupNamed(tg.tg.name)?.loadBalancerArns.includes(lbs[0]!.lb.arn))
      .flatMap((tg) => [...tg.targets.values()]);
    expect(
      targets
        .filter((t) => t.state !== 'draining')
        .map((t) => t.target.id)
        .sort(),
    ).toEqual(running.map((i) => i.instanceId).sort());
    const ensured = sim.kube.events.filter((e) => e.reason === 'EnsuredLoadBalancer');
    expect(ensured.map((e) => e.involvedObject.name).sort()).toEqual(['legacy', 'web']);

    // The Service moved over from the reference controller keeps its Classic ELB, with the same Nodes.
    const legacy = sim.kube.services.get(`${SIM_CLASSIC_SERVICE.namespace}/${SIM_CLASSIC_SERVICE.name}`)!;
    const classicName = `a${SIM_CLASSIC_SERVICE.uid.replace(/-/g, '')}`.slice(0, 32);
    const classic = sim.elb.describeNamed(classicName)!;
    expect(legacy.status?.loadBalancer?.ingress?.[0]?.hostname).toBe(classic.DNSName);
    expect(classic.Instances?.map((i) => i.InstanceId).sort()).toEqual(running.map((i) => i.instanceId).sort());
    // The Service's NLB, the IngressGroup's ALB, and Terraform's in front of the TargetGroupBinding's target group.
    expect(sim.elbv2.loadBalancers.size).toBe(3);
    expect(sim.kube.events.filter((e) => e.reason === 'DeletingNode')).toHaveLength(2);

    // The IngressGroup: one Application Load Balancer, kept by the storefront after the cart's Ingress went.
    const [alb] = [...sim.elbv2.loadBalancers.values()].filter((l) => l.lb.type === 'application');
    expect(alb!.tags['ingress.k8s.aws/stack']).toBe(SIM_INGRESS_GROUP);
    const storefront = sim.ingresses.ingresses.get('shop/storefront')!;
    expect(storefront.status?.loadBalancer?.ingress?.[0]?.hostname).toBe(alb!.lb.dnsName.toLowerCase());
    expect(storefront.metadata.finalizers).toEqual([`group.ingress.k8s.aws/${SIM_INGRESS_GROUP}`]);
    expect(sim.ingresses.ingresses.has('shop/cart')).toBe(false);
    const albGroups = [...sim.elbv2.targetGroups.values()].filter((tg) =>
      sim.elbv2.targetGroupNamed(tg.tg.name)?.loadBalancerArns.includes(alb!.lb.arn),
    );
    expect(albGroups.map((tg) => tg.tg.name)).toEqual([expect.stringMatching(/^k8s-shop-storefro-/)]);
  });

  it('a spot interruption: the Node marked, out of the load balancers, drained within its PDB inside two minutes, then terminated', async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 0, log: silentLog });
    const scenario = sim.interruption!;
    const instance = sim.instances[3]!;
    // Whether the instance was still a live NLB target when the drain ended.
    let inNlbAtDrain: boolean | undefined;
    await sim.runToCompletion(() => {
      if (scenario.drainedAfterMs() === undefined || inNlbAtDrain !== undefined) return;
      inNlbAtDrain = [...sim.elbv2.targetGroups.values()].some((tg) =>
        [...tg.targets.values()].some((t) => t.target.id === instance.instanceId && t.state !== 'draining'),
      );
    });

    expect(sim.problems()).toEqual([]);
    expect(scenario.budgetViolations()).toBe(0);
    expect(scenario.drainedAfterMs()).toBeLessThanOrEqual(120_000);
    // Deregistered by the time its Pods were gone (the exclusion label comes with the cordon).
    expect(inNlbAtDrain).toBe(false);
    const reasons = sim.kube.eventsFor('Node', scenario.nodeName).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['InterruptionReceived', 'Cordoned', 'Drained', 'DeletingNode']));
    expect(reasons.indexOf('Drained')).toBeLessThan(reasons.indexOf('DeletingNode'));
    expect(sim.ec2.instances.get(instance.instanceId)?.state).toBe('terminated');
    // The replicas now run elsewhere, all Ready; the evicted ones are gone.
    const replicas = sim.kube.workloads.list().filter((p) => p.metadata.labels?.app === SIM_WORKLOAD.name);
    expect(replicas).toHaveLength(SIM_WORKLOAD.replicas);
    expect(replicas.every((p) => p.spec?.nodeName !== scenario.nodeName)).toBe(true);
    expect(sim.metrics.total(MetricName.PodsEvicted)).toBe(SIM_WORKLOAD.replicas);
    // The budget did hold evictions back: the replacements had to become Ready first.
    expect(sim.metrics.total(MetricName.PdbWaits)).toBeGreaterThan(0);
  });

  it("Windows IPAM: Pods annotated with their Node's addresses, a deleted Pod's address cooled down then reused, never on two Pods", async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 0, log: silentLog });
    const scenario = sim.ipam!;
    // Every tick: no address on two live Pods, and who held what.
    const doubled: string[] = [];
    const holders = new Map<string, Set<string>>();
    await sim.runToCompletion(() => {
      const seen = new Map<string, string>();
      for (const pod of sim.kube.workloads.pods.values()) {
        const address = pod.metadata.annotations?.[POD_IP_ANNOTATION];
        if (!address || pod.metadata.namespace !== SIM_WINDOWS.namespace) continue;
        if (seen.has(address)) doubled.push(`${address}: ${seen.get(address)} and ${pod.metadata.name}`);
        seen.set(address, pod.metadata.name);
        holders.set(address, new Set([...(holders.get(address) ?? []), pod.metadata.name]));
      }
    });

    expect(sim.problems()).toEqual([]);
    expect(doubled).toEqual([]);
    const pods = [...sim.kube.workloads.pods.values()].filter((p) => p.metadata.namespace === SIM_WINDOWS.namespace);
    expect(pods.map((p) => p.metadata.name).sort()).toEqual(['iis-0', 'iis-2', 'iis-3', 'iis-4', 'iis-5', 'iis-6']);
    for (const pod of pods) {
      const value = pod.metadata.annotations?.[POD_IP_ANNOTATION];
      // An address of the Node's subnet (10.0.100.0/24), with its prefix length.
      expect(value).toMatch(/^10\.0\.100\.\d+\/24$/);
      const node = sim.kube.nodes.get(pod.spec!.nodeName!)!;
      const eni = readRecord(node.metadata.annotations)!.eni!;
      const onInterface = sim.ec2.interfaceRecord(eni)!.privateIpAddresses.map((a) => a.address);
      expect(onInterface).toContain(value!.split('/')[0]);
    }
    const addresses = pods.map((p) => p.metadata.annotations?.[POD_IP_ANNOTATION]);
    expect(new Set(addresses).size).toBe(addresses.length);

    // iis-1's address cooled down: iis-5, created meanwhile, got another one; iis-6, created after, got it.
    const reuse = scenario.reuse()!;
    expect(reuse).toMatchObject({ from: `${SIM_WINDOWS.namespace}/iis-1`, to: `${SIM_WINDOWS.namespace}/iis-6` });
    expect(reuse.afterMs).toBeGreaterThanOrEqual(SIM_IPAM_COOLDOWN_SECONDS * 1000);
    const value = `${reuse.address}/24`;
    expect([...holders.get(value)!].sort()).toEqual(['iis-1', 'iis-6']);
    expect(sim.kube.workloads.get(SIM_WINDOWS.namespace, 'iis-5')!.metadata.annotations?.[POD_IP_ANNOTATION]).not.toBe(
      value,
    );
    const allocated = sim.kube.events.filter((e) => e.reason === 'ResourceAllocated').map((e) => e.involvedObject.name);
    expect(allocated.sort()).toEqual(['iis-0', 'iis-1', 'iis-2', 'iis-3', 'iis-4', 'iis-5', 'iis-6']);
    // Windows Nodes advertise their interface's addresses (m5.xlarge: 15 per interface, 14 secondary).
    expect(scenario.nodeNames).toHaveLength(SIM_WINDOWS_NODES);
    for (const name of scenario.nodeNames) {
      expect(sim.kube.nodes.get(name)!.status?.capacity?.['vpc.amazonaws.com/PrivateIPv4Address']).toBe('14');
    }
  });

  it('a TargetGroupBinding follows a scale-up, then holds a rollout until each new Pod is healthy in the target group', async () => {
    const lines: string[] = [];
    const log = { ...silentLog, info: (message: string) => void lines.push(message) };
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 0, log });
    const scenario = sim.binding;
    // Every tick during the rollout: the healthy targets, and the Pods Ready without a healthy target.
    const readyUnhealthy: string[] = [];
    await sim.runToCompletion(() => {
      const group = [...sim.elbv2.targetGroups.values()].find((g) => g.tg.name === SIM_TGB.targetGroup);
      if (!group || scenario.rollout() !== 'rolling') return;
      const healthy = new Set(
        sim.elbv2
          .targetsOf(group.tg.arn)
          .filter((t) => t.state === 'healthy')
          .map((t) => t.target.id),
      );
      for (const pod of sim.kube.workloads.list()) {
        const gated = gatesOf(pod).length > 0;
        const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        if (pod.metadata.namespace === SIM_TGB.namespace && gated && ready && !healthy.has(podIp(pod)))
          readyUnhealthy.push(pod.metadata.name);
      }
    });

    expect(sim.problems()).toEqual([]);
    expect(scenario.scaledUpTargets()).toBe(SIM_TGB.replicas);
    expect(scenario.fewestHealthy()).toBeGreaterThanOrEqual(SIM_TGB.replicas);
    expect(readyUnhealthy).toEqual([]);
    // Only the new version is left, each with the binding's gate, True; the binding holds its finalizer.
    const pods = sim.kube.workloads.list().filter((p) => p.metadata.namespace === SIM_TGB.namespace);
    expect(pods).toHaveLength(SIM_TGB.replicas);
    for (const pod of pods) {
      expect(pod.metadata.labels?.version).toBe('v2');
      const gate = `${READINESS_GATE_PREFIX}${SIM_TGB.binding}`;
      expect(gatesOf(pod)).toEqual([{ conditionType: gate }]);
      expect(pod.status?.conditions?.find((c) => c.type === gate)?.status).toBe('True');
    }
    const binding = sim.bindings.bindings.get(`${SIM_TGB.namespace}/${SIM_TGB.binding}`)!;
    expect(binding.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(binding.spec).toMatchObject({ targetType: 'ip', ipAddressType: 'ipv4' });
    // The scenario line `npm start` prints.
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `TargetGroupBinding ${SIM_TGB.namespace}/${SIM_TGB.binding}: followed the scale-up to ${SIM_TGB.replicas} targets; rolled out ${SIM_TGB.replicas} gated Pods, never fewer than ${SIM_TGB.replicas} healthy targets`,
        ),
      ),
    );
  });
});
