import { GROUP_NAME_ANNOTATION } from '../../../shared/ingress/membership.ts';
import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  EXPLICIT_GROUP_FINALIZER_PREFIX,
  IMPLICIT_GROUP_FINALIZER,
  INGRESS_ANNOTATION_PREFIX,
  INGRESS_CLASS_ANNOTATION,
  type Ingress,
  type IngressBackend,
  type IngressClass,
  type IngressClassParams,
} from '../../../shared/k8s/ingress-types.ts';
import { sortedEntries } from '../fingerprint.ts';
import type { KindInfo, KubeObject } from '../kube-object.ts';

/**
 * What the Ingress controller (functions/ingress) reads of Ingresses, IngressClasses, IngressClassParams and the
 * Services behind Ingresses: the fingerprints of its module (ingress.ts), and the little the module keeps of each
 * Ingress to name its groups again without the object (`IngressFacts`).
 */

export const INGRESS_KIND = {
  name: 'Ingress',
  path: '/apis/networking.k8s.io/v1/ingresses',
  namespaced: true,
} as const satisfies KindInfo;

export const INGRESS_CLASS_KIND = {
  name: 'IngressClass',
  path: '/apis/networking.k8s.io/v1/ingressclasses',
  namespaced: false,
} as const satisfies KindInfo;

/**
 * The AWS Load Balancer Controller's IngressClassParams (cluster-scoped). Its CustomResourceDefinition may not be
 * installed (a cluster that never ran that controller): `optional`, so a 404 is an empty kind, listed again later.
 */
export const INGRESS_CLASS_PARAMS_KIND = {
  name: 'IngressClassParams',
  path: '/apis/elbv2.k8s.aws/v1beta1/ingressclassparams',
  namespaced: false,
  optional: true,
} as const satisfies KindInfo;

/** The target type annotation, on an Ingress or on a Service (the Service's wins for its target groups). */
export const TARGET_TYPE_ANNOTATION = `${INGRESS_ANNOTATION_PREFIX}target-type`;
/** Instance targets on the Nodes these labels select, on an Ingress or a Service: then Node labels matter. */
export const TARGET_NODE_LABELS_ANNOTATION = `${INGRESS_ANNOTATION_PREFIX}target-node-labels`;
/** A backend port of this name takes its action from the `actions.<service>` annotation. */
const USE_ANNOTATION = 'use-annotation';
const ACTIONS_PREFIX = `${INGRESS_ANNOTATION_PREFIX}actions.`;

const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp);
const controllerAnnotation = (key: string) => key.startsWith(INGRESS_ANNOTATION_PREFIX);
const ingressAnnotation = (key: string) => controllerAnnotation(key) || key === INGRESS_CLASS_ANNOTATION;

/** The finalizers that name one of our groups (another controller's come and go without concerning ours). */
export function groupFinalizers(object: KubeObject): string[] {
  return (object.metadata?.finalizers ?? []).filter(
    (f) => f === IMPLICIT_GROUP_FINALIZER || f.startsWith(EXPLICIT_GROUP_FINALIZER_PREFIX),
  );
}

/**
 * Every Ingress: whose it is depends on the IngressClasses (the module resolves it with them), so none is left out
 * here. The controller's annotations and the legacy class annotation, the spec (class, rules, backends, TLS), our
 * finalizers, deletion and generation. Not the status (the controller writes it), nor other annotations, labels or
 * managed fields, which change without concerning it.
 */
export function ingressReads(object: KubeObject): unknown[] | undefined {
  const ingress = object as unknown as Ingress & { metadata: { generation?: number } };
  return [
    ingress.metadata?.uid,
    ingress.metadata?.generation,
    deleting(object),
    sortedEntries(ingress.metadata?.annotations, ingressAnnotation),
    groupFinalizers(object),
    ingress.spec ?? null,
  ];
}

/** Every IngressClass: which controller, its parameters, and whether it is the default (any may become ours). */
export function ingressClassReads(object: KubeObject): unknown[] | undefined {
  const ingressClass = object as unknown as IngressClass;
  const parameters = ingressClass.spec?.parameters;
  return [
    ingressClass.metadata?.uid,
    ingressClass.spec?.controller,
    parameters ? [parameters.apiGroup, parameters.kind, parameters.name, parameters.scope, parameters.namespace] : null,
    ingressClass.metadata?.annotations?.[DEFAULT_INGRESS_CLASS_ANNOTATION],
  ];
}

/** IngressClassParams: the whole spec, every field of which overrides an annotation of its class's Ingresses. */
export function ingressClassParamsReads(object: KubeObject): unknown[] | undefined {
  const params = object as unknown as IngressClassParams;
  return [params.metadata?.uid, params.spec ?? null];
}

interface ServiceObject extends KubeObject {
  spec?: {
    type?: string;
    ports?: {
      name?: string;
      protocol?: string;
      appProtocol?: string;
      port?: number;
      targetPort?: number | string;
      nodePort?: number;
    }[];
    ipFamilies?: string[];
  };
}

/**
 * Services, as backends of Ingresses: their ports (by name or number, the node port of instance targets, the target
 * port of IP targets), IP families (the target groups' address type), type, and the controller's annotations
 * (target-group settings a Service overrides). Every Service: the module sends keys only for those some Ingress
 * names, which it cannot know from the Service alone.
 */
export function ingressServiceReads(object: KubeObject): unknown[] | undefined {
  const service = object as ServiceObject;
  const spec = service.spec ?? {};
  return [
    service.metadata?.uid,
    spec.type,
    sortedEntries(service.metadata?.annotations, controllerAnnotation),
    (spec.ports ?? []).map((p) => [p.name, p.protocol, p.appProtocol, p.port, p.targetPort, p.nodePort]),
    spec.ipFamilies,
  ];
}

/**
 * The little the module keeps of an Ingress instead of the object: what names its class and group (to name them
 * again when an IngressClass or IngressClassParams changes), the Services it forwards to, and its target type.
 * A handful of short strings: 2,000 Ingresses of three Services each cost about 1.5 MiB (docs/relay.md).
 */
export interface IngressFacts {
  className?: string;
  /** The legacy `kubernetes.io/ingress.class` annotation, which decides alone when present. */
  legacyClass?: string;
  groupName?: string;
  /** Our finalizers (`groupFinalizers`). */
  finalizers: string[];
  /** `namespace/name` of every Service its rules, default backend and forward actions name. */
  services: string[];
  /** Its `target-type` annotation. */
  targetType?: string;
  /** It has `target-node-labels`: Node labels decide its targets. */
  selectsNodes?: boolean;
}

export function ingressFacts(object: KubeObject): IngressFacts {
  const ingress = object as unknown as Ingress;
  const annotations = ingress.metadata?.annotations ?? {};
  const facts: IngressFacts = { finalizers: groupFinalizers(object), services: servicesOf(ingress) };
  const className = ingress.spec?.ingressClassName;
  if (className !== undefined) facts.className = className;
  if (annotations[INGRESS_CLASS_ANNOTATION] !== undefined) facts.legacyClass = annotations[INGRESS_CLASS_ANNOTATION];
  if (annotations[GROUP_NAME_ANNOTATION] !== undefined) facts.groupName = annotations[GROUP_NAME_ANNOTATION];
  if (annotations[TARGET_TYPE_ANNOTATION] !== undefined) facts.targetType = annotations[TARGET_TYPE_ANNOTATION];
  if (annotations[TARGET_NODE_LABELS_ANNOTATION]?.trim()) facts.selectsNodes = true;
  return facts;
}

/** An Ingress as membership.ts reads it, made again from its facts (the parts classOf and groupOf look at). */
export function ingressOf(key: string, facts: IngressFacts): Ingress {
  const slash = key.indexOf('/');
  const annotations: Record<string, string> = {};
  if (facts.legacyClass !== undefined) annotations[INGRESS_CLASS_ANNOTATION] = facts.legacyClass;
  if (facts.groupName !== undefined) annotations[GROUP_NAME_ANNOTATION] = facts.groupName;
  return {
    metadata: { namespace: key.slice(0, slash), name: key.slice(slash + 1), annotations, finalizers: facts.finalizers },
    spec: facts.className === undefined ? {} : { ingressClassName: facts.className },
  };
}

/**
 * The Services an Ingress forwards to: each backend's Service, and for a backend whose port is `use-annotation`,
 * the `serviceName` of every target group its `actions.<name>` forward action names (JSON keys are matched without
 * regard to case, as the controller's Go JSON decoding does). An action that does not parse names none: the
 * controller rejects it too, and the Ingress's own change sends its group's key.
 */
export function servicesOf(ingress: Ingress): string[] {
  const namespace = ingress.metadata?.namespace ?? 'default';
  const names = new Set<string>();
  const annotations = ingress.metadata?.annotations ?? {};
  const backend = (b: IngressBackend | undefined) => {
    const service = b?.service;
    if (!service?.name) return;
    if (service.port?.name !== USE_ANNOTATION) names.add(service.name);
    else forwardServices(annotations[`${ACTIONS_PREFIX}${service.name}`], names);
  };
  backend(ingress.spec?.defaultBackend);
  for (const rule of ingress.spec?.rules ?? []) for (const path of rule.http?.paths ?? []) backend(path.backend);
  return [...names].sort().map((name) => `${namespace}/${name}`);
}

function forwardServices(json: string | undefined, names: Set<string>): void {
  if (json === undefined) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return;
  }
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) for (const item of value) walk(item);
    else if (typeof value === 'object' && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        if (key.toLowerCase() === 'servicename' && typeof inner === 'string' && inner) names.add(inner);
        else walk(inner);
      }
    }
  };
  walk(parsed);
}

/** An IngressClass cut down to what membership.ts reads of it. */
export function slimClass(object: KubeObject): IngressClass {
  const full = object as unknown as IngressClass;
  const slim: IngressClass = { metadata: { name: full.metadata.name } };
  const isDefault = full.metadata.annotations?.[DEFAULT_INGRESS_CLASS_ANNOTATION];
  if (isDefault !== undefined) slim.metadata.annotations = { [DEFAULT_INGRESS_CLASS_ANNOTATION]: isDefault };
  if (full.spec) {
    slim.spec = {};
    if (full.spec.controller !== undefined) slim.spec.controller = full.spec.controller;
    if (full.spec.parameters) slim.spec.parameters = { ...full.spec.parameters };
  }
  return slim;
}

/** IngressClassParams cut down to what decides groups and target types. */
export function slimParams(object: KubeObject): IngressClassParams {
  const full = object as unknown as IngressClassParams;
  const spec: NonNullable<IngressClassParams['spec']> = {};
  if (full.spec?.group) spec.group = { name: full.spec.group.name };
  if (full.spec?.targetType) spec.targetType = full.spec.targetType;
  return { metadata: { name: full.metadata.name }, spec };
}
