import { beforeEach, describe, expect, it } from 'vitest';
import type { IngressDeps } from '../functions/ingress/deps.ts';
import { backend, makeIngress, makeService, path, rule } from '../functions/ingress/model/testing/builders.ts';
import { ingressReconciler } from '../functions/ingress/reconciler.ts';
import type { Ec2LoadBalancerNetworkPort } from '../shared/aws/ec2-port.ts';
import type { Elbv2Port } from '../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../shared/aws/ownership.ts';
import type { GroupId } from '../shared/ingress/membership.ts';
import { INGRESS_GARBAGE_COLLECTION_KEY } from '../shared/queue/ingress-gc-key.ts';
import { adoptionTagKeys, ingressProtectedTagKeys, REFERENCE_CLUSTER_TAG } from '../stacks/iam-ingress.ts';
import { createIngressWorld, type IngressWorld } from './helpers/ingress-world.ts';
import { CLUSTER } from './helpers/world.ts';

/**
 * The Ingress controller's role (stacks/ingress.ts, stacks/iam-ingress.ts) played against its code: its ELBv2 and
 * EC2 ports wrapped so that every write is refused, as IAM would refuse it, unless the policy allows it on the tags
 * the resource has at that moment. A group the AWS Load Balancer Controller made (its tracking tags, not our
 * ownership tag) must be taken over through the one grant for that, adoption: tagging ours first, only with the
 * cluster tags, and only then changing anything.
 */

const OWNED = clusterTagKey(CLUSTER);
const SHOP: GroupId = { explicit: true, name: 'shop' };

class AccessDenied extends Error {
  override readonly name = 'AccessDenied';
}

/** The writes the role allows on a resource by its own tags (`ownedResourceWrite`), keyed by the port method. */
const OWNED_WRITES = new Set([
  'deleteLoadBalancer',
  'setSecurityGroups',
  'setSubnets',
  'setIpAddressType',
  'modifyLoadBalancerAttributes',
  'createListener',
  'createApplicationListener',
  'modifyListener',
  'modifyApplicationListener',
  'deleteListener',
  'addListenerCertificates',
  'removeListenerCertificates',
  'modifyListenerAttributes',
  'createRule',
  'modifyRule',
  'deleteRule',
  'modifyTargetGroupHealthCheck',
  'deleteTargetGroup',
  'modifyTargetGroupAttributes',
  'registerTargets',
  'deregisterTargets',
]);

/** The port with the role's ELBv2 policy in front of it; `denied` collects what it refused. */
function elbv2UnderPolicy(port: Elbv2Port, denied: string[]): Elbv2Port {
  const tagsOf = async (arn: string) => (await port.describeTags([arn])).get(arn) ?? {};
  const deny = (what: string) => {
    denied.push(what);
    throw new AccessDenied(`not authorized to perform ${what}`);
  };
  const owned = async (method: string, arn: string) => {
    if ((await tagsOf(arn))[OWNED] !== 'owned') deny(`${method} on ${arn}`);
  };
  return new Proxy(port, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      return async (...args: unknown[]) => {
        if (OWNED_WRITES.has(name)) await owned(name, args[0] as string);
        if (name === 'setRulePriorities') {
          for (const p of args[0] as { ruleArn: string }[]) await owned(name, p.ruleArn);
        }
        if (name === 'createLoadBalancer' || name === 'createTargetGroup') {
          const tags = (args[0] as { tags?: Record<string, string> }).tags ?? {};
          if (tags[OWNED] !== 'owned') deny(`${name} without our tag`);
        }
        if (name === 'addTags') {
          const [arn, tags] = args as [string, Record<string, string>];
          const current = await tagsOf(arn);
          const adoption =
            current[REFERENCE_CLUSTER_TAG] === CLUSTER &&
            tags[OWNED] === 'owned' &&
            Object.keys(tags).every((k) => adoptionTagKeys(CLUSTER).includes(k));
          if (current[OWNED] !== 'owned' && !adoption) deny(`addTags ${Object.keys(tags).join(',')} on ${arn}`);
        }
        if (name === 'removeTags') {
          const [arn, keys] = args as [string, string[]];
          await owned(name, arn);
          if (keys.some((k) => ingressProtectedTagKeys(CLUSTER).includes(k))) deny(`removeTags ${keys.join(',')}`);
        }
        return value.apply(target, args);
      };
    },
  });
}

/** The port with the role's EC2 security group policy in front of it. */
function ec2UnderPolicy(
  port: Ec2LoadBalancerNetworkPort,
  tagsOf: (groupId: string) => Record<string, string>,
  denied: string[],
): Ec2LoadBalancerNetworkPort {
  const deny = (what: string) => {
    denied.push(what);
    throw new AccessDenied(`not authorized to perform ${what}`);
  };
  return new Proxy(port, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      return async (...args: unknown[]) => {
        if (name === 'deleteSecurityGroup' && tagsOf(args[0] as string)[OWNED] !== 'owned') deny(`${name}`);
        if (name === 'authorizeSecurityGroupIngress' || name === 'revokeSecurityGroupIngress') {
          if (!['owned', 'shared'].includes(tagsOf(args[0] as string)[OWNED] ?? '')) deny(`${name} on ${args[0]}`);
        }
        if (name === 'createTags') {
          const [ids, tags] = args as [string[], Record<string, string>];
          for (const id of ids) {
            const current = tagsOf(id);
            const adoption =
              current[REFERENCE_CLUSTER_TAG] === CLUSTER &&
              tags[OWNED] === 'owned' &&
              Object.keys(tags).every((k) => adoptionTagKeys(CLUSTER).includes(k));
            if (current[OWNED] !== 'owned' && !adoption) deny(`createTags on ${id}`);
          }
        }
        return value.apply(target, args);
      };
    },
  });
}

/** What the reference controller leaves: its tracking tags on everything, our ownership tag on nothing. */
async function asIfTheReferenceMadeIt(w: IngressWorld): Promise<number> {
  const port = w.elbv2Port;
  const arns: string[] = [];
  for (const lb of await port.listLoadBalancers()) {
    arns.push(lb.arn);
    for (const listener of await port.describeListeners(lb.arn)) {
      arns.push(listener.arn);
      for (const r of await port.describeRules(listener.arn)) if (!r.isDefault) arns.push(r.arn);
    }
  }
  for (const tg of await port.listTargetGroups()) arns.push(tg.arn);
  for (const arn of arns) await port.removeTags(arn, [OWNED]);
  for (const group of w.ec2.securityGroups.values()) {
    if (group.tags['ingress.k8s.aws/stack']) delete group.tags[OWNED];
  }
  return arns.length;
}

let w: IngressWorld;
let denied: string[];
let deps: IngressDeps;

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  w.addNode(2);
  w.kube.putService(makeService({ name: 'web' }));
  w.kube.putService(
    makeService({
      name: 'api',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 9090, nodePort: 30090 }],
    }),
  );
  denied = [];
  const groupTags = (id: string) => w.ec2.securityGroups.get(id)?.tags ?? {};
  deps = {
    ...w.ingressDeps,
    elbv2: elbv2UnderPolicy(w.elbv2Port, denied),
    ec2: ec2UnderPolicy(w.ingressDeps.ec2, groupTags, denied),
  };
});

const member = (name: string, service: string, p: string) =>
  w.ingresses.putIngress(
    makeIngress({
      name,
      annotations: { 'group.name': 'shop', scheme: 'internet-facing' },
      rules: [rule('shop.example.com', path(p, 'Prefix', backend(service, 80)))],
    }),
  );

describe('the Ingress controller under its own IAM policy', () => {
  it('builds a group from nothing with no write refused', async () => {
    member('web', 'web', '/');
    member('api', 'api', '/api');
    await w.converge([SHOP], deps);
    expect(denied).toEqual([]);
    expect(w.loadBalancers()).toHaveLength(1);
    expect(w.eventsOf('web').filter((e) => !e.startsWith('SuccessfullyReconciled'))).toEqual([]);
  });

  it('changes tags and deletes the whole stack with no write refused', async () => {
    w.ingresses.putIngress(
      makeIngress({
        name: 'web',
        annotations: { 'group.name': 'shop', scheme: 'internet-facing', tags: 'team=web,tier=front' },
        rules: [rule('shop.example.com', path('/', 'Prefix', backend('web', 80)))],
      }),
    );
    await w.converge([SHOP], deps);
    const arn = w.loadBalancers()[0]!.arn;
    expect((await w.elbv2Port.describeTags([arn])).get(arn)).toMatchObject({ team: 'web', tier: 'front' });

    // A tag dropped from the annotation is removed (never a protected one), then the group goes with its member.
    w.ingresses.mutateIngress('default', 'web', (i) => {
      i.metadata.annotations!['alb.ingress.kubernetes.io/tags'] = 'team=web';
    });
    await w.converge([SHOP], deps);
    expect((await w.elbv2Port.describeTags([arn])).get(arn)).not.toHaveProperty('tier');
    w.ingresses.deleteIngress('default', 'web');
    await w.converge([SHOP], deps);

    expect(denied).toEqual([]);
    expect(w.loadBalancers()).toEqual([]);
    expect(w.ingress('web')).toBeUndefined();
  });

  // The load balancer, its security group, target groups, listeners and rules are tagged ours before anything is
  // written to them (functions/ingress/apply/routing.ts `adopt` for the listeners and rules).
  it('takes over a group the AWS Load Balancer Controller made: tags it ours first, then changes it', async () => {
    member('web', 'web', '/');
    await w.converge([SHOP]);
    const arn = w.loadBalancers()[0]!.arn;
    expect(await asIfTheReferenceMadeIt(w)).toBeGreaterThan(3);

    // A second member: a new rule on the reference's listener, the listener's rules reordered.
    member('api', 'api', '/api');
    await w.converge([SHOP], deps);

    expect(denied).toEqual([]);
    expect(w.loadBalancers().map((l) => l.arn)).toEqual([arn]);
    const tags = await w.elbv2Port.describeTags([arn]);
    expect(tags.get(arn)).toMatchObject({ [OWNED]: 'owned', [REFERENCE_CLUSTER_TAG]: CLUSTER });
    expect(w.hostname('api')).toBe(w.loadBalancers()[0]!.dnsName.toLowerCase());
  });
});

describe('the Ingress garbage collection under the same policy', () => {
  const orphan = async (madeByTheReference: boolean) => {
    for (const group of ['kept', 'orphan']) {
      w.ingresses.putIngress(
        makeIngress({
          name: group,
          annotations: { 'group.name': group },
          rules: [rule(`${group}.example.com`, path('/', 'Prefix', backend('web', 80)))],
        }),
      );
    }
    await w.converge([
      { explicit: true, name: 'kept' },
      { explicit: true, name: 'orphan' },
    ]);
    if (madeByTheReference) await asIfTheReferenceMadeIt(w);
    // Its Ingress gone with its finalizer taken off by hand: only the garbage collection will ever look at it.
    w.ingresses.ingresses.delete('default/orphan');
    const collect = () =>
      ingressReconciler.reconcile(INGRESS_GARBAGE_COLLECTION_KEY, deps, undefined, {
        hints: [],
        payloads: [],
        receiveCount: 1,
      });
    for (let round = 0; round < 3; round++) {
      await collect().catch(() => undefined);
      w.clock.advance(300_000);
    }
    return [...w.elbv2.loadBalancers.values()].map((l) => l.tags['ingress.k8s.aws/stack']);
  };

  it('deletes an orphaned stack of ours with no write refused', async () => {
    expect(await orphan(false)).toEqual(['kept']);
    expect(denied).toEqual([]);
  });

  // A stack the reference controller left behind is found by its
  // elbv2.k8s.aws/cluster tag, and tagged ours (adoption) before it is deleted.
  it('deletes an orphaned stack the reference controller made, adopting it first', async () => {
    const left = await orphan(true);
    expect(denied).toEqual([]);
    expect(left).toEqual(['kept']);
  });
});
