import { type Clock, systemClock } from '../clock.ts';
import {
  CORDON_PATCH,
  type DrainPort,
  deleteOutcome,
  type EvictionResult,
  type EvictOptions,
  evictionOutcome,
  type PodDeleteResult,
} from './drain-port.ts';
import { isNotFound } from './errors.ts';
import { definedOnly, EventRecorder, type StoredEvent } from './event-recorder.ts';
import type { ConfigMap, IpamKubernetesPort } from './ipam-port.ts';
import type { KubernetesPort, WriteGuard } from './port.ts';
import { CoreV1Api, DiscoveryV1Api, listAll } from './rest-api.ts';
import { guardedPatch, KubernetesRestClient, type TokenKubeConfig } from './rest-client.ts';
import { LABEL_SERVICE_NAME, type ServicesPort } from './service-port.ts';
import type { EndpointSlice, EventRecord, MergePatch, Node, Pod, Service } from './types.ts';

/**
 * The Lambdas' Kubernetes ports over `KubernetesRestClient`: the same requests, answers and errors as the
 * client-node adapters (`client-node-*.ts`), whose adapter tests both run against the HTTPS fake API
 * server. The API's JSON is handed out as it came: no model classes, so no `Date` round trip either.
 */

export interface RestPortOptions {
  /** Time source for Event timestamps. */
  clock?: Clock;
  /** Sent as User-Agent on every request, so API server audit logs name the controller. */
  userAgent?: string;
}

/** Nodes and Events (`KubernetesPort`). */
export class RestKubernetes implements KubernetesPort {
  private readonly core: CoreV1Api;
  private readonly clock: Clock;
  private events?: EventRecorder;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    this.core = new CoreV1Api(new KubernetesRestClient(kubeConfig, options.userAgent));
    this.clock = options.clock ?? systemClock;
  }

  async getNode(name: string): Promise<Node | undefined> {
    try {
      return await this.core.readNode<Node>(name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  listNodes(): Promise<Node[]> {
    return listAll((query) => this.core.listNode<Node>(query));
  }

  patchNode(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node> {
    return this.core.patchNode<Node>(name, guardedPatch(patch, guard));
  }

  patchNodeStatus(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node> {
    return this.core.patchNodeStatus<Node>(name, guardedPatch(patch, guard));
  }

  /**
   * Preconditions make the API server answer 409 instead of deleting a different incarnation of the
   * Node (same name, new uid) or one changed since it was read.
   * https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/
   */
  async deleteNode(name: string, preconditions: { uid?: string; resourceVersion?: string }): Promise<void> {
    const body = {
      preconditions: definedOnly({ uid: preconditions.uid, resourceVersion: preconditions.resourceVersion }),
    };
    await this.core.deleteNode(name, body);
  }

  /** An Event, aggregated with identical ones (`EventRecorder` in event-recorder.ts explains how). */
  recordEvent(event: EventRecord): Promise<void> {
    // Built on first use, so the Event requests belong to recordEvent alone (stacks/iam-usage.test.ts derives each
    // function's RBAC from the methods it calls).
    const core = this.core;
    this.events ??= new EventRecorder(
      {
        create: (namespace, body) => core.createNamespacedEvent<StoredEvent>(namespace, body),
        read: (namespace, name) => core.readNamespacedEvent<StoredEvent>(namespace, name),
        patch: (namespace, name, body) => core.patchNamespacedEvent<StoredEvent>(namespace, name, body),
      },
      this.clock,
    );
    return this.events.record(event);
  }
}

/** Services and their EndpointSlices (`ServicesPort`). */
export class RestServices implements ServicesPort {
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    const api = new KubernetesRestClient(kubeConfig, options.userAgent);
    this.core = new CoreV1Api(api);
    this.discovery = new DiscoveryV1Api(api);
  }

  async getService(namespace: string, name: string): Promise<Service | undefined> {
    try {
      return await this.core.readNamespacedService<Service>(namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  listServices(): Promise<Service[]> {
    return listAll((query) => this.core.listServiceForAllNamespaces<Service>(query));
  }

  patchService(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service> {
    return this.core.patchNamespacedService<Service>(namespace, name, guardedPatch(patch, guard));
  }

  patchServiceStatus(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service> {
    return this.core.patchNamespacedServiceStatus<Service>(namespace, name, guardedPatch(patch, guard));
  }

  /** Not started again on 410, as the client-node adapter's is not either: the next pass lists anew. */
  listEndpointSlices(namespace: string, serviceName: string): Promise<EndpointSlice[]> {
    const labelSelector = `${LABEL_SERVICE_NAME}=${serviceName}`;
    return listAll(
      (query) => this.discovery.listNamespacedEndpointSlice<EndpointSlice>(namespace, { ...query, labelSelector }),
      { relistOnExpired: false },
    );
  }
}

/**
 * The Pods bound to a Node, of every namespace: filtered by the API server (spec.nodeName is a field
 * selector every Pod list supports), paged, and listed again once when a continue token expires (410).
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
 */
function listPodsBoundTo(core: CoreV1Api, nodeName: string): Promise<Pod[]> {
  const fieldSelector = `spec.nodeName=${nodeName}`;
  return listAll((query) => core.listPodForAllNamespaces<Pod>({ ...query, fieldSelector }));
}

/** The IP address manager's Pods and ConfigMap (`IpamKubernetesPort`). */
export class RestIpam implements IpamKubernetesPort {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    this.core = new CoreV1Api(new KubernetesRestClient(kubeConfig, options.userAgent));
  }

  listPodsOnNode(nodeName: string): Promise<Pod[]> {
    return listPodsBoundTo(this.core, nodeName);
  }

  /** Guarded by resourceVersion and uid, as `ClientNodeIpam.patchPodAnnotations` explains. */
  async patchPodAnnotations(
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string | null>>,
    guard: WriteGuard & { uid: string },
  ): Promise<Pod | 'gone'> {
    const body = { metadata: { annotations, resourceVersion: guard.resourceVersion, uid: guard.uid } };
    try {
      return await this.core.patchNamespacedPod<Pod>(namespace, name, body);
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    try {
      return await this.core.readNamespacedConfigMap<ConfigMap>(namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/** Evictions, Pod deletes and cordons (`DrainPort`), answered as `drain-port.ts` says. */
export class RestDrain implements DrainPort {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    this.core = new CoreV1Api(new KubernetesRestClient(kubeConfig, options.userAgent));
  }

  listPodsOnNode(nodeName: string): Promise<Pod[]> {
    return listPodsBoundTo(this.core, nodeName);
  }

  /** A policy/v1 Eviction: https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ */
  evictPod(namespace: string, name: string, options: EvictOptions = {}): Promise<EvictionResult> {
    const body = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
      deleteOptions: deleteOptions(options),
    };
    return evictionOutcome(namespace, name, options, () =>
      this.core.createNamespacedPodEviction(namespace, name, body),
    );
  }

  deletePod(namespace: string, name: string, options: { uid?: string } = {}): Promise<PodDeleteResult> {
    return deleteOutcome(namespace, name, options, () =>
      this.core.deleteNamespacedPod(namespace, name, deleteOptions(options)),
    );
  }

  cordonNode(name: string, guard: WriteGuard): Promise<Node> {
    const body = guardedPatch(structuredClone(CORDON_PATCH), guard);
    return this.core.patchNode<Node>(name, body);
  }
}

/** The uid as a precondition: a Pod re-created under the same name is never evicted or deleted by mistake. */
function deleteOptions(options: EvictOptions): { gracePeriodSeconds?: number; preconditions?: { uid: string } } {
  return {
    ...(options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
    ...(options.uid !== undefined ? { preconditions: { uid: options.uid } } : {}),
  };
}
