/*
 * This file is longer than 400 lines because it is the one adapter of the EC2 SDK client: it maps every command the
 * ports (shared/aws/ec2-port.ts) use, request and answer, and their errors. One adapter per SDK client keeps that
 * client's request shapes in one place; split, they would be scattered across files.
 */
import {
  type _InstanceType,
  AssignPrivateIpAddressesCommand,
  AuthorizeSecurityGroupIngressCommand,
  CreateRouteCommand,
  CreateSecurityGroupCommand,
  CreateTagsCommand,
  DeleteNetworkInterfaceCommand,
  DeleteRouteCommand,
  DeleteSecurityGroupCommand,
  DeleteTagsCommand,
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  type DescribeInstancesCommandOutput,
  DescribeInstanceTypesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeRouteTablesCommand,
  type DescribeRouteTablesCommandInput,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Filter,
  type IpPermission,
  ModifyInstanceAttributeCommand,
  ModifyNetworkInterfaceAttributeCommand,
  ReplaceRouteCommand,
  RevokeSecurityGroupIngressCommand,
  type NetworkInterface as SdkEni,
  type Instance as SdkInstance,
  type InstanceNetworkInterface as SdkNetworkInterface,
  type Route as SdkRoute,
  type RouteTable as SdkRouteTable,
  type SecurityGroup as SdkSecurityGroup,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { RetryableError } from '../errors.ts';
import {
  type AssignResult,
  type AvailabilityZone,
  type Ec2InstanceReadPort,
  type Ec2InterfacePort,
  type Ec2LoadBalancerNetworkPort,
  type Ec2Port,
  type Ec2RoutePort,
  type Ec2SubnetTagPort,
  INSTANCE_ID_PATTERN,
  type Instance,
  type InstanceState,
  type InstanceTypeInfo,
  LIVE_INSTANCE_STATES,
  type NetworkInterface,
  type NetworkInterfaceDetail,
  type NetworkInterfaceQuery,
  type Route,
  type RouteOrigin,
  type RouteTable,
  type RouteTarget,
  type RouteTargetSpec,
  type SecurityGroup,
  type SecurityGroupQuery,
  type SecurityGroupRule,
  type Subnet,
} from './ec2-port.ts';
import { awsErrorCode, toControllerError } from './errors.ts';
import { clusterTagKey, isClusterResource, LEGACY_CLUSTER_TAG } from './ownership.ts';
import { allPages, chunks, unique } from './paging.ts';
import { fromKeyValues, toKeyValues } from './tag-lists.ts';

/** DescribeInstances accepts at most 1000 explicitly listed instance IDs. */
export const INSTANCE_IDS_PER_CALL = 1000;

/**
 * EC2 allows 200 filter values per call, counted over all filters together ("FilterLimitExceeded: The maximum
 * number of filter values specified on a single call is 200"); the state filter uses some of them.
 */
export const MAX_FILTER_VALUES_PER_CALL = 200;
export const DNS_NAMES_PER_CALL = MAX_FILTER_VALUES_PER_CALL - LIVE_INSTANCE_STATES.length;

/** DescribeInstanceTypes accepts at most 100 instance types. */
export const INSTANCE_TYPES_PER_CALL = 100;

/**
 * Attempts per chunk of instance IDs: each failed attempt drops the IDs EC2 named as unknown or malformed
 * (one round for malformed, one for unknown, one to succeed).
 */
export const DESCRIBE_ATTEMPTS = 3;

/** Page size for filtered DescribeInstances calls (EC2 allows 5..1000; not allowed together with InstanceIds). */
const FILTERED_PAGE_SIZE = 1000;

const KNOWN_STATES: ReadonlySet<string> = new Set<InstanceState>([
  'pending',
  'running',
  'shutting-down',
  'terminated',
  'stopping',
  'stopped',
]);

/**
 * The instance and zone reads of Ec2Port (DescribeInstances, DescribeAvailabilityZones), a class of their own so
 * that a function needing nothing else bundles no other EC2 command: each command brings its request and response
 * shapes, and the other nineteen were an eighth of the node function's package (docs/adr/0010-lambda-cold-start.md,
 * third round). Chunks, pages and drops unknown IDs so that callers never do.
 */
export class Ec2InstanceReads implements Ec2InstanceReadPort {
  /** Any EC2 client: the SDK's, or anything that answers its commands the same way (the fake EC2 API in tests). */
  constructor(protected readonly client: Pick<EC2Client, 'send'>) {}

  async describeInstances(instanceIds: readonly string[]): Promise<Map<string, Instance>> {
    // A malformed ID fails the whole call in EC2, so it is never sent; to the caller it is simply absent.
    const wanted = unique(instanceIds).filter((id) => INSTANCE_ID_PATTERN.test(id));
    const found = new Map<string, Instance>();
    for (const chunk of chunks(wanted, INSTANCE_IDS_PER_CALL)) {
      for (const instance of await this.describeChunkWithoutUnknownIds(chunk)) found.set(instance.instanceId, instance);
    }
    return found;
  }

  async findInstancesByPrivateDnsName(
    names: readonly string[],
    states: readonly InstanceState[] = LIVE_INSTANCE_STATES,
  ): Promise<Instance[]> {
    const found = new Map<string, Instance>();
    for (const chunk of chunks(unique(names), DNS_NAMES_PER_CALL)) {
      const filters: Filter[] = [
        { Name: 'private-dns-name', Values: chunk },
        { Name: 'instance-state-name', Values: [...states] },
      ];
      for (const instance of await this.filteredInstances(filters, 'finding instances by private DNS name')) {
        found.set(instance.instanceId, instance);
      }
    }
    return [...found.values()];
  }

  async findClusterInstances(clusterName: string): Promise<Instance[]> {
    // Filters AND, the values of one OR: one `tag-key` filter finds both tags. The legacy tag's value must be this
    // cluster's name, which no filter can say together with the other key, so other clusters' are dropped here.
    const filters: Filter[] = [{ Name: 'tag-key', Values: [clusterTagKey(clusterName), LEGACY_CLUSTER_TAG] }];
    const found = new Map<string, Instance>();
    for (const instance of await this.filteredInstances(filters, `finding the instances of cluster ${clusterName}`)) {
      if (isClusterResource(instance.tags, clusterName)) found.set(instance.instanceId, instance);
    }
    return [...found.values()];
  }

  /** Every page of a filtered DescribeInstances, `FILTERED_PAGE_SIZE` a page; errors say what was being done. */
  private async filteredInstances(filters: Filter[], doing: string): Promise<Instance[]> {
    try {
      const pages = await allPages(
        (NextToken) =>
          this.client.send(
            new DescribeInstancesCommand({ Filters: filters, MaxResults: FILTERED_PAGE_SIZE, NextToken }),
          ),
        (page) => page.NextToken,
      );
      return pages.flatMap(instancesOf);
    } catch (err) {
      throw toControllerError(doing, err);
    }
  }

  /**
   * One chunk of IDs. EC2 fails the whole call when any listed ID is unknown or malformed and names the
   * offending IDs in the message, so those are dropped and the rest asked again. Only IDs EC2 named are
   * dropped: an absent instance means "does not exist" to the caller, and a Node may be deleted for it.
   */
  private async describeChunkWithoutUnknownIds(chunk: readonly string[]): Promise<Instance[]> {
    let ids = chunk;
    for (let attempt = 1; ; attempt++) {
      try {
        const pages = await allPages(
          (NextToken) =>
            // No MaxResults: EC2 refuses it together with InstanceIds.
            this.client.send(new DescribeInstancesCommand({ InstanceIds: [...ids], NextToken })),
          (page) => page.NextToken,
        );
        return pages.flatMap(instancesOf);
      } catch (err) {
        const named = isUnknownIdError(err) ? idsNamedInMessage(err, ids) : new Set<string>();
        if (named.size === 0 || attempt >= DESCRIBE_ATTEMPTS) throw toControllerError('describing instances', err);
        ids = ids.filter((id) => !named.has(id));
        if (ids.length === 0) return [];
      }
    }
  }

  async describeAvailabilityZones(): Promise<AvailabilityZone[]> {
    try {
      // Not paginated by EC2. Without AllAvailabilityZones, Local and Wavelength Zones the account has not
      // opted into are left out: no instance can run there anyway.
      const output = await this.client.send(new DescribeAvailabilityZonesCommand({ AllAvailabilityZones: false }));
      const zones: AvailabilityZone[] = [];
      for (const zone of output.AvailabilityZones ?? []) {
        if (!zone.ZoneName || !zone.ZoneId) continue;
        zones.push({ zoneName: zone.ZoneName, zoneId: zone.ZoneId, zoneType: nonEmpty(zone.ZoneType) });
      }
      return zones;
    } catch (err) {
      throw toControllerError('describing availability zones', err);
    }
  }
}

/**
 * Subnets and tags on top of the instance reads: what both the service function (`Ec2LoadBalancerNetwork`) and the
 * IP address manager (`Ec2Interfaces`) need besides their own commands (docs/adr/0010-lambda-cold-start.md).
 */
export class Ec2SubnetsAndTags extends Ec2InstanceReads implements Ec2SubnetTagPort {
  async describeSubnets(query: {
    vpcId?: string;
    subnetIds?: readonly string[];
    names?: readonly string[];
  }): Promise<Subnet[]> {
    // Filters rather than SubnetIds: an unknown ID in SubnetIds fails the whole call (InvalidSubnetID.NotFound).
    const filters: Filter[] = [];
    if (query.vpcId) filters.push({ Name: 'vpc-id', Values: [query.vpcId] });
    if (query.subnetIds) filters.push({ Name: 'subnet-id', Values: unique(query.subnetIds) });
    if (query.names) filters.push({ Name: 'tag:Name', Values: unique(query.names) });
    if ((query.subnetIds && query.subnetIds.length === 0) || (query.names && query.names.length === 0)) return [];
    try {
      const pages = await allPages(
        (NextToken) =>
          this.client.send(new DescribeSubnetsCommand({ Filters: filters, MaxResults: FILTERED_PAGE_SIZE, NextToken })),
        (page) => page.NextToken,
      );
      return pages.flatMap((page) =>
        (page.Subnets ?? []).flatMap((sdk): Subnet[] =>
          sdk.SubnetId && sdk.VpcId && sdk.AvailabilityZone
            ? [
                {
                  subnetId: sdk.SubnetId,
                  vpcId: sdk.VpcId,
                  availabilityZone: sdk.AvailabilityZone,
                  availabilityZoneId: nonEmpty(sdk.AvailabilityZoneId),
                  cidrBlock: nonEmpty(sdk.CidrBlock),
                  ...ipv6CidrBlocksOf(sdk.Ipv6CidrBlockAssociationSet),
                  tags: fromKeyValues(sdk.Tags),
                },
              ]
            : [],
        ),
      );
    } catch (err) {
      throw toControllerError('describing subnets', err);
    }
  }

  async createTags(resourceIds: readonly string[], tags: Readonly<Record<string, string>>): Promise<void> {
    if (resourceIds.length === 0 || Object.keys(tags).length === 0) return;
    try {
      await this.client.send(new CreateTagsCommand({ Resources: [...resourceIds], Tags: toKeyValues(tags) }));
    } catch (err) {
      throw toControllerError(`tagging ${resourceIds.join(', ')}`, err);
    }
  }

  async deleteTags(resourceIds: readonly string[], keys: readonly string[]): Promise<void> {
    if (resourceIds.length === 0 || keys.length === 0) return;
    try {
      // A tag given without a value removes that key whatever its value.
      // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteTags.html
      await this.client.send(
        new DeleteTagsCommand({ Resources: [...resourceIds], Tags: unique(keys).map((Key) => ({ Key })) }),
      );
    } catch (err) {
      throw toControllerError(`removing tags ${keys.join(', ')} from ${resourceIds.join(', ')}`, err);
    }
  }
}

/**
 * The EC2 side of Service load balancers on top of subnets and tags: the route tables that tell public subnets from
 * private ones, and security groups. What the service function builds, so it bundles no route or network interface
 * command (docs/adr/0010-lambda-cold-start.md, third round).
 */
export class Ec2LoadBalancerNetwork extends Ec2SubnetsAndTags implements Ec2LoadBalancerNetworkPort {
  async findRouteTablesByVpc(vpcId: string): Promise<RouteTable[]> {
    try {
      return await routeTables(this.client, { Filters: [{ Name: 'vpc-id', Values: [vpcId] }] });
    } catch (err) {
      throw toControllerError(`describing route tables of ${vpcId}`, err);
    }
  }

  async findSecurityGroups(query: SecurityGroupQuery): Promise<SecurityGroup[]> {
    const filters: Filter[] = [];
    // Filters rather than GroupIds: an unknown ID in GroupIds fails the whole call (InvalidGroup.NotFound).
    if (query.groupIds) filters.push({ Name: 'group-id', Values: unique(query.groupIds) });
    if (query.vpcId) filters.push({ Name: 'vpc-id', Values: [query.vpcId] });
    if (query.groupNames) filters.push({ Name: 'group-name', Values: unique(query.groupNames) });
    if (query.referencingGroupIds) {
      filters.push({ Name: 'ip-permission.group-id', Values: unique(query.referencingGroupIds) });
    }
    for (const [key, value] of Object.entries(query.tags ?? {})) {
      filters.push(value === undefined ? { Name: 'tag-key', Values: [key] } : { Name: `tag:${key}`, Values: [value] });
    }
    const empty = [query.groupIds, query.groupNames, query.referencingGroupIds].some((v) => v && v.length === 0);
    if (empty) return [];
    try {
      const pages = await allPages(
        (NextToken) =>
          this.client.send(
            new DescribeSecurityGroupsCommand({ Filters: filters, MaxResults: FILTERED_PAGE_SIZE, NextToken }),
          ),
        (page) => page.NextToken,
      );
      return pages.flatMap((page) => (page.SecurityGroups ?? []).flatMap((g) => toSecurityGroup(g) ?? []));
    } catch (err) {
      throw toControllerError('describing security groups', err);
    }
  }

  async createSecurityGroup(input: {
    groupName: string;
    description: string;
    vpcId: string;
    tags: Record<string, string>;
  }): Promise<{ groupId: string } | 'name-taken'> {
    try {
      const output = await this.client.send(
        new CreateSecurityGroupCommand({
          GroupName: input.groupName,
          Description: input.description,
          VpcId: input.vpcId,
          // EC2 refuses a tag specification without tags.
          ...(Object.keys(input.tags).length > 0
            ? { TagSpecifications: [{ ResourceType: 'security-group' as const, Tags: toKeyValues(input.tags) }] }
            : {}),
        }),
      );
      if (!output.GroupId) throw new Error('CreateSecurityGroup answered without a GroupId');
      return { groupId: output.GroupId };
    } catch (err) {
      if (awsErrorCode(err) === 'InvalidGroup.Duplicate') return 'name-taken';
      throw toControllerError(`creating security group ${input.groupName}`, err);
    }
  }

  async authorizeSecurityGroupIngress(groupId: string, rules: readonly SecurityGroupRule[]): Promise<void> {
    if (rules.length === 0) return;
    try {
      await this.client.send(
        new AuthorizeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: toIpPermissions(rules) }),
      );
    } catch (err) {
      if (awsErrorCode(err) !== 'InvalidPermission.Duplicate') {
        throw toControllerError(`authorizing ingress on ${groupId}`, err);
      }
      // EC2 refuses the whole call when one rule exists already; then each rule goes on its own, so that the
      // missing ones are still added and the existing ones are left as they are.
      if (rules.length === 1) return;
      for (const rule of rules) await this.authorizeSecurityGroupIngress(groupId, [rule]);
    }
  }

  async revokeSecurityGroupIngress(groupId: string, rules: readonly SecurityGroupRule[]): Promise<void> {
    if (rules.length === 0) return;
    try {
      await this.client.send(
        new RevokeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: toIpPermissions(rules) }),
      );
    } catch (err) {
      if (awsErrorCode(err) !== 'InvalidPermission.NotFound') {
        throw toControllerError(`revoking ingress on ${groupId}`, err);
      }
      // Outside the default VPC, one rule the group does not have fails the whole call and nothing is revoked
      // (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RevokeSecurityGroupIngress.html); then each
      // rule goes on its own, so that the ones the group has are still removed.
      if (rules.length === 1) return;
      for (const rule of rules) await this.revokeSecurityGroupIngress(groupId, [rule]);
    }
  }

  async findNetworkInterfacesByPrivateIp(addresses: readonly string[]): Promise<NetworkInterfaceDetail[]> {
    const found = new Map<string, NetworkInterfaceDetail>();
    // A filter rather than IDs; EC2 takes at most 200 filter values in one call.
    for (const chunk of chunks(unique(addresses), MAX_FILTER_VALUES_PER_CALL)) {
      try {
        const pages = await allPages(
          (NextToken) =>
            this.client.send(
              new DescribeNetworkInterfacesCommand({
                Filters: [{ Name: 'addresses.private-ip-address', Values: chunk }],
                MaxResults: FILTERED_PAGE_SIZE,
                NextToken,
              }),
            ),
          (page) => page.NextToken,
        );
        for (const eni of pages.flatMap((page) => page.NetworkInterfaces ?? [])) {
          const detail = toNetworkInterfaceDetail(eni);
          if (detail) found.set(detail.networkInterfaceId, detail);
        }
      } catch (err) {
        throw toControllerError('describing the network interfaces of target addresses', err);
      }
    }
    return [...found.values()];
  }

  async deleteSecurityGroup(groupId: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.client.send(new DeleteSecurityGroupCommand({ GroupId: groupId }));
      return 'deleted';
    } catch (err) {
      if (awsErrorCode(err) === 'InvalidGroup.NotFound') return 'not-found';
      throw toControllerError(`deleting security group ${groupId}`, err);
    }
  }

  /** Every page; no MaxResults, so EC2 answers in one page where it can (a table holds at most 1000 routes). */
}

/**
 * The route controller's EC2 on top of the instance reads: route tables, routes and source/destination checks, so
 * the route function bundles no security group or network interface command (docs/adr/0010-lambda-cold-start.md,
 * third round).
 */
export class Ec2Routes extends Ec2InstanceReads implements Ec2RoutePort {
  async describeRouteTable(routeTableId: string): Promise<RouteTable | undefined> {
    try {
      const tables = await routeTables(this.client, { RouteTableIds: [routeTableId] });
      return tables.find((t) => t.routeTableId === routeTableId);
    } catch (err) {
      // EC2 fails the call for an unknown ID; to the caller that is simply "no such table".
      if (awsErrorCode(err) === 'InvalidRouteTableID.NotFound') return undefined;
      throw toControllerError(`describing route table ${routeTableId}`, err);
    }
  }

  async findRouteTablesByTag(tag: { key: string; value?: string }): Promise<RouteTable[]> {
    const filter: Filter =
      tag.value === undefined
        ? { Name: 'tag-key', Values: [tag.key] }
        : { Name: `tag:${tag.key}`, Values: [tag.value] };
    try {
      return await routeTables(this.client, { Filters: [filter] });
    } catch (err) {
      throw toControllerError(`finding route tables tagged ${tag.key}`, err);
    }
  }

  async createRoute(
    routeTableId: string,
    destination: string,
    target: RouteTargetSpec,
  ): Promise<'created' | 'already-exists'> {
    try {
      await this.client.send(
        new CreateRouteCommand({ RouteTableId: routeTableId, ...destinationOf(destination), ...targetOf(target) }),
      );
      return 'created';
    } catch (err) {
      if (awsErrorCode(err) === 'RouteAlreadyExists') return 'already-exists';
      throw toControllerError(`creating route ${destination} in ${routeTableId}`, err);
    }
  }

  async replaceRoute(
    routeTableId: string,
    destination: string,
    target: RouteTargetSpec,
  ): Promise<'replaced' | 'not-found'> {
    try {
      await this.client.send(
        new ReplaceRouteCommand({ RouteTableId: routeTableId, ...destinationOf(destination), ...targetOf(target) }),
      );
      return 'replaced';
    } catch (err) {
      if (isMissingRouteError(err)) return 'not-found';
      throw toControllerError(`replacing route ${destination} in ${routeTableId}`, err);
    }
  }

  async deleteRoute(routeTableId: string, destination: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.client.send(new DeleteRouteCommand({ RouteTableId: routeTableId, ...destinationOf(destination) }));
      return 'deleted';
    } catch (err) {
      if (isMissingRouteError(err)) return 'not-found';
      throw toControllerError(`deleting route ${destination} from ${routeTableId}`, err);
    }
  }

  async modifyInstanceSourceDestCheck(instanceId: string, enabled: boolean): Promise<void> {
    try {
      await this.client.send(
        new ModifyInstanceAttributeCommand({ InstanceId: instanceId, SourceDestCheck: { Value: enabled } }),
      );
    } catch (err) {
      throw toControllerError(`setting source/destination check of ${instanceId} to ${enabled}`, err);
    }
  }

  async modifyNetworkInterfaceSourceDestCheck(networkInterfaceId: string, enabled: boolean): Promise<void> {
    try {
      await this.client.send(
        new ModifyNetworkInterfaceAttributeCommand({
          NetworkInterfaceId: networkInterfaceId,
          SourceDestCheck: { Value: enabled },
        }),
      );
    } catch (err) {
      throw toControllerError(`setting source/destination check of ${networkInterfaceId} to ${enabled}`, err);
    }
  }
}

/**
 * The IP address manager's EC2 on top of subnets and tags: instance type limits and network interfaces (their
 * secondary addresses and prefixes), so the ipam function bundles no route or security group command
 * (docs/adr/0010-lambda-cold-start.md, fourth round).
 */
export class Ec2Interfaces extends Ec2SubnetsAndTags implements Ec2InterfacePort {
  async describeInstanceTypes(instanceTypes: readonly string[]): Promise<InstanceTypeInfo[]> {
    const infos: InstanceTypeInfo[] = [];
    for (const chunk of chunks(unique(instanceTypes), INSTANCE_TYPES_PER_CALL)) {
      try {
        const pages = await allPages(
          (NextToken) =>
            // The SDK types instance types as a closed union; EC2 knows newer types than this SDK release.
            this.client.send(new DescribeInstanceTypesCommand({ InstanceTypes: chunk as _InstanceType[], NextToken })),
          (page) => page.NextToken,
        );
        for (const info of pages.flatMap((page) => page.InstanceTypes ?? [])) {
          if (!info.InstanceType) continue;
          infos.push({
            instanceType: info.InstanceType,
            maximumNetworkInterfaces: info.NetworkInfo?.MaximumNetworkInterfaces ?? 0,
            ipv4AddressesPerInterface: info.NetworkInfo?.Ipv4AddressesPerInterface ?? 0,
            ipv6AddressesPerInterface: info.NetworkInfo?.Ipv6AddressesPerInterface ?? 0,
            hypervisor: info.Hypervisor,
            bareMetal: info.BareMetal,
          });
        }
      } catch (err) {
        throw toControllerError('describing instance types', err);
      }
    }
    return infos;
  }

  async describeNetworkInterfaces(query: NetworkInterfaceQuery): Promise<NetworkInterfaceDetail[]> {
    // Filters rather than NetworkInterfaceIds: an unknown ID there fails the whole call
    // (InvalidNetworkInterfaceID.NotFound), and an interface deleted a moment ago is simply absent here.
    const filters: Filter[] = [];
    if (query.vpcId) filters.push({ Name: 'vpc-id', Values: [query.vpcId] });
    if (query.status) filters.push({ Name: 'status', Values: [query.status] });
    for (const [key, value] of Object.entries(query.tags ?? {})) {
      filters.push(value === undefined ? { Name: 'tag-key', Values: [key] } : { Name: `tag:${key}`, Values: [value] });
    }
    if (!query.networkInterfaceIds) return this.networkInterfaces(filters);
    // EC2 counts filter values over every filter of a call; the IDs get what the other filters leave.
    const perCall = Math.max(1, MAX_FILTER_VALUES_PER_CALL - filters.length);
    const found = new Map<string, NetworkInterfaceDetail>();
    for (const chunk of chunks(unique(query.networkInterfaceIds), perCall)) {
      const withIds = [{ Name: 'network-interface-id', Values: chunk }, ...filters];
      for (const eni of await this.networkInterfaces(withIds)) found.set(eni.networkInterfaceId, eni);
    }
    return [...found.values()];
  }

  async assignPrivateIpAddresses(
    networkInterfaceId: string,
    request: { count: number } | { prefixes: number },
  ): Promise<AssignResult> {
    try {
      const output = await this.client.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: networkInterfaceId,
          ...('count' in request
            ? { SecondaryPrivateIpAddressCount: request.count }
            : { Ipv4PrefixCount: request.prefixes }),
        }),
      );
      return {
        addresses: (output.AssignedPrivateIpAddresses ?? []).flatMap((a) =>
          a.PrivateIpAddress ? [a.PrivateIpAddress] : [],
        ),
        prefixes: (output.AssignedIpv4Prefixes ?? []).flatMap((p) => (p.Ipv4Prefix ? [p.Ipv4Prefix] : [])),
      };
    } catch (err) {
      const code = awsErrorCode(err);
      if (code === 'InsufficientFreeAddressesInSubnet' || code === 'InsufficientCidrBlocks') return 'subnet-full';
      if (code === 'PrivateIpAddressLimitExceeded') return 'interface-full';
      throw toControllerError(`assigning private IPv4 addresses to ${networkInterfaceId}`, err);
    }
  }

  async unassignPrivateIpAddresses(
    networkInterfaceId: string,
    release: { addresses?: readonly string[]; prefixes?: readonly string[] },
  ): Promise<void> {
    const addresses = unique(release.addresses ?? []);
    const prefixes = unique(release.prefixes ?? []);
    if (addresses.length === 0 && prefixes.length === 0) return;
    try {
      await this.client.send(
        new UnassignPrivateIpAddressesCommand({
          NetworkInterfaceId: networkInterfaceId,
          ...(addresses.length > 0 ? { PrivateIpAddresses: addresses } : {}),
          ...(prefixes.length > 0 ? { Ipv4Prefixes: prefixes } : {}),
        }),
      );
    } catch (err) {
      if (!isNotAssignedError(err)) {
        throw toControllerError(`unassigning private IPv4 addresses from ${networkInterfaceId}`, err);
      }
      // One address (or prefix) the interface does not have fails the whole call; then each goes on its own, so
      // that those it still has are released, and those already gone count as released.
      if (addresses.length + prefixes.length === 1) return;
      for (const address of addresses)
        await this.unassignPrivateIpAddresses(networkInterfaceId, { addresses: [address] });
      for (const prefix of prefixes) await this.unassignPrivateIpAddresses(networkInterfaceId, { prefixes: [prefix] });
    }
  }

  async deleteNetworkInterface(networkInterfaceId: string): Promise<'deleted' | 'not-found'> {
    try {
      await this.client.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: networkInterfaceId }));
      return 'deleted';
    } catch (err) {
      if (awsErrorCode(err) === 'InvalidNetworkInterfaceID.NotFound') return 'not-found';
      const doing = `deleting network interface ${networkInterfaceId}`;
      // EC2 refuses an attached interface with InvalidParameterValue ("… is currently in use"); it clears once
      // the interface is detached (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteNetworkInterface.html).
      if (awsErrorCode(err) === 'InvalidParameterValue') {
        const detail = err instanceof Error ? err.message : String(err);
        throw new RetryableError(`${doing}: InvalidParameterValue: ${detail}`, { cause: err });
      }
      throw toControllerError(doing, err);
    }
  }

  /** Every page of a filtered DescribeNetworkInterfaces. */
  private async networkInterfaces(filters: Filter[]): Promise<NetworkInterfaceDetail[]> {
    try {
      const pages = await allPages(
        (NextToken) =>
          this.client.send(
            new DescribeNetworkInterfacesCommand({ Filters: filters, MaxResults: FILTERED_PAGE_SIZE, NextToken }),
          ),
        (page) => page.NextToken,
      );
      return pages.flatMap((page) =>
        (page.NetworkInterfaces ?? []).flatMap((eni) => toNetworkInterfaceDetail(eni) ?? []),
      );
    } catch (err) {
      throw toControllerError('describing network interfaces', err);
    }
  }
}

/**
 * Ec2Port over the AWS SDK: a pure translation (no caching). The route calls are Ec2Routes' and the network
 * interface calls Ec2Interfaces', which the route and ipam functions build alone; one class cannot extend all three.
 */
export class Ec2Adapter extends Ec2LoadBalancerNetwork implements Ec2Port {
  private readonly routes = new Ec2Routes(this.client);
  private readonly interfaces = new Ec2Interfaces(this.client);

  describeInstanceTypes(instanceTypes: readonly string[]): Promise<InstanceTypeInfo[]> {
    return this.interfaces.describeInstanceTypes(instanceTypes);
  }

  describeNetworkInterfaces(query: NetworkInterfaceQuery): Promise<NetworkInterfaceDetail[]> {
    return this.interfaces.describeNetworkInterfaces(query);
  }

  assignPrivateIpAddresses(
    networkInterfaceId: string,
    request: { count: number } | { prefixes: number },
  ): Promise<AssignResult> {
    return this.interfaces.assignPrivateIpAddresses(networkInterfaceId, request);
  }

  unassignPrivateIpAddresses(
    networkInterfaceId: string,
    release: { addresses?: readonly string[]; prefixes?: readonly string[] },
  ): Promise<void> {
    return this.interfaces.unassignPrivateIpAddresses(networkInterfaceId, release);
  }

  deleteNetworkInterface(networkInterfaceId: string): Promise<'deleted' | 'not-found'> {
    return this.interfaces.deleteNetworkInterface(networkInterfaceId);
  }

  describeRouteTable(routeTableId: string): Promise<RouteTable | undefined> {
    return this.routes.describeRouteTable(routeTableId);
  }

  findRouteTablesByTag(tag: { key: string; value?: string }): Promise<RouteTable[]> {
    return this.routes.findRouteTablesByTag(tag);
  }

  createRoute(
    routeTableId: string,
    destination: string,
    target: RouteTargetSpec,
  ): Promise<'created' | 'already-exists'> {
    return this.routes.createRoute(routeTableId, destination, target);
  }

  replaceRoute(routeTableId: string, destination: string, target: RouteTargetSpec): Promise<'replaced' | 'not-found'> {
    return this.routes.replaceRoute(routeTableId, destination, target);
  }

  deleteRoute(routeTableId: string, destination: string): Promise<'deleted' | 'not-found'> {
    return this.routes.deleteRoute(routeTableId, destination);
  }

  modifyInstanceSourceDestCheck(instanceId: string, enabled: boolean): Promise<void> {
    return this.routes.modifyInstanceSourceDestCheck(instanceId, enabled);
  }

  modifyNetworkInterfaceSourceDestCheck(networkInterfaceId: string, enabled: boolean): Promise<void> {
    return this.routes.modifyNetworkInterfaceSourceDestCheck(networkInterfaceId, enabled);
  }
}

/** Every page of a DescribeRouteTables. */
async function routeTables(
  client: Pick<EC2Client, 'send'>,
  input: Omit<DescribeRouteTablesCommandInput, 'NextToken'>,
): Promise<RouteTable[]> {
  const pages = await allPages(
    (NextToken) => client.send(new DescribeRouteTablesCommand({ ...input, NextToken })),
    (page) => page.NextToken,
  );
  return pages.flatMap((page) => (page.RouteTables ?? []).flatMap((t) => toRouteTable(t) ?? []));
}

/**
 * DeleteRoute answers InvalidRoute.NotFound for a missing route. ReplaceRoute answers InvalidParameterValue
 * ("There is no route defined for '…' in the route table") instead, although InvalidRoute.NotFound would be
 * consistent; both are accepted so that a fix on AWS's side changes nothing here.
 */
function isMissingRouteError(err: unknown): boolean {
  const code = awsErrorCode(err);
  if (code === 'InvalidRoute.NotFound') return true;
  const message = err instanceof Error ? err.message : '';
  return code === 'InvalidParameterValue' && /no route defined/i.test(message);
}

/** IPv6 destinations go in DestinationIpv6CidrBlock; EC2 refuses an IPv6 block in DestinationCidrBlock. */
function destinationOf(destination: string): { DestinationCidrBlock?: string; DestinationIpv6CidrBlock?: string } {
  return destination.includes(':') ? { DestinationIpv6CidrBlock: destination } : { DestinationCidrBlock: destination };
}

function targetOf(target: RouteTargetSpec): { InstanceId: string } | { NetworkInterfaceId: string } {
  return 'instanceId' in target ? { InstanceId: target.instanceId } : { NetworkInterfaceId: target.networkInterfaceId };
}

const ROUTE_ORIGINS: ReadonlySet<string> = new Set<RouteOrigin>([
  'CreateRouteTable',
  'CreateRoute',
  'EnableVgwRoutePropagation',
]);

function toRouteTable(sdk: SdkRouteTable): RouteTable | undefined {
  if (!sdk.RouteTableId) return undefined;
  const table: RouteTable = {
    routeTableId: sdk.RouteTableId,
    vpcId: nonEmpty(sdk.VpcId),
    tags: fromKeyValues(sdk.Tags),
    routes: (sdk.Routes ?? []).flatMap((route) => toRoute(route) ?? []),
  };
  // Gateway associations (an edge association has GatewayId, no subnet) say nothing about subnets.
  if (sdk.Associations) {
    table.associations = sdk.Associations.filter((a) => a.Main || a.SubnetId).map((a) => ({
      subnetId: nonEmpty(a.SubnetId),
      main: a.Main ?? false,
    }));
  }
  return table;
}

/** The IPv6 CIDR blocks in state `associated` (not those being associated or disassociated); none: no field. */
function ipv6CidrBlocksOf(
  associations: { Ipv6CidrBlock?: string; Ipv6CidrBlockState?: { State?: string } }[] | undefined,
): { ipv6CidrBlocks?: string[] } {
  const blocks = (associations ?? []).flatMap((a) =>
    a.Ipv6CidrBlock && a.Ipv6CidrBlockState?.State === 'associated' ? [a.Ipv6CidrBlock] : [],
  );
  return blocks.length > 0 ? { ipv6CidrBlocks: blocks } : {};
}

const IP_PROTOCOLS: ReadonlySet<string> = new Set(['tcp', 'udp', 'icmp', 'icmpv6', '-1']);
/** EC2 may state protocols by number (6, 17, 1, 58). */
const PROTOCOL_NUMBERS: Record<string, SecurityGroupRule['protocol']> = {
  '6': 'tcp',
  '17': 'udp',
  '1': 'icmp',
  '58': 'icmpv6',
};

function toSecurityGroup(sdk: SdkSecurityGroup): SecurityGroup | undefined {
  if (!sdk.GroupId) return undefined;
  return {
    groupId: sdk.GroupId,
    groupName: sdk.GroupName ?? '',
    vpcId: nonEmpty(sdk.VpcId),
    description: sdk.Description ?? '',
    tags: fromKeyValues(sdk.Tags),
    ingress: (sdk.IpPermissions ?? []).flatMap(fromIpPermission),
  };
}

/** EC2 groups sources under one permission per protocol and port range; the port has one rule per source. */
function fromIpPermission(permission: IpPermission): SecurityGroupRule[] {
  const raw = permission.IpProtocol ?? '-1';
  const protocol = IP_PROTOCOLS.has(raw) ? (raw as SecurityGroupRule['protocol']) : PROTOCOL_NUMBERS[raw];
  // A protocol the controller never writes (e.g. 50, ESP) is never one of its rules; skip it.
  if (!protocol) return [];
  const base = { protocol, fromPort: permission.FromPort ?? -1, toPort: permission.ToPort ?? -1 };
  const described = (description: string | undefined) => (description ? { description } : {});
  return [
    ...(permission.IpRanges ?? []).flatMap((r) =>
      r.CidrIp ? [{ ...base, cidrIpv4: r.CidrIp, ...described(r.Description) }] : [],
    ),
    ...(permission.Ipv6Ranges ?? []).flatMap((r) =>
      r.CidrIpv6 ? [{ ...base, cidrIpv6: r.CidrIpv6, ...described(r.Description) }] : [],
    ),
    ...(permission.UserIdGroupPairs ?? []).flatMap((p) =>
      p.GroupId ? [{ ...base, sourceGroupId: p.GroupId, ...described(p.Description) }] : [],
    ),
  ];
}

/** One permission per rule: simple to read back in error messages, and EC2 counts rules the same either way. */
function toIpPermissions(rules: readonly SecurityGroupRule[]): IpPermission[] {
  return rules.map((rule) => {
    const permission: IpPermission = { IpProtocol: rule.protocol };
    // `-1` (all traffic) takes no port range.
    if (rule.protocol !== '-1') {
      permission.FromPort = rule.fromPort;
      permission.ToPort = rule.toPort;
    }
    const description = rule.description ? { Description: rule.description } : {};
    if (rule.cidrIpv4) permission.IpRanges = [{ CidrIp: rule.cidrIpv4, ...description }];
    if (rule.cidrIpv6) permission.Ipv6Ranges = [{ CidrIpv6: rule.cidrIpv6, ...description }];
    if (rule.sourceGroupId) permission.UserIdGroupPairs = [{ GroupId: rule.sourceGroupId, ...description }];
    return permission;
  });
}

function toRoute(sdk: SdkRoute): Route | undefined {
  const destination =
    nonEmpty(sdk.DestinationCidrBlock) ??
    nonEmpty(sdk.DestinationIpv6CidrBlock) ??
    nonEmpty(sdk.DestinationPrefixListId);
  if (!destination) return undefined;
  const target: RouteTarget = {};
  const set = (key: keyof RouteTarget, value: string | undefined) => {
    if (nonEmpty(value)) target[key] = value;
  };
  set('instanceId', sdk.InstanceId);
  set('networkInterfaceId', sdk.NetworkInterfaceId);
  set('gatewayId', sdk.GatewayId);
  set('natGatewayId', sdk.NatGatewayId);
  set('transitGatewayId', sdk.TransitGatewayId);
  set('vpcPeeringConnectionId', sdk.VpcPeeringConnectionId);
  set('egressOnlyInternetGatewayId', sdk.EgressOnlyInternetGatewayId);
  set('localGatewayId', sdk.LocalGatewayId);
  set('carrierGatewayId', sdk.CarrierGatewayId);
  set('coreNetworkArn', sdk.CoreNetworkArn);
  return {
    destination,
    destinationType: nonEmpty(sdk.DestinationCidrBlock)
      ? 'ipv4'
      : nonEmpty(sdk.DestinationIpv6CidrBlock)
        ? 'ipv6'
        : 'prefix-list',
    target,
    // `filtered` (VPC Route Server) and any future state read as active: only a blackhole is ever cleaned up.
    state: sdk.State === 'blackhole' ? 'blackhole' : 'active',
    origin: sdk.Origin !== undefined && ROUTE_ORIGINS.has(sdk.Origin) ? (sdk.Origin as RouteOrigin) : 'unknown',
  };
}

function isUnknownIdError(err: unknown): boolean {
  const code = awsErrorCode(err);
  return code === 'InvalidInstanceID.NotFound' || code === 'InvalidInstanceID.Malformed';
}

/**
 * IDs of `ids` that the error message names. EC2 writes "The instance ID 'i-…' does not exist",
 * "The instance IDs 'i-…, i-…' do not exist" or `Invalid id: "i-…"`; matching whole tokens (not substrings)
 * keeps an 8-digit ID from matching the start of a 17-digit one.
 */
function idsNamedInMessage(err: unknown, ids: readonly string[]): Set<string> {
  const message = err instanceof Error ? err.message : String(err);
  const tokens = new Set(message.match(/i-[0-9a-zA-Z]+/g) ?? []);
  return new Set(ids.filter((id) => tokens.has(id)));
}

function instancesOf(page: DescribeInstancesCommandOutput): Instance[] {
  const instances: Instance[] = [];
  for (const reservation of page.Reservations ?? []) {
    for (const sdk of reservation.Instances ?? []) {
      const instance = toInstance(sdk);
      if (instance) instances.push(instance);
    }
  }
  return instances;
}

function toInstance(sdk: SdkInstance): Instance | undefined {
  if (!sdk.InstanceId) return undefined;
  const tags = fromKeyValues(sdk.Tags);
  return {
    instanceId: sdk.InstanceId,
    state: toState(sdk.State?.Name),
    instanceType: sdk.InstanceType ?? '',
    availabilityZone: sdk.Placement?.AvailabilityZone ?? '',
    vpcId: nonEmpty(sdk.VpcId),
    subnetId: nonEmpty(sdk.SubnetId),
    // EC2 reports "no name" as an empty string (e.g. no public DNS, or a terminated instance).
    privateDnsName: nonEmpty(sdk.PrivateDnsName),
    privateIpAddress: nonEmpty(sdk.PrivateIpAddress),
    publicDnsName: nonEmpty(sdk.PublicDnsName),
    publicIpAddress: nonEmpty(sdk.PublicIpAddress),
    sourceDestCheck: sdk.SourceDestCheck,
    networkInterfaces: (sdk.NetworkInterfaces ?? []).flatMap((eni) => toNetworkInterface(eni) ?? []),
    tags,
  };
}

/**
 * EC2 always names a state; should a new one ever appear, treating the instance as existing (`pending`) is the
 * safe reading: the other choices would taint or delete its Node.
 */
function toState(name: string | undefined): InstanceState {
  return name !== undefined && KNOWN_STATES.has(name) ? (name as InstanceState) : 'pending';
}

function toNetworkInterface(eni: SdkNetworkInterface): NetworkInterface | undefined {
  if (!eni.NetworkInterfaceId) return undefined;
  const privateIpAddresses = (eni.PrivateIpAddresses ?? []).flatMap((ip) =>
    ip.PrivateIpAddress
      ? [{ address: ip.PrivateIpAddress, primary: ip.Primary ?? false, privateDnsName: nonEmpty(ip.PrivateDnsName) }]
      : [],
  );
  // The port promises the primary address first; a stable sort keeps EC2's order otherwise.
  privateIpAddresses.sort((a, b) => Number(b.primary) - Number(a.primary));
  const networkInterface: NetworkInterface = {
    networkInterfaceId: eni.NetworkInterfaceId,
    // An interface without an attachment is not really on the instance; sorting it last keeps it out of the way.
    deviceIndex: eni.Attachment?.DeviceIndex ?? Number.MAX_SAFE_INTEGER,
    status: eni.Status ?? '',
    subnetId: nonEmpty(eni.SubnetId),
    privateIpAddresses,
    ipv6Addresses: (eni.Ipv6Addresses ?? []).flatMap((ip) => (ip.Ipv6Address ? [ip.Ipv6Address] : [])),
    sourceDestCheck: eni.SourceDestCheck,
  };
  if (eni.Groups) networkInterface.securityGroupIds = eni.Groups.flatMap((g) => (g.GroupId ? [g.GroupId] : []));
  return networkInterface;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * UnassignPrivateIpAddresses naming an address the interface does not have answers InvalidParameterValue, "Some of
 * the specified addresses are not assigned to interface eni-…" (the same for prefixes); the message is the only
 * thing telling it from other invalid values.
 */
function isNotAssignedError(err: unknown): boolean {
  const message = err instanceof Error ? err.message : '';
  return awsErrorCode(err) === 'InvalidParameterValue' && /not assigned to interface/i.test(message);
}

function toNetworkInterfaceDetail(sdk: SdkEni): NetworkInterfaceDetail | undefined {
  if (!sdk.NetworkInterfaceId) return undefined;
  const privateIpAddresses = (sdk.PrivateIpAddresses ?? []).flatMap((ip) =>
    ip.PrivateIpAddress ? [{ address: ip.PrivateIpAddress, primary: ip.Primary ?? false }] : [],
  );
  // The port promises the primary address first; a stable sort keeps EC2's order otherwise.
  privateIpAddresses.sort((a, b) => Number(b.primary) - Number(a.primary));
  const detail: NetworkInterfaceDetail = {
    networkInterfaceId: sdk.NetworkInterfaceId,
    status: sdk.Status ?? '',
    subnetId: sdk.SubnetId ?? '',
    vpcId: nonEmpty(sdk.VpcId),
    availabilityZone: nonEmpty(sdk.AvailabilityZone),
    privateIpAddresses,
    ipv4Prefixes: (sdk.Ipv4Prefixes ?? []).flatMap((p) => (p.Ipv4Prefix ? [p.Ipv4Prefix] : [])),
    tags: fromKeyValues(sdk.TagSet),
  };
  const groups = (sdk.Groups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []));
  if (groups.length > 0) detail.securityGroupIds = groups;
  if (sdk.Attachment?.DeviceIndex !== undefined) {
    detail.attachment = {
      instanceId: nonEmpty(sdk.Attachment.InstanceId),
      deviceIndex: sdk.Attachment.DeviceIndex,
      status: nonEmpty(sdk.Attachment.Status),
    };
  }
  return detail;
}
