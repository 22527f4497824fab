import type { AvailabilityZone, Instance, SecurityGroup, Subnet } from '../../shared/aws/ec2-port.ts';
import type {
  Listener,
  ListenerSpec,
  LoadBalancer,
  SubnetMapping,
  Target,
  TargetGroup,
} from '../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../shared/aws/ownership.ts';
import { errorMessage, RetryableError, TerminalError, ThrottledError } from '../../shared/errors.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import type { EndpointSlice, Node, Service } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { keyString, type ObjectKey } from '../../shared/queue/message.ts';
import type { ReconcileResult, Reconciler } from '../../shared/queue/runner.ts';
import { ANNOTATION, describeProblems, ownedByService, parseAnnotations } from './annotations.ts';
import { deleteServiceLoadBalancer } from './cleanup.ts';
import { AnnotationError, type ServiceDeps } from './deps.ts';
import {
  changedEntries,
  chooseSubnets,
  clusterNodeGroups,
  decide,
  defaultListenerAttributes,
  eligibleNodes,
  healthCheckMatches,
  ingressHostname,
  instanceIdsOf,
  instanceTargets,
  ipTargets,
  type LoadBalancerSpec,
  listenerUpdate,
  loadBalancerSpec,
  nodeRules,
  planListenerCertificates,
  planListeners,
  planRules,
  planSubnets,
  planTargets,
  type SubnetPlan,
  staleTagKeys,
  subnetMappings,
} from './diff.ts';
import { collectGarbage, isGarbageCollectionKey } from './gc.ts';
import { addFinalizer, EVENT, readService, recordServiceEvent, setIngressHostname } from './kube.ts';
import { backendSecurityGroupName, loadBalancerNameFromHostname } from './names.ts';
import {
  codeOf,
  deleteLoadBalancerAndListeners,
  deleteSecurityGroup,
  deleteTargetGroup,
  retryAssociationLimit,
} from './resources.ts';

/**
 * What the Services of one batch share, read once and only when first needed: the Node list, their
 * instances, the Nodes' security groups, the VPC's zones. Up to ten Services of a batch then cost one
 * DescribeInstances and one DescribeSecurityGroups between them.
 */
export class ServiceBatch {
  private nodeList?: Promise<Node[]>;
  private instanceMap?: Promise<Map<string, Instance>>;
  private groups?: Promise<SecurityGroup[]>;
  private zoneList?: Promise<AvailabilityZone[]>;

  constructor(private readonly deps: ServiceDeps) {}

  nodes(): Promise<Node[]> {
    this.nodeList ??= this.deps.kube.listNodes().catch((err: unknown) => {
      throw classifyKubernetesError('listing nodes', err);
    });
    return this.nodeList;
  }

  /** Every Node's instance (one DescribeInstances per 1000). */
  async instances(): Promise<Map<string, Instance>> {
    this.instanceMap ??= this.nodes().then((nodes) => {
      const ids = instanceIdsOf(nodes.filter((n) => !n.metadata.deletionTimestamp));
      return ids.length > 0 ? this.deps.ec2.describeInstances(ids) : new Map<string, Instance>();
    });
    return this.instanceMap;
  }

  /** The security groups of every Node instance's primary interface. */
  async nodeSecurityGroups(): Promise<SecurityGroup[]> {
    this.groups ??= this.instances().then((instances) => {
      const ids = [...new Set([...instances.values()].flatMap(primaryGroups))];
      return ids.length > 0 ? this.deps.ec2.findSecurityGroups({ groupIds: ids }) : [];
    });
    return this.groups;
  }

  zones(): Promise<AvailabilityZone[]> {
    this.zoneList ??= this.deps.ec2.describeAvailabilityZones();
    return this.zoneList;
  }
}

function primaryGroups(instance: Instance): string[] {
  const primary = instance.networkInterfaces.find((e) => e.deviceIndex === 0) ?? instance.networkInterfaces[0];
  return primary?.securityGroupIds ?? [];
}

export type { ServiceDeps };

/**
 * `type: LoadBalancer` Services -> Network Load Balancers (docs/adr/0005-service-load-balancers.md). One key
 * per Service; the relay also sends a Service's key when its EndpointSlices change (IP targets) or the Node
 * set changes (instance targets), and the resync sends every Service plus the garbage collection key.
 */
export const serviceReconciler: Reconciler<ServiceDeps, ServiceBatch> = {
  name: 'service',

  async prepareBatch(_keys, deps) {
    return new ServiceBatch(deps);
  },

  async reconcile(key, deps, batch) {
    if (isGarbageCollectionKey(key)) return collectGarbage(deps);
    if (key.kind !== 'Service' || !key.namespace) {
      throw new TerminalError(
        `the service queue takes Service keys with a namespace, or the garbage collection key (got ${keyString(key)})`,
      );
    }
    return reconcileService(key, deps, batch ?? new ServiceBatch(deps));
  },
};

async function reconcileService(
  key: ObjectKey,
  deps: ServiceDeps,
  batch: ServiceBatch,
): Promise<ReconcileResult | undefined> {
  const service = await readService(deps, key.namespace!, key.name);
  // Gone without our finalizer (never ours, or cleaned up): whatever is left is the garbage collector's.
  if (!service) return undefined;
  const decision = decide(service, deps.loadBalancerClass);
  if (decision.action === 'ignore') {
    if (decision.why === 'classic' || decision.why === 'other-controller' || decision.why === 'other-class') {
      deps.metrics.count(MetricName.ServicesSkipped, { reason: decision.why });
    }
    deps.log.debug('service is not ours', { service: keyString(key), why: decision.why });
    return undefined;
  }
  try {
    if (decision.action === 'delete') return await deleteServiceLoadBalancer(service, decision.why, deps);
    return await ensureServiceLoadBalancer(service, deps, batch);
  } catch (err) {
    // Throttling is ours to absorb, not the user's to read about; everything else is said on the Service.
    if (!(err instanceof ThrottledError)) {
      const reason = err instanceof AnnotationError ? 'InvalidAnnotation' : (codeOf(err) ?? 'Error');
      deps.metrics.count(MetricName.LoadBalancerSyncFailures, { reason });
      await recordServiceEvent(
        deps,
        service,
        'Warning',
        EVENT.failed,
        `Error syncing load balancer: ${errorMessage(err)}`,
      );
    }
    throw err;
  }
}

/** Tracks what a pass changed, and says "Ensuring" before its first write. */
class Progress {
  configChanged = false;
  targetsChanged = false;
  private announced = false;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly service: Service,
    private readonly lbName: string,
  ) {}

  /** Before every mutating AWS call of the configuration (not targets). */
  config = async (): Promise<void> => {
    this.configChanged = true;
    if (this.announced) return;
    this.announced = true;
    await recordServiceEvent(
      this.deps,
      this.service,
      'Normal',
      EVENT.ensuring,
      `Ensuring load balancer ${this.lbName}`,
    );
  };

  targets = async (): Promise<void> => {
    this.targetsChanged = true;
  };
}

async function ensureServiceLoadBalancer(
  service: Service,
  deps: ServiceDeps,
  batch: ServiceBatch,
): Promise<ReconcileResult | undefined> {
  const { options, problems } = parseAnnotations(service.metadata.annotations);
  if (problems.length > 0) throw new AnnotationError(`invalid annotations: ${describeProblems(problems)}`);
  const built = loadBalancerSpec(service, options, {
    clusterName: deps.clusterName,
    externalManagedTags: deps.externalManagedTags,
  });
  if (!built.ok) throw new AnnotationError(`cannot build the load balancer: ${describeProblems(built.problems)}`);
  const spec = built.spec;
  const progress = new Progress(deps, service, spec.loadBalancerName);

  // 1. The finalizer before anything exists in AWS: a deletion then always waits for the cleanup.
  const withFinalizer = await addFinalizer(deps, service);
  if (!withFinalizer) return undefined;
  service = withFinalizer;

  // 2. What exists: the load balancer of this name (and its target groups, listeners and all their tags, in
  // one DescribeTags).
  let lb = await deps.elbv2.findLoadBalancer(spec.loadBalancerName);
  let attached: TargetGroup[] = [];
  let listeners: Listener[] = [];
  let tags = new Map<string, Record<string, string>>();
  let pendingSubnets: SubnetPlan | undefined;
  if (lb) {
    attached = await deps.elbv2.describeTargetGroupsOfLoadBalancer(lb.arn);
    listeners = await deps.elbv2.describeListeners(lb.arn);
    tags = await deps.elbv2.describeTags([lb.arn, ...attached.map((g) => g.arn), ...listeners.map((l) => l.arn)]);
    const lbTags = tags.get(lb.arn);
    if (!ownedByService(lbTags, deps.clusterName, spec.serviceKey)) {
      throw new AnnotationError(
        `load balancer name ${spec.loadBalancerName} is taken by ${lbTags?.['kubernetes.io/service-name'] ?? 'a load balancer this cluster does not own'}; set ${ANNOTATION.name} to another name`,
      );
    }
    // Scheme cannot change in place, a failed load balancer never recovers, and a load balancer whose every
    // zone changes subnet or address cannot keep one zone while the others move: make a new one.
    const subnetPlan =
      lb.state === 'failed' || lb.scheme !== spec.scheme ? undefined : await planLbSubnets(lb, spec, deps);
    if (lb.scheme !== spec.scheme || lb.state === 'failed' || subnetPlan?.action === 'replace') {
      const why =
        lb.state === 'failed'
          ? `it failed to provision (${lb.stateReason ?? 'no reason given'})`
          : lb.scheme !== spec.scheme
            ? `scheme ${lb.scheme} -> ${spec.scheme} cannot be changed in place`
            : `the subnet or address of every zone changes (${subnetPlan?.action === 'replace' ? subnetPlan.zones.join(', ') : ''}), which AWS cannot do while the load balancer keeps a zone`;
      await recordServiceEvent(deps, service, 'Normal', EVENT.replacing, `Replacing load balancer ${lb.name}: ${why}`);
      await deleteLoadBalancerAndListeners(lb, deps, progress.config);
      deps.metrics.count(MetricName.LoadBalancersDeleted);
      lb = undefined;
      attached = [];
      listeners = [];
    } else {
      pendingSubnets = subnetPlan;
    }
  }

  // 3. Security groups: the managed one (or the user's), the cluster's backend group, extra ones.
  const { lbGroups, backendGroupId } = await ensureLoadBalancerGroups(spec, deps, progress);

  // 4. The load balancer: created with its subnets and groups, or kept in line.
  let created = false;
  if (!lb) {
    const mappings = await wantedSubnets(spec, deps, batch);
    await progress.config();
    const result = await deps.elbv2.createLoadBalancer({
      name: spec.loadBalancerName,
      scheme: spec.scheme,
      subnetMappings: mappings,
      securityGroups: lbGroups,
      ...(spec.ipAddressType === 'dualstack' ? { ipAddressType: 'dualstack' as const } : {}),
      tags: spec.tags,
    });
    if (result === 'name-taken') {
      // It did not exist a moment ago: AWS has not caught up, or someone took the name in between.
      throw new RetryableError(
        `creating load balancer ${spec.loadBalancerName}: the name is in use with other settings`,
      );
    }
    lb = result;
    created = true;
    deps.metrics.count(MetricName.LoadBalancersCreated, { reason: 'new' });
  } else {
    await updateLoadBalancer(service, lb, lbGroups, tags.get(lb.arn) ?? {}, pendingSubnets, spec, deps, progress);
  }

  // 5. Target groups, health checks, attributes; listeners pointing at them; old target groups removed.
  const groups = await ensureTargetGroups(spec, attached, tags, deps, progress);
  await ensureListeners(service, lb, spec, groups, attached, listeners, tags, deps, progress);
  const pendingGroups = await deleteStaleTargetGroups(attached, spec, deps, progress);

  // 6. Targets, and the Node security group rules that let the load balancer reach them.
  const targets = await desiredTargets(service, spec, deps, batch);
  await ensureTargets(spec, groups, targets, deps, progress);
  const nodeGroupWarning = await ensureNodeRules(spec, targets, backendGroupId, deps, batch, progress);

  // 7. Load balancer attributes: the Service's, and AWS's defaults for the switches it leaves unset.
  const currentAttributes = await deps.elbv2.describeLoadBalancerAttributes(lb.arn);
  const changedLbAttributes = changedEntries(spec.attributes, currentAttributes);
  if (Object.keys(changedLbAttributes).length > 0) {
    await progress.config();
    await deps.elbv2.modifyLoadBalancerAttributes(lb.arn, changedLbAttributes);
  }

  // 8. A load balancer the Service used under another name (the name annotation changed) goes now.
  await deleteRenamedLoadBalancer(service, spec, deps, progress);

  // 9. Status, Events, and the next look while the load balancer provisions.
  const updated = await setIngressHostname(deps, service, lb.dnsName);
  if (!updated) return undefined;
  // Said when something changed (a new load balancer, new targets), not on every quiet pass.
  if (nodeGroupWarning && (progress.configChanged || progress.targetsChanged)) {
    await recordServiceEvent(deps, updated, 'Warning', EVENT.noNodeSecurityGroup, nodeGroupWarning);
  }
  if (progress.configChanged) {
    if (!created) deps.metrics.count(MetricName.LoadBalancersUpdated);
    await recordServiceEvent(
      deps,
      updated,
      'Normal',
      EVENT.ensured,
      `Ensured load balancer ${lb.name} (${lb.dnsName})`,
    );
  } else if (progress.targetsChanged) {
    await recordServiceEvent(
      deps,
      updated,
      'Normal',
      EVENT.updated,
      `Updated load balancer ${lb.name} with new targets`,
    );
  }
  if (progress.configChanged || progress.targetsChanged) {
    deps.log.info('load balancer ensured', {
      service: spec.serviceKey,
      loadBalancer: lb.name,
      state: lb.state,
      created,
    });
  }
  if (lb.state === 'provisioning') return { requeueAfterSeconds: deps.provisioningRequeueSeconds };
  // Zones removed to come back with another subnet or address: the next pass adds them once AWS is done.
  if (pendingGroups > 0 || pendingSubnets?.action === 'remove-first') {
    return { requeueAfterSeconds: deps.cleanupRequeueSeconds };
  }
  return undefined;
}

/** A Network Load Balancer takes at most five security groups. */
const MAX_LOAD_BALANCER_GROUPS = 5;

/**
 * The load balancer's groups, in order: the managed one (created and kept in line) or the user's, the
 * cluster's backend group (the source the Nodes' groups allow), then the extra ones.
 */
async function ensureLoadBalancerGroups(
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  progress: Progress,
): Promise<{ lbGroups: string[]; backendGroupId: string }> {
  const extra = await resolveGroups(spec.extraSecurityGroups, ANNOTATION.extraSecurityGroups, deps);
  const backendName = backendSecurityGroupName(deps.clusterName);
  // One DescribeSecurityGroups finds both groups of ours.
  const names = spec.userSecurityGroups ? [backendName] : [spec.securityGroupName, backendName];
  const found = await deps.ec2.findSecurityGroups({ vpcId: deps.vpcId, groupNames: names });
  const backendGroupId = await ensureBackendGroup(
    found.find((g) => g.groupName === backendName),
    deps,
    progress,
  );
  const frontend = spec.userSecurityGroups
    ? await resolveGroups(spec.userSecurityGroups, ANNOTATION.securityGroups, deps)
    : [
        await ensureManagedGroup(
          spec,
          found.find((g) => g.groupName === spec.securityGroupName),
          deps,
          progress,
        ),
      ];
  const lbGroups = [...new Set([...frontend, backendGroupId, ...extra])];
  if (lbGroups.length > MAX_LOAD_BALANCER_GROUPS) {
    throw new AnnotationError(
      `${lbGroups.length} security groups for one load balancer (${spec.userSecurityGroups ? ANNOTATION.securityGroups : 'the managed one'}, the cluster's backend group and ${ANNOTATION.extraSecurityGroups}); a Network Load Balancer takes ${MAX_LOAD_BALANCER_GROUPS}`,
    );
  }
  return { lbGroups, backendGroupId };
}

/** Tags of the cluster's backend group: owned by the cluster, and no Service (so no Service's cleanup takes it). */
function backendTags(clusterName: string): Record<string, string> {
  return { [clusterTagKey(clusterName)]: 'owned', [BACKEND_ROLE_TAG]: 'backend' };
}

/** Marks the backend group; a group of that name without it (and our cluster tag) is someone else's. */
export const BACKEND_ROLE_TAG = 'serverless-ccm/security-group-role';

async function ensureBackendGroup(
  existing: SecurityGroup | undefined,
  deps: ServiceDeps,
  progress: Progress,
): Promise<string> {
  const name = backendSecurityGroupName(deps.clusterName);
  if (existing) {
    if (existing.tags[clusterTagKey(deps.clusterName)] !== 'owned' || existing.tags[BACKEND_ROLE_TAG] !== 'backend') {
      throw new TerminalError(
        `security group ${name} (${existing.groupId}) exists but is not this cluster's backend group (tags ${clusterTagKey(deps.clusterName)}=owned, ${BACKEND_ROLE_TAG}=backend)`,
      );
    }
    return existing.groupId;
  }
  await progress.config();
  const created = await deps.ec2.createSecurityGroup({
    groupName: name,
    description: `Load balancers of cluster ${deps.clusterName}: the source the Nodes' security groups allow`,
    vpcId: deps.vpcId,
    tags: backendTags(deps.clusterName),
  });
  if (created === 'name-taken') {
    throw new RetryableError(`creating security group ${name}: EC2 says it exists but does not show it yet`);
  }
  return created.groupId;
}

/** The load balancer's own group: inbound listener ports from the source ranges, nothing else. */
async function ensureManagedGroup(
  spec: LoadBalancerSpec,
  existing: SecurityGroup | undefined,
  deps: ServiceDeps,
  progress: Progress,
): Promise<string> {
  let group = existing;
  if (group && !ownedByService(group.tags, deps.clusterName, spec.serviceKey)) {
    throw new AnnotationError(
      `security group name ${spec.securityGroupName} is taken by ${group.tags['kubernetes.io/service-name'] ?? `${group.groupId}, which this cluster does not own`}`,
    );
  }
  if (!group) {
    await progress.config();
    const created = await deps.ec2.createSecurityGroup({
      groupName: spec.securityGroupName,
      description: `Load balancer ${spec.loadBalancerName} of Service ${spec.serviceKey} (cluster ${deps.clusterName})`,
      vpcId: deps.vpcId,
      tags: spec.tags,
    });
    if (created === 'name-taken') {
      throw new RetryableError(
        `creating security group ${spec.securityGroupName}: EC2 says it exists but does not show it yet`,
      );
    }
    group = {
      groupId: created.groupId,
      groupName: spec.securityGroupName,
      vpcId: deps.vpcId,
      description: '',
      tags: spec.tags,
      ingress: [],
    };
  }
  // Every rule of the managed group is ours. Revoke first: it frees room under the rules-per-group quota.
  const plan = planRules(spec.managedIngress, group.ingress, () => true);
  if (plan.revoke.length > 0) {
    await progress.config();
    await deps.ec2.revokeSecurityGroupIngress(group.groupId, plan.revoke);
  }
  if (plan.authorize.length > 0) {
    await progress.config();
    await deps.ec2.authorizeSecurityGroupIngress(group.groupId, plan.authorize);
  }
  const tagsToAdd = changedEntries(spec.tags, group.tags);
  if (Object.keys(tagsToAdd).length > 0) {
    await progress.config();
    await deps.ec2.createTags([group.groupId], tagsToAdd);
  }
  const stale = staleTagKeys(spec.tags, group.tags, spec.externalManagedTags);
  if (stale.length > 0) {
    await progress.config();
    await deps.ec2.deleteTags([group.groupId], stale);
  }
  return group.groupId;
}

/** Security groups named in an annotation (IDs or names) as IDs; one that does not exist is the user's to fix. */
async function resolveGroups(refs: readonly string[], annotation: string, deps: ServiceDeps): Promise<string[]> {
  if (refs.length === 0) return [];
  const ids = refs.filter((r) => /^sg-[0-9a-f]+$/.test(r));
  const names = refs.filter((r) => !ids.includes(r));
  const found = [
    ...(ids.length > 0 ? await deps.ec2.findSecurityGroups({ groupIds: ids }) : []),
    ...(names.length > 0 ? await deps.ec2.findSecurityGroups({ vpcId: deps.vpcId, groupNames: names }) : []),
  ];
  return refs.map((ref) => {
    const group = found.find((g) => g.groupId === ref || (g.groupName === ref && g.vpcId === deps.vpcId));
    if (!group) throw new AnnotationError(`${annotation}: no security group "${ref}" in ${deps.vpcId}`);
    return group.groupId;
  });
}

/** Subnets from the annotation or discovery (or `requested`), with their Elastic IPs or private addresses. */
async function wantedSubnets(
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  batch: ServiceBatch | undefined,
  requested: readonly string[] | undefined = spec.requestedSubnets,
  known?: readonly Subnet[],
): Promise<SubnetMapping[]> {
  const subnets = known ?? (await deps.ec2.describeSubnets({ vpcId: deps.vpcId }));
  const discovering = !requested;
  const choice = chooseSubnets({
    scheme: spec.scheme,
    clusterName: deps.clusterName,
    subnets,
    routeTables:
      discovering && spec.scheme === 'internet-facing' ? await deps.ec2.findRouteTablesByVpc(deps.vpcId) : [],
    zones: discovering && batch ? await batch.zones() : [],
    requested,
    dualstack: spec.ipAddressType === 'dualstack',
  });
  if (!choice.ok) throw new AnnotationError(`${choice.problem.annotation}: ${choice.problem.message}`);
  const mapped = subnetMappings(choice.subnets, spec);
  if (!mapped.ok) throw new AnnotationError(`${mapped.problem.annotation}: ${mapped.problem.message}`);
  return mapped.mappings;
}

/**
 * What the load balancer's subnets need. Subnets are chosen once; afterwards only the annotations move
 * them: `subnets` (the named ones), or `eip-allocations` / `private-ipv4-addresses` on the subnets in use
 * (in zone order, as at creation). Discovery is not re-run, so tagging a new subnet does not move a live
 * load balancer. Addresses already in use cost no DescribeSubnets.
 */
async function planLbSubnets(lb: LoadBalancer, spec: LoadBalancerSpec, deps: ServiceDeps): Promise<SubnetPlan> {
  if (!spec.requestedSubnets && !spec.eipAllocations && !spec.privateIpv4Addresses) return { action: 'none' };
  const inZoneOrder = [...lb.subnets].sort((a, b) => ((a.zoneName ?? '') < (b.zoneName ?? '') ? -1 : 1));
  if (!spec.requestedSubnets) {
    const sameEips =
      !spec.eipAllocations ||
      (spec.eipAllocations.length === inZoneOrder.length &&
        spec.eipAllocations.every((id, i) => inZoneOrder[i]!.allocationId === id));
    const inUse = new Set(inZoneOrder.map((m) => m.privateIPv4Address));
    const samePrivate =
      !spec.privateIpv4Addresses ||
      (spec.privateIpv4Addresses.length === inZoneOrder.length &&
        spec.privateIpv4Addresses.every((ip) => inUse.has(ip)));
    if (sameEips && samePrivate) return { action: 'none' };
  }
  const subnets = await deps.ec2.describeSubnets({ vpcId: deps.vpcId });
  const zoneOf = (id: string) => subnets.find((s) => s.subnetId === id)?.availabilityZone;
  const requested = spec.requestedSubnets ?? inZoneOrder.map((m) => m.subnetId);
  const wanted = await wantedSubnets(spec, deps, undefined, requested, subnets);
  return planSubnets(lb.subnets, wanted, zoneOf);
}

async function updateLoadBalancer(
  service: Service,
  lb: LoadBalancer,
  lbGroups: readonly string[],
  lbTags: Record<string, string>,
  subnetPlan: SubnetPlan | undefined,
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  progress: Progress,
): Promise<void> {
  const sameGroups =
    lb.securityGroups.length === lbGroups.length && lb.securityGroups.every((g) => lbGroups.includes(g));
  if (!sameGroups) {
    await progress.config();
    await deps.elbv2.setSecurityGroups(lb.arn, lbGroups);
  }
  if (subnetPlan?.action === 'remove-first') {
    await recordServiceEvent(
      deps,
      service,
      'Normal',
      EVENT.updated,
      `Removing zone(s) ${subnetPlan.zones.join(', ')} from load balancer ${lb.name} to add them back with the new subnet or address (AWS cannot change a zone in place)`,
    );
  }
  if (subnetPlan?.action === 'set' || subnetPlan?.action === 'remove-first') {
    await progress.config();
    await deps.elbv2.setSubnets(lb.arn, subnetPlan.mappings).catch((err: unknown) => {
      // Adding a zone back while AWS still removes its old subnet is refused for a few minutes.
      if (codeOf(err) === 'InvalidConfigurationRequest' && subnetPlan.action === 'set') {
        throw new RetryableError(
          `setting subnets of load balancer ${lb.name} (a zone removed a moment ago may still be on its way out): ${errorMessage(err)}`,
        );
      }
      throw err;
    });
  }
  if (lb.ipAddressType !== spec.ipAddressType) {
    await progress.config();
    await deps.elbv2.setIpAddressType(lb.arn, spec.ipAddressType);
  }
  await keepTagsInLine(lb.arn, lbTags, spec, deps, progress);
}

/** Adds the tags a load balancer, target group or listener lacks and removes those no longer wanted. */
async function keepTagsInLine(
  arn: string,
  current: Readonly<Record<string, string>>,
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  progress: Progress,
): Promise<void> {
  const tagsToAdd = changedEntries(spec.tags, current);
  if (Object.keys(tagsToAdd).length > 0) {
    await progress.config();
    await deps.elbv2.addTags(arn, tagsToAdd);
  }
  const stale = staleTagKeys(spec.tags, current, spec.externalManagedTags);
  if (stale.length > 0) {
    await progress.config();
    await deps.elbv2.removeTags(arn, stale);
  }
}

interface EnsuredGroup {
  group: TargetGroup;
  /** Created in this pass: it has no targets yet (no need to ask). */
  created: boolean;
}

async function ensureTargetGroups(
  spec: LoadBalancerSpec,
  attached: readonly TargetGroup[],
  tags: Map<string, Record<string, string>>,
  deps: ServiceDeps,
  progress: Progress,
): Promise<Map<string, EnsuredGroup>> {
  const out = new Map<string, EnsuredGroup>();
  const byName = new Map(attached.map((g) => [g.name, g]));
  // Target groups made in an earlier pass that never got their listener (a crash in between) are found by name.
  const unattached = spec.targetGroups.filter((g) => !byName.has(g.name)).map((g) => g.name);
  if (unattached.length > 0) {
    const found = await deps.elbv2.findTargetGroups(unattached);
    if (found.length > 0) {
      for (const [arn, t] of await deps.elbv2.describeTags(found.map((g) => g.arn))) tags.set(arn, t);
    }
    for (const group of found) byName.set(group.name, group);
  }
  for (const wanted of spec.targetGroups) {
    let group = byName.get(wanted.name);
    let created = false;
    if (group && !ownedByService(tags.get(group.arn), deps.clusterName, spec.serviceKey)) {
      throw new AnnotationError(
        `target group name ${wanted.name} is taken by ${tags.get(group.arn)?.['kubernetes.io/service-name'] ?? 'a target group this cluster does not own'}`,
      );
    }
    if (!group) {
      await progress.config();
      const result = await deps.elbv2.createTargetGroup({
        name: wanted.name,
        protocol: wanted.protocol,
        port: wanted.port,
        targetType: wanted.targetType,
        ...(wanted.ipAddressType === 'ipv6' ? { ipAddressType: 'ipv6' as const } : {}),
        vpcId: deps.vpcId,
        healthCheck: wanted.healthCheck,
        tags: spec.tags,
      });
      if (result === 'name-taken') {
        throw new RetryableError(`creating target group ${wanted.name}: the name is in use with other settings`);
      }
      group = result;
      created = true;
    } else {
      if (!healthCheckMatches(group.healthCheck, wanted.healthCheck)) {
        await progress.config();
        await deps.elbv2.modifyTargetGroupHealthCheck(group.arn, wanted.healthCheck);
      }
      await keepTagsInLine(group.arn, tags.get(group.arn) ?? {}, spec, deps, progress);
    }
    const current = await deps.elbv2.describeTargetGroupAttributes(group.arn);
    const changed = changedEntries(wanted.attributes, current);
    if (Object.keys(changed).length > 0) {
      await progress.config();
      await deps.elbv2.modifyTargetGroupAttributes(group.arn, changed);
    }
    out.set(wanted.name, { group, created });
  }
  return out;
}

async function ensureListeners(
  service: Service,
  lb: LoadBalancer,
  spec: LoadBalancerSpec,
  groups: Map<string, EnsuredGroup>,
  attached: readonly TargetGroup[],
  current: readonly Listener[],
  tags: ReadonlyMap<string, Record<string, string>>,
  deps: ServiceDeps,
  progress: Progress,
): Promise<void> {
  const desired: ListenerSpec[] = spec.listeners.map((l) => {
    const listener: ListenerSpec = {
      port: l.port,
      protocol: l.protocol,
      targetGroupArn: groups.get(l.targetGroupName)!.group.arn,
    };
    if (l.certificateArn) listener.certificateArn = l.certificateArn;
    if (l.sslPolicy) listener.sslPolicy = l.sslPolicy;
    if (l.alpnPolicy) listener.alpnPolicy = l.alpnPolicy;
    return listener;
  });
  // Listeners carry the ownership tags, and IAM allows ModifyListener / DeleteListener only on listeners
  // tagged owned (stacks/control-plane.ts). Listeners of our load balancer made untagged by an earlier
  // version get them first (AddTags then needs the narrow backfill grant), and every listener's tags are kept
  // in line like the load balancer's: nothing to add, no call. A listener absent from the tag answer is gone.
  const live: Listener[] = [];
  for (const listener of current) {
    const have = tags.get(listener.arn);
    if (!have) continue;
    live.push(listener);
    await keepTagsInLine(listener.arn, have, spec, deps, progress);
  }
  const plan = planListeners(desired, current);
  for (const listener of plan.remove) {
    await progress.config();
    await deps.elbv2.deleteListener(listener.arn);
  }
  const removed = new Set(plan.remove.map((l) => l.arn));

  // SNI certificates no longer wanted go before ModifyListener, so that a listed certificate about to become
  // the default is removed from the list while it is not the default (AWS will not remove a default one).
  const certificatesToAdd = new Map<number, string[]>();
  for (const wanted of spec.listeners) {
    if (wanted.protocol !== 'TLS') continue;
    const listener = live.find((l) => l.port === wanted.port && !removed.has(l.arn) && l.protocol === 'TLS');
    if (!listener) {
      certificatesToAdd.set(wanted.port, wanted.extraCertificateArns);
      continue;
    }
    const certificates = await deps.elbv2.describeListenerCertificates(listener.arn);
    const certs = planListenerCertificates(wanted.extraCertificateArns, certificates, {
      current: listener.certificateArns[0],
      next: wanted.certificateArn,
    });
    if (certs.remove.length > 0) {
      await progress.config();
      await deps.elbv2.removeListenerCertificates(listener.arn, certs.remove);
    }
    certificatesToAdd.set(wanted.port, certs.add);
  }

  for (const { arn, spec: next, was } of plan.modify) {
    await progress.config();
    const from = attached.find((g) => g.arn === was.targetGroupArn);
    const to = spec.targetGroups.find((g) => groups.get(g.name)?.group.arn === next.targetGroupArn);
    if (from && to && from.arn !== next.targetGroupArn) {
      // A new target group because AWS cannot change the old one in place: say what changed.
      const changed = [
        from.protocol !== to.protocol ? `protocol ${from.protocol} -> ${to.protocol}` : '',
        from.targetType !== to.targetType ? `target type ${from.targetType} -> ${to.targetType}` : '',
      ].filter(Boolean);
      await recordServiceEvent(
        deps,
        service,
        'Normal',
        EVENT.replacing,
        `Replacing target group ${from.name} with ${to.name} on port ${next.port}${changed.length ? ` (${changed.join(', ')})` : ''}`,
      );
    }
    await deps.elbv2
      .modifyListener(arn, listenerUpdate(next, was))
      .catch((err: unknown) => retryAssociationLimit(err, `modifying listener ${next.port}`));
  }
  const created = new Map<number, Listener>();
  for (const next of plan.create) {
    await progress.config();
    const listener = await deps.elbv2
      .createListener(lb.arn, next, spec.tags)
      .catch((err: unknown) => retryAssociationLimit(err, `creating listener ${next.port}`));
    created.set(next.port, listener);
  }

  // What ModifyListener does not carry: the SNI certificates to add and the listener attributes. A listener
  // made in this pass has AWS's default attributes, so it needs no describe.
  for (const wanted of spec.listeners) {
    const fresh = created.get(wanted.port);
    const listener = fresh ?? live.find((l) => l.port === wanted.port && !removed.has(l.arn));
    if (!listener) continue;
    const add = certificatesToAdd.get(wanted.port) ?? [];
    if (add.length > 0) {
      await progress.config();
      await deps.elbv2.addListenerCertificates(listener.arn, add);
    }
    if (Object.keys(wanted.attributes).length > 0) {
      const have = fresh
        ? defaultListenerAttributes(wanted.protocol)
        : await deps.elbv2.describeListenerAttributes(listener.arn);
      const changed = changedEntries(wanted.attributes, have);
      if (Object.keys(changed).length > 0) {
        await progress.config();
        await deps.elbv2.modifyListenerAttributes(listener.arn, changed);
      }
    }
  }
}

/** Target groups the load balancer used before this pass and no longer wants (a port removed, a protocol changed). */
async function deleteStaleTargetGroups(
  attached: readonly TargetGroup[],
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  progress: Progress,
): Promise<number> {
  const wanted = new Set(spec.targetGroups.map((g) => g.name));
  let pending = 0;
  for (const group of attached) {
    if (wanted.has(group.name)) continue;
    const result = await deleteTargetGroup(group, deps, progress.config);
    if (result === 'in-use') pending++;
  }
  if (pending > 0) deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'ResourceInUse' }, pending);
  return pending;
}

/** The targets of every target group: eligible Nodes' running instances, or ready endpoints. */
async function desiredTargets(
  service: Service,
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  batch: ServiceBatch,
): Promise<Map<string, Target[]>> {
  const out = new Map<string, Target[]>();
  if (spec.targetType === 'ip') {
    let slices: EndpointSlice[];
    try {
      slices = await deps.kube.listEndpointSlices(spec.identity.namespace, service.metadata.name);
    } catch (err) {
      throw classifyKubernetesError(`listing endpoint slices of ${spec.serviceKey}`, err);
    }
    for (const group of spec.targetGroups) out.set(group.name, ipTargets(group, slices));
    return out;
  }
  const nodes = eligibleNodes(await batch.nodes(), spec.targetNodeLabels);
  const instances = await batch.instances();
  // RegisterTargets refuses an instance that is not running, failing the whole call: leave those out.
  const ids = instanceIdsOf(nodes).filter((id) => instances.get(id)?.state === 'running');
  for (const group of spec.targetGroups) out.set(group.name, instanceTargets(group, ids));
  return out;
}

async function ensureTargets(
  spec: LoadBalancerSpec,
  groups: Map<string, EnsuredGroup>,
  targets: Map<string, Target[]>,
  deps: ServiceDeps,
  progress: Progress,
): Promise<void> {
  for (const wanted of spec.targetGroups) {
    const { group, created } = groups.get(wanted.name)!;
    const current = created ? [] : await deps.elbv2.describeTargetHealth(group.arn);
    const plan = planTargets(targets.get(wanted.name) ?? [], current);
    if (plan.deregister.length > 0) {
      await progress.targets();
      await deps.elbv2.deregisterTargets(group.arn, plan.deregister);
      deps.metrics.count(MetricName.TargetsDeregistered, {}, plan.deregister.length);
    }
    if (plan.register.length > 0) {
      await progress.targets();
      await deps.elbv2.registerTargets(group.arn, plan.register);
      deps.metrics.count(MetricName.TargetsRegistered, {}, plan.register.length);
    }
  }
}

/**
 * Rules on the cluster-tagged security groups of the target Nodes, from the cluster's backend group. They
 * are shared by every load balancer of the cluster, so a reconcile only adds what is missing; the garbage
 * collector removes rules no Service needs any more.
 */
async function ensureNodeRules(
  spec: LoadBalancerSpec,
  targets: Map<string, Target[]>,
  backendGroupId: string,
  deps: ServiceDeps,
  batch: ServiceBatch,
  progress: Progress,
): Promise<string | undefined> {
  const instances = await batch.instances();
  const nodes = eligibleNodes(await batch.nodes(), spec.targetNodeLabels);
  const primaries = instanceIdsOf(nodes).flatMap((id) => {
    const instance = instances.get(id);
    return instance ? primaryGroups(instance) : [];
  });
  const groups = clusterNodeGroups(primaries, await batch.nodeSecurityGroups(), deps.clusterName);
  if (groups.length === 0) {
    if (nodes.length === 0) return undefined;
    const message = `No security group tagged ${clusterTagKey(deps.clusterName)} on the target Nodes' primary network interfaces: no rule lets load balancer ${spec.loadBalancerName} reach them; tag the Nodes' security group or allow the traffic yourself`;
    deps.log.warn('no cluster-tagged security group on the target Nodes: no rules added for the load balancer', {
      service: spec.serviceKey,
    });
    return message;
  }
  const desired = nodeRules(spec, targets, backendGroupId, deps.nodePortRange);
  for (const group of groups) {
    const { authorize } = planRules(desired, group.ingress, () => false);
    if (authorize.length === 0) continue;
    await progress.config();
    await deps.ec2.authorizeSecurityGroupIngress(group.groupId, authorize);
    // Other Services of this batch see the rules just added.
    group.ingress.push(...authorize);
  }
  return undefined;
}

/**
 * The status names a load balancer of ours under another name: the name annotation changed, and the new
 * load balancer is in place. The old one, its target groups and its Node rules go; its security group goes
 * too unless its network interfaces still hold it (then the garbage collector finishes the job).
 */
async function deleteRenamedLoadBalancer(
  service: Service,
  spec: LoadBalancerSpec,
  deps: ServiceDeps,
  progress: Progress,
): Promise<void> {
  const oldName = loadBalancerNameFromHostname(ingressHostname(service));
  if (!oldName || oldName.toLowerCase() === spec.loadBalancerName.toLowerCase()) return;
  const old = await deps.elbv2.findLoadBalancer(oldName);
  if (!old) return;
  const groups = await deps.elbv2.describeTargetGroupsOfLoadBalancer(old.arn);
  const tags = await deps.elbv2.describeTags([old.arn, ...groups.map((g) => g.arn)]);
  if (!ownedByService(tags.get(old.arn), deps.clusterName, spec.serviceKey)) return;
  await recordServiceEvent(
    deps,
    service,
    'Normal',
    EVENT.replacing,
    `Deleting load balancer ${old.name}: the Service now uses ${spec.loadBalancerName}`,
  );
  await deleteLoadBalancerAndListeners(old, deps, progress.config);
  deps.metrics.count(MetricName.LoadBalancersDeleted);
  for (const group of groups) {
    if (ownedByService(tags.get(group.arn), deps.clusterName, spec.serviceKey)) {
      await deleteTargetGroup(group, deps, progress.config);
    }
  }
  const managed = old.securityGroups.length
    ? (await deps.ec2.findSecurityGroups({ groupIds: old.securityGroups })).filter((g) =>
        ownedByService(g.tags, deps.clusterName, spec.serviceKey),
      )
    : [];
  // Its network interfaces usually still hold it: then the garbage collector finishes the job.
  for (const group of managed) await deleteSecurityGroup(group.groupId, deps, progress.config);
}
