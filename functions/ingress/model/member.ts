import type { GroupId } from '../../../shared/ingress/membership.ts';
import {
  INGRESS_ANNOTATION_PREFIX,
  type Ingress,
  type IngressBackend,
  type IngressClassParams,
  ingressKey,
} from '../../../shared/k8s/ingress-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { type ForwardTarget, normalizePort, type ParsedAction, parseAction } from './actions.ts';
import { type ExtraCondition, parseConditions, ruleConditions } from './conditions.ts';
import { JsonShapeError } from './json.ts';
import { pathPatterns, sortPaths } from './paths.ts';
import { buildTargetGroup, UNSUPPORTED_TARGET_GROUP_ANNOTATIONS } from './target-groups.ts';
import type {
  ModelAction,
  ModelReads,
  ModelRule,
  ModelSettings,
  ModelTargetGroup,
  Problem,
  TargetGroupRef,
} from './types.ts';

/**
 * The per-member half of an IngressGroup's model, as the AWS Load Balancer Controller builds it: one Ingress's
 * rules (per `spec.rules[]` entry, its paths in Exact, Prefix-longest-first, ImplementationSpecific order), the
 * actions of its default backend, the target groups they forward to, and its hosts. The group half (build.ts)
 * places the rules on the member's listeners. Anything wrong is a Problem naming the annotation, field or object
 * at fault, and the member is kept as it was rather than built half.
 */

export interface MemberInput {
  ingress: Ingress;
  group: GroupId;
  /** The member's class params, if any. */
  params?: IngressClassParams;
  reads: ModelReads;
  settings: ModelSettings;
}

export interface MemberRules {
  /** The member's rules in its own order; the caller places them on each of the member's listen ports. */
  rules: ModelRule[];
  /** Actions of spec.defaultBackend, when it has one. */
  defaultActions?: ModelAction[];
  /** Every target group its rules and default backend forward to (one per (Ingress, Service, service port)). */
  targetGroups: ModelTargetGroup[];
  /** spec.rules[].host and spec.tls[].hosts, deduplicated (certificate discovery). */
  hosts: string[];
  /** Anything that stops the member from being built: it is then kept as it was, with a Warning. */
  problems: Problem[];
  /** Annotations it uses that we do not support or that are ignored: a Warning each. */
  warnings: Problem[];
}

/** A backend whose port is named `use-annotation` takes its action from `actions.<service name>`. */
export const USE_ANNOTATION = 'use-annotation';
export const ACTIONS_PREFIX = `${INGRESS_ANNOTATION_PREFIX}actions.`;
export const CONDITIONS_PREFIX = `${INGRESS_ANNOTATION_PREFIX}conditions.`;
export const USE_REGEX_PATH_MATCH = `${INGRESS_ANNOTATION_PREFIX}use-regex-path-match`;

/**
 * Annotations of features this controller does not provide (rule transforms, authentication settings): rules are
 * built without them, and each one present is a Warning.
 */
const UNSUPPORTED_PREFIXES = ['auth-', 'transforms.'].map((p) => `${INGRESS_ANNOTATION_PREFIX}${p}`);

/**
 * Annotations that ask for authentication in front of the backends (Cognito or OIDC, JWT validation), which this
 * controller does not provide. Serving the rules without it would expose what the user meant to protect, so the
 * member is not built (kept as it was, or not created) rather than warned about.
 */
export const AUTH_TYPE = `${INGRESS_ANNOTATION_PREFIX}auth-type`;
export const JWT_VALIDATION = `${INGRESS_ANNOTATION_PREFIX}jwt-validation`;

/** Go's strconv.ParseBool, which the reference uses for boolean annotations. */
export function parseGoBool(raw: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  return undefined;
}

/**
 * Builds one member. Services are read once each (`reads.service`). With any problem, the rules, default actions
 * and target groups are empty: the caller keeps what the member had; hosts and warnings are always given.
 */
export async function buildMemberRules(input: MemberInput): Promise<MemberRules> {
  return new MemberBuild(input).build();
}

class MemberBuild {
  private readonly problems: Problem[] = [];
  private readonly warnings: Problem[] = [];
  private readonly targetGroups = new Map<string, ModelTargetGroup>();
  private readonly services = new Map<string, Promise<Service | undefined>>();
  private readonly annotations: Readonly<Record<string, string>>;
  private readonly namespace: string;
  private readonly key: string;

  constructor(private readonly input: MemberInput) {
    this.annotations = input.ingress.metadata.annotations ?? {};
    this.namespace = input.ingress.metadata.namespace ?? 'default';
    this.key = ingressKey(input.ingress);
  }

  async build(): Promise<MemberRules> {
    this.warnUnsupported(this.annotations, '');
    const useRegex = this.useRegex();
    const rules: ModelRule[] = [];
    for (const [r, rule] of (this.input.ingress.spec?.rules ?? []).entries()) {
      if (!rule.http) continue;
      for (const { path, index } of sortPaths(rule.http.paths ?? [])) {
        const at = `spec.rules[${r}].http.paths[${index}]`;
        const built = await this.rule(at, rule.host, path.path, path.pathType, path.backend, useRegex);
        if (built) rules.push(built);
      }
    }
    const backend = this.input.ingress.spec?.defaultBackend;
    const defaultActions = backend ? await this.actions('spec.defaultBackend', backend) : undefined;
    const failed = this.problems.length > 0;
    return {
      rules: failed ? [] : rules,
      ...(defaultActions && !failed ? { defaultActions } : {}),
      targetGroups: failed ? [] : [...this.targetGroups.values()],
      hosts: this.hosts(),
      problems: this.problems,
      warnings: this.warnings,
    };
  }

  private useRegex(): boolean {
    const raw = this.annotations[USE_REGEX_PATH_MATCH];
    if (raw === undefined) return false;
    const value = parseGoBool(raw);
    if (value === undefined)
      this.problems.push({ at: USE_REGEX_PATH_MATCH, message: `${JSON.stringify(raw)} is not a boolean` });
    return value ?? false;
  }

  private warnUnsupported(annotations: Readonly<Record<string, string>>, where: string): void {
    for (const key of Object.keys(annotations).sort()) {
      const value = annotations[key]!;
      if ((key === AUTH_TYPE && value.trim() !== 'none') || key === JWT_VALIDATION) {
        const message = `${where}authentication is not supported by this controller: the rules are not served without it`;
        if (!this.problems.some((p) => p.at === key && p.message === message)) this.problems.push({ at: key, message });
      } else if (
        UNSUPPORTED_PREFIXES.some((p) => key.startsWith(p)) ||
        (UNSUPPORTED_TARGET_GROUP_ANNOTATIONS as readonly string[]).includes(key)
      ) {
        this.warnings.push({ at: key, message: `${where}not supported by this controller: ignored` });
      }
    }
  }

  private hosts(): string[] {
    const spec = this.input.ingress.spec;
    const all = [
      ...(spec?.rules ?? []).flatMap((r) => (r.host ? [r.host] : [])),
      ...(spec?.tls ?? []).flatMap((t) => t.hosts ?? []),
    ];
    return [...new Set(all)];
  }

  private async rule(
    at: string,
    host: string | undefined,
    path: string | undefined,
    pathType: Parameters<typeof pathPatterns>[1],
    backend: IngressBackend,
    useRegex: boolean,
  ): Promise<ModelRule | undefined> {
    let pathValues: string[] = [];
    let pathRegexValues: string[] = [];
    if (path) {
      const patterns = pathPatterns(path, pathType, useRegex);
      if ('problem' in patterns) {
        this.problems.push({ at, message: patterns.problem });
        return undefined;
      }
      pathValues = patterns.values;
      pathRegexValues = patterns.regexValues;
    }
    const extra = backend.service ? this.conditions(backend.service.name) : [];
    const actions = await this.actions(at, backend);
    if (!extra || !actions) return undefined;
    const conditions = ruleConditions({ ...(host ? { host } : {}), pathValues, pathRegexValues, extra });
    if ('problem' in conditions) {
      this.problems.push({ at, message: conditions.problem });
      return undefined;
    }
    return { conditions: conditions.conditions, actions, member: this.key };
  }

  /** `conditions.<service>`: undefined (and a Problem) when it does not parse. */
  private conditions(serviceName: string): ExtraCondition[] | undefined {
    const key = `${CONDITIONS_PREFIX}${serviceName}`;
    const raw = this.annotations[key];
    if (raw === undefined) return [];
    try {
      return parseConditions(raw);
    } catch (err) {
      if (!(err instanceof JsonShapeError)) throw err;
      this.problems.push({ at: key, message: err.message });
      return undefined;
    }
  }

  /** A backend's actions: forward to its Service's port, or `actions.<service>` for `use-annotation`. */
  private async actions(at: string, backend: IngressBackend): Promise<ModelAction[] | undefined> {
    if (!backend.service) {
      this.problems.push({
        at: `${at}.backend`,
        message: 'only Service backends are supported (resource backends are not)',
      });
      return undefined;
    }
    const { name, port } = backend.service;
    if (port?.name === USE_ANNOTATION) {
      const parsed = this.parsedAction(name);
      return parsed ? this.modelActions(`${ACTIONS_PREFIX}${name}`, parsed) : undefined;
    }
    const servicePort = port?.name ? port.name : port?.number;
    if (servicePort === undefined) {
      this.problems.push({ at: `${at}.backend.service.port`, message: 'a port number or name is required' });
      return undefined;
    }
    const ref = await this.targetGroup(at, name, servicePort);
    return ref ? [{ type: 'forward', targetGroups: [{ ref, weight: 1 }], stickiness: { enabled: false } }] : undefined;
  }

  private parsedAction(serviceName: string): ParsedAction | undefined {
    const key = `${ACTIONS_PREFIX}${serviceName}`;
    const raw = this.annotations[key];
    if (raw === undefined) {
      this.problems.push({ at: key, message: `the backend uses ${USE_ANNOTATION} but the annotation is missing` });
      return undefined;
    }
    try {
      return parseAction(raw);
    } catch (err) {
      if (!(err instanceof JsonShapeError)) throw err;
      this.problems.push({ at: key, message: err.message });
      return undefined;
    }
  }

  private async modelActions(at: string, action: ParsedAction): Promise<ModelAction[] | undefined> {
    if (action.type !== 'forward') return [action];
    const targetGroups: { ref: TargetGroupRef; weight: number }[] = [];
    for (const { target, weight } of action.targets) {
      const ref = await this.refOf(at, target);
      if (!ref) return undefined;
      targetGroups.push({ ref, weight });
    }
    return [{ type: 'forward', targetGroups, stickiness: action.stickiness }];
  }

  private async refOf(at: string, target: ForwardTarget): Promise<TargetGroupRef | undefined> {
    if ('arn' in target) return { arn: target.arn };
    if ('name' in target) return { name: target.name };
    return this.targetGroup(at, target.service.name, normalizePort(target.service.port));
  }

  /** The target group of (this Ingress, the Service, the port), built once however many rules use it. */
  private async targetGroup(
    at: string,
    serviceName: string,
    servicePort: number | string,
  ): Promise<TargetGroupRef | undefined> {
    const service = await this.service(serviceName);
    if (!service) {
      this.problems.push({ at, message: `Service ${this.namespace}/${serviceName} not found` });
      return undefined;
    }
    const built = buildTargetGroup({
      ingress: this.input.ingress,
      group: this.input.group,
      service,
      servicePort,
      ...(this.input.params ? { params: this.input.params } : {}),
      settings: this.input.settings,
    });
    if ('problems' in built) {
      for (const p of built.problems) {
        if (!this.problems.some((q) => q.at === p.at && q.message === p.message)) this.problems.push(p);
      }
      return undefined;
    }
    const tg = built.targetGroup;
    if (!this.targetGroups.has(tg.resourceId)) this.targetGroups.set(tg.resourceId, tg);
    return { resourceId: tg.resourceId };
  }

  private service(name: string): Promise<Service | undefined> {
    let found = this.services.get(name);
    if (!found) {
      found = this.input.reads.service(this.namespace, name).then((service) => {
        if (service) this.warnUnsupported(service.metadata.annotations ?? {}, `on Service ${this.namespace}/${name}: `);
        return service;
      });
      this.services.set(name, found);
    }
    return found;
  }
}
