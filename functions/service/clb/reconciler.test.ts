import { beforeEach, describe, expect, it } from 'vitest';
import type { Service } from '../../../shared/k8s/types.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import { NODE_GROUP, VPC } from '../../../test/helpers/service-world.ts';
import { CLUSTER } from '../../../test/helpers/world.ts';
import { ANNOTATION } from '../annotations.ts';
import { garbageCollectionMessage } from '../gc.ts';
import {
  type ClassicWorld,
  classicService,
  createClassicWorld,
  INTERNAL,
  PUBLIC_SUBNETS,
  REFERENCE_NAME,
  REFERENCE_TAGS,
  referenceClassic,
} from '../testing/clb.ts';

/**
 * Services moved over from the reference controller on Classic ELBs: the same load balancer and DNS name,
 * kept in line as the reference kept it, replaced without an outage, and removed without leaks.
 */

let w: ClassicWorld;
let node1: string;
let node2: string;
beforeEach(() => {
  w = createClassicWorld();
  node1 = w.addNode(1).instance.instanceId;
  node2 = w.addNode(2).instance.instanceId;
});

const service = (): Service => w.kube.services.get('default/web')!;
const hostname = () => service()?.status?.loadBalancer?.ingress?.[0]?.hostname;
const eventsOf = (reason: string) => w.kube.eventsFor('Service', 'web', reason).map((e) => e.message);
const classic = (name = REFERENCE_NAME) => w.elbFake.describeNamed(name);
const nodeRulesFrom = (groupId: string) =>
  w.ec2.securityGroups.get(NODE_GROUP)!.ingress.filter((r) => r.sourceGroupId === groupId);
const edit = (change: (s: Service) => void) => w.kube.mutateService('default', 'web', change);
let sent = 0;
const pass = () => w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `p${++sent}` }));

describe('a Classic ELB made by the reference controller', () => {
  it('is kept: same load balancer and DNS name, the Nodes registered, its group tagged with its Service, no NLB', async () => {
    const { dnsName, groupId } = await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    expect(hostname()).toBe(dnsName);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    const lb = classic()!;
    expect(lb.DNSName).toBe(dnsName);
    expect(lb.Instances?.map((i) => i.InstanceId).sort()).toEqual([node1, node2].sort());
    expect(w.ec2.securityGroups.get(groupId)!.tags['kubernetes.io/service-name']).toBe('default/web');
    expect(nodeRulesFrom(groupId)).toHaveLength(1);
    expect(eventsOf('SyncLoadBalancerFailed')).toEqual([]);

    // In line: a quiet pass writes nothing.
    w.resetCounters();
    await pass();
    expect(w.awsWrites()).toBe(0);
  });

  it('listeners follow the ports (a changed one replaced by port), instances follow the Nodes', async () => {
    await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    edit((s) => {
      s.spec!.ports = [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 31080 },
        { name: 'admin', protocol: 'TCP', port: 9000, targetPort: 9000, nodePort: 30900 },
      ];
    });
    w.kube.deleteNode(w.kube.nodes.get('node-2')!.metadata.name, {});
    const node3 = w.addNode(3).instance.instanceId;
    await w.converge([w.serviceKey('web')]);
    const lb = classic()!;
    expect(
      lb.ListenerDescriptions?.map((d) => `${d.Listener?.LoadBalancerPort}->${d.Listener?.InstancePort}`).sort(),
    ).toEqual(['80->31080', '9000->30900']);
    expect(lb.Instances?.map((i) => i.InstanceId).sort()).toEqual([node1, node3].sort());
    expect(lb.HealthCheck?.Target).toBe('TCP:31080');
    expect(w.metrics.total(MetricName.TargetsDeregistered)).toBe(1);
  });

  it('health check, attributes, proxy protocol, tags and extra groups from the annotations; removed again', async () => {
    await referenceClassic(w, {
      annotations: {
        [ANNOTATION.proxyProtocol]: '*',
        [ANNOTATION.connectionIdleTimeout]: '120',
        [ANNOTATION.crossZone]: 'true',
        [ANNOTATION.connectionDrainingEnabled]: 'true',
        [ANNOTATION.additionalResourceTags]: 'team=web',
        [ANNOTATION.healthcheckInterval]: '30',
      },
    });
    await w.converge([w.serviceKey('web')]);
    const state = w.elbFake.stateOf(REFERENCE_NAME)!;
    expect(classic()!.HealthCheck).toMatchObject({
      Target: 'TCP:30080',
      Interval: 30,
      Timeout: 5,
      HealthyThreshold: 2,
    });
    expect(classic()!.BackendServerDescriptions).toEqual([
      { InstancePort: 30080, PolicyNames: ['k8s-proxyprotocol-enabled'] },
    ]);
    expect(JSON.stringify(state)).toContain('"team"');
    const attributes = await w.elb.describeAttributes(REFERENCE_NAME);
    expect(attributes).toMatchObject({
      crossZone: true,
      idleTimeoutSeconds: 120,
      connectionDraining: { enabled: true },
    });

    edit((s) => {
      s.metadata.annotations = {};
    });
    await w.converge([w.serviceKey('web')]);
    expect(await w.elb.describeAttributes(REFERENCE_NAME)).toMatchObject({
      crossZone: false,
      idleTimeoutSeconds: 60,
      connectionDraining: { enabled: false },
    });
    expect(classic()!.BackendServerDescriptions ?? []).toEqual([]);
    expect((await w.elb.describeTags([REFERENCE_NAME])).get(REFERENCE_NAME)).toEqual(REFERENCE_TAGS);
  });

  it('deleting the Service: the Nodes rule revoked, the load balancer deleted, its group once free, the finalizer last', async () => {
    const { groupId } = await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    w.kube.deleteService('default', 'web');
    await pass();
    expect(classic()).toBeUndefined();
    expect(nodeRulesFrom(groupId)).toEqual([]);
    expect(service().metadata.finalizers).toContain('service.kubernetes.io/load-balancer-cleanup');
    expect(w.ec2.securityGroups.has(groupId)).toBe(true);
    await w.converge([w.serviceKey('web')]);
    expect(w.ec2.securityGroups.has(groupId)).toBe(false);
    expect(w.kube.services.has('default/web')).toBe(false);
    expect(w.ec2.securityGroups.has(NODE_GROUP)).toBe(true);
    expect(eventsOf('DeletedLoadBalancer')).toHaveLength(1);
  });

  it('where AWS frees its group at once, one deleting pass removes it all and the finalizer', async () => {
    const { groupId } = await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    w.elbFake.eniDrainMs = 0;
    w.kube.deleteService('default', 'web');
    await pass();
    expect(classic()).toBeUndefined();
    expect(w.ec2.securityGroups.has(groupId)).toBe(false);
    expect(w.kube.services.has('default/web')).toBe(false);
  });

  it('a scheme change builds a successor beside it; the status moves once an instance is in service, then the old one goes', async () => {
    const { dnsName } = await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    w.elbFake.registeringDescribes = 100;
    edit((s) => {
      s.metadata.annotations = INTERNAL;
    });
    await pass();
    const names = [...w.elbFake.loadBalancers.keys()].sort();
    expect(names).toHaveLength(2);
    const successor = names.find((n) => n !== REFERENCE_NAME)!;
    expect(w.elbFake.describeNamed(successor)!.Scheme).toBe('internal');
    expect(hostname()).toBe(dnsName);
    expect(classic()).toBeDefined();
    expect(eventsOf('ReplacingLoadBalancer')[0]).toMatch(/scheme internet-facing -> internal/);

    for (const id of [node1, node2]) w.elbFake.setInstanceHealth(successor, id, 'InService');
    await w.converge([w.serviceKey('web')]);
    expect(classic()).toBeUndefined();
    expect(hostname()).toBe(w.elbFake.describeNamed(successor)!.DNSName);
    expect((await w.elb.describeTags([successor])).get(successor)?.['serverless-ccm/replaces']).toBeUndefined();
  });
});

describe("a Classic ELB the reference made with the user's group (aws-load-balancer-security-groups)", () => {
  const USER_GROUP = 'sg-00000000000000user';
  const OTHER_NODES = 'sg-0000000000000nod2';
  const NOT_OURS = 'sg-00000000000000mine';
  const allTraffic = { protocol: '-1' as const, fromPort: -1, toPort: -1, sourceGroupId: USER_GROUP };
  const rulesFromUserGroup = () =>
    [NODE_GROUP, OTHER_NODES, NOT_OURS].filter((id) =>
      w.ec2.securityGroups.get(id)!.ingress.some((r) => r.sourceGroupId === USER_GROUP && r.protocol === '-1'),
    );

  beforeEach(() => {
    const group = (groupId: string, groupName: string, tags: Record<string, string>) =>
      w.ec2.putSecurityGroup({ groupId, groupName, vpcId: VPC, description: groupName, tags, ingress: [] });
    group(USER_GROUP, 'team-load-balancers', {});
    group(OTHER_NODES, 'nodes-2', { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' });
    // A group of someone else's that allows the user's group too: not the cluster's, so never touched.
    group(NOT_OURS, 'someone-elses', {});
    w.addNode(3, { group: OTHER_NODES });
    for (const id of [OTHER_NODES, NOT_OURS]) w.ec2.securityGroups.get(id)!.ingress.push({ ...allTraffic });
  });

  it("deleting the Service revokes the all-traffic rule from the user's group on every cluster-tagged group", async () => {
    await referenceClassic(w, { userGroup: USER_GROUP });
    await w.converge([w.serviceKey('web')]);
    expect(rulesFromUserGroup()).toEqual([NODE_GROUP, OTHER_NODES, NOT_OURS]);

    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')]);
    expect(classic()).toBeUndefined();
    expect(w.kube.services.has('default/web')).toBe(false);
    // Nothing in the user's group reaches the Nodes any more; the group itself is the user's and stays.
    expect(rulesFromUserGroup()).toEqual([NOT_OURS]);
    expect(w.ec2.securityGroups.has(USER_GROUP)).toBe(true);
  });

  it("two Services share the user's group: the rule stays while the other's Classic ELB uses it, and goes with the last", async () => {
    await referenceClassic(w, { userGroup: USER_GROUP });
    const api = { name: 'api', uid: '0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e' };
    await referenceClassic(w, { userGroup: USER_GROUP, service: api });
    await w.converge([w.serviceKey('web'), w.serviceKey('api')]);

    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')]);
    expect(classic()).toBeUndefined();
    expect(rulesFromUserGroup()).toEqual([NODE_GROUP, OTHER_NODES, NOT_OURS]);

    w.kube.deleteService('default', 'api');
    await w.converge([w.serviceKey('api')]);
    expect(w.elbFake.loadBalancers.size).toBe(0);
    expect(rulesFromUserGroup()).toEqual([NOT_OURS]);
  });

  it('a Service gone without its finalizer: the garbage collector revokes the rule with the load balancer', async () => {
    await referenceClassic(w, { userGroup: USER_GROUP });
    await w.converge([w.serviceKey('web')]);
    w.kube.services.delete('default/web');
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-user-group' })]);
    expect(classic()).toBeUndefined();
    expect(rulesFromUserGroup()).toEqual([NOT_OURS]);
  });

  it("the Nodes' own group named as the load balancer's: its rules are the cluster's and stay", async () => {
    const selfRule = () =>
      w.ec2.securityGroups
        .get(NODE_GROUP)!
        .ingress.filter((r) => r.sourceGroupId === NODE_GROUP && r.protocol === '-1');
    expect(selfRule()).toHaveLength(1);
    await referenceClassic(w, { userGroup: NODE_GROUP });
    await w.converge([w.serviceKey('web')]);
    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')]);
    expect(classic()).toBeUndefined();
    expect(selfRule()).toHaveLength(1);
  });
});

describe('from a Classic ELB to a Network Load Balancer (aws-load-balancer-type: nlb)', () => {
  it('the Classic ELB keeps serving and stays in the status until the NLB is active; then it goes, its rule and group after it', async () => {
    const { dnsName, groupId } = await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    w.elbv2.provisioningDescribes = 100;
    edit((s) => {
      s.metadata.annotations = { [ANNOTATION.type]: 'nlb' };
    });
    await pass();
    const nlb = [...w.elbv2.loadBalancers.values()][0]!.lb;
    expect(nlb.state).toBe('provisioning');
    expect(hostname()).toBe(dnsName);
    expect(classic()).toBeDefined();
    expect(classic()!.Instances).toHaveLength(2);
    // The garbage collector leaves both alone meanwhile.
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-handover' })]);
    expect(classic()).toBeDefined();
    expect(w.elbv2.loadBalancers.size).toBe(1);

    w.elbv2.activate(nlb.name);
    await w.converge([w.serviceKey('web')]);
    expect(hostname()).toBe(nlb.dnsName);
    expect(classic()).toBeUndefined();
    expect(nodeRulesFrom(groupId)).toEqual([]);
    expect(eventsOf('ReplacingLoadBalancer').some((m) => m.includes(`Deleting load balancer ${REFERENCE_NAME}`))).toBe(
      true,
    );
    // Its group, held a while by the deleted load balancer's interfaces, is collected once free.
    w.clock.advance(10 * 60_000);
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-after' })]);
    expect(w.ec2.securityGroups.has(groupId)).toBe(false);
  });
});

describe('Classic ELBs for new Services', () => {
  it('SERVICE_DEFAULT_LOAD_BALANCER_TYPE=classic, or a type annotation other than nlb: a Classic ELB, tagged owned', async () => {
    w.serviceDeps.defaultLoadBalancerType = 'classic';
    w.putService('web');
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    const [name] = [...w.elbFake.loadBalancers.keys()];
    expect(hostname()).toBe(w.elbFake.describeNamed(name!)!.DNSName);
    expect((await w.elb.describeTags([name!])).get(name!)).toMatchObject({
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
    });
    expect(w.elbFake.describeNamed(name!)!.Subnets?.sort()).toEqual([...PUBLIC_SUBNETS].sort());
    // One it makes is let into the Nodes through the cluster's backend group (node port range rules shared by
    // every load balancer), never by a rule of its own: the Nodes' 60-rule quota stays out of reach.
    const groups = w.elbFake.describeNamed(name!)!.SecurityGroups ?? [];
    const backend = [...w.ec2.securityGroups.values()].find((g) => g.groupName === `k8s-traffic-${CLUSTER}`)!;
    expect(groups).toContain(backend.groupId);
    const nodeIngress = w.ec2.securityGroups.get(NODE_GROUP)!.ingress;
    expect(
      nodeIngress.filter((r) => groups.includes(r.sourceGroupId ?? '') && r.sourceGroupId !== backend.groupId),
    ).toEqual([]);
    expect(
      nodeIngress.some((r) => r.sourceGroupId === backend.groupId && r.fromPort === 30000 && r.toPort === 32767),
    ).toBe(true);

    w.serviceDeps.defaultLoadBalancerType = 'nlb';
    w.putService('api', { annotations: { [ANNOTATION.type]: 'clb' } });
    await w.converge([w.serviceKey('api')]);
    expect(w.elbFake.loadBalancers.size).toBe(2);
    expect(w.elbv2.loadBalancers.size).toBe(0);
  });

  it('a Service with the finalizer and no status whose reference-named Classic ELB exists keeps it', async () => {
    await referenceClassic(w);
    w.kube.putService(classicService(undefined));
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(hostname()).toBe(classic()!.DNSName);
  });
});

describe('garbage collection of Classic ELBs', () => {
  it('an owned one in our VPC whose Service is gone goes; one in another VPC or not owned stays', async () => {
    await referenceClassic(w);
    w.kube.services.delete('default/web');
    const foreign = await w.elb.createLoadBalancer({
      name: 'someone-elses',
      scheme: 'internet-facing',
      subnets: PUBLIC_SUBNETS,
      securityGroups: [],
      listeners: [{ loadBalancerPort: 80, protocol: 'TCP', instancePort: 30080, instanceProtocol: 'TCP' }],
      tags: {},
    });
    expect(foreign).not.toBe('name-taken');
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-1' })]);
    expect(classic()).toBeUndefined();
    expect(w.elbFake.describeNamed('someone-elses')).toBeDefined();
    expect(VPC).toBeDefined();
  });
});
