import { createHash } from 'node:crypto';
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
import { isConflict, isNotFound } from './errors.ts';
import type { ConfigMap, IpamKubernetesPort } from './ipam-port.ts';
import type { KubernetesPort, WriteGuard } from './port.ts';
import { CoreV1Api, DiscoveryV1Api, listAll } from './rest-api.ts';
import { EVENT_COMPONENT, guardedPatch, KubernetesRestClient, type TokenKubeConfig } from './rest-client.ts';
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

/**
 * Rounds of recordEvent (a create, or a read and a patch) before it gives up on an Event whose count
 * others keep incrementing first: the first try and three retries.
 */
export const EVENT_WRITE_ATTEMPTS = 4;

/** Events whose count and resourceVersion a container keeps, least recently written dropped first. */
export const KNOWN_EVENTS_LIMIT = 1000;

/** Longest object name (a DNS subdomain, https://kubernetes.io/docs/concepts/overview/working-with-objects/names/). */
const MAX_NAME_LENGTH = 253;

interface KnownEvent {
  count: number;
  resourceVersion: string;
}

interface StoredEvent {
  metadata?: { resourceVersion?: string };
  count?: number;
}

/** Nodes and Events (`KubernetesPort`). */
export class RestKubernetes implements KubernetesPort {
  private readonly core: CoreV1Api;
  private readonly clock: Clock;
  /** What this container last wrote to each Event it recorded, by `namespace/name`; see recordEvent. */
  private readonly knownEvents = new Map<string, KnownEvent>();

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

  /**
   * Records an Event, aggregated the way client-go's recorder does, but found by a name derived from
   * its content rather than in a per-process cache (Lambda containers come and go): create it, and on
   * 409 AlreadyExists read it and increment its count with a merge patch guarded by its
   * resourceVersion. The same algorithm as `ClientNodeKubernetes.recordEvent`, which explains it.
   */
  async recordEvent(event: EventRecord): Promise<void> {
    const namespace = event.involvedObject.namespace || 'default';
    const name = eventName(event);
    const key = `${namespace}/${name}`;
    let known = this.knownEvents.get(key);
    for (let attempt = 1; attempt <= EVENT_WRITE_ATTEMPTS; attempt++) {
      const now = new Date(this.clock.now());
      if (!known) {
        try {
          const created = await this.core.createNamespacedEvent<StoredEvent>(
            namespace,
            newEvent(event, namespace, name, now),
          );
          this.rememberEvent(key, created);
          return;
        } catch (err) {
          if (!isConflict(err)) throw err; // 409 AlreadyExists: an identical Event is there
        }
        known = await this.readEvent(namespace, name);
        if (!known) continue; // it expired (--event-ttl) since the create: create it again
      }
      const body = guardedPatch({ count: known.count + 1, lastTimestamp: now.toISOString() }, known);
      try {
        const patched = await this.core.patchNamespacedEvent<StoredEvent>(namespace, name, body);
        this.rememberEvent(key, patched);
        return;
      } catch (err) {
        this.knownEvents.delete(key);
        if (!isNotFound(err) && !isConflict(err)) throw err;
        // 404: it expired, create it again. 409: someone counted it meanwhile, read the new count.
        known = isConflict(err) && attempt < EVENT_WRITE_ATTEMPTS ? await this.readEvent(namespace, name) : undefined;
      }
    }
  }

  private async readEvent(namespace: string, name: string): Promise<KnownEvent | undefined> {
    try {
      return knownEvent(await this.core.readNamespacedEvent<StoredEvent>(namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private rememberEvent(key: string, event: StoredEvent): void {
    const known = knownEvent(event);
    this.knownEvents.delete(key); // re-inserted last: Map order is least recently written first
    if (!known) return;
    this.knownEvents.set(key, known);
    if (this.knownEvents.size > KNOWN_EVENTS_LIMIT) {
      this.knownEvents.delete(this.knownEvents.keys().next().value!);
    }
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

function knownEvent(event: StoredEvent | undefined): KnownEvent | undefined {
  const resourceVersion = event?.metadata?.resourceVersion;
  return resourceVersion ? { count: event?.count ?? 1, resourceVersion } : undefined;
}

/**
 * `<object name>.<16 hex digits>`, the digits the start of a sha256 over what makes two Events identical,
 * so every container names the same Event the same way (as `eventName` of client-node-adapter.ts, which
 * the adapter tests check both against).
 */
export function eventName(event: EventRecord): string {
  const { involvedObject: ref } = event;
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        ref.kind,
        ref.namespace ?? '',
        ref.name,
        ref.uid ?? '',
        event.type,
        event.reason,
        event.message,
        EVENT_COMPONENT,
      ]),
    )
    .digest('hex')
    .slice(0, 16);
  const prefix = ref.name.slice(0, MAX_NAME_LENGTH - digest.length - 1).replace(/[-.]+$/, '');
  return `${prefix}.${digest}`;
}

function newEvent(event: EventRecord, namespace: string, name: string, now: Date): object {
  const { involvedObject } = event;
  const at = now.toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace },
    involvedObject: definedOnly({
      apiVersion: involvedObject.apiVersion,
      kind: involvedObject.kind,
      name: involvedObject.name,
      namespace: involvedObject.namespace,
      uid: involvedObject.uid,
      resourceVersion: involvedObject.resourceVersion,
    }),
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: EVENT_COMPONENT },
    firstTimestamp: at,
    lastTimestamp: at,
    count: 1,
    reportingComponent: EVENT_COMPONENT,
  };
}

function definedOnly<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
