import type { SecurityGroup } from '../../shared/aws/ec2-port.ts';
import type { ClassicLoadBalancer } from '../../shared/aws/elb-port.ts';
import type { LoadBalancer, TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../shared/aws/ownership.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { LABEL_SERVICE_NAME, serviceKey } from '../../shared/k8s/service-port.ts';
import type { TargetGroupBinding } from '../../shared/k8s/tgb-types.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { deleteLoadBalancerAndListeners } from '../../shared/load-balancers/listeners.ts';
import { isOurNodeRule, nodeRules } from '../../shared/load-balancers/node-rules.ts';
import { backendSecurityGroupName, deleteSecurityGroup } from '../../shared/load-balancers/security-groups.ts';
import { ruleKey } from '../../shared/load-balancers/security-rules.ts';
import { deleteTargetGroup } from '../../shared/load-balancers/target-groups.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../shared/queue/runner.ts';
import { classicInventory, deleteClassicGarbage } from './clb/gc.ts';
import { classicNameFromHostname } from './clb/plans.ts';
import { decide, ingressHostname } from './decide.ts';
import type { ServiceDeps } from './deps.ts';
import { LBC_SERVICE_FINALIZER } from './lbc/names.ts';
import { serviceAnnotations } from './lbc/options.ts';
import { listServiceStackBindings, sweepServiceStackBindings } from './lbc/stack-bindings.ts';
import { type LoadBalancerSpec, loadBalancerSpec } from './model/spec.ts';
import {
  acceptableNamesFor,
  loadBalancerNameFromHostname,
  REPLACES_TAG,
  readablePrefix,
  referenceLoadBalancerName,
  securityGroupName,
} from './names.ts';

/**
 * The garbage collection key (docs/adr/0005-service-load-balancers.md): a Service key without a namespace,
 * which no real Service has. It travels on the service queue like any key, so SQS FIFO never runs two
 * collections at once, and the resync sends it once per run.
 */
export {
  GARBAGE_COLLECTION_KEY,
  garbageCollectionMessage,
  isGarbageCollectionKey,
} from '../../shared/queue/service-gc-key.ts';

/** What a live Service wants to keep; `keep-all` when its wishes cannot be worked out or its own key is deleting. */
type Wanted =
  | 'keep-all'
  | {
      loadBalancers: Set<string>;
      /** The load balancer serving the Service: one tagged as its successor is wanted too (being built). */
      serving: string;
      targetGroups: Set<string>;
      securityGroups: Set<string>;
      spec: LoadBalancerSpec;
    };

export interface GarbageReport {
  loadBalancers: string[];
  targetGroups: string[];
  securityGroups: string[];
  rules: number;
  pending: number;
}

/**
 * Remove what carries our cluster tag as `owned` and a `kubernetes.io/service-name` tag, but that no Service
 * wants: its Service is gone or no longer ours, or it is left over from an earlier spec (a crash between
 * moving a listener and deleting the old target group, a renamed load balancer). Also removes our rules on
 * the Nodes' groups whose load balancer is gone. Never touches a resource without our cluster tag, outside
 * `VPC_ID` or of an unknown VPC, and never deletes one tagged `shared`.
 *
 * The order of the reads is what makes it safe against reconciles running meanwhile: security groups, then
 * load balancers, then target groups, then Services. Whatever a read finds was made before the next read,
 * so a rule found has its load balancer in the load balancer list, and a resource found has its Service
 * (and that Service's current wishes) in the Service list.
 */
export async function collectGarbage(deps: ServiceDeps): Promise<ReconcileResult | undefined> {
  const report = await sweep(deps);
  const removed =
    report.loadBalancers.length + report.targetGroups.length + report.securityGroups.length + report.rules;
  (removed > 0 || report.pending > 0 ? deps.log.info : deps.log.debug).call(
    deps.log,
    'load balancer garbage collected',
    {
      ...report,
    },
  );
  return report.pending > 0 ? { requeueAfterSeconds: deps.cleanupRequeueSeconds } : undefined;
}

/** What a sweep found to remove, read in the order `collectGarbage` explains. */
interface Garbage {
  loadBalancers: LoadBalancer[];
  /** Classic ELBs, each with the Service its tags name. */
  classic: { lb: ClassicLoadBalancer; owner: string }[];
  /** Every Classic ELB of the region (a user's group one of them uses keeps its rule on the Nodes' groups). */
  allClassic: ClassicLoadBalancer[];
  targetGroups: TargetGroup[];
  securityGroups: SecurityGroup[];
  /** Every cluster-tagged security group of the VPC (the Nodes' groups among them). */
  vpcGroups: SecurityGroup[];
  wanted: Map<string, Wanted | undefined>;
  /**
   * The target groups of the VPC's Application Load Balancers that hold the backend group (the Ingress
   * controller's): the Node rules they need are never revoked here.
   */
  applicationGroups: TargetGroup[];
  /** The reference's Services' TargetGroupBindings (read before the Services), and the Services. */
  stackBindings: TargetGroupBinding[];
  services: Service[];
}

export async function sweep(deps: ServiceDeps): Promise<GarbageReport> {
  const garbage = await findGarbage(deps);
  const report: GarbageReport = { loadBalancers: [], targetGroups: [], securityGroups: [], rules: 0, pending: 0 };
  // Before any target group goes: a stack's bindings name its target groups (lbc/stack-bindings.ts).
  await sweepServiceStackBindings(garbage.stackBindings, garbage.services, deps);
  for (const lb of garbage.loadBalancers) {
    await deleteLoadBalancerAndListeners(lb, deps);
    report.loadBalancers.push(lb.name);
    deps.metrics.count(MetricName.LoadBalancerGarbageCollected, { resource: 'LoadBalancer' });
  }
  const gone = new Set<string>();
  for (const { lb, owner } of garbage.classic) {
    const others = garbage.allClassic.filter((o) => o.name !== lb.name && !gone.has(o.name));
    await deleteClassicGarbage(lb, owner, garbage.vpcGroups, others, deps);
    gone.add(lb.name);
    report.loadBalancers.push(lb.name);
    deps.metrics.count(MetricName.LoadBalancerGarbageCollected, { resource: 'ClassicLoadBalancer' });
  }
  for (const group of garbage.targetGroups) {
    if ((await deleteTargetGroup(group, deps)) === 'in-use') {
      report.pending++;
      continue;
    }
    report.targetGroups.push(group.name);
    deps.metrics.count(MetricName.LoadBalancerGarbageCollected, { resource: 'TargetGroup' });
  }
  report.rules = await revokeUnneededNodeRules(garbage, deps);
  for (const group of garbage.securityGroups) {
    if ((await deleteSecurityGroup(group.groupId, deps)) === 'in-use') {
      report.pending++;
      continue;
    }
    report.securityGroups.push(group.groupName);
    deps.metrics.count(MetricName.LoadBalancerGarbageCollected, { resource: 'SecurityGroup' });
  }
  if (report.pending > 0)
    deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'GarbageCollection' }, report.pending);
  return report;
}

/**
 * Reads and decides. Only resources of `deps.vpcId` are candidates: load balancer and target group lists span the
 * region, and another stage or cluster of the same name in another VPC of the account tags its resources exactly
 * as we do. A resource whose VPC is not stated is left alone.
 */
async function findGarbage(deps: ServiceDeps): Promise<Garbage> {
  const clusterTag = clusterTagKey(deps.clusterName);
  const inVpc = (resource: { vpcId?: string }) => resource.vpcId === deps.vpcId;
  const vpcGroups = (
    await deps.ec2.findSecurityGroups({ vpcId: deps.vpcId, tags: { [clusterTag]: undefined } })
  ).filter(inVpc);
  const allLbs = await deps.elbv2.listLoadBalancers();
  const networkLbs = allLbs.filter((lb) => lb.type === 'network');
  const loadBalancers = networkLbs.filter(inVpc);
  const backendGroup = vpcGroups.find((g) => g.groupName === backendSecurityGroupName(deps.clusterName));
  const applicationLbs = new Set(
    allLbs
      .filter(
        (lb) =>
          lb.type === 'application' && inVpc(lb) && backendGroup && lb.securityGroups.includes(backendGroup.groupId),
      )
      .map((lb) => lb.arn),
  );
  const classic = await classicInventory(deps);
  // Our target group names begin with at least 5 characters of the cluster's readable name (names.ts gives
  // each of cluster, namespace and Service a fair share): only those need their tags read.
  const prefix = readablePrefix([deps.clusterName], 5);
  const allTargetGroups = await deps.elbv2.listTargetGroups();
  // The AWS Load Balancer Controller's Services' groups are named `k8s-<namespace>-<name>-<hash>` (lbc/names.ts).
  const named = (g: TargetGroup) =>
    g.name.startsWith(prefix) || (deps.lbcServices === true && g.name.startsWith('k8s-'));
  const targetGroups = allTargetGroups.filter((g) => named(g) && inVpc(g));
  const applicationGroups = allTargetGroups.filter((g) => g.loadBalancerArns.some((arn) => applicationLbs.has(arn)));
  const tags = await deps.elbv2.describeTags([...loadBalancers, ...targetGroups].map((r) => r.arn));
  const stackBindings = await listServiceStackBindings(deps);
  let services: Service[];
  try {
    services = await deps.kube.listServices();
  } catch (err) {
    throw classifyKubernetesError('listing services', err);
  }
  const existing = new Map([...networkLbs, ...classic.all].map((lb) => [lb.name.toLowerCase(), lb.scheme] as const));
  const wanted = new Map(services.map((s) => [serviceKey(s), wantedBy(s, deps, existing)] as const));

  const ownerOf = (resourceTags: Readonly<Record<string, string>> | undefined): string | undefined =>
    resourceTags?.[clusterTag] === 'owned' ? resourceTags[LABEL_SERVICE_NAME] : undefined;
  const unwanted = (owner: string, test: (w: Exclude<Wanted, 'keep-all'>) => boolean): boolean => {
    const w = wanted.get(owner);
    if (w === undefined) return true;
    return w !== 'keep-all' && test(w);
  };

  // A successor being built for the serving load balancer is kept, unless it has a scheme the Service no longer
  // asks for: the Service changed back before the replacement finished, and no pass would make it serve.
  const successor = (replaces: string | undefined, scheme: string, w: Exclude<Wanted, 'keep-all'>) =>
    replaces === w.serving && scheme === w.spec.scheme;
  // A replaced NLB serving out its grace after the status moved (SERVICE_REPLACEMENT_GRACE_SECONDS): the one serving
  // its Service names it in its REPLACES_TAG, and that Service's own pass deletes it once the grace is over.
  const inGrace = new Set<string>();
  for (const lb of loadBalancers) {
    const owner = ownerOf(tags.get(lb.arn));
    const replaces = tags.get(lb.arn)?.[REPLACES_TAG]?.toLowerCase();
    const w = owner === undefined ? undefined : wanted.get(owner);
    if (replaces && w && w !== 'keep-all' && w.serving === lb.name.toLowerCase()) inGrace.add(`${owner} ${replaces}`);
  }
  const doomedLbs = loadBalancers.filter((lb) => {
    const owner = ownerOf(tags.get(lb.arn));
    const replaces = tags.get(lb.arn)?.[REPLACES_TAG]?.toLowerCase();
    return (
      owner !== undefined &&
      !inGrace.has(`${owner} ${lb.name.toLowerCase()}`) &&
      unwanted(owner, (w) => !w.loadBalancers.has(lb.name.toLowerCase()) && !successor(replaces, lb.scheme, w))
    );
  });
  const doomedLbArns = new Set(doomedLbs.map((lb) => lb.arn));
  const doomedClassic = classic.inVpc.flatMap((lb) => {
    const lbTags = classic.tags.get(lb.name);
    const owner = ownerOf(lbTags);
    const replaces = lbTags?.[REPLACES_TAG]?.toLowerCase();
    const doomed =
      owner !== undefined &&
      unwanted(owner, (w) => !w.loadBalancers.has(lb.name.toLowerCase()) && !successor(replaces, lb.scheme, w));
    return doomed ? [{ lb, owner }] : [];
  });
  const doomedClassicNames = new Set(doomedClassic.map((c) => c.lb.name));
  const doomedTargetGroups = targetGroups.filter((g) => {
    const owner = ownerOf(tags.get(g.arn));
    const attachedToLive = g.loadBalancerArns.some((arn) => !doomedLbArns.has(arn));
    return owner !== undefined && unwanted(owner, (w) => !w.targetGroups.has(g.name) && !attachedToLive);
  });
  // Every load balancer that stays counts, whatever its VPC: a group one of them uses is never deleted.
  const usedGroups = new Set([
    ...networkLbs.filter((lb) => !doomedLbArns.has(lb.arn)).flatMap((lb) => lb.securityGroups),
    ...classic.all.filter((lb) => !doomedClassicNames.has(lb.name)).flatMap((lb) => lb.securityGroups),
  ]);
  const doomedSecurityGroups = vpcGroups.filter((g) => {
    const owner = ownerOf(g.tags);
    return (
      owner !== undefined && !usedGroups.has(g.groupId) && unwanted(owner, (w) => !w.securityGroups.has(g.groupName))
    );
  });
  return {
    loadBalancers: doomedLbs,
    classic: doomedClassic,
    allClassic: classic.all,
    targetGroups: doomedTargetGroups,
    securityGroups: doomedSecurityGroups,
    vpcGroups,
    applicationGroups,
    wanted,
    stackBindings,
    services,
  };
}

/** Our rules on the Nodes' groups of the VPC (from the backend group) that no Service of the cluster needs any more. */
async function revokeUnneededNodeRules(garbage: Garbage, deps: ServiceDeps): Promise<number> {
  const backend = garbage.vpcGroups.find((g) => g.groupName === backendSecurityGroupName(deps.clusterName));
  if (!backend) return 0;
  const needed = neededNodeRules([...garbage.wanted.values()], backend.groupId, deps);
  if (needed === 'all') return 0;
  // The Ingress controller's load balancers share the backend group and so the rules: an IP target group's ports
  // are its targets' (not read here), so while one exists nothing is revoked.
  if (garbage.applicationGroups.some((g) => g.targetType === 'ip')) return 0;
  const applicationSpec = {
    identity: { clusterName: deps.clusterName, namespace: '', name: '' },
    targetGroups: garbage.applicationGroups.map((g) => ({
      name: g.name,
      listenerPort: 0,
      protocol: g.protocol,
      port: g.port,
      targetType: g.targetType,
      ipAddressType: g.ipAddressType,
      healthCheck: g.healthCheck,
      attributes: {},
      servicePorts: [],
    })),
  };
  for (const rule of nodeRules(applicationSpec, new Map(), backend.groupId, deps.nodePortRange)) {
    needed.add(ruleKey(rule));
  }
  let revoked = 0;
  for (const group of garbage.vpcGroups) {
    const unneeded = group.ingress.filter(
      (rule) => isOurNodeRule(rule, deps.clusterName) && !needed.has(ruleKey(rule)),
    );
    if (unneeded.length === 0) continue;
    await deps.ec2.revokeSecurityGroupIngress(group.groupId, unneeded);
    revoked += unneeded.length;
    deps.metrics.count(MetricName.LoadBalancerGarbageCollected, { resource: 'SecurityGroupRule' }, unneeded.length);
  }
  return revoked;
}

/** `existing`: the scheme of every load balancer there is, by lowercase name. */
function wantedBy(service: Service, deps: ServiceDeps, existing: ReadonlyMap<string, string>): Wanted | undefined {
  const decision = decide(service, deps.loadBalancerClass, deps.lbcServices === true);
  // Its own key is deleting it (with Events and the finalizer): leave that to it.
  if (decision.action === 'delete') return 'keep-all';
  if (decision.action === 'ignore') {
    // Served the AWS Load Balancer Controller's way while SERVICE_LBC_SERVICES was on: never swept while it is off.
    return (service.metadata.finalizers ?? []).includes(LBC_SERVICE_FINALIZER) ? 'keep-all' : undefined;
  }
  const { options, problems } = serviceAnnotations(service, decision.lbc === true);
  if (problems.length > 0) return 'keep-all';
  const built = loadBalancerSpec(service, options, { clusterName: deps.clusterName });
  if (!built.ok) return 'keep-all';
  // The load balancer the status names serves traffic (a replaced one until its successor is ready); with no
  // status yet, the one the Service asks for. A successor being built carries the serving one's name in a tag.
  const hostname = ingressHostname(service);
  const named = loadBalancerNameFromHostname(hostname) ?? classicNameFromHostname(hostname);
  const serving = (named ?? built.spec.loadBalancerName).toLowerCase();
  // With no status yet, a Classic ELB the reference made for it (its `a<uid>` name) is its too.
  const reference = named ? undefined : referenceLoadBalancerName(service.metadata.uid)?.toLowerCase();
  const identity = {
    clusterName: deps.clusterName,
    namespace: built.spec.identity.namespace,
    name: service.metadata.name,
  };
  const targetGroups = new Set<string>();
  // The target groups of a load balancer that exists (a pass makes the load balancer before its target groups); an
  // unattached one named for a load balancer that is gone (an abandoned successor's) is garbage.
  for (const name of acceptableNamesFor(identity, service.metadata.uid, options)) {
    if (!existing.has(name.toLowerCase())) continue;
    const named = loadBalancerSpec(service, options, { clusterName: deps.clusterName, loadBalancerName: name });
    if (named.ok) for (const group of named.spec.targetGroups) targetGroups.add(group.name);
  }
  // The managed group of the load balancer that serves (and, before any serves or when the name annotation asks
  // for another, of the one asked for); a replaced one's group is garbage once its load balancer has let go of
  // it, and a successor's is held by the successor. Once a successor of our own naming serves, the default name
  // is the replaced one's: keeping its group would keep it forever.
  const askedFor = named === undefined || options.name !== undefined ? [built.spec.securityGroupName] : [];
  // While the serving one has another scheme than the Service asks for, a successor is on its way: a pass makes its
  // group before the load balancer that will hold it, and may need a while for AWS to show it.
  const servingScheme = existing.get(serving);
  const successors =
    servingScheme !== undefined && servingScheme !== built.spec.scheme
      ? acceptableNamesFor(identity, service.metadata.uid, options)
          .filter((n) => n.toLowerCase() !== serving)
          .map(securityGroupName)
      : [];
  // The reference's managed group is named for the Service, whichever load balancer holds it.
  const securityGroups = options.lbc
    ? new Set([built.spec.securityGroupName])
    : new Set([securityGroupName(serving), ...askedFor, ...successors]);
  const loadBalancers = new Set([serving, ...(reference ? [reference] : [])]);
  return { loadBalancers, serving, targetGroups, securityGroups, spec: built.spec };
}

/**
 * The Node rules every live Service needs, by rule identity; `all` (revoke nothing) while any Service's
 * needs cannot be worked out without reading its EndpointSlices (IP targets on a named port) or at all.
 */
function neededNodeRules(
  wanted: readonly (Wanted | undefined)[],
  backendGroupId: string,
  deps: ServiceDeps,
): Set<string> | 'all' {
  const needed = new Set<string>();
  for (const w of wanted) {
    if (w === undefined) continue;
    if (w === 'keep-all') return 'all';
    const targets = new Map<string, { id: string; port: number }[]>();
    if (w.spec.targetType === 'ip') {
      for (const group of w.spec.targetGroups) {
        const ports = group.servicePorts.map((p) => p.targetPort ?? p.port);
        if (ports.some((p) => typeof p !== 'number')) return 'all';
        targets.set(
          group.name,
          (ports as number[]).map((port) => ({ id: '', port })),
        );
      }
    }
    for (const rule of nodeRules(w.spec, targets, backendGroupId, deps.nodePortRange)) needed.add(ruleKey(rule));
  }
  return needed;
}
