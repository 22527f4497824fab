import { TAGS_ARNS_PER_CALL } from '../../shared/aws/elbv2-port.ts';
import { type ClassLookup, classOf, type GroupId, stackName } from '../../shared/ingress/membership.ts';
import { groupsNamedBy, readClasses } from '../../shared/ingress/named-groups.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../shared/queue/runner.ts';
import { deleteStack, stackInventory } from './apply/cleanup.ts';
import { startGroupPass } from './apply/pass.ts';
import { TAG } from './apply/tags.ts';
import type { IngressDeps } from './deps.ts';

/**
 * The Ingress controller's garbage collection (shared/queue/ingress-gc-key.ts): the stacks of this cluster in
 * `VPC_ID` (load balancers and target groups carrying `elbv2.k8s.aws/cluster=<cluster>` and an `ingress.k8s.aws/stack`)
 * whose group no Ingress names any more, neither as its group nor in a finalizer, are deleted, as a group's own key
 * deletes its stack when its last member goes. The reads come first, the Ingresses last, so a group made meanwhile
 * is seen with its Ingress.
 */
export async function collectIngressGarbage(deps: IngressDeps): Promise<ReconcileResult | undefined> {
  const stacks = await stacksInVpc(deps);
  if (stacks.size === 0) return undefined;
  const live = await liveStacks(deps);
  let pending = 0;
  for (const [stack, group] of stacks) {
    if (live.has(stack)) continue;
    const pass = startGroupPass(deps, group);
    const deletion = await deleteStack(await stackInventory(pass), pass);
    deps.log.info('ingress stack garbage collected', { stack, pending: deletion.pendingGroups });
    deps.metrics.count(MetricName.LoadBalancerGarbageCollected, { resource: 'IngressStack' });
    if (!deletion.servingGone || deletion.pendingGroups > 0) pending++;
  }
  return pending > 0 ? { requeueAfterSeconds: deps.cleanupRequeueSeconds } : undefined;
}

/** Every stack of the cluster in the VPC, by its tag value, with the group it names. */
async function stacksInVpc(deps: IngressDeps): Promise<Map<string, GroupId>> {
  const inVpc = <T extends { vpcId?: string }>(items: T[]) => items.filter((i) => i.vpcId === deps.vpcId);
  const resources = [
    ...inVpc(await deps.elbv2.listLoadBalancers()).filter((lb) => lb.type === 'application'),
    ...inVpc(await deps.elbv2.listTargetGroups()),
  ];
  const out = new Map<string, GroupId>();
  const add = (t: Readonly<Record<string, string>>) => {
    const stack = t[TAG.stack];
    if (!stack || (t[TAG.cluster] ?? t[TAG.legacyCluster]) !== deps.clusterName) return;
    const [namespace, name] = stack.split('/');
    out.set(
      stack,
      name !== undefined ? { explicit: false, namespace: namespace!, name } : { explicit: true, name: stack },
    );
  };
  for (let i = 0; i < resources.length; i += TAGS_ARNS_PER_CALL) {
    const tags = await deps.elbv2.describeTags(resources.slice(i, i + TAGS_ARNS_PER_CALL).map((r) => r.arn));
    for (const t of tags.values()) add(t);
  }
  // A frontend group left alone (its load balancer went first; its interfaces held it a while).
  const groups = await deps.ec2.findSecurityGroups({ vpcId: deps.vpcId, tags: { [TAG.cluster]: deps.clusterName } });
  for (const group of groups) add(group.tags);
  return out;
}

/** The stacks some Ingress still names: its group (when it is ours), and every group of its finalizers. */
async function liveStacks(deps: IngressDeps): Promise<Set<string>> {
  try {
    const ingresses = await deps.kube.listIngresses();
    const { classes, params } = await readClasses(deps.kube);
    const lookup: ClassLookup = { classes, params: (name) => params.get(name) };
    const live = new Set<string>();
    for (const ingress of ingresses) {
      for (const group of groupsNamedBy(ingress, lookup)) live.add(stackName(group));
      // An Ingress whose class cannot be used right now may still be a member: its own implicit stack stays.
      if (classOf(ingress, lookup).managed === 'invalid') {
        live.add(`${ingress.metadata.namespace ?? 'default'}/${ingress.metadata.name}`);
      }
    }
    return live;
  } catch (err) {
    throw classifyKubernetesError('listing the Ingresses for garbage collection', err);
  }
}
