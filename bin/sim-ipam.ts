import { POOL_ANNOTATION } from '../functions/ipam/record.ts';
import type { Instance } from '../shared/aws/ec2-port.ts';
import type { FakeEc2 } from '../shared/aws/fakes/ec2/fake-ec2.ts';
import type { Clock } from '../shared/clock.ts';
import type { FakeKubernetes } from '../shared/k8s/fakes/fake-kubernetes.ts';
import { IPV4_RESOURCE, POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../shared/k8s/ipam-names.ts';
import type { Pod } from '../shared/k8s/types.ts';
import type { Log } from '../shared/observability/log.ts';

/**
 * The simulation's Windows IP address management (functions/ipam): the VPC CNI ConfigMap turns it on, two Windows
 * Nodes join, and Pods bound to them (as the mutating webhook leaves them: the VPC address resource on
 * containers[0]) get an address of their Node's interface in their annotation. One Pod then goes: its address cools
 * down (a Pod created meanwhile must get another one) and, once the cooldown is over, a new Pod gets it. The log says
 * each of these as it happens; `problems` checks that every Pod got an interface address, that no address was ever
 * on two Pods at once and that the cooled address was reused after its cooldown only.
 */

export const SIM_WINDOWS = { namespace: 'win', app: 'iis' };
/** IPAM_COOLDOWN_SECONDS of the simulation (the deployed default). */
export const SIM_IPAM_COOLDOWN_SECONDS = 30;
/** The Windows Nodes' instance type: added to the simulation's EC2 with EC2's figures (IPv4 addresses per interface). */
export const SIM_WINDOWS_INSTANCE_TYPE = {
  instanceType: 'm5.xlarge',
  maximumNetworkInterfaces: 4,
  ipv4AddressesPerInterface: 15,
  ipv6AddressesPerInterface: 15,
  hypervisor: 'nitro',
  bareMetal: false,
};
/** A scheduled Pod's graceful stop: the kubelet needs this long before the Pod object goes. */
const GRACE_SECONDS = 2;

export interface IpamHost {
  clock: Clock;
  start: number;
  kube: FakeKubernetes;
  ec2: FakeEc2;
  log: Log;
  /** A scenario step `seconds` after the start. */
  at(seconds: number, what: string, run: () => void | Promise<void>): void;
}

/** What happened to one address: who had it, when it went back, who got it next. */
interface Handover {
  address: string;
  node: string;
  from: string;
  releasedAt: number;
  to?: string;
  reusedAt?: number;
}

const podKey = (p: Pod) => `${p.metadata.namespace}/${p.metadata.name}`;
const addressOf = (p: Pod) => p.metadata.annotations?.[POD_IP_ANNOTATION];

/** A Windows Pod as the scheduler leaves it after the relay's webhook added the VPC address resource. */
function windowsPod(nodeName: string, name: string, createdAt: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: SIM_WINDOWS.namespace,
      labels: { app: SIM_WINDOWS.app },
      creationTimestamp: new Date(createdAt).toISOString(),
    },
    spec: {
      nodeName,
      nodeSelector: { 'kubernetes.io/os': 'windows' },
      terminationGracePeriodSeconds: GRACE_SECONDS,
      containers: [
        {
          name: 'iis',
          image: 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
          resources: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } },
        },
      ],
    },
    status: { phase: 'Running' },
  };
}

/**
 * Sets up the scenario on the Windows instances (`windows[0]` gets the churn); Pods come at `atSeconds`, once the
 * Nodes are initialized. `tick` runs on every loop of the simulation.
 */
export function ipamScenario(host: IpamHost, windows: readonly Instance[], atSeconds: number) {
  const { kube, clock } = host;
  const [first, second] = windows.map((i) => i.privateDnsName!);
  const t = (ms: number) => `t+${((ms - host.start) / 1000).toFixed(1)}s`;
  /** The Pods' addresses as last seen, by `namespace/name`. */
  const held = new Map<string, { address: string; node: string }>();
  const handovers: Handover[] = [];
  const coolingLogged = new Set<string>();
  const doubles: string[] = [];
  /** The Pod created while the address it might have taken was cooling, and the one created after. */
  const duringCooldown = 'iis-5';
  const afterCooldown = 'iis-6';
  let deleted: string | undefined;

  host.at(0.2, `ConfigMap ${VPC_CNI_CONFIGMAP.namespace}/${VPC_CNI_CONFIGMAP.name}: enable-windows-ipam "true"`, () => {
    kube.putConfigMap({ metadata: { ...VPC_CNI_CONFIGMAP }, data: { 'enable-windows-ipam': 'true' } });
  });
  if (!first) return undefined;
  const put = (node: string, name: string): void => {
    kube.putPod(windowsPod(node, name, clock.now()));
  };
  host.at(atSeconds, `Windows Pods ${SIM_WINDOWS.namespace}/iis-0..4 bound to ${first} and ${second ?? first}`, () => {
    for (const i of [0, 1, 2]) put(first, `iis-${i}`);
    for (const i of [3, 4]) put(second ?? first, `iis-${i}`);
  });
  host.at(atSeconds + 15, `delete Pod ${SIM_WINDOWS.namespace}/iis-1`, async () => {
    deleted = `${SIM_WINDOWS.namespace}/iis-1`;
    await kube.deletePod(SIM_WINDOWS.namespace, 'iis-1');
  });
  host.at(
    atSeconds + 22,
    `Windows Pod ${SIM_WINDOWS.namespace}/${duringCooldown} on ${first} (while iis-1's address cools down)`,
    () => put(first, duringCooldown),
  );
  host.at(
    atSeconds + 25 + SIM_IPAM_COOLDOWN_SECONDS,
    `Windows Pod ${SIM_WINDOWS.namespace}/${afterCooldown} on ${first} (after the cooldown)`,
    () => put(first, afterCooldown),
  );

  const windowsPods = () => kube.workloads.list().filter((p) => p.metadata.namespace === SIM_WINDOWS.namespace);

  /** What the Pods hold now, told in the log as it changes: new addresses, addresses cooling, addresses reused. */
  function tick(): void {
    // Listing lets the Pods whose grace period passed go, as the kubelet would.
    const pods = windowsPods();
    const seen = new Map<string, string>();
    for (const pod of pods) {
      const value = addressOf(pod);
      if (!value) continue;
      const address = value.split('/')[0]!;
      const other = seen.get(address);
      if (other && !pod.metadata.deletionTimestamp)
        doubles.push(`${address} on ${other} and ${podKey(pod)} at ${t(clock.now())}`);
      seen.set(address, podKey(pod));
      if (held.has(podKey(pod))) continue;
      held.set(podKey(pod), { address, node: pod.spec!.nodeName! });
      const reused = handovers.find((h) => h.address === address && h.to === undefined);
      if (reused) {
        reused.to = podKey(pod);
        reused.reusedAt = clock.now();
        host.log.info(
          `${t(clock.now())} ipam: ${reused.to} got ${value}, the address ${reused.from} gave back ${((reused.reusedAt - reused.releasedAt) / 1000).toFixed(1)} s ago (cooled down)`,
        );
      } else {
        host.log.info(`${t(clock.now())} ipam: ${podKey(pod)} got ${value} on ${pod.spec!.nodeName}`);
      }
    }
    const live = new Set(pods.map(podKey));
    for (const [pod, { address, node }] of held) {
      if (live.has(pod)) continue;
      held.delete(pod);
      handovers.push({ address, node, from: pod, releasedAt: clock.now() });
    }
    for (const instance of windows) {
      const nodeName = instance.privateDnsName!;
      const journal = kube.nodes.get(nodeName)?.metadata.annotations?.[POOL_ANNOTATION];
      const cooling: Record<string, number> = journal ? (JSON.parse(journal).cooling ?? {}) : {};
      for (const [address, since] of Object.entries(cooling)) {
        const id = `${nodeName}/${address}/${since}`;
        if (coolingLogged.has(id)) continue;
        coolingLogged.add(id);
        const from = handovers.find((h) => h.address === address && h.to === undefined)?.from ?? 'no Pod';
        host.log.info(
          `${t(clock.now())} ipam: ${address} (${from}) cooling down on ${nodeName} until ${t((since + SIM_IPAM_COOLDOWN_SECONDS) * 1000)}`,
        );
      }
    }
  }

  /** The secondary addresses EC2 holds on the instance's primary interface. */
  function interfaceAddresses(instance: Instance): Set<string> {
    const eni = host.ec2.instances.get(instance.instanceId)?.networkInterfaces[0]?.networkInterfaceId;
    const record = eni ? host.ec2.interfaceRecord(eni) : undefined;
    return new Set((record?.privateIpAddresses ?? []).filter((a) => !a.primary).map((a) => a.address));
  }

  /** The handover of the deleted Pod's address: to whom, and after how long. */
  const deletedHandover = () => handovers.find((h) => h.from === deleted);

  /** Each unmet expectation, one line. */
  function problems(): string[] {
    const out: string[] = [];
    const byName = new Map(windows.map((i) => [i.privateDnsName!, i]));
    const pods = windowsPods();
    for (const pod of pods) {
      const value = addressOf(pod);
      const instance = byName.get(pod.spec?.nodeName ?? '');
      if (!value) {
        out.push(`Windows Pod ${podKey(pod)} has no ${POD_IP_ANNOTATION} annotation`);
        continue;
      }
      if (!/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(value))
        out.push(`Windows Pod ${podKey(pod)}: "${value}" is not <ip>/<len>`);
      if (instance && !interfaceAddresses(instance).has(value.split('/')[0]!)) {
        out.push(`Windows Pod ${podKey(pod)}: ${value} is not on ${instance.instanceId}'s interface`);
      }
    }
    const names = pods.map((p) => p.metadata.name).sort();
    const want = ['iis-0', 'iis-2', 'iis-3', 'iis-4', duringCooldown, afterCooldown].sort();
    if (JSON.stringify(names) !== JSON.stringify(want))
      out.push(`Windows Pods ${names.join(',')} != ${want.join(',')}`);
    out.push(...doubles.map((d) => `one address on two Pods: ${d}`));
    const handover = deletedHandover();
    if (!handover) out.push(`the address of ${SIM_WINDOWS.namespace}/iis-1 was never given back`);
    else if (handover.to !== `${SIM_WINDOWS.namespace}/${afterCooldown}`) {
      out.push(`iis-1's address ${handover.address} went to ${handover.to ?? 'no Pod'}, want ${afterCooldown}`);
    } else if (handover.reusedAt! - handover.releasedAt < SIM_IPAM_COOLDOWN_SECONDS * 1000) {
      out.push(`iis-1's address ${handover.address} reused before its cooldown ended`);
    }
    return out;
  }

  return {
    nodeNames: windows.map((i) => i.privateDnsName!),
    tick,
    problems,
    /** The deleted Pod's address and who got it after the cooldown (undefined: not given back yet). */
    reuse: () => {
      const h = deletedHandover();
      return h && { address: h.address, from: h.from, to: h.to, afterMs: h.reusedAt && h.reusedAt - h.releasedAt };
    },
    /** One line for the summary. */
    summary(): string {
      const pods = windowsPods();
      const annotated = pods.filter((p) => addressOf(p)).length;
      const h = deletedHandover();
      const reuse = h?.to ? `, ${h.address} cooled down and went from ${h.from} to ${h.to}` : '';
      return `${annotated}/${pods.length} Windows Pods with a VPC address${reuse}`;
    },
  };
}

export type IpamScenario = NonNullable<ReturnType<typeof ipamScenario>>;
