import {
  AddTagsCommand,
  ApplySecurityGroupsToLoadBalancerCommand,
  AttachLoadBalancerToSubnetsCommand,
  ConfigureHealthCheckCommand,
  CreateLoadBalancerCommand,
  CreateLoadBalancerListenersCommand,
  CreateLoadBalancerPolicyCommand,
  DeleteLoadBalancerCommand,
  DeleteLoadBalancerListenersCommand,
  DeleteLoadBalancerPolicyCommand,
  DeregisterInstancesFromLoadBalancerCommand,
  DescribeInstanceHealthCommand,
  DescribeLoadBalancerAttributesCommand,
  DescribeLoadBalancerPoliciesCommand,
  DescribeLoadBalancersCommand,
  DescribeTagsCommand,
  DetachLoadBalancerFromSubnetsCommand,
  type ElasticLoadBalancingClient,
  ModifyLoadBalancerAttributesCommand,
  RegisterInstancesWithLoadBalancerCommand,
  RemoveTagsCommand,
  SetLoadBalancerPoliciesForBackendServerCommand,
  SetLoadBalancerPoliciesOfListenerCommand,
} from '@aws-sdk/client-elastic-load-balancing';
import {
  fromSdkAttributes,
  fromSdkLoadBalancer,
  fromSdkPolicy,
  toSdkAttributes,
  toSdkHealthCheck,
  toSdkListener,
} from './elb-adapter-shapes.ts';
import { classicError, classicErrorCode } from './elb-errors.ts';
import {
  CLASSIC_PAGE_SIZE,
  CLASSIC_TAGS_NAMES_PER_CALL,
  type ClassicAttributes,
  type ClassicHealthCheck,
  type ClassicInstanceHealth,
  type ClassicListener,
  type ClassicLoadBalancer,
  type ClassicPolicy,
  type CreateClassicLoadBalancerInput,
  type ElbPort,
} from './elb-port.ts';
import { allPages, chunks, unique } from './paging.ts';
import { fromKeyValues, toKeyValues } from './tag-lists.ts';

/**
 * ElbPort over the AWS SDK (Classic Load Balancers, API 2012-06-01): one SDK command per port method, no caching.
 * Pages, chunks and turns "not found" into absence so that callers never do; every other failure is classified
 * by its wire code (`classicError`). Calls with nothing to do (no listeners, no instances, no tags) send nothing,
 * as AWS refuses empty lists.
 */
export class ElbAdapter implements ElbPort {
  constructor(private readonly client: Pick<ElasticLoadBalancingClient, 'send'>) {}

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeLoadBalancers.html */
  async findLoadBalancer(name: string): Promise<ClassicLoadBalancer | undefined> {
    try {
      const output = await this.client.send(new DescribeLoadBalancersCommand({ LoadBalancerNames: [name] }));
      return (output.LoadBalancerDescriptions ?? []).flatMap((d) => fromSdkLoadBalancer(d) ?? [])[0];
    } catch (err) {
      if (classicErrorCode(err) === 'LoadBalancerNotFound') return undefined;
      throw classicError(`describing Classic load balancer ${name}`, err);
    }
  }

  /** Every page, CLASSIC_PAGE_SIZE (AWS's maximum, 400) at a time. */
  async listLoadBalancers(): Promise<ClassicLoadBalancer[]> {
    try {
      const pages = await allPages(
        (Marker) => this.client.send(new DescribeLoadBalancersCommand({ PageSize: CLASSIC_PAGE_SIZE, Marker })),
        (page) => page.NextMarker,
      );
      return pages.flatMap((page) =>
        (page.LoadBalancerDescriptions ?? []).flatMap((d) => fromSdkLoadBalancer(d) ?? []),
      );
    } catch (err) {
      throw classicError('listing Classic load balancers', err);
    }
  }

  /**
   * Tagged in the create call. AWS answers the existing load balancer's DNS name when one of that name already
   * has the same listeners, and DuplicateLoadBalancerName when it has others: the name is someone else's.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancer.html
   */
  async createLoadBalancer(input: CreateClassicLoadBalancerInput): Promise<{ dnsName: string } | 'name-taken'> {
    try {
      const output = await this.client.send(
        new CreateLoadBalancerCommand({
          LoadBalancerName: input.name,
          Listeners: input.listeners.map(toSdkListener),
          Subnets: [...input.subnets],
          SecurityGroups: [...input.securityGroups],
          Scheme: input.scheme,
          // The Tags list may not be empty: left out when there are none.
          ...(Object.keys(input.tags).length > 0 ? { Tags: toKeyValues(input.tags) } : {}),
        }),
      );
      if (!output.DNSName) throw new Error('CreateLoadBalancer answered without a DNS name');
      return { dnsName: output.DNSName };
    } catch (err) {
      if (classicErrorCode(err) === 'DuplicateLoadBalancerName') return 'name-taken';
      throw classicError(`creating Classic load balancer ${input.name}`, err);
    }
  }

  /**
   * "If the load balancer does not exist or has already been deleted, the call to DeleteLoadBalancer still
   * succeeds"; a LoadBalancerNotFound is taken the same way.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DeleteLoadBalancer.html
   */
  async deleteLoadBalancer(name: string): Promise<void> {
    try {
      await this.client.send(new DeleteLoadBalancerCommand({ LoadBalancerName: name }));
    } catch (err) {
      if (classicErrorCode(err) === 'LoadBalancerNotFound') return;
      throw classicError(`deleting Classic load balancer ${name}`, err);
    }
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancerListeners.html */
  async createListeners(name: string, listeners: readonly ClassicListener[]): Promise<void> {
    if (listeners.length === 0) return;
    await this.write(`creating listeners ${listeners.map((l) => l.loadBalancerPort).join(', ')} on ${name}`, () =>
      this.client.send(
        new CreateLoadBalancerListenersCommand({ LoadBalancerName: name, Listeners: listeners.map(toSdkListener) }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DeleteLoadBalancerListeners.html */
  async deleteListeners(name: string, loadBalancerPorts: readonly number[]): Promise<void> {
    if (loadBalancerPorts.length === 0) return;
    await this.write(`deleting listeners ${loadBalancerPorts.join(', ')} from ${name}`, () =>
      this.client.send(
        new DeleteLoadBalancerListenersCommand({ LoadBalancerName: name, LoadBalancerPorts: [...loadBalancerPorts] }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_AttachLoadBalancerToSubnets.html */
  async attachSubnets(name: string, subnets: readonly string[]): Promise<void> {
    if (subnets.length === 0) return;
    await this.write(`attaching ${name} to subnets ${subnets.join(', ')}`, () =>
      this.client.send(new AttachLoadBalancerToSubnetsCommand({ LoadBalancerName: name, Subnets: [...subnets] })),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DetachLoadBalancerFromSubnets.html */
  async detachSubnets(name: string, subnets: readonly string[]): Promise<void> {
    if (subnets.length === 0) return;
    await this.write(`detaching ${name} from subnets ${subnets.join(', ')}`, () =>
      this.client.send(new DetachLoadBalancerFromSubnetsCommand({ LoadBalancerName: name, Subnets: [...subnets] })),
    );
  }

  /** Replaces the groups. https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_ApplySecurityGroupsToLoadBalancer.html */
  async applySecurityGroups(name: string, securityGroups: readonly string[]): Promise<void> {
    await this.write(`applying security groups ${securityGroups.join(', ')} to ${name}`, () =>
      this.client.send(
        new ApplySecurityGroupsToLoadBalancerCommand({ LoadBalancerName: name, SecurityGroups: [...securityGroups] }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_ConfigureHealthCheck.html */
  async configureHealthCheck(name: string, healthCheck: ClassicHealthCheck): Promise<void> {
    await this.write(`configuring the health check of ${name}`, () =>
      this.client.send(
        new ConfigureHealthCheckCommand({ LoadBalancerName: name, HealthCheck: toSdkHealthCheck(healthCheck) }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeLoadBalancerAttributes.html */
  async describeAttributes(name: string): Promise<ClassicAttributes> {
    try {
      const output = await this.client.send(new DescribeLoadBalancerAttributesCommand({ LoadBalancerName: name }));
      return fromSdkAttributes(output.LoadBalancerAttributes);
    } catch (err) {
      throw classicError(`describing attributes of ${name}`, err);
    }
  }

  /** All four attributes, every time. https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_ModifyLoadBalancerAttributes.html */
  async modifyAttributes(name: string, attributes: ClassicAttributes): Promise<void> {
    await this.write(`modifying attributes of ${name}`, () =>
      this.client.send(
        new ModifyLoadBalancerAttributesCommand({
          LoadBalancerName: name,
          LoadBalancerAttributes: toSdkAttributes(attributes),
        }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_RegisterInstancesWithLoadBalancer.html */
  async registerInstances(name: string, instanceIds: readonly string[]): Promise<void> {
    if (instanceIds.length === 0) return;
    await this.write(`registering ${instanceIds.length} instances with ${name}`, () =>
      this.client.send(
        new RegisterInstancesWithLoadBalancerCommand({ LoadBalancerName: name, Instances: toInstances(instanceIds) }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DeregisterInstancesFromLoadBalancer.html */
  async deregisterInstances(name: string, instanceIds: readonly string[]): Promise<void> {
    if (instanceIds.length === 0) return;
    await this.write(`deregistering ${instanceIds.length} instances from ${name}`, () =>
      this.client.send(
        new DeregisterInstancesFromLoadBalancerCommand({ LoadBalancerName: name, Instances: toInstances(instanceIds) }),
      ),
    );
  }

  /**
   * Every registered instance (no Instances in the request). Not paged by AWS.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeInstanceHealth.html
   */
  async describeInstanceHealth(name: string): Promise<ClassicInstanceHealth[]> {
    try {
      const output = await this.client.send(new DescribeInstanceHealthCommand({ LoadBalancerName: name }));
      return (output.InstanceStates ?? []).flatMap((s): ClassicInstanceHealth[] => {
        if (!s.InstanceId) return [];
        const state = s.State === 'InService' || s.State === 'OutOfService' ? s.State : 'Unknown';
        return [{ instanceId: s.InstanceId, state }];
      });
    } catch (err) {
      throw classicError(`describing instance health of ${name}`, err);
    }
  }

  /**
   * 20 names a call. One unknown name fails the whole call (a load balancer deleted since it was listed): the
   * names of that call are then asked one by one, keeping those that exist.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeTags.html
   */
  async describeTags(names: readonly string[]): Promise<Map<string, Record<string, string>>> {
    const out = new Map<string, Record<string, string>>();
    for (const chunk of chunks(unique(names), CLASSIC_TAGS_NAMES_PER_CALL)) {
      try {
        const output = await this.client.send(new DescribeTagsCommand({ LoadBalancerNames: chunk }));
        for (const description of output.TagDescriptions ?? []) {
          if (!description.LoadBalancerName) continue;
          out.set(description.LoadBalancerName, fromKeyValues(description.Tags));
        }
      } catch (err) {
        if (classicErrorCode(err) !== 'LoadBalancerNotFound') throw classicError('describing tags', err);
        if (chunk.length === 1) continue;
        for (const name of chunk) for (const [k, v] of await this.describeTags([name])) out.set(k, v);
      }
    }
    return out;
  }

  /** Adds or overwrites. https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_AddTags.html */
  async addTags(name: string, tags: Readonly<Record<string, string>>): Promise<void> {
    if (Object.keys(tags).length === 0) return;
    await this.write(`tagging ${name}`, () =>
      this.client.send(new AddTagsCommand({ LoadBalancerNames: [name], Tags: toKeyValues(tags) })),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_RemoveTags.html */
  async removeTags(name: string, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.write(`removing tags ${keys.join(', ')} from ${name}`, () =>
      this.client.send(
        new RemoveTagsCommand({ LoadBalancerNames: [name], Tags: unique(keys).map((Key) => ({ Key })) }),
      ),
    );
  }

  /**
   * With a load balancer name AWS answers that load balancer's policies only (without one, its sample policies).
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeLoadBalancerPolicies.html
   */
  async describePolicies(name: string): Promise<ClassicPolicy[]> {
    try {
      const output = await this.client.send(new DescribeLoadBalancerPoliciesCommand({ LoadBalancerName: name }));
      return (output.PolicyDescriptions ?? []).flatMap((p) => fromSdkPolicy(p) ?? []);
    } catch (err) {
      throw classicError(`describing policies of ${name}`, err);
    }
  }

  /**
   * A policy of that name existing already is success (DuplicatePolicyName): policy names are the caller's, and
   * a crash after the create must not stop the next pass.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancerPolicy.html
   */
  async createPolicy(name: string, policy: ClassicPolicy): Promise<void> {
    try {
      await this.client.send(
        new CreateLoadBalancerPolicyCommand({
          LoadBalancerName: name,
          PolicyName: policy.policyName,
          PolicyTypeName: policy.policyTypeName,
          PolicyAttributes: Object.entries(policy.attributes).map(([AttributeName, AttributeValue]) => ({
            AttributeName,
            AttributeValue,
          })),
        }),
      );
    } catch (err) {
      if (classicErrorCode(err) === 'DuplicatePolicyName') return;
      throw classicError(`creating policy ${policy.policyName} on ${name}`, err);
    }
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_SetLoadBalancerPoliciesForBackendServer.html */
  async setBackendPolicies(name: string, instancePort: number, policyNames: readonly string[]): Promise<void> {
    await this.write(`setting the policies of back-end port ${instancePort} of ${name}`, () =>
      this.client.send(
        new SetLoadBalancerPoliciesForBackendServerCommand({
          LoadBalancerName: name,
          InstancePort: instancePort,
          PolicyNames: [...policyNames],
        }),
      ),
    );
  }

  /** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_SetLoadBalancerPoliciesOfListener.html */
  async setListenerPolicies(name: string, loadBalancerPort: number, policyNames: readonly string[]): Promise<void> {
    await this.write(`setting the policies of listener ${loadBalancerPort} of ${name}`, () =>
      this.client.send(
        new SetLoadBalancerPoliciesOfListenerCommand({
          LoadBalancerName: name,
          LoadBalancerPort: loadBalancerPort,
          PolicyNames: [...policyNames],
        }),
      ),
    );
  }

  /**
   * A policy that is gone already is success. AWS refuses to delete one still set on a listener or back end
   * (InvalidConfigurationRequest). https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DeleteLoadBalancerPolicy.html
   */
  async deletePolicy(name: string, policyName: string): Promise<void> {
    try {
      await this.client.send(new DeleteLoadBalancerPolicyCommand({ LoadBalancerName: name, PolicyName: policyName }));
    } catch (err) {
      if (classicErrorCode(err) === 'PolicyNotFound') return;
      throw classicError(`deleting policy ${policyName} from ${name}`, err);
    }
  }

  /** A write whose answer carries nothing the port returns. */
  private async write(doing: string, send: () => Promise<unknown>): Promise<void> {
    try {
      await send();
    } catch (err) {
      throw classicError(doing, err);
    }
  }
}

function toInstances(instanceIds: readonly string[]) {
  return unique(instanceIds).map((InstanceId) => ({ InstanceId }));
}
