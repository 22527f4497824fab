import { expect } from 'vitest';
import { makeSubnet } from '../../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { NODE_GROUP, type ServiceWorld } from '../../../test/helpers/service-world.ts';
import { CLUSTER } from '../../../test/helpers/world.ts';

/**
 * What the reconciler tests look at in a service world: the Service, its Events, the load balancer, its
 * target groups and targets, the security groups and the Node rules. The world is given as a function
 * because each test makes a new one.
 */
export function serviceTesting(world: () => ServiceWorld) {
  const service = (name = 'web', namespace = 'default'): Service => world().kube.services.get(`${namespace}/${name}`)!;
  const nodeRules = () =>
    world()
      .ec2.securityGroups.get(NODE_GROUP)!
      .ingress.filter((r) => r.description?.startsWith('kubernetes.io/rule/nlb/'));
  return {
    service,
    hostname: (name = 'web') => service(name)?.status?.loadBalancer?.ingress?.[0]?.hostname,
    reasons: (name = 'web') =>
      world()
        .kube.eventsFor('Service', name)
        .map((e) => e.reason),
    eventsOf: (reason: string, name = 'web') =>
      world()
        .kube.eventsFor('Service', name, reason)
        .map((e) => e.message),
    onlyLb: () => {
      const lbs = [...world().elbv2.loadBalancers.values()];
      expect(lbs).toHaveLength(1);
      return lbs[0]!.lb;
    },
    groupsOf: (lbArn: string) =>
      [...world().elbv2.targetGroups.values()]
        .map((g) => world().elbv2.targetGroupNamed(g.tg.name)!)
        .filter((g) => g.loadBalancerArns.includes(lbArn)),
    managedGroup: () => [...world().ec2.securityGroups.values()].find((g) => g.groupName.startsWith('k8s-elb-')),
    backendGroup: () => [...world().ec2.securityGroups.values()].find((g) => g.groupName === `k8s-traffic-${CLUSTER}`),
    nodeRules,
    nodeRuleRanges: () =>
      nodeRules()
        .map((r) => `${r.protocol}:${r.fromPort}-${r.toPort}`)
        .sort(),
    targetsOf: (groupArn: string) =>
      world()
        .elbv2.targetsOf(groupArn)
        .filter((t) => t.state !== 'draining')
        .map((t) => `${t.target.id}:${t.target.port}`)
        .sort(),
    /** Puts the Service and reconciles it until nothing is left to do. */
    create: async (
      name = 'web',
      options: Parameters<ServiceWorld['putService']>[1] = {},
      nodePortRange?: { from: number; to: number },
    ) => {
      const w = world();
      w.putService(name, options);
      await w.converge(
        [w.serviceKey(name, options.namespace)],
        nodePortRange ? { ...w.serviceDeps, nodePortRange } : w.serviceDeps,
      );
    },
  };
}

/** The world's public subnets again, each with an IPv6 block: what a dual-stack load balancer needs. */
export function withIpv6PublicSubnets(w: ServiceWorld): void {
  for (const [index, zone] of [
    [10, 'eu-west-1a'],
    [11, 'eu-west-1b'],
    [12, 'eu-west-1c'],
  ] as const) {
    w.ec2.putSubnet(
      makeSubnet({ index, zone, ipv6: true, tags: { Name: `public-${zone}`, 'kubernetes.io/role/elb': '1' } }),
    );
  }
}
