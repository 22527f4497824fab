import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../shared/aws/ownership.ts';
import { LABEL_SERVICE_NAME } from '../../shared/k8s/service-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../shared/queue/runner.ts';
import { ownedByService, parseAnnotations } from './annotations.ts';
import type { ServiceDeps } from './deps.ts';
import { ingressHostname, loadBalancerSpec } from './diff.ts';
import { EVENT, recordServiceEvent, removeFinalizer, setIngressHostname } from './kube.ts';
import { loadBalancerName, loadBalancerNameFromHostname } from './names.ts';
import { deleteLoadBalancerAndListeners, deleteSecurityGroup, deleteTargetGroup } from './resources.ts';

/**
 * Remove everything a Service's load balancer consists of, in the order AWS allows: the load balancer
 * (its listeners go with it), its target groups, our rules on the Nodes' groups, the managed security group (which
 * DependencyViolation keeps for minutes while the load balancer's network interfaces drain: the key is
 * requeued, never given up), and only then the finalizer. Every step is found again from AWS on each pass
 * (by deterministic name, by the status hostname, by tag), so a crash after any call resumes where it stopped.
 * Resources that cannot be attributed this way (a crash during an earlier spec change) are the garbage
 * collector's.
 */
export async function deleteServiceLoadBalancer(
  service: Service,
  why: 'deleting' | 'not-ours-any-more',
  deps: ServiceDeps,
): Promise<ReconcileResult | undefined> {
  const namespace = service.metadata.namespace ?? 'default';
  const serviceKey = `${namespace}/${service.metadata.name}`;
  const identity = { clusterName: deps.clusterName, namespace, name: service.metadata.name };
  // Broken annotations must not stop a deletion: names come from what still parses.
  const { options } = parseAnnotations(service.metadata.annotations);
  const built = loadBalancerSpec(service, options, { clusterName: deps.clusterName });
  const lbName = loadBalancerName(identity, options.name);
  const candidates = [
    ...new Set([lbName, loadBalancerNameFromHostname(ingressHostname(service))].filter(Boolean)),
  ] as string[];

  // Said once, when the load balancer or its target groups go; retries for security groups say nothing new.
  let announced = false;
  const quiet = async () => {};
  const beforeWrite = async () => {
    if (announced) return;
    announced = true;
    await recordServiceEvent(deps, service, 'Normal', EVENT.deleting, `Deleting load balancer ${lbName}`);
  };

  const groups = new Map<string, TargetGroup>();
  for (const name of candidates) {
    const lb = await deps.elbv2.findLoadBalancer(name);
    if (!lb) continue;
    const attached = await deps.elbv2.describeTargetGroupsOfLoadBalancer(lb.arn);
    const tags = await deps.elbv2.describeTags([lb.arn, ...attached.map((g) => g.arn)]);
    if (!ownedByService(tags.get(lb.arn), deps.clusterName, serviceKey)) {
      deps.log.warn("load balancer of that name is not this Service's: left alone", {
        service: serviceKey,
        loadBalancer: name,
      });
      continue;
    }
    for (const group of attached)
      if (ownedByService(tags.get(group.arn), deps.clusterName, serviceKey)) groups.set(group.arn, group);
    await deleteLoadBalancerAndListeners(lb, deps, beforeWrite);
    deps.metrics.count(MetricName.LoadBalancersDeleted);
  }

  // Target groups that never got a listener (a crash during creation) or lost it already (a crash during deletion).
  const wantedNames = built.ok ? built.spec.targetGroups.map((g) => g.name) : [];
  const missing = wantedNames.filter((n) => ![...groups.values()].some((g) => g.name === n));
  if (missing.length > 0) {
    const found = await deps.elbv2.findTargetGroups(missing);
    const tags = found.length > 0 ? await deps.elbv2.describeTags(found.map((g) => g.arn)) : new Map();
    for (const group of found)
      if (ownedByService(tags.get(group.arn), deps.clusterName, serviceKey)) groups.set(group.arn, group);
  }
  let pending = 0;
  const reasons = new Set<string>();
  for (const group of groups.values()) {
    if ((await deleteTargetGroup(group, deps, beforeWrite)) === 'in-use') {
      pending++;
      reasons.add('ResourceInUse');
    }
  }

  // The managed groups of this Service (all of them: a renamed load balancer leaves its old one behind).
  const managed = await deps.ec2.findSecurityGroups({
    vpcId: deps.vpcId,
    tags: { [clusterTagKey(deps.clusterName)]: 'owned', [LABEL_SERVICE_NAME]: serviceKey },
  });
  for (const group of managed) {
    if ((await deleteSecurityGroup(group.groupId, deps, quiet)) === 'in-use') {
      pending++;
      reasons.add('DependencyViolation');
    }
  }

  if (pending > 0) {
    for (const reason of reasons) deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason });
    // Nothing of ours references the managed group; a rule that does keeps it forever: say who must act.
    const managedIds = managed.map((g) => g.groupId);
    const referencing = reasons.has('DependencyViolation')
      ? await deps.ec2.findSecurityGroups({ referencingGroupIds: managedIds })
      : [];
    const blockers = referencing.flatMap((g) =>
      g.ingress
        .filter((r) => r.sourceGroupId && managedIds.includes(r.sourceGroupId))
        .map((r) => ({ groupId: g.groupId, sourceGroupId: r.sourceGroupId! })),
    );
    if (blockers.length > 0) {
      const list = blockers.map((b) => `${b.groupId} references ${b.sourceGroupId}`).join(', ');
      await recordServiceEvent(
        deps,
        service,
        'Warning',
        EVENT.failed,
        `Cannot delete the load balancer's security group: rules not made by this controller still reference it (${list}); remove them`,
      );
    }
    deps.log.info('load balancer cleanup waits for AWS', { service: serviceKey, pending, reasons: [...reasons] });
    return { requeueAfterSeconds: deps.cleanupRequeueSeconds };
  }

  await recordServiceEvent(deps, service, 'Normal', EVENT.deleted, `Deleted load balancer ${lbName}`);
  let current: Service | undefined = service;
  // A Service that stays (no longer a load balancer) keeps no stale address.
  if (why === 'not-ours-any-more') current = await setIngressHostname(deps, service, undefined);
  if (current) await removeFinalizer(deps, current);
  deps.log.info('load balancer deleted', { service: serviceKey, loadBalancer: lbName, why });
  return undefined;
}
