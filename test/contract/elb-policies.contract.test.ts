import { expect } from 'vitest';
import {
  PROXY_PROTOCOL_POLICY_TYPE,
  REFERENCE_SECURITY_POLICY,
  SSL_NEGOTIATION_POLICY_TYPE,
} from '../../shared/aws/elb-defaults.ts';
import type { ClassicListener, ClassicPolicy } from '../../shared/aws/elb-port.ts';
import { describeContract } from './contract.ts';
import { elbBackends } from './elb-backends.ts';
import { classicNetwork, createdLoadBalancer, lbInput, TCP_80 } from './elb-network.ts';

/**
 * Classic load balancer policies through ElbPort, the two kinds the service controller makes: proxy protocol on a
 * back end (instance port), SSL negotiation from a predefined security policy on an SSL listener. Create, describe,
 * set, unset, delete.
 */

const PROXY: ClassicPolicy = {
  policyName: 'k8s-proxyprotocol-enabled',
  policyTypeName: PROXY_PROTOCOL_POLICY_TYPE,
  attributes: { ProxyProtocol: 'true' },
};

const TLS: ClassicPolicy = {
  policyName: 'k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01',
  policyTypeName: SSL_NEGOTIATION_POLICY_TYPE,
  attributes: { [REFERENCE_SECURITY_POLICY]: 'ELBSecurityPolicy-TLS-1-2-2017-01' },
};

describeContract('ElbPort: policies', elbBackends(), (backend, test) => {
  /** `web` listening on TCP 80 and SSL 443 (TCP to the instances). */
  async function web() {
    const network = await classicNetwork(backend());
    const certificate = await backend().seed.certificate('web.example.com');
    const ssl: ClassicListener = {
      loadBalancerPort: 443,
      protocol: 'SSL',
      instancePort: 30443,
      instanceProtocol: 'TCP',
      sslCertificateId: certificate,
    };
    await createdLoadBalancer(backend(), lbInput(network, { listeners: [TCP_80, ssl] }));
    return network;
  }

  const find = async () => {
    const lb = await backend().elb.findLoadBalancer('web');
    if (!lb) throw new Error('web is gone');
    return lb;
  };

  test('creates policies, described with their type and attributes; creating one again keeps the first', async () => {
    const { elb } = backend();
    await web();

    await elb.createPolicy('web', PROXY);
    await elb.createPolicy('web', TLS);
    // A policy name is the caller's: a second create of it (after a crash) is success, and changes nothing.
    await elb.createPolicy('web', { ...PROXY, attributes: { ProxyProtocol: 'false' } });

    const policies = await elb.describePolicies('web');
    expect(policies.map((p) => p.policyName).sort()).toEqual([PROXY.policyName, TLS.policyName].sort());
    expect(policies.find((p) => p.policyName === PROXY.policyName)).toEqual(PROXY);
    // AWS may state the protocols and ciphers a predefined policy stands for; the reference is what a caller reads.
    expect(policies.find((p) => p.policyName === TLS.policyName)).toMatchObject({
      policyTypeName: SSL_NEGOTIATION_POLICY_TYPE,
      attributes: TLS.attributes,
    });
  });

  test('sets proxy protocol on the back end of a listener, and removes it with an empty list', async () => {
    const { elb } = backend();
    await web();
    await elb.createPolicy('web', PROXY);

    await elb.setBackendPolicies('web', TCP_80.instancePort, [PROXY.policyName]);
    expect((await find()).backendPolicies).toEqual([
      { instancePort: TCP_80.instancePort, policyNames: [PROXY.policyName] },
    ]);

    await elb.setBackendPolicies('web', TCP_80.instancePort, []);
    expect((await find()).backendPolicies).toEqual([]);
  });

  test.differs(
    'elb.backend-policies-new-listener',
    'sets proxy protocol on the back end of a listener added after the create',
    async () => {
      const { elb } = backend();
      await web();
      const added: ClassicListener = {
        loadBalancerPort: 8080,
        protocol: 'TCP',
        instancePort: 30880,
        instanceProtocol: 'TCP',
      };
      await elb.createListeners('web', [added]);
      await elb.createPolicy('web', PROXY);

      // A Service that gains a port gains a listener, and its back end needs the Service's proxy protocol too.
      await elb.setBackendPolicies('web', added.instancePort, [PROXY.policyName]);

      expect((await find()).backendPolicies).toEqual([
        { instancePort: added.instancePort, policyNames: [PROXY.policyName] },
      ]);
    },
  );

  test('sets an SSL negotiation policy on an SSL listener, and removes it with an empty list', async () => {
    const { elb } = backend();
    await web();
    await elb.createPolicy('web', TLS);

    await elb.setListenerPolicies('web', 443, [TLS.policyName]);
    const policiesOf = async (port: number) =>
      (await find()).listeners.find((l) => l.loadBalancerPort === port)?.policyNames;
    expect(await policiesOf(443)).toEqual([TLS.policyName]);
    expect(await policiesOf(80)).toEqual([]);

    await elb.setListenerPolicies('web', 443, []);
    expect(await policiesOf(443)).toEqual([]);
  });

  test('deletes a policy no listener or back end uses; deleting it again succeeds', async () => {
    const { elb } = backend();
    await web();
    await elb.createPolicy('web', PROXY);
    await elb.createPolicy('web', TLS);

    await elb.deletePolicy('web', PROXY.policyName);
    await elb.deletePolicy('web', PROXY.policyName);

    expect((await elb.describePolicies('web')).map((p) => p.policyName)).toEqual([TLS.policyName]);
  });

  test.differs(
    'elb.policy-delete-in-use',
    'refuses to delete a policy a listener uses (InvalidConfigurationRequest)',
    async () => {
      const { elb } = backend();
      await web();
      await elb.createPolicy('web', TLS);
      await elb.setListenerPolicies('web', 443, [TLS.policyName]);

      // The controller unsets a policy before it deletes it; out of order, AWS says no and the policy stays.
      await expect(elb.deletePolicy('web', TLS.policyName)).rejects.toThrow(/InvalidConfigurationRequest/);
      expect((await elb.describePolicies('web')).map((p) => p.policyName)).toEqual([TLS.policyName]);
      expect((await find()).listeners.find((l) => l.loadBalancerPort === 443)?.policyNames).toEqual([TLS.policyName]);
    },
  );
});
