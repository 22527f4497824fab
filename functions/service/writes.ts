import type { Ec2LoadBalancerNetworkPort } from '../../shared/aws/ec2-port.ts';
import type { ElbPort } from '../../shared/aws/elb-port.ts';
import type { Elbv2Port } from '../../shared/aws/elbv2-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { ServiceBatch } from './batch.ts';
import type { ServiceDeps } from './deps.ts';
import { recordServiceEvent } from './kube.ts';
import type { ShortPass } from './resync-check.ts';

/**
 * Events and metrics of a pass come from one place: the AWS ports a pass writes through are wrapped, and
 * every write is seen here before it is made. The first configuration write of a pass says "Ensuring"
 * (or whatever the pass announces) on the Service; target writes are counted; creates and deletes of load
 * balancers are counted once they succeed. Modules only call the ports, and never place Events or metrics
 * for their writes by hand.
 */

/** The Elastic Load Balancing writes a pass can make; target writes are told apart from configuration. */
const ELBV2_WRITES: ReadonlySet<keyof Elbv2Port> = new Set<keyof Elbv2Port>([
  'createLoadBalancer',
  'deleteLoadBalancer',
  'setSecurityGroups',
  'setSubnets',
  'setIpAddressType',
  'modifyLoadBalancerAttributes',
  'createListener',
  'modifyListener',
  'deleteListener',
  'addListenerCertificates',
  'removeListenerCertificates',
  'modifyListenerAttributes',
  'createTargetGroup',
  'modifyTargetGroupHealthCheck',
  'deleteTargetGroup',
  'modifyTargetGroupAttributes',
  'registerTargets',
  'deregisterTargets',
  'addTags',
  'removeTags',
]);
/** The Classic ELB writes; registering and deregistering instances are its target writes. */
const ELB_WRITES: ReadonlySet<keyof ElbPort> = new Set<keyof ElbPort>([
  'createLoadBalancer',
  'deleteLoadBalancer',
  'createListeners',
  'deleteListeners',
  'attachSubnets',
  'detachSubnets',
  'applySecurityGroups',
  'configureHealthCheck',
  'modifyAttributes',
  'registerInstances',
  'deregisterInstances',
  'addTags',
  'removeTags',
  'createPolicy',
  'setBackendPolicies',
  'setListenerPolicies',
  'deletePolicy',
]);
const TARGET_WRITES: ReadonlySet<string> = new Set([
  'registerTargets',
  'deregisterTargets',
  'registerInstances',
  'deregisterInstances',
]);

const EC2_WRITES: ReadonlySet<keyof Ec2LoadBalancerNetworkPort> = new Set<keyof Ec2LoadBalancerNetworkPort>([
  'createSecurityGroup',
  'deleteSecurityGroup',
  'authorizeSecurityGroupIngress',
  'revokeSecurityGroupIngress',
  'createTags',
  'deleteTags',
]);

/** What a pass changed. */
export interface PassChanges {
  /** Load balancer, listeners, target groups, security groups, rules, tags or attributes. */
  config: boolean;
  /** Targets registered or deregistered. */
  targets: boolean;
}

/** The Event said before the first configuration write of a pass. */
export interface Announcement {
  reason: string;
  message: string;
  /** Writes that never announce (a cleanup retry that only deletes a security group says nothing new). */
  quiet?: ReadonlySet<string>;
}

export interface PreviousLoadBalancer {
  name: string;
  /** Deletes it (and what only it used); `successor` names the one that serves now. */
  retire(successor: string): Promise<void>;
}

/** One pass over one Service: the ports it writes through, what it changed, and how it speaks. */
export interface Pass {
  deps: ServiceDeps;
  service: Service;
  /** `namespace/name`: the value of the `kubernetes.io/service-name` tag on everything the Service owns. */
  serviceKey: string;
  batch: ServiceBatch;
  /** Attempt of the key's message (1 first): bounds retries that wait for AWS to show a fresh resource. */
  receiveCount: number;
  ec2: Ec2LoadBalancerNetworkPort;
  elbv2: Elbv2Port;
  /** Classic ELB, when the deployment has it. */
  elb: ElbPort | undefined;
  changes: PassChanges;
  /**
   * A load balancer of another kind that serves the Service while this pass builds its new one (the Service
   * moves from a Classic ELB to an NLB, or back): the status keeps naming it until the new one serves, then
   * it is retired by its own backend.
   */
  previous?: PreviousLoadBalancer;
  /**
   * A pass that may be shorter than the full one (resync-check.ts `shortPassFor`): `resync`, a resync pass that is
   * not the Service's hourly full pass (look quickly, skip the full pass when nothing seen differs); `node-set`, a
   * Node-set change's pass (look quickly, then see only to the targets and the Node rules); `node-join`, the same
   * when Nodes only joined (the wanted targets registered without reading the registered ones).
   */
  shortPass?: ShortPass;
  /**
   * The pass works the AWS Load Balancer Controller's way (functions/service/lbc/): its names, tracking tags,
   * finalizer and defaults.
   */
  lbc?: boolean;
  /** Best-effort Event on the Service. */
  event(type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

export function startPass(
  deps: ServiceDeps,
  service: Service,
  batch: ServiceBatch,
  announcement: Announcement,
  receiveCount = 1,
): Pass {
  const changes: PassChanges = { config: false, targets: false };
  let announced = false;
  const pass: Pass = {
    deps,
    service,
    serviceKey: `${service.metadata.namespace ?? 'default'}/${service.metadata.name}`,
    batch,
    receiveCount,
    changes,
    ec2: deps.ec2,
    elbv2: deps.elbv2,
    elb: deps.elb,
    event: (type, reason, message) => recordServiceEvent(deps, pass.service, type, reason, message),
  };
  const before = async (operation: string): Promise<void> => {
    if (TARGET_WRITES.has(operation)) {
      changes.targets = true;
      return;
    }
    changes.config = true;
    if (announced || announcement.quiet?.has(operation)) return;
    announced = true;
    await pass.event('Normal', announcement.reason, announcement.message);
  };
  const after = (operation: string, args: unknown[], result: unknown): void => {
    if (operation === 'createLoadBalancer' && result !== 'name-taken') {
      deps.metrics.count(MetricName.LoadBalancersCreated, { reason: 'new' });
    } else if (operation === 'deleteLoadBalancer') {
      deps.metrics.count(MetricName.LoadBalancersDeleted);
    } else if (operation === 'registerTargets' || operation === 'registerInstances') {
      deps.metrics.count(MetricName.TargetsRegistered, {}, (args[1] as unknown[]).length);
    } else if (operation === 'deregisterTargets' || operation === 'deregisterInstances') {
      deps.metrics.count(MetricName.TargetsDeregistered, {}, (args[1] as unknown[]).length);
    }
  };
  pass.ec2 = recorded(deps.ec2, EC2_WRITES as ReadonlySet<string>, before, after);
  pass.elbv2 = recorded(deps.elbv2, ELBV2_WRITES as ReadonlySet<string>, before, after);
  if (deps.elb) pass.elb = recorded(deps.elb, ELB_WRITES as ReadonlySet<string>, before, after);
  return pass;
}

/** The port, with `before` awaited ahead of each write and `after` called on its success. */
function recorded<T extends object>(
  port: T,
  writes: ReadonlySet<string>,
  before: (operation: string) => Promise<void>,
  after: (operation: string, args: unknown[], result: unknown) => void,
): T {
  return new Proxy(port, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      if (typeof property !== 'string' || !writes.has(property)) return method.bind(target);
      return async function recordedWrite(...args: unknown[]): Promise<unknown> {
        await before(property);
        const result = await method.apply(target, args);
        after(property, args, result);
        return result;
      };
    },
  });
}
