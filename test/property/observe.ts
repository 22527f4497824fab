import { OWNER_TAG } from '../../functions/ipam/gc.ts';
import { POOL_ANNOTATION } from '../../functions/ipam/record.ts';
import { clusterTagKey } from '../../shared/aws/ownership.ts';
import { POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';
import type { PodDisruptionBudget } from '../../shared/k8s/types.ts';
import { CLUSTER, CLUSTER_CIDR, type Cluster, NODE_GROUP } from './cluster.ts';

const BACKEND_ROLE_TAG = 'serverless-ccm/security-group-role';
const SERVICE_TAG = 'kubernetes.io/service-name';

import { NAMESPACE, nodeNameOf, SERVICES, type Truth, WINDOWS_SLOT } from './history.ts';
import { isBoundTargetGroup, tgbProjection } from './tgb-observe.ts';

/**
 * What the property compares and checks: a projection of the final Kubernetes and AWS state without generated IDs,
 * ARNs, DNS names or times (two runs that reached the same state compare equal however they got there), the
 * invariants that must hold after every step, and the ownership of every AWS resource the controller made.
 */

const clusterTag = clusterTagKey(CLUSTER);
const sorted = <T>(xs: T[]) => [...xs].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
const routePrefix = CLUSTER_CIDR.split('.').slice(0, 2).join('.');
/** An Ingress stack's `serverless-ccm/applied` tag says when (which depends on the run) after the model's hash. */
const APPLIED_TAG = 'serverless-ccm/applied';
const timeless = (tags: Record<string, string>) =>
  tags[APPLIED_TAG] === undefined ? tags : { ...tags, [APPLIED_TAG]: tags[APPLIED_TAG].split('@')[0]! };

export function projection(c: Cluster, truth: Truth) {
  const { ec2, elbv2, elb, kube } = c;
  // Names by owner: a Service's load balancer is `prop-<ns>-<name>-<hash>` or, after a replacement, its successor
  // `...-b-<hash>`; which one a Service ends with depends on whether it was replaced on the way, not on where it is.
  const owner = (tags: Record<string, string>, fallback: string) => tags[SERVICE_TAG] ?? fallback;
  const groupName = (id: string) => {
    const g = ec2.securityGroups.get(id);
    if (!g) return `missing:${id}`;
    return g.tags[SERVICE_TAG] ? `group of ${g.tags[SERVICE_TAG]}` : g.groupName;
  };
  const tgName = (arn: string | undefined) => {
    if (!arn) return undefined;
    const g = [...elbv2.targetGroups.values()].find((x) => x.tg.arn === arn);
    return g ? `${owner(g.tags, g.tg.name)} ${g.tg.protocol}:${g.tg.port}` : `missing:${arn}`;
  };
  const lbByDns = (host: string | undefined) => {
    if (host === undefined) return undefined;
    const nlb = [...elbv2.loadBalancers.values()].find((l) => l.lb.dnsName === host);
    if (nlb) return `NLB of ${owner(nlb.tags, nlb.lb.name)}`;
    const clb = [...elb.loadBalancers.values()].find((l) => l.dnsName === host);
    if (clb) return `CLB of ${owner(clb.tags, clb.name)}`;
    return `unknown:${host}`;
  };

  // Turned off, the IP address manager leaves the pool as it is (functions/ipam/reconciler.ts): how big depends on
  // how far it got before, not on where the cluster ended.
  const cniOn = kube.configMaps
    .list()
    .some(
      (m) =>
        m.metadata.namespace === VPC_CNI_CONFIGMAP.namespace &&
        m.metadata.name === VPC_CNI_CONFIGMAP.name &&
        m.data?.['enable-windows-ipam'] === 'true',
    );
  const ipamOn = cniOn;
  const windowsLive = truth.nodesToKeep().includes(WINDOWS_SLOT);
  const nodes = sorted(
    [...kube.nodes.values()].map((n) => ({
      name: n.metadata.name,
      providerID: n.spec?.providerID,
      unschedulable: n.spec?.unschedulable ?? false,
      taints: sorted((n.spec?.taints ?? []).map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`)),
      labels: n.metadata.labels,
      annotations: Object.keys(n.metadata.annotations ?? {})
        .filter((k) => k !== POOL_ANNOTATION)
        .sort()
        .map((k) => `${k}=${n.metadata.annotations![k]}`),
      addresses: nodeAddresses(n.status?.addresses ?? [], ipamOn),
      networkUnavailable: n.status?.conditions?.find((x) => x.type === 'NetworkUnavailable')?.status,
      terminating: Boolean(n.metadata.deletionTimestamp),
    })),
  );
  const services = sorted(
    [...kube.services.values()].map((s) => ({
      key: `${s.metadata.namespace}/${s.metadata.name}`,
      finalizers: [...(s.metadata.finalizers ?? [])].sort(),
      terminating: Boolean(s.metadata.deletionTimestamp),
      ingress: (s.status?.loadBalancer?.ingress ?? []).map((i) => lbByDns(i.hostname) ?? i.ip ?? ''),
    })),
  );
  const pods = sorted(
    kube.workloads.list().map((p) => ({
      key: `${p.metadata.namespace}/${p.metadata.name}`,
      phase: p.status?.phase,
      terminating: Boolean(p.metadata.deletionTimestamp),
      // Which address a Pod got depends on the order the controller saw them in; that it has one does not.
      // A finished Pod keeps the annotation it had; whether it got one before it finished is a matter of timing.
      // A Pod on a Node that is gone (or whose instance is) gets an address or not depending on when it was seen.
      address:
        cniOn && windowsLive
          ? p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed'
            ? 'finished'
            : p.metadata.annotations?.[POD_IP_ANNOTATION] !== undefined
          : 'not compared',
    })),
  );
  const routes = sorted(
    [...ec2.routeTables.values()].flatMap((t) =>
      t.routes
        .filter((r) => r.destination.startsWith(routePrefix))
        .map((r) => `${t.routeTableId} ${r.destination} -> ${r.target.instanceId ?? JSON.stringify(r.target)}`),
    ),
  );
  const loadBalancers = sorted(
    [...elbv2.loadBalancers.values()].map(({ lb, tags }) => ({
      name: `NLB of ${owner(tags, lb.name)}`,
      scheme: lb.scheme,
      state: lb.state,
      subnets: lb.subnets.map((s) => s.subnetId).sort(),
      securityGroups: lb.securityGroups.map(groupName).sort(),
      tags: timeless(tags),
      listeners: sorted(
        elbv2.listenersOf(lb.arn).map((l) => `${l.protocol}:${l.port} -> ${tgName(l.targetGroupArn) ?? 'none'}`),
      ),
    })),
  );
  const stoppedInstance = (id: string) => {
    const state = ec2.instances.get(id)?.state;
    return state === 'stopped' || state === 'stopping';
  };
  const targetGroups = sorted(
    [...elbv2.targetGroups.values()].map(({ tg, tags, targets }) => ({
      name: owner(tags, tg.name),
      protocol: tg.protocol,
      port: tg.port,
      targetType: tg.targetType,
      tags: timeless(tags),
      // An instance stopped at the end is in its target group if a pass registered it while it ran, and cannot be
      // put there once stopped (RegisterTargets refuses it; AWS keeps one registered before): where it ends depends
      // on when the passes ran, not on where the cluster ended, so it is not compared.
      targets: [...targets.values()]
        .filter((t) => t.state !== 'draining' && !stoppedInstance(t.target.id))
        .map((t) => `${t.target.id}:${t.target.port}`)
        .sort(),
    })),
  );
  const classic = sorted(
    [...elb.loadBalancers.values()].map((l) => ({
      name: `CLB of ${owner(l.tags, l.name)}`,
      scheme: l.scheme,
      subnets: [...l.subnets].sort(),
      securityGroups: l.securityGroups.map(groupName).sort(),
      listeners: [...l.listeners.values()]
        .map(
          ({ listener }) =>
            `${listener.protocol}:${listener.loadBalancerPort} -> ${listener.instanceProtocol}:${listener.instancePort}`,
        )
        .sort(),
      instances: [...l.instances.keys()].sort(),
      tags: l.tags,
    })),
  );
  // The backend group and the Nodes' rules from it outlive the last load balancer by design (ADR 0005): whether
  // they exist then depends on whether a load balancer got that far, not on where the cluster ended.
  const backend = [...ec2.securityGroups.values()].find((g) => g.tags[BACKEND_ROLE_TAG] === 'backend');
  const backendUsed =
    backend !== undefined &&
    ([...elbv2.loadBalancers.values()].some((l) => l.lb.securityGroups.includes(backend.groupId)) ||
      [...elb.loadBalancers.values()].some((l) => l.securityGroups.includes(backend.groupId)));
  const leftover = (id: string | undefined) => backend !== undefined && !backendUsed && id === backend.groupId;
  const securityGroups = sorted(
    [...ec2.securityGroups.values()]
      .filter((g) => !leftover(g.groupId))
      .map((g) => ({
        name: groupName(g.groupId),
        tags: g.tags,
        ingress: g.ingress
          // The Nodes' rule for the backend group outlives the targets that needed it (ADR 0005): whether it is
          // there depends on whether a target ever was. modelViolations checks it is there when a target is.
          .filter(
            (r) => !leftover(r.sourceGroupId) && !(g.groupId === NODE_GROUP && r.sourceGroupId === backend?.groupId),
          )
          .map(
            (r) =>
              `${r.protocol}:${r.fromPort}-${r.toPort}:${r.cidrIpv4 ?? r.cidrIpv6 ?? groupName(r.sourceGroupId ?? '')}:${r.description ?? ''}`,
          )
          .sort(),
      })),
  );
  // A deleted Node's pool is forgotten by design (ADR 0009): its addresses stay on its instance's interface until the
  // instance goes or a Node registers on it again, so how many there are depends on whether the pool was built
  // before the Node left. Pools are compared on instances that still have a Node.
  const withNode = new Set(
    [...kube.nodes.values()].flatMap((n) => {
      const id = n.spec?.providerID?.split('/').pop();
      return id ? [id] : [];
    }),
  );
  const interfaces = sorted(
    ec2.interfaceRecords().map((e) => {
      const pooled = ipamOn && (!e.instance || withNode.has(e.instance.instanceId));
      return {
        at: e.instance ? `${e.instance.instanceId}#${e.deviceIndex}` : `standalone:${e.subnetId}`,
        status: e.status,
        secondary: pooled ? e.privateIpAddresses.filter((a) => !a.primary).length : 'not compared',
        prefixes: pooled ? e.ipv4Prefixes.length : 'not compared',
        owned: e.tags[OWNER_TAG] ?? '',
      };
    }),
  );
  // TargetGroupBindings: their finalizer, the fields filled in, their Ready condition (tgb-observe.ts).
  const bindings = tgbProjection(c);
  return { nodes, services, pods, routes, loadBalancers, targetGroups, classic, securityGroups, interfaces, bindings };
}

export type Projection = ReturnType<typeof projection>;

/**
 * A Node's addresses: InternalIPs beyond the first are its interfaces' secondary addresses (the IP address manager's
 * pool), counted rather than named (which ones a pool holds depends on the order it saw its Pods in), and left out
 * when the pool is not compared.
 */
function nodeAddresses(addresses: readonly { type: string; address: string }[], ipamOn: boolean): string[] {
  const internal = addresses.filter((a) => a.type === 'InternalIP');
  const others = addresses.filter((a) => a.type !== 'InternalIP').map((a) => `${a.type}:${a.address}`);
  const primary = internal[0] ? [`InternalIP:${internal[0].address}`] : [];
  const pool = ipamOn && internal.length > 1 ? [`InternalIP x${internal.length - 1} more`] : [];
  return [...others.sort(), ...primary, ...pool];
}

/** What must hold after every step: budgets kept during drains, no address on two live Pods, no Node lost. */
export function stepViolations(c: Cluster, truth: Truth): string[] {
  const out: string[] = [];
  const pods = c.kube.workloads.list();
  for (const budget of c.kube.workloads.listBudgets() as PodDisruptionBudget[]) {
    const min = budget.spec?.minAvailable;
    if (typeof min !== 'number') continue;
    const labels = budget.spec?.selector?.matchLabels ?? {};
    const healthy = pods.filter(
      (p) =>
        p.metadata.namespace === budget.metadata.namespace &&
        Object.entries(labels).every(([k, v]) => p.metadata.labels?.[k] === v) &&
        !p.metadata.deletionTimestamp &&
        p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
    );
    if (healthy.length < min) {
      out.push(`PodDisruptionBudget ${budget.metadata.name}: ${healthy.length} healthy Pods < minAvailable ${min}`);
    }
  }
  const holders = new Map<string, string>();
  for (const p of pods) {
    const address = p.metadata.annotations?.[POD_IP_ANNOTATION];
    if (!address || p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') continue;
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    const other = holders.get(address);
    if (other) out.push(`address ${address} on two live Pods: ${other} and ${key}`);
    holders.set(address, key);
  }
  for (const s of truth.nodesToKeep()) {
    if (!c.kube.nodes.has(nodeNameOf(s))) {
      out.push(`Node ${nodeNameOf(s)} deleted though its instance is ${truth.state.get(s)} and nobody deleted it`);
    }
  }
  return out;
}

/** Every AWS resource carrying the cluster's ownership tag has an owner that still wants it. */
export function orphans(c: Cluster): string[] {
  const out: string[] = [];
  const { ec2, elbv2, elb, kube } = c;
  const liveServices = new Set(
    [...kube.services.values()]
      .filter((s) => s.spec?.type === 'LoadBalancer' && !s.metadata.deletionTimestamp)
      .map((s) => `${s.metadata.namespace}/${s.metadata.name}`),
  );
  const ownerOf = (tags: Record<string, string>) => tags['kubernetes.io/service-name'];
  // An IngressGroup's stack is checked by ingressViolations (ingress-observe.ts).
  const ofIngress = (tags: Record<string, string>) => tags['ingress.k8s.aws/stack'] !== undefined;
  // A settled Service has one load balancer: the one its status names.
  const named = (owner: string | undefined, dnsName: string) =>
    owner !== undefined &&
    kube.services.get(owner)?.status?.loadBalancer?.ingress?.some((i) => i.hostname === dnsName) === true;
  for (const { lb, tags } of elbv2.loadBalancers.values()) {
    const owner = ownerOf(tags);
    if (ofIngress(tags)) continue;
    if (tags[clusterTag] === 'owned' && !(owner && liveServices.has(owner) && named(owner, lb.dnsName)))
      out.push(`NLB ${lb.name} (${owner}) has no Service wanting it`);
  }
  const listened = new Set([...elbv2.listeners.values()].map((l) => l.targetGroupArn));
  for (const { tg, tags } of elbv2.targetGroups.values()) {
    const owner = ownerOf(tags);
    if (ofIngress(tags)) continue;
    if (tags[clusterTag] === 'owned' && !(owner && liveServices.has(owner) && listened.has(tg.arn)))
      out.push(`target group ${tg.name} (${owner}) has no Service wanting it`);
  }
  for (const l of elb.loadBalancers.values()) {
    const owner = ownerOf(l.tags);
    if (l.tags[clusterTag] === 'owned' && !(owner && liveServices.has(owner) && named(owner, l.dnsName)))
      out.push(`Classic ELB ${l.name} (${owner}) has no Service wanting it`);
  }
  const usedGroups = new Set([
    ...[...elbv2.loadBalancers.values()].flatMap((l) => l.lb.securityGroups),
    ...[...elb.loadBalancers.values()].flatMap((l) => l.securityGroups),
  ]);
  for (const g of ec2.securityGroups.values()) {
    // The Nodes' group is the cluster's; the backend group outlives the last Service by design (ADR 0005).
    if (g.groupId === NODE_GROUP || g.tags[clusterTag] !== 'owned' || g.tags[BACKEND_ROLE_TAG] === 'backend') continue;
    if (!usedGroups.has(g.groupId)) out.push(`security group ${g.groupName} is used by no load balancer`);
  }
  for (const g of ec2.securityGroups.values()) {
    for (const r of g.ingress) {
      if (r.sourceGroupId && !ec2.securityGroups.has(r.sourceGroupId))
        out.push(`rule of ${g.groupName} names deleted group ${r.sourceGroupId}`);
    }
  }
  const podCidrs = new Set([...kube.nodes.values()].flatMap((n) => n.spec?.podCIDRs ?? []));
  for (const t of ec2.routeTables.values()) {
    for (const r of t.routes) {
      if (r.destination.startsWith(routePrefix) && !podCidrs.has(r.destination))
        out.push(`route ${r.destination} claimed by no Node`);
    }
  }
  const windowsNodes = new Set(
    [...kube.nodes.values()]
      .map((n) => n.spec?.providerID?.split('/').pop())
      .filter((x): x is string => x !== undefined),
  );
  for (const e of ec2.interfaceRecords()) {
    if (e.tags[OWNER_TAG] === undefined) continue;
    if (!e.instance || !windowsNodes.has(e.instance.instanceId))
      out.push(`network interface ${e.networkInterfaceId} (${e.status}) belongs to no Node`);
  }
  return out;
}

/** What the model says the settled cluster must look like, whatever happened on the way. */
export function modelViolations(c: Cluster, truth: Truth): string[] {
  const out: string[] = [];
  for (const s of truth.nodesToKeep()) {
    const node = c.kube.nodes.get(nodeNameOf(s));
    if (!node) continue; // reported by stepViolations
    if (!node.spec?.providerID) out.push(`Node ${node.metadata.name} never initialized`);
    if (node.spec?.taints?.some((t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized'))
      out.push(`Node ${node.metadata.name} still has the uninitialized taint`);
  }
  const backend = [...c.ec2.securityGroups.values()].find((g) => g.tags[BACKEND_ROLE_TAG] === 'backend');
  const nodeRules = c.ec2.securityGroups.get(NODE_GROUP)?.ingress ?? [];
  for (const { tg, targets } of c.elbv2.targetGroups.values()) {
    if (tg.targetType !== 'instance' || ![...targets.values()].some((t) => t.state !== 'draining')) continue;
    // A binding's target group is the user's: no rule is owed for it unless the binding asks (tgb-observe.ts).
    if (isBoundTargetGroup(tg.name)) continue;
    const allowed = nodeRules.some(
      (r) => r.sourceGroupId === backend?.groupId && r.fromPort <= tg.port && tg.port <= r.toPort,
    );
    if (!allowed) out.push(`target group ${tg.name} has targets but the Nodes' group does not let port ${tg.port} in`);
  }
  for (const def of SERVICES) {
    const s = c.kube.services.get(`${NAMESPACE}/${def.name}`);
    if (s?.metadata.deletionTimestamp) out.push(`Service ${def.name} still terminating`);
    else if (s && !s.status?.loadBalancer?.ingress?.length) out.push(`Service ${def.name} has no load balancer`);
  }
  return out;
}
