import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { isConflict, isNotFound } from './errors.ts';
import type { EventRecord } from './types.ts';

/** `source.component` and `reportingComponent` of every Event, and the User-Agent of every request. */
export const EVENT_COMPONENT = 'serverless-ccm';

/**
 * Rounds of recordEvent (a create, or a read and a patch) before it gives up on an Event whose count
 * others keep incrementing first: the first try and three retries.
 */
export const EVENT_WRITE_ATTEMPTS = 4;

/** Events whose count and resourceVersion a container keeps, least recently written dropped first. */
export const KNOWN_EVENTS_LIMIT = 1000;

/** Longest object name (a DNS subdomain, https://kubernetes.io/docs/concepts/overview/working-with-objects/names/). */
const MAX_NAME_LENGTH = 253;

/** What the recorder reads of a stored Event. */
export interface StoredEvent {
  metadata?: { resourceVersion?: string };
  count?: number;
}

/** The three Event requests, as each Kubernetes client makes them (errors are `KubernetesApiError`s). */
export interface EventRequests {
  create(namespace: string, body: NewEvent): Promise<StoredEvent>;
  read(namespace: string, name: string): Promise<StoredEvent>;
  /** A merge patch. */
  patch(namespace: string, name: string, body: object): Promise<StoredEvent>;
}

interface KnownEvent {
  count: number;
  resourceVersion: string;
}

/**
 * Records Events, aggregating identical ones the way client-go's recorder does: an Event with the same object,
 * type, reason, message and component as an existing one is not created again; the existing one gets `count + 1`
 * and a new `lastTimestamp` (`kubectl describe` shows "(x5 over 10m)").
 *
 * client-go's EventCorrelator finds the existing Event in an in-process cache (with a 10-minute aggregation window
 * and a spam filter). A Lambda container lives for an unknown number of invocations and many run side by side, so
 * that cache would miss most repeats. Here the Event name is derived from its content instead (`eventName`), so
 * every container finds the same Event: create it, and on 409 AlreadyExists read it and increment its count with a
 * merge patch guarded by its resourceVersion. `known` (per container, bounded) only saves the failing create and
 * the read when this container wrote the Event last.
 *
 * Errors are thrown (the callers log them and go on: an Event is best effort), except that losing the race to
 * increment the count `EVENT_WRITE_ATTEMPTS` times in a row is given up silently: the Event is there, its count is
 * one short. Both Kubernetes clients (client-node's and the Lambdas' REST client) record through this one class.
 */
export class EventRecorder {
  /** What this container last wrote to each Event it recorded, by `namespace/name`. */
  private readonly known = new Map<string, KnownEvent>();

  constructor(
    private readonly requests: EventRequests,
    private readonly clock: Clock,
  ) {}

  async record(event: EventRecord): Promise<void> {
    // An Event lives in its object's namespace; Events about cluster-scoped objects (Nodes) go to `default`, as
    // client-go's recorder does.
    const namespace = event.involvedObject.namespace || 'default';
    const name = eventName(event);
    const key = `${namespace}/${name}`;
    let known = this.known.get(key);
    for (let attempt = 1; attempt <= EVENT_WRITE_ATTEMPTS; attempt++) {
      const now = new Date(this.clock.now());
      if (!known) {
        try {
          this.remember(key, await this.requests.create(namespace, newEvent(event, namespace, name, now)));
          return;
        } catch (err) {
          if (!isConflict(err)) throw err; // 409 AlreadyExists: an identical Event is there
        }
        known = await this.read(namespace, name);
        if (!known) continue; // it expired (--event-ttl) since the create: create it again
      }
      const body = {
        count: known.count + 1,
        lastTimestamp: now.toISOString(),
        metadata: { resourceVersion: known.resourceVersion },
      };
      try {
        this.remember(key, await this.requests.patch(namespace, name, body));
        return;
      } catch (err) {
        this.known.delete(key);
        if (!isNotFound(err) && !isConflict(err)) throw err;
        // 404: it expired, create it again. 409: someone counted it meanwhile, read the new count.
        known = isConflict(err) && attempt < EVENT_WRITE_ATTEMPTS ? await this.read(namespace, name) : undefined;
      }
    }
  }

  private async read(namespace: string, name: string): Promise<KnownEvent | undefined> {
    try {
      return knownEvent(await this.requests.read(namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private remember(key: string, event: StoredEvent): void {
    const known = knownEvent(event);
    this.known.delete(key); // re-inserted last: Map order is least recently written first
    if (!known) return;
    this.known.set(key, known);
    if (this.known.size > KNOWN_EVENTS_LIMIT) this.known.delete(this.known.keys().next().value!);
  }
}

function knownEvent(event: StoredEvent | undefined): KnownEvent | undefined {
  const resourceVersion = event?.metadata?.resourceVersion;
  return resourceVersion ? { count: event?.count ?? 1, resourceVersion } : undefined;
}

/**
 * `<object name>.<16 hex digits>`, like client-go's recorder, but the digits are the start of a sha256 over what
 * makes two Events identical (client-go uses the time, and finds repeats in its cache): every Lambda container names
 * the same Event the same way. The object name is cut so the whole stays a valid name of at most 253 characters (no
 * `-.` or `..` where it was cut).
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

/** A core/v1 Event as created (timestamps as `Date`: client-node serializes them, JSON.stringify too). */
export interface NewEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: Partial<EventRecord['involvedObject']>;
  type: EventRecord['type'];
  reason: string;
  message: string;
  source: { component: string };
  firstTimestamp: Date;
  lastTimestamp: Date;
  count: number;
  reportingComponent: string;
}

function newEvent(event: EventRecord, namespace: string, name: string, now: Date): NewEvent {
  const { involvedObject } = event;
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
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    reportingComponent: EVENT_COMPONENT,
  };
}

/** The fields that are set: the API server stores an explicit `undefined` as nothing, a JSON body cannot say it. */
export function definedOnly<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
