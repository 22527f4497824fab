import type { Target } from '../../../shared/aws/elbv2-port.ts';
import type { GroupId } from '../../../shared/ingress/membership.ts';
import { classifyKubernetesError } from '../../../shared/k8s/errors.ts';
import type { StackBindingsPort, StackRef, WantedStackBinding } from '../../../shared/k8s/stack-bindings.ts';
import type { EndpointSlice, Node, Pod, Service } from '../../../shared/k8s/types.ts';
import { gateWaitingTargets, hasNotReadyEndpoints } from '../../../shared/load-balancers/gated-targets.ts';
import { keepStackBindings } from '../../../shared/load-balancers/stack-bindings.ts';
import type { ModelTargetGroup } from '../model/types.ts';
import type { GroupPass } from './pass.ts';
import { alternateTargetGroupName } from './replacement.ts';
import type { StackTargetGroups } from './target-groups.ts';

/**
 * The group's TargetGroupBindings, as the reference keeps them (shared/k8s/stack-bindings.ts): one per target group,
 * named as the target group in its Service's namespace, labelled with the group's stack. They exist only so the
 * relay's Pod webhook gates the Pods behind an ip target group and the binding controller sets that gate from the
 * target health; the targets stay this controller's. So the Pods held back only by that gate are targets here too
 * (a gated Pod is never Ready otherwise, and the binding controller registers them as well: never deregistered).
 * Nothing of this is done without `deps.stackBindings` (STACK_TARGET_GROUP_BINDINGS).
 */

/** The group's stack as its bindings' labels name it. */
export function stackOf(group: GroupId): StackRef {
  return group.explicit
    ? { kind: 'ingress', explicit: true, name: group.name }
    : { kind: 'ingress', explicit: false, namespace: group.namespace, name: group.name };
}

/**
 * The Service port as the Ingress backend names it (a number or a port name), which the reference writes in the
 * binding's `serviceRef.port`: the last part of the resource ID (model/names.ts `targetGroupResourceId`).
 */
export function backendServicePort(model: ModelTargetGroup): number | string {
  const spec = model.service.port;
  const named = model.resourceId.slice(model.resourceId.lastIndexOf(':') + 1);
  return spec.name !== undefined && named === spec.name ? spec.name : spec.port;
}

/** One binding per model target group, for the target group as ensured (its name may be the alternate one). */
export function wantedStackBindings(
  models: readonly ModelTargetGroup[],
  groups: StackTargetGroups,
): WantedStackBinding[] {
  return models.flatMap((model) => {
    const group = groups.wanted.get(model.resourceId);
    if (!group) return [];
    return [
      {
        group: {
          arn: group.arn,
          name: group.name,
          targetType: group.targetType,
          ipAddressType: group.ipAddressType,
          vpcId: group.vpcId,
        },
        service: { namespace: model.service.namespace, name: model.service.name, port: backendServicePort(model) },
      },
    ];
  });
}

/** The bindings made to match the group's target groups; what is wrong with them is said on the members. */
export async function keepGroupBindings(
  models: readonly ModelTargetGroup[],
  groups: StackTargetGroups,
  pass: GroupPass,
): Promise<void> {
  const port = pass.deps.stackBindings;
  if (!port) return;
  const kept = await keepStackBindings(port, stackOf(pass.group), wantedStackBindings(models, groups));
  pass.warnings.push(...kept.warnings);
}

/** Every binding of the stack deleted (their finalizer lets the gated Pods go first): the stack is going. */
export async function deleteGroupBindings(pass: GroupPass): Promise<void> {
  const port = pass.deps.stackBindings;
  if (!port) return;
  const kept = await keepStackBindings(port, stackOf(pass.group), []);
  for (const warning of kept.warnings) pass.deps.log.warn(warning, { group: pass.ctx.owner.value });
}

/** What the gate-waiting Pods of one pass are read from: each Service and its Pods once, the Nodes once. */
export class GateReads {
  private readonly services = new Map<string, Promise<Service | undefined>>();
  private readonly pods = new Map<string, Promise<Map<string, Pod>>>();
  private nodeMap?: Promise<Map<string, Node>>;

  constructor(
    private readonly port: StackBindingsPort,
    private readonly pass: GroupPass,
  ) {}

  /**
   * The endpoints of an ip target group's Service port whose Pod waits only for the gate of the group's binding
   * (by the model's name or its alternate name, the one a successor's target group takes: replacement.ts).
   */
  async targets(model: ModelTargetGroup, slices: readonly EndpointSlice[]): Promise<Target[]> {
    const inputs = { servicePort: model.service.port, ipAddressType: model.ipAddressType, slices };
    if (!hasNotReadyEndpoints(inputs)) return [];
    const { namespace, name } = model.service;
    const pods = await this.podsOf(namespace, name);
    if (pods.size === 0) return [];
    const nodes = await this.nodes();
    return [model.name, alternateTargetGroupName(model.name)].flatMap((bindingName) =>
      gateWaitingTargets({ ...inputs, bindingName, pods, nodes }),
    );
  }

  private podsOf(namespace: string, name: string): Promise<Map<string, Pod>> {
    const key = `${namespace}/${name}`;
    let found = this.pods.get(key);
    if (!found) {
      found = this.read(namespace, name);
      this.pods.set(key, found);
    }
    return found;
  }

  private async read(namespace: string, name: string): Promise<Map<string, Pod>> {
    const service = await this.service(namespace, name);
    const selector = service?.spec?.selector ?? {};
    // A Service without a selector has no Pods of its own (an empty selector would list them all).
    if (Object.keys(selector).length === 0) return new Map();
    try {
      const pods = await this.port.listPods(namespace, selector);
      return new Map(pods.map((p) => [p.metadata.name, p]));
    } catch (err) {
      throw classifyKubernetesError(`listing the Pods of service ${namespace}/${name}`, err);
    }
  }

  private service(namespace: string, name: string): Promise<Service | undefined> {
    const key = `${namespace}/${name}`;
    let found = this.services.get(key);
    if (!found) {
      found = this.pass.deps.kube.getService(namespace, name).catch((err: unknown) => {
        throw classifyKubernetesError(`reading service ${namespace}/${name}`, err);
      });
      this.services.set(key, found);
    }
    return found;
  }

  private nodes(): Promise<Map<string, Node>> {
    this.nodeMap ??= this.pass.reads.nodes().then((nodes) => new Map(nodes.map((n) => [n.metadata.name, n])));
    return this.nodeMap;
  }
}
