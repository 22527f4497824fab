import type { IngressDeps } from '../../functions/ingress/deps.ts';
import { ingressReconciler } from '../../functions/ingress/reconciler.ts';
import { targetGroupBindingReconciler } from '../../functions/target-group-binding/reconciler.ts';
import { tgbDepsOn } from '../../functions/target-group-binding/testing/world.ts';
import { AcmAdapter } from '../../shared/aws/acm-adapter.ts';
import { FakeAcm } from '../../shared/aws/fakes/acm/fake-acm.ts';
import type { Wafv2Port } from '../../shared/aws/wafv2-port.ts';
import { type GroupId, groupKey } from '../../shared/ingress/membership.ts';
import { FakeIngresses, fakeIngressControllerKube } from '../../shared/k8s/fakes/ingresses.ts';
import { FakeTargetGroupBindings, fakeStackBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import type { Ingress, IngressClass } from '../../shared/k8s/ingress-types.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import { createServiceWorld } from './service-world.ts';
import { CLUSTER } from './world.ts';

export const INGRESS_QUEUE = 'ingress.fifo';

/** The IngressClass `alb` of the reference's install (its controller, no parameters). */
export const ALB_CLASS: IngressClass = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name: 'alb' },
  spec: { controller: 'ingress.k8s.aws/alb' },
};

/**
 * The service world (a VPC with public and private subnets in three zones, a cluster-tagged Node group, FakeEc2 and
 * FakeElbv2, FakeKubernetes for Services, EndpointSlices, Nodes and Events) plus what Ingresses need: FakeIngresses,
 * a FakeAcm, a web ACL table, the Ingress controller's deps and its queue; FakeTargetGroupBindings, the Ingress
 * controller's deps with stack bindings on, and the binding controller's deps on the same fakes.
 */
export function createIngressWorld() {
  const w = createServiceWorld();
  const ingresses = new FakeIngresses(w.clock);
  ingresses.putIngressClass(ALB_CLASS);
  const acm = new FakeAcm(w.clock);
  const webAcls = new Map<string, string>();
  const wafv2: Wafv2Port = {
    webAclForResource: async (arn) => webAcls.get(arn),
    findWebAclArn: async (name) => `arn:aws:wafv2:eu-west-1:111122223333:regional/webacl/${name}/0001`,
    associate: async (acl, arn) => void webAcls.set(arn, acl),
    disassociate: async (arn) => void webAcls.delete(arn),
  };
  w.sqs.createQueue(INGRESS_QUEUE, { maxReceiveCount: 50, deadLetterQueue: 'ingress-dlq.fifo' });
  const ingressDeps: IngressDeps = {
    clusterName: CLUSTER,
    vpcId: w.serviceDeps.vpcId,
    defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
    defaultTargetType: 'instance',
    defaultTags: {},
    externalManagedTags: [],
    provisioningRequeueSeconds: 30,
    cleanupRequeueSeconds: 30,
    replacementGraceSeconds: 360,
    kube: fakeIngressControllerKube(ingresses, w.kube),
    ec2: w.ec2Port,
    elbv2: w.elbv2Port,
    acm: new AcmAdapter(acm),
    wafv2,
    clock: w.clock,
    log: w.serviceDeps.log,
    metrics: w.metrics,
  };

  // TargetGroupBindings: the Ingress controller's stack bindings when asked for (`stackBindingDeps`), and the binding
  // controller on the same fakes (`tgbDeps`, `reconcileBinding`), which keeps their Pods' readiness gates.
  const bindings = new FakeTargetGroupBindings(w.clock);
  const stackBindingDeps: IngressDeps = { ...ingressDeps, stackBindings: fakeStackBindings(bindings, w.kube) };
  const tgbDeps = tgbDepsOn(w, bindings);
  /** One pass of the binding controller over a binding. */
  const reconcileBinding = (namespace: string, name: string) =>
    targetGroupBindingReconciler.reconcile({ kind: 'TargetGroupBinding', namespace, name }, tgbDeps, undefined, {
      hints: [],
      payloads: [],
      receiveCount: 1,
    });

  let sent = 0;
  /** Sends the groups' keys and plays the queue until it is empty (requeues and retries included). */
  const converge = async (groups: GroupId[], deps: IngressDeps = ingressDeps, maxPolls = 500) => {
    const messages: KeyMessage[] = groups.map((g) => ({
      ...groupKey(g),
      hint: { eventType: 'RESYNC' as const, eventId: `converge-${++sent}` },
    }));
    await w.enqueue(INGRESS_QUEUE, messages);
    return w.drain(INGRESS_QUEUE, ingressReconciler, deps, maxPolls);
  };
  const ingress = (name: string, namespace = 'default'): Ingress | undefined =>
    ingresses.ingresses.get(`${namespace}/${name}`);
  const hostname = (name: string, namespace = 'default') =>
    ingress(name, namespace)?.status?.loadBalancer?.ingress?.[0]?.hostname;
  const eventsOf = (name: string, reason?: string) =>
    w.kube.eventsFor('Ingress', name, reason).map((e) => `${e.reason}: ${e.message}`);
  const loadBalancers = () => [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
  return {
    ...w,
    ingresses,
    acm,
    webAcls,
    ingressDeps,
    bindings,
    stackBindingDeps,
    tgbDeps,
    reconcileBinding,
    converge,
    ingress,
    hostname,
    eventsOf,
    loadBalancers,
  };
}

export type IngressWorld = ReturnType<typeof createIngressWorld>;
