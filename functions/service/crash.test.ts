import { describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { countingCalls, crashAfter } from '../../test/helpers/crash.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../../test/helpers/service-world.ts';
import type { ServiceDeps } from './deps.ts';
import { serviceReconciler } from './reconciler.ts';

/**
 * Crash injection: a reconcile dies right after its n-th AWS call (which took effect), for every n a
 * create and a delete make; the key comes back and is reconciled to the end. Whatever the crash point,
 * the account ends exactly as after an undisturbed run: same resources, nothing extra (no leak).
 */

type Scenario = 'instance' | 'ip';

function setUp(scenario: Scenario): ServiceWorld {
  const w = createServiceWorld();
  w.addNode(1);
  w.addNode(2);
  w.addNode(3);
  if (scenario === 'ip') {
    w.putService('web', {
      annotations: { 'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip' },
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 },
        { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353, nodePort: 30053 },
      ],
    });
    w.putSlice('web', [{ ip: '10.0.1.10' }, { ip: '10.0.2.11' }], {
      ports: [
        { name: 'http', protocol: 'TCP', port: 8080 },
        { name: 'dns', protocol: 'UDP', port: 5353 },
      ],
    });
  } else {
    w.putService('web', {
      ports: WEB_PORTS,
      spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
    });
  }
  return w;
}

/** One Lambda invocation whose AWS ports crash after call `n`. */
async function invokeCrashing(w: ServiceWorld, n: number, deps: ServiceDeps = w.serviceDeps) {
  const crashing = crashAfter(n, deps.elbv2, deps.ec2);
  const [elbv2, ec2] = crashing.ports;
  const response = await w.invoke(serviceReconciler, { ...deps, elbv2, ec2 }, [
    fifoRecord(w.serviceKey('web', 'default', { eventType: 'MODIFIED', resourceVersion: `crash-${n}` })),
  ]);
  return { response, calls: crashing.calls() };
}

function serviceState(w: ServiceWorld) {
  const service = w.kube.services.get('default/web');
  return service
    ? {
        finalizers: service.metadata.finalizers,
        hostname: Boolean(service.status?.loadBalancer?.ingress?.[0]?.hostname),
      }
    : 'gone';
}

/** How many AWS calls the first pass of a scenario makes: each is a crash point. */
async function firstPassCalls(w: ServiceWorld): Promise<number> {
  const counting = countingCalls(w.serviceDeps.elbv2, w.serviceDeps.ec2);
  const [elbv2, ec2] = counting.ports;
  await w.invoke(serviceReconciler, { ...w.serviceDeps, elbv2, ec2 }, [fifoRecord(w.serviceKey('web'))]);
  return counting.calls();
}

describe.each<Scenario>(['instance', 'ip'])('crash after every AWS call (%s targets)', (scenario) => {
  it('of a create, then a reconcile: the same load balancer, nothing leaked', async () => {
    const reference = setUp(scenario);
    await reference.converge([reference.serviceKey('web')]);
    const expected = reference.inventory();
    const expectedService = serviceState(reference);
    expect(expected.loadBalancers).toHaveLength(1);

    const points = await firstPassCalls(setUp(scenario));
    expect(points).toBeGreaterThan(15);
    for (let n = 1; n <= points; n++) {
      const w = setUp(scenario);
      const { response } = await invokeCrashing(w, n);
      expect(response.batchItemFailures).toHaveLength(1);
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `after-${n}` })]);
      expect({ crashAfter: n, ...w.inventory() }).toEqual({ crashAfter: n, ...expected });
      expect(serviceState(w)).toEqual(expectedService);
      // And the state reached is stable: one more pass changes nothing.
      w.resetCounters();
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `again-${n}` })]);
      expect(w.awsWrites()).toBe(0);
    }
  });

  it('of a delete, then a reconcile: everything gone, the finalizer last', async () => {
    const reference = setUp(scenario);
    await reference.converge([reference.serviceKey('web')]);
    reference.kube.deleteService('default', 'web');
    await reference.converge([reference.serviceKey('web', 'default', { eventType: 'DELETED', eventId: 'd' })]);
    const expected = reference.inventory();
    expect(expected).toMatchObject({ loadBalancers: [], targetGroups: [] });
    // The cluster's backend group and its rules on the Nodes' group are shared by every load balancer: they
    // stay (the garbage collector removes rules no Service needs).
    expect(expected.securityGroups.map((g) => g.name)).toEqual(['k8s-traffic-test-cluster', 'nodes']);
    expect(serviceState(reference)).toBe('gone');

    const counter = setUp(scenario);
    await counter.converge([counter.serviceKey('web')]);
    counter.kube.deleteService('default', 'web');
    const points = await firstPassCalls(counter);
    // Lookups, the load balancer, its target groups, the Service's security groups: every one a crash point.
    expect(points).toBeGreaterThanOrEqual(7);
    for (let n = 1; n <= points; n++) {
      const w = setUp(scenario);
      await w.converge([w.serviceKey('web')]);
      w.kube.deleteService('default', 'web');
      const { response } = await invokeCrashing(w, n);
      expect(response.batchItemFailures).toHaveLength(1);
      // A crash before the finalizer is removed leaves the Service terminating, never gone with resources left.
      expect(serviceState(w)).not.toBe('gone');
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `after-${n}` })]);
      expect({ crashAfter: n, ...w.inventory() }).toEqual({ crashAfter: n, ...expected });
      expect(serviceState(w)).toBe('gone');
    }
  });
});

/**
 * An update that touches everything kept in line: one zone moves to another subnet (removed first, added
 * back later), a tag is dropped, TLS with SNI certificates and ALPN arrives on one port, the TCP idle
 * timeout and cross-zone change. A crash after any call of the first update pass still ends where an
 * undisturbed update ends.
 */
describe('crash after every AWS call of an update', () => {
  const CERT = (n: string) => `arn:aws:acm:eu-west-1:111122223333:certificate/${n}`;
  const before = {
    'service.beta.kubernetes.io/aws-load-balancer-subnets': 'public-eu-west-1a, public-eu-west-1b',
    'service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags': 'team=web,env=prod',
  };
  const after = {
    'service.beta.kubernetes.io/aws-load-balancer-subnets': 'public-a-2, public-eu-west-1b',
    'service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags': 'team=web',
    'service.beta.kubernetes.io/aws-load-balancer-ssl-cert': `${CERT('a')},${CERT('b')}`,
    'service.beta.kubernetes.io/aws-load-balancer-ssl-ports': 'https',
    'service.beta.kubernetes.io/aws-load-balancer-alpn-policy': 'HTTP2Preferred',
    'service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout': '900',
    'service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled': 'true',
  };

  async function converged(): Promise<ServiceWorld> {
    const w = setUp('instance');
    w.ec2.putSubnet(makeSubnet({ index: 30, zone: 'eu-west-1a', tags: { Name: 'public-a-2' } }));
    const web = w.kube.services.get('default/web')!;
    w.kube.putService({ ...web, metadata: { ...web.metadata, annotations: before } });
    await w.converge([w.serviceKey('web')]);
    const now = w.kube.services.get('default/web')!;
    w.kube.putService({ ...now, metadata: { ...now.metadata, annotations: after } });
    return w;
  }

  it('then a reconcile: the same load balancer, in line with the new annotations', async () => {
    const reference = await converged();
    await reference.converge([reference.serviceKey('web', 'default', { eventType: 'MODIFIED', eventId: 'u' })]);
    const expected = reference.inventory();
    expect(expected.loadBalancers).toEqual([
      expect.objectContaining({
        subnets: [makeSubnet({ index: 11 }).subnetId, makeSubnet({ index: 30 }).subnetId].sort(),
        listeners: [
          expect.objectContaining({ port: 80, protocol: 'TCP', attributes: { 'tcp.idle_timeout.seconds': '900' } }),
          expect.objectContaining({
            port: 443,
            protocol: 'TLS',
            certificates: [CERT('a')],
            sniCertificates: [CERT('b')],
            alpnPolicy: 'HTTP2Preferred',
          }),
        ],
      }),
    ]);
    expect(expected.loadBalancers[0]!.tags).not.toHaveProperty('env');

    const points = await firstPassCalls(await converged());
    expect(points).toBeGreaterThan(15);
    for (let n = 1; n <= points; n++) {
      const w = await converged();
      const { response } = await invokeCrashing(w, n);
      expect(response.batchItemFailures).toHaveLength(1);
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `after-${n}` })]);
      expect({ crashAfter: n, ...w.inventory() }).toEqual({ crashAfter: n, ...expected });
      w.resetCounters();
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `again-${n}` })]);
      expect(w.awsWrites()).toBe(0);
    }
  });
});
