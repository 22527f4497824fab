import { isNotFound } from '../errors.ts';
import type { PodGatesPort } from '../tgb-port.ts';
import type { FakeKubernetes } from './fake-kubernetes.ts';

/**
 * The readiness gate's port over FakeKubernetes' Pods and Namespaces (`workloads`, pods.ts): Pods listed by a
 * Service's selector, one condition set by type as the adapters set it (pod-conditions.ts: the same patch, nothing
 * written when the Pod already has the condition as asked, 'gone' when the Pod is), and Namespaces read with their
 * labels (`workloads.putNamespace`). Counted on FakeKubernetes as `listPods`, `setPodCondition` and `getNamespace`,
 * whose `queueError` fails them.
 */
export function fakePodGates(kube: FakeKubernetes): PodGatesPort {
  const pods = kube.workloads;
  return {
    listPods: async (namespace, selector) => pods.listMatching(namespace, selector),
    setPodCondition: async (namespace, name, condition) => {
      try {
        return pods.setConditionRequest(namespace, name, condition);
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw err;
      }
    },
    getNamespace: async (name) => pods.getNamespaceRequest(name),
  };
}
