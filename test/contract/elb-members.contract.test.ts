import { expect } from 'vitest';
import type { ClassicListener } from '../../shared/aws/elb-port.ts';
import { describeContract } from './contract.ts';
import { elbBackends } from './elb-backends.ts';
import { classicNetwork, createdLoadBalancer, lbInput, OWNED, TCP_80 } from './elb-network.ts';

/**
 * What hangs on a Classic load balancer, through ElbPort: listeners (by load balancer port), instances and their
 * health, tags. Load balancers themselves have elb.contract.test.ts; policies elb-policies.contract.test.ts.
 */

const TCP_443: ClassicListener = {
  loadBalancerPort: 443,
  protocol: 'TCP',
  instancePort: 30443,
  instanceProtocol: 'TCP',
};
const TCP_8080: ClassicListener = {
  loadBalancerPort: 8080,
  protocol: 'TCP',
  instancePort: 30880,
  instanceProtocol: 'TCP',
};

describeContract('ElbPort: listeners, instances and tags', elbBackends(), (backend, test) => {
  /** `web` in zones a and b, listening on 80; the network it sits in. */
  async function web() {
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));
    return network;
  }

  const listenersOf = async (name: string) =>
    ((await backend().elb.findLoadBalancer(name))?.listeners ?? []).sort(
      (a, b) => a.loadBalancerPort - b.loadBalancerPort,
    );

  // ---- listeners ---------------------------------------------------------------------------------------

  test('adds listeners; adding a listener that is there already changes nothing', async () => {
    const { elb } = backend();
    await web();

    await elb.createListeners('web', [TCP_443]);
    // A reconcile that crashed after its write sends it again.
    await elb.createListeners('web', [TCP_443, TCP_80]);

    expect(await listenersOf('web')).toEqual([
      { ...TCP_80, policyNames: [] },
      { ...TCP_443, policyNames: [] },
    ]);
  });

  test('refuses a listener on a port in use with other settings (DuplicateListener)', async () => {
    const { elb } = backend();
    await web();

    // Changing a listener is delete then create: the caller must not take this for success.
    await expect(elb.createListeners('web', [{ ...TCP_80, instancePort: 31000 }])).rejects.toThrow(/DuplicateListener/);
    expect(await listenersOf('web')).toEqual([{ ...TCP_80, policyNames: [] }]);
  });

  test.differs(
    'elb.listener-instance-protocol',
    'keeps the back-end protocol of a listener: TCP behind SSL, HTTP behind HTTPS',
    async () => {
      const { elb, seed } = backend();
      await web();
      const certificate = await seed.certificate('web.example.com');
      const ssl: ClassicListener = {
        loadBalancerPort: 443,
        protocol: 'SSL',
        instancePort: 30443,
        instanceProtocol: 'TCP',
        sslCertificateId: certificate,
      };
      const https: ClassicListener = { ...ssl, loadBalancerPort: 8443, protocol: 'HTTPS', instanceProtocol: 'HTTP' };

      await elb.createListeners('web', [ssl, https]);

      // The controller compares what it wants with what it reads: a wrong back-end protocol is a change every pass.
      expect(await listenersOf('web')).toEqual([
        { ...TCP_80, policyNames: [] },
        { ...ssl, policyNames: [] },
        { ...https, policyNames: [] },
      ]);
    },
  );

  test('deletes the listener on a port, keeping the others; a port without a listener is no error', async () => {
    const { elb } = backend();
    await web();
    await elb.createListeners('web', [TCP_443]);

    await elb.deleteListeners('web', [80]);
    await elb.deleteListeners('web', [9999]);

    expect(await listenersOf('web')).toEqual([{ ...TCP_443, policyNames: [] }]);
  });

  test.differs('elb.delete-listeners-several-ports', 'deletes the listeners on several ports in one call', async () => {
    const { elb } = backend();
    await web();
    await elb.createListeners('web', [TCP_443, TCP_8080]);

    // A Service that loses two ports loses both listeners in one DeleteLoadBalancerListeners.
    await elb.deleteListeners('web', [80, 8080]);

    expect(await listenersOf('web')).toEqual([{ ...TCP_443, policyNames: [] }]);
  });

  // ---- instances ---------------------------------------------------------------------------------------

  test('registers instances and states the health of each; a stopped instance is OutOfService', async () => {
    const { elb, seed } = backend();
    const network = await web();
    const ids = await seed.instances({ subnetId: network.subnets.a, count: 2 });

    await elb.registerInstances('web', ids);

    expect((await elb.findLoadBalancer('web'))?.instanceIds.sort()).toEqual([...ids].sort());
    const health = await elb.describeInstanceHealth('web');
    expect(health.map((h) => h.instanceId).sort()).toEqual([...ids].sort());
    // OutOfService while its registration is in progress, InService once its health checks pass.
    for (const h of health) expect(['InService', 'OutOfService']).toContain(h.state);

    await seed.stop([ids[0]!]);
    const afterStop = await elb.describeInstanceHealth('web');
    expect(afterStop.find((h) => h.instanceId === ids[0])?.state).toBe('OutOfService');
  });

  test('deregisters instances, keeping the others', async () => {
    const { elb, seed } = backend();
    const network = await web();
    const [first, second] = await seed.instances({ subnetId: network.subnets.a, count: 2 });
    await elb.registerInstances('web', [first!, second!]);

    await elb.deregisterInstances('web', [first!]);

    expect((await elb.findLoadBalancer('web'))?.instanceIds).toEqual([second]);
    expect((await elb.describeInstanceHealth('web')).map((h) => h.instanceId)).toEqual([second]);
  });

  test.differs('elb.register-twice', 'registering an instance that is registered already keeps it once', async () => {
    const { elb, seed } = backend();
    const network = await web();
    const [instance] = await seed.instances({ subnetId: network.subnets.a, count: 1 });
    await elb.registerInstances('web', [instance!]);

    await elb.registerInstances('web', [instance!]);

    expect((await elb.findLoadBalancer('web'))?.instanceIds).toEqual([instance]);
    expect(await elb.describeInstanceHealth('web')).toHaveLength(1);
  });

  test.differs(
    'elb.register-unknown-instance',
    'refuses to register an instance EC2 does not know (InvalidInstance)',
    async () => {
      const { elb } = backend();
      await web();

      await expect(elb.registerInstances('web', ['i-0123456789abcdef0'])).rejects.toThrow(/InvalidInstance/);
      expect((await elb.findLoadBalancer('web'))?.instanceIds).toEqual([]);
    },
  );

  // ---- tags --------------------------------------------------------------------------------------------

  test('describes the tags of many names, 20 a call, leaving out names ELB does not know', async () => {
    const network = await web();
    await createdLoadBalancer(backend(), lbInput(network, { name: 'api', tags: { team: 'api' } }));
    const unknown = Array.from({ length: 23 }, (_, i) => `gone-${i}`);

    // The garbage collector asks for every name it listed; some may be deleted by then.
    const tags = await backend().elb.describeTags(['web', ...unknown, 'api']);

    expect(Object.fromEntries(tags)).toEqual({ web: OWNED, api: { team: 'api' } });
  });

  test('adds tags, overwriting a value, and removes tags', async () => {
    const { elb } = backend();
    await web();

    await elb.addTags('web', { 'kubernetes.io/cluster/contract': 'shared', team: 'web' });
    expect((await elb.describeTags(['web'])).get('web')).toEqual({
      'kubernetes.io/cluster/contract': 'shared',
      team: 'web',
    });

    await elb.removeTags('web', ['team', 'not-there']);
    expect((await elb.describeTags(['web'])).get('web')).toEqual({ 'kubernetes.io/cluster/contract': 'shared' });
  });

  test.differs('elb.tags-quota', 'refuses more tags than a load balancer may have (TooManyTags)', async () => {
    const { elb } = backend();
    await web();
    const tooMany = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`key-${i}`, `${i}`]));

    // The ownership tag, the Service's tags and the user's additional tags share the quota; past it the
    // controller must see TooManyTags, not a load balancer that has gone.
    await expect(elb.addTags('web', tooMany)).rejects.toThrow(/TooManyTags/);
    expect((await elb.describeTags(['web'])).get('web')).toEqual(OWNED);
  });
});
