import type { LoadBalancer } from '../../../shared/aws/elbv2-port.ts';
import { deleteLoadBalancerAndListeners } from '../../../shared/load-balancers/listeners.ts';
import type { ObservedLoadBalancer } from '../../../shared/load-balancers/observed.ts';
import { deleteSecurityGroup } from '../../../shared/load-balancers/security-groups.ts';
import { deleteTargetGroup } from '../../../shared/load-balancers/target-groups.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { ownedByService } from '../annotations.ts';
import { EVENT, setIngressHostname } from '../kube.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import { REPLACES_TAG } from '../names.ts';
import type { Pass } from '../writes.ts';
import { revokeReferenceNodeRules } from './node-access.ts';
import { findOurs } from './replacement.ts';

export interface PassOutcome {
  spec: LoadBalancerSpec;
  observed: ObservedLoadBalancer;
  created: boolean;
  /** Another load balancer serves the Service meanwhile (the one being replaced). */
  serving: ObservedLoadBalancer | undefined;
  warning: string | undefined;
  /** Something waits for AWS (a target group still in use, zones on their way out). */
  pending: boolean;
}

/**
 * Status, the replaced load balancer, Events, and when to look again. While another load balancer serves,
 * the status keeps naming it until the new one is `active`; only then does the status move and the old one go.
 */
export async function finishPass(outcome: PassOutcome, pass: Pass): Promise<ReconcileResult | undefined> {
  const { spec, observed, serving } = outcome;
  const { lb } = observed;
  const { deps } = pass;
  const waitsForSuccessor = (serving !== undefined || pass.previous !== undefined) && lb.state !== 'active';
  if (!waitsForSuccessor) {
    const updated = await setIngressHostname(deps, pass.service, lb.dnsName);
    if (!updated) return undefined;
    pass.service = updated;
    if (serving) await retireServing(serving, spec.loadBalancerName, pass, false);
    if (pass.previous) await pass.previous.retire(lb.name);
    // It serves now: no longer anyone's successor (the garbage collector reads this tag).
    if (serving || pass.previous) await pass.elbv2.removeTags(lb.arn, [REPLACES_TAG]);
  }
  await announceChanges({ spec, lb, created: outcome.created, warning: outcome.warning }, pass);
  if (lb.state === 'provisioning' || waitsForSuccessor) return { requeueAfterSeconds: deps.provisioningRequeueSeconds };
  if (outcome.pending) return { requeueAfterSeconds: deps.cleanupRequeueSeconds };
  return undefined;
}

/**
 * The Events and log line of a pass that changed something (a new load balancer, new targets, a rule), none on a
 * quiet pass: `EnsuredLoadBalancer` after a configuration change, else `UpdatedLoadBalancer` for new targets, and
 * the Warning that no Node security group could be opened.
 */
export async function announceChanges(
  outcome: { spec: LoadBalancerSpec; lb: LoadBalancer; created: boolean; warning: string | undefined },
  pass: Pass,
): Promise<void> {
  const { spec, lb } = outcome;
  const { deps, changes } = pass;
  if (!changes.config && !changes.targets) return;
  if (outcome.warning) await pass.event('Warning', EVENT.noNodeSecurityGroup, outcome.warning);
  if (changes.config) {
    if (!outcome.created) deps.metrics.count(MetricName.LoadBalancersUpdated);
    await pass.event('Normal', EVENT.ensured, `Ensured load balancer ${lb.name} (${lb.dnsName})`);
  } else {
    await pass.event('Normal', EVENT.updated, `Updated load balancer ${lb.name} with new targets`);
  }
  deps.log.info('load balancer ensured', {
    serviceKey: spec.serviceKey,
    loadBalancer: lb.name,
    state: lb.state,
    created: outcome.created,
  });
}

/**
 * The load balancer a successor replaces: it, its target groups, its managed security group (unless its network
 * interfaces still hold it: then the garbage collector finishes the job) and, for one made without groups,
 * its rules on the Nodes' groups. `first`: it must go before its successor can have its name.
 */
export async function retireServing(
  old: ObservedLoadBalancer,
  successor: string,
  pass: Pass,
  first: boolean,
): Promise<void> {
  const { deps } = pass;
  const owned = (arn: string) => ownedByService(old.tags.get(arn), deps.clusterName, pass.serviceKey);
  await pass.event(
    first ? 'Warning' : 'Normal',
    EVENT.replacing,
    first
      ? `Deleting load balancer ${old.lb.name} before making it again: the name annotation pins the name, so traffic stops until the new one is active`
      : `Deleting load balancer ${old.lb.name}: the Service now uses ${successor}`,
  );
  await deleteLoadBalancerAndListeners(old.lb, pass);
  for (const group of old.attached) if (owned(group.arn)) await deleteTargetGroup(group, pass);
  if (old.lb.securityGroups.length === 0) {
    await revokeReferenceNodeRules(old.lb.name, pass);
    return;
  }
  // Its successor of the same name uses the same managed group.
  if (first) return;
  const managed = (await pass.ec2.findSecurityGroups({ groupIds: old.lb.securityGroups })).filter((g) =>
    ownedByService(g.tags, deps.clusterName, pass.serviceKey),
  );
  for (const group of managed) await deleteSecurityGroup(group.groupId, pass);
}

/** Retires the Network Load Balancer of that name when it is the Service's: another kind has taken over. */
export async function retireNetworkLoadBalancer(pass: Pass, name: string, successor: string): Promise<void> {
  const observed = await findOurs(name, pass, false);
  if (observed) await retireServing(observed, successor, pass, false);
}
