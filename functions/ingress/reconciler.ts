import { errorMessage, TerminalError } from '../../shared/errors.ts';
import {
  type ClassLookup,
  classOf,
  type GroupId,
  groupFinalizer,
  groupFromKey,
  groupOf,
  stackName,
} from '../../shared/ingress/membership.ts';
import { groupsNamedBy, readClasses } from '../../shared/ingress/named-groups.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import type { Ingress } from '../../shared/k8s/ingress-types.ts';
import {
  gateRequeue,
  LBC_ACTIVE_REASON,
  type LeaseState,
  lbcActiveMessage,
  lbcLeaseState,
} from '../../shared/k8s/lbc-lease.ts';
import { codeOf } from '../../shared/load-balancers/errors.ts';
import { isIngressGarbageCollectionKey } from '../../shared/queue/ingress-gc-key.ts';
import { keyString, type ObjectKey } from '../../shared/queue/message.ts';
import type { ReconcileResult, Reconciler } from '../../shared/queue/runner.ts';
import { applyGroup } from './apply/apply.ts';
import { discoverableCertificates } from './apply/certificates.ts';
import { cleanupRequeueSeconds, deleteStack, stackInventory } from './apply/cleanup.ts';
import { startGroupPass } from './apply/pass.ts';
import type { IngressDeps } from './deps.ts';
import { collectIngressGarbage } from './gc.ts';
import { changeFinalizer, EVENT, recordIngressEvent, recordMembersEvent } from './kube.ts';
import { buildGroup } from './model/build.ts';
import type { GroupBuild } from './model/types.ts';

/**
 * Ingresses -> Application Load Balancers, one per IngressGroup (docs/ingress.md). The key is the group: every
 * member's change, and every change of what members use, reconciles the whole group, so two members never race.
 * A pass builds the group's model from its members (model/), then applies it (apply/): a member that cannot be
 * built keeps what it had, and the others' changes go through.
 */
export const ingressReconciler: Reconciler<IngressDeps> = {
  name: 'ingress',
  accepts: (key) => key.kind === 'IngressGroup' || isIngressGarbageCollectionKey(key),
  async reconcile(key, deps, _batch, context) {
    if (key.kind !== 'IngressGroup' && !isIngressGarbageCollectionKey(key)) {
      throw new TerminalError(`the ingress queue takes IngressGroup keys (got ${keyString(key)})`);
    }
    // Before anything: while the reference controller runs, its Ingresses are its own (docs/adr/0016).
    const lease = await readLbcLease(deps);
    if (lease.held) return leaveToReference(key, lease, deps, context.receiveCount);
    if (isIngressGarbageCollectionKey(key)) return collectIngressGarbage(deps);
    return reconcileGroup(groupFromKey(key), deps, context.receiveCount);
  },
  async reportTerminal(key: ObjectKey, error: TerminalError, deps: IngressDeps) {
    if (key.kind !== 'IngressGroup') return;
    const group = groupFromKey(key);
    const members = await groupMembersForEvents(group, deps);
    await recordMembersEvent(
      deps,
      members.map((ingress) => ({ ingress })),
      'Warning',
      EVENT.failedDeploy,
      error.message,
    );
  },
};

async function readLbcLease(deps: IngressDeps): Promise<LeaseState> {
  try {
    return await lbcLeaseState(deps.kube, deps.clock.now());
  } catch (err) {
    // Never taken as free: an unreadable Lease fails the key, which is retried.
    throw classifyKubernetesError('reading the AWS Load Balancer Controller leader Lease', err);
  }
}

/**
 * The reference controller holds its Lease: nothing is read from or written to AWS, no finalizer or status is
 * touched; every member of the group hears why, and the key comes back once the Lease may have expired.
 */
async function leaveToReference(
  key: ObjectKey,
  lease: Extract<LeaseState, { held: true }>,
  deps: IngressDeps,
  receiveCount: number,
): Promise<ReconcileResult | undefined> {
  deps.log.info('the AWS Load Balancer Controller holds its leader Lease: the Ingresses are left to it', {
    key: keyString(key),
    holder: lease.holder,
    expiresInSeconds: lease.expiresInSeconds,
  });
  if (key.kind === 'IngressGroup') {
    const members = await namedMembers(groupFromKey(key), deps);
    await recordMembersEvent(
      deps,
      members.map((ingress) => ({ ingress })),
      'Warning',
      LBC_ACTIVE_REASON,
      lbcActiveMessage(lease),
    );
  }
  return gateRequeue(lease, receiveCount);
}

/** The Ingresses that name the group (members, and those its finalizer still holds), from the Ingresses alone. */
async function namedMembers(group: GroupId, deps: IngressDeps): Promise<Ingress[]> {
  try {
    const [ingresses, { classes, params }] = await Promise.all([deps.kube.listIngresses(), readClasses(deps.kube)]);
    const lookup: ClassLookup = { classes, params: (name) => params.get(name) };
    return ingresses.filter((ingress) =>
      groupsNamedBy(ingress, lookup).some(
        (named) => stackName(named) === stackName(group) && named.explicit === group.explicit,
      ),
    );
  } catch (err) {
    throw classifyKubernetesError(`reading the Ingresses of group ${stackName(group)}`, err);
  }
}

async function reconcileGroup(
  group: GroupId,
  deps: IngressDeps,
  receiveCount: number,
): Promise<ReconcileResult | undefined> {
  const { build, ingresses, lookup } = await buildFor(group, deps);
  if (!group.explicit) await reportInvalidGroupName(group, ingresses, lookup, deps);
  if (!build.model) {
    await tellMembers(build, deps);
    return deleteGroup(group, build, deps, receiveCount);
  }
  const finalizer = groupFinalizer(group);
  for (const member of build.members) {
    try {
      await changeFinalizer(deps, member.ingress, finalizer, 'add');
    } catch (err) {
      await recordIngressEvent(deps, member.ingress, 'Warning', EVENT.failedAddFinalizer, errorMessage(err));
      throw err;
    }
  }
  const pass = startGroupPass(deps, group);
  try {
    const applied = await applyGroup(build, build.model, pass, receiveCount);
    // A quick look that found the group in line changed nothing: no Event (a resync round every few minutes would
    // otherwise write one on every member of every group).
    if (applied?.quick) return undefined;
    await tellMembers(build, deps);
    const result =
      applied?.requeueAfterSeconds !== undefined ? { requeueAfterSeconds: applied.requeueAfterSeconds } : undefined;
    for (const member of build.members) {
      for (const warning of pass.warnings) {
        await recordIngressEvent(deps, member.ingress, 'Warning', EVENT.failedDeploy, warning);
      }
      if (member.state === 'built') {
        await recordIngressEvent(deps, member.ingress, 'Normal', EVENT.reconciled, 'Successfully reconciled');
      }
    }
    await releaseLeaving(build, group, deps);
    return result;
  } catch (err) {
    const code = codeOf(err);
    const message = `Failed deploy model due to ${code ? `${code}: ` : ''}${errorMessage(err)}`;
    await tellMembers(build, deps);
    await recordMembersEvent(deps, build.members, 'Warning', EVENT.failedDeploy, message);
    throw err;
  }
}

/**
 * Each member's problems (it is kept as it was) and the settings it uses that are not supported: a Warning each. Not
 * after a quick look that found the group in line, which every member's settings being built implies.
 */
async function tellMembers(build: GroupBuild, deps: IngressDeps): Promise<void> {
  for (const member of build.members) {
    for (const problem of member.problems) {
      await recordIngressEvent(deps, member.ingress, 'Warning', EVENT.failedBuild, `${problem.at}: ${problem.message}`);
    }
    for (const warning of member.warnings) {
      await recordIngressEvent(deps, member.ingress, 'Warning', EVENT.unsupported, `${warning.at}: ${warning.message}`);
    }
  }
}

/** No member left: everything the stack owns goes, then the leaving members' finalizers. */
async function deleteGroup(
  group: GroupId,
  build: GroupBuild,
  deps: IngressDeps,
  receiveCount: number,
): Promise<ReconcileResult | undefined> {
  const pass = startGroupPass(deps, group);
  const inventory = await stackInventory(pass);
  const nothing =
    inventory.loadBalancers.length + inventory.targetGroups.length + inventory.securityGroups.length === 0;
  if (nothing && build.leaving.length === 0) return undefined;
  const deletion = await deleteStack(inventory, pass);
  // The finalizer waits only for what serves traffic: the load balancer and its target groups. A security group
  // still held by the interfaces of a load balancer just deleted is tried again by this key (and the collector).
  if (deletion.servingGone) await releaseLeaving(build, group, deps);
  if (!deletion.servingGone || deletion.pendingGroups > 0) {
    deps.log.info('ingress group deletion waits for AWS', {
      group: stackName(group),
      servingGone: deletion.servingGone,
      pendingGroups: deletion.pendingGroups,
    });
    return { requeueAfterSeconds: cleanupRequeueSeconds(receiveCount, deps.cleanupRequeueSeconds) };
  }
  return undefined;
}

/** Members that left the group lose its finalizer once the pass has removed their rules. */
async function releaseLeaving(build: GroupBuild, group: GroupId, deps: IngressDeps): Promise<void> {
  const finalizer = groupFinalizer(group);
  for (const ingress of build.leaving) {
    try {
      await changeFinalizer(deps, ingress, finalizer, 'remove');
    } catch (err) {
      await recordIngressEvent(deps, ingress, 'Warning', EVENT.failedRemoveFinalizer, errorMessage(err));
      throw err;
    }
  }
}

/**
 * An Ingress of ours whose `group.name` is invalid belongs to no group (its rules leave the group it was in, as
 * the reference does): its own implicit group's pass says why, on the Ingress.
 */
async function reportInvalidGroupName(
  group: GroupId & { explicit: false },
  ingresses: readonly Ingress[],
  lookup: ClassLookup,
  deps: IngressDeps,
): Promise<void> {
  const ingress = ingresses.find(
    (i) => (i.metadata.namespace ?? 'default') === group.namespace && i.metadata.name === group.name,
  );
  if (!ingress || ingress.metadata.deletionTimestamp) return;
  const found = classOf(ingress, lookup);
  if (found.managed !== true) return;
  const grouped = groupOf(ingress, found.params);
  if (!grouped.ok) await recordIngressEvent(deps, ingress, 'Warning', EVENT.failedGroup, grouped.problem);
}

/** The group's model, from every Ingress, the IngressClasses and the params they name. */
async function buildFor(
  group: GroupId,
  deps: IngressDeps,
): Promise<{ build: GroupBuild; ingresses: Ingress[]; lookup: ClassLookup }> {
  const { kube } = deps;
  let ingresses: Ingress[];
  let lookup: ClassLookup;
  try {
    ingresses = await kube.listIngresses();
    const { classes, params } = await readClasses(kube);
    const labels = new Map<string, Record<string, string>>();
    if ([...params.values()].some((p) => p.spec?.namespaceSelector)) {
      for (const namespace of new Set(ingresses.map((i) => i.metadata.namespace ?? 'default'))) {
        const found = await kube.getNamespace(namespace);
        if (found) labels.set(namespace, found.metadata.labels ?? {});
      }
    }
    lookup = { classes, params: (name) => params.get(name), namespaceLabels: (namespace) => labels.get(namespace) };
  } catch (err) {
    throw classifyKubernetesError(`reading the Ingresses of group ${stackName(group)}`, err);
  }
  const build = await buildGroup({
    group,
    ingresses,
    lookup,
    reads: {
      service: async (namespace: string, name: string) => {
        try {
          return await kube.getService(namespace, name);
        } catch (err) {
          throw classifyKubernetesError(`reading service ${namespace}/${name}`, err);
        }
      },
      certificates: () => discoverableCertificates(deps),
    },
    settings: {
      clusterName: deps.clusterName,
      defaultSslPolicy: deps.defaultSslPolicy,
      defaultTargetType: deps.defaultTargetType,
      defaultTags: deps.defaultTags,
      externalManagedTags: deps.externalManagedTags,
    },
  });
  return { build, ingresses, lookup };
}

/** Who hears about a failure retrying cannot fix: the group's members as they are now. */
async function groupMembersForEvents(group: GroupId, deps: IngressDeps): Promise<Ingress[]> {
  try {
    const { build } = await buildFor(group, deps);
    return [...build.members.map((m) => m.ingress), ...build.leaving];
  } catch {
    return [];
  }
}
