import {
  AddListenerCertificatesCommand,
  CreateListenerCommand,
  ModifyListenerCommand,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { beforeEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../../../errors.ts';
import { elbv2ErrorCode } from '../../elbv2-adapter.ts';
import { DEFAULT_TCP_IDLE_TIMEOUT_SECONDS, TLS_LISTENER_DEFAULT_SSL_POLICY } from '../../elbv2-defaults.ts';
import type { AlpnPolicy, ListenerSpec } from '../../elbv2-port.ts';
import { codeOf, elbv2World, failure } from './testing.ts';

/** The fake ELBv2 API behind the real adapter: listeners, TLS certificates and ALPN, listener attributes. */
let w: ReturnType<typeof elbv2World>;
beforeEach(() => {
  w = elbv2World();
});

const tcp = (targetGroupArn: string, port = 80): ListenerSpec => ({ port, protocol: 'TCP', targetGroupArn });

describe('FakeElbv2 listeners, through Elbv2Adapter', () => {
  it('a target group serves one load balancer only (TargetGroupAssociationLimit) and cannot go while in use (ResourceInUse)', async () => {
    const { lb, group } = await w.lbWithGroup();
    const other = await w.lb({ name: 'other' });
    const listener = await w.elb.createListener(lb.arn, tcp(group.arn), {});
    expect((await w.elb.describeTargetGroupsOfLoadBalancer(lb.arn)).map((g) => g.name)).toEqual(['web-80']);
    expect((await w.elb.findTargetGroups(['web-80']))[0]?.loadBalancerArns).toEqual([lb.arn]);
    expect(codeOf(await failure(w.elb.createListener(other.arn, tcp(group.arn), {})))).toBe(
      'TargetGroupAssociationLimit',
    );
    const inUse = await failure(w.elb.deleteTargetGroup(group.arn));
    expect(codeOf(inUse)).toBe('ResourceInUse');
    expect(await w.elb.deleteListener(listener.arn)).toBe('deleted');
    expect(await w.elb.deleteListener(listener.arn)).toBe('not-found');
    expect(await w.elb.deleteTargetGroup(group.arn)).toBe('deleted');
    expect(await w.elb.deleteTargetGroup(group.arn)).toBe('not-found');
  });

  it.each([
    ['a TLS listener without a certificate', { port: 443, protocol: 'TLS' as const }, 'ValidationError'],
    ['a UDP listener on a TCP group', { port: 53, protocol: 'UDP' as const }, 'IncompatibleProtocols'],
    ['port 0', { port: 0, protocol: 'TCP' as const }, 'ValidationError'],
  ])('refuses %s (%s)', async (_, spec, code) => {
    const { lb, group } = await w.lbWithGroup();
    const err = await failure(w.elb.createListener(lb.arn, { ...spec, targetGroupArn: group.arn }, {}));
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe(code);
  });

  it('a second listener on a port: the same settings answer the same listener, others are a DuplicateListener', async () => {
    const { lb, group } = await w.lbWithGroup();
    const first = await w.elb.createListener(lb.arn, tcp(group.arn), {});
    expect(await w.elb.createListener(lb.arn, tcp(group.arn), {})).toEqual(first);
    const tls = await w.group({ name: 'web-tls', protocol: 'TLS' });
    const spec: ListenerSpec = { port: 80, protocol: 'TLS', certificateArn: 'c', targetGroupArn: tls.arn };
    expect(codeOf(await failure(w.elb.createListener(lb.arn, spec, {})))).toBe('DuplicateListener');
    expect(w.fake.listeners.size).toBe(1);
  });

  it('ModifyListener moves a listener to another port and group; a port in use is a DuplicateListener', async () => {
    const { lb, group } = await w.lbWithGroup();
    const other = await w.group({ name: 'web-81' });
    const first = await w.elb.createListener(lb.arn, tcp(group.arn), {});
    await w.elb.createListener(lb.arn, tcp(other.arn, 81), {});
    expect(codeOf(await failure(w.elb.modifyListener(first.arn, tcp(group.arn, 81))))).toBe('DuplicateListener');
    await w.elb.deleteListener((await w.elb.describeListeners(lb.arn)).find((l) => l.port === 81)!.arn);
    await w.elb.modifyListener(first.arn, tcp(other.arn, 8080));
    expect((await w.elb.describeListeners(lb.arn)).map((l) => [l.port, l.targetGroupArn])).toEqual([[8080, other.arn]]);
  });

  it('listeners keep the tags they were created with, and those go with the listener', async () => {
    const { lb, group } = await w.lbWithGroup();
    const owned = { 'kubernetes.io/cluster/c1': 'owned', 'kubernetes.io/service-name': 'default/web' };
    const tagged = await w.elb.createListener(lb.arn, tcp(group.arn), owned);
    const other = await w.group({ name: 'web-81' });
    const untagged = await w.elb.createListener(lb.arn, tcp(other.arn, 81), {});
    const tags = await w.elb.describeTags([tagged.arn, untagged.arn]);
    expect([tags.get(tagged.arn), tags.get(untagged.arn)]).toEqual([owned, {}]);
    await w.elb.addTags(untagged.arn, owned);
    expect(w.fake.tagsOf(untagged.arn)).toEqual(owned);
    await w.elb.deleteListener(untagged.arn);
    expect(w.fake.tagsOf(untagged.arn)).toBeUndefined();
    expect(codeOf(await failure(w.elb.addTags(untagged.arn, owned)))).toBe('ListenerNotFound');
    expect([...(await w.elb.describeTags([tagged.arn, untagged.arn])).keys()]).toEqual([tagged.arn]);
    await w.elb.deleteLoadBalancer(lb.arn);
    expect(w.fake.tagsOf(tagged.arn)).toBeUndefined();
  });
});

describe('FakeElbv2 TLS listeners: ALPN and certificates', () => {
  async function tlsListener(extra: Partial<ListenerSpec> = {}) {
    const { lb, group } = await w.lbWithGroup();
    const spec: ListenerSpec = {
      port: 443,
      protocol: 'TLS',
      certificateArn: 'cert-default',
      targetGroupArn: group.arn,
    };
    const listener = await w.elb.createListener(lb.arn, { ...spec, ...extra }, {});
    return { lb, group, listener };
  }

  it("stores the ALPN policy of a TLS listener and refuses one elsewhere (ALPNPolicyNotFound, the SDK's ALPNPolicyNotSupportedException)", async () => {
    const { lb, group, listener } = await tlsListener({ alpnPolicy: 'HTTP2Preferred' });
    expect((await w.elb.describeListeners(lb.arn))[0]).toMatchObject({
      alpnPolicy: 'HTTP2Preferred',
      sslPolicy: TLS_LISTENER_DEFAULT_SSL_POLICY,
    });
    // The adapter sends an ALPN policy with TLS listeners only; on the wire, a TCP listener refuses one.
    const onTcp = await failure(
      w.fake.send(
        new CreateListenerCommand({
          LoadBalancerArn: lb.arn,
          Protocol: 'TCP',
          Port: 80,
          AlpnPolicy: ['HTTP1Only'],
          DefaultActions: [{ Type: 'forward', TargetGroupArn: group.arn }],
        }),
      ),
    );
    expect([elbv2ErrorCode(onTcp), onTcp.name]).toEqual(['ALPNPolicyNotFound', 'ALPNPolicyNotSupportedException']);
    const unknown = {
      port: 443,
      protocol: 'TLS' as const,
      alpnPolicy: 'HTTP3' as AlpnPolicy,
      targetGroupArn: group.arn,
    };
    expect(codeOf(await failure(w.elb.modifyListener(listener.arn, unknown)))).toBe('ALPNPolicyNotFound');
    // Properties left out of ModifyListener keep their values.
    await w.elb.modifyListener(listener.arn, { port: 443, protocol: 'TLS', targetGroupArn: group.arn });
    expect(w.fake.listenersOf(lb.arn)[0]).toMatchObject({
      alpnPolicy: 'HTTP2Preferred',
      certificateArns: ['cert-default'],
    });
    // The same port with another policy is another listener.
    const other = await failure(
      w.elb.createListener(
        lb.arn,
        { ...tcp(group.arn, 443), protocol: 'TLS', certificateArn: 'cert-default', alpnPolicy: 'None' },
        {},
      ),
    );
    expect(codeOf(other)).toBe('DuplicateListener');
  });

  it('lists the default certificate first, then the certificate list; adding one twice adds it once', async () => {
    const { listener } = await tlsListener();
    expect(await w.elb.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: 'cert-default', isDefault: true },
    ]);
    w.fake.resetCalls();
    await w.elb.addListenerCertificates(listener.arn, ['sni-1', 'sni-2', 'sni-1']);
    await w.elb.addListenerCertificates(listener.arn, ['sni-1']);
    expect(w.fake.callCount('AddListenerCertificates')).toBe(3);
    expect(await w.elb.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: 'cert-default', isDefault: true },
      { certificateArn: 'sni-1', isDefault: false },
      { certificateArn: 'sni-2', isDefault: false },
    ]);
    // The listing does not hold the default until it is added; then it shows twice, as AWS documents.
    await w.elb.addListenerCertificates(listener.arn, ['cert-default']);
    const defaults = (await w.elb.describeListenerCertificates(listener.arn)).filter(
      (c) => c.certificateArn === 'cert-default',
    );
    expect(defaults.map((c) => c.isDefault)).toEqual([true, false]);
  });

  it('takes one certificate per Add/RemoveListenerCertificates call (ValidationError otherwise)', async () => {
    const { listener } = await tlsListener();
    const two = [{ CertificateArn: 'a' }, { CertificateArn: 'b' }];
    const err = await failure(
      w.fake.send(new AddListenerCertificatesCommand({ ListenerArn: listener.arn, Certificates: two })),
    );
    expect(elbv2ErrorCode(err)).toBe('ValidationError');
    expect(w.fake.listenerCertificates.get(listener.arn)).toEqual([]);
  });

  it('removes listed certificates but never the default (OperationNotPermitted); unknown ones are no error', async () => {
    const { listener } = await tlsListener();
    await w.elb.addListenerCertificates(listener.arn, ['sni-1', 'sni-2']);
    await w.elb.removeListenerCertificates(listener.arn, ['sni-1', 'never-added']);
    const err = await failure(w.elb.removeListenerCertificates(listener.arn, ['cert-default']));
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('OperationNotPermitted');
    expect((await w.elb.describeListenerCertificates(listener.arn)).map((c) => c.certificateArn)).toEqual([
      'cert-default',
      'sni-2',
    ]);
  });

  it('ModifyListener replaces the default certificate; the old one does not join the list; leaving TLS drops them all', async () => {
    const { group, listener } = await tlsListener();
    await w.elb.addListenerCertificates(listener.arn, ['sni-1']);
    await w.elb.modifyListener(listener.arn, {
      port: 443,
      protocol: 'TLS',
      certificateArn: 'cert-new',
      targetGroupArn: group.arn,
    });
    expect(await w.elb.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: 'cert-new', isDefault: true },
      { certificateArn: 'sni-1', isDefault: false },
    ]);
    await w.elb.modifyListener(listener.arn, tcp(group.arn, 443));
    expect(await w.elb.describeListenerCertificates(listener.arn)).toEqual([]);
    expect(w.fake.listenersOf(listener.loadBalancerArn)[0]).toMatchObject({ certificateArns: [] });
    expect(w.fake.listenersOf(listener.loadBalancerArn)[0]?.sslPolicy).toBeUndefined();
  });

  it('a ModifyListener naming only the port keeps everything else', async () => {
    const { group, listener } = await tlsListener({ alpnPolicy: 'HTTP2Only' });
    await w.fake.send(new ModifyListenerCommand({ ListenerArn: listener.arn, Port: 8443 }));
    expect(w.fake.listenersOf(listener.loadBalancerArn)[0]).toMatchObject({
      port: 8443,
      protocol: 'TLS',
      certificateArns: ['cert-default'],
      alpnPolicy: 'HTTP2Only',
      targetGroupArn: group.arn,
    });
  });

  it('certificates only go on TLS listeners, of a listener that exists', async () => {
    const { lb, group } = await w.lbWithGroup();
    const plain = await w.elb.createListener(lb.arn, tcp(group.arn), {});
    expect(await w.elb.describeListenerCertificates(plain.arn)).toEqual([]);
    expect(codeOf(await failure(w.elb.addListenerCertificates(plain.arn, ['sni'])))).toBe(
      'InvalidConfigurationRequest',
    );
    await w.elb.deleteListener(plain.arn);
    for (const call of [
      () => w.elb.describeListenerCertificates(plain.arn),
      () => w.elb.addListenerCertificates(plain.arn, ['sni']),
      () => w.elb.removeListenerCertificates(plain.arn, ['sni']),
    ]) {
      expect(codeOf(await failure(call()))).toBe('ListenerNotFound');
    }
  });

  it('the certificate quota counts the listed certificates of all listeners of a load balancer (TooManyCertificates)', async () => {
    w.fake.certificateQuota = 2;
    const { lb, listener } = await tlsListener();
    const group2 = await w.group({ name: 'web-8443' });
    const spec: ListenerSpec = {
      port: 8443,
      protocol: 'TLS',
      certificateArn: 'cert-default',
      targetGroupArn: group2.arn,
    };
    const second = await w.elb.createListener(lb.arn, spec, {});
    await w.elb.addListenerCertificates(listener.arn, ['sni-1']);
    await w.elb.addListenerCertificates(second.arn, ['sni-2']);
    // Already listed: no new certificate, no quota.
    await w.elb.addListenerCertificates(second.arn, ['sni-2']);
    expect(codeOf(await failure(w.elb.addListenerCertificates(second.arn, ['sni-3'])))).toBe('TooManyCertificates');
    await w.elb.deleteListener(listener.arn);
    await w.elb.addListenerCertificates(second.arn, ['sni-3']);
    expect(w.fake.listenerCertificates.get(second.arn)).toEqual(['sni-2', 'sni-3']);
  });
});

describe('FakeElbv2 listener attributes', () => {
  const idle = (seconds: number | string) => ({ 'tcp.idle_timeout.seconds': String(seconds) });

  it(`a TCP listener has a ${DEFAULT_TCP_IDLE_TIMEOUT_SECONDS} s idle timeout that can be set within 60-6000`, async () => {
    const { lb, group } = await w.lbWithGroup();
    const listener = await w.elb.createListener(lb.arn, tcp(group.arn), {});
    expect(await w.elb.describeListenerAttributes(listener.arn)).toEqual(idle(DEFAULT_TCP_IDLE_TIMEOUT_SECONDS));
    w.fake.resetCalls();
    await w.elb.modifyListenerAttributes(listener.arn, idle(6000));
    await w.elb.modifyListenerAttributes(listener.arn, {});
    expect(w.fake.callCount('ModifyListenerAttributes')).toBe(1);
    expect(await w.elb.describeListenerAttributes(listener.arn)).toEqual(idle(6000));
    for (const value of ['59', '6001', '1e3', '']) {
      expect(codeOf(await failure(w.elb.modifyListenerAttributes(listener.arn, idle(value))))).toBe(
        'InvalidConfigurationRequest',
      );
    }
    expect(codeOf(await failure(w.elb.modifyListenerAttributes(listener.arn, { nope: '1' })))).toBe('ValidationError');
    expect(await w.elb.describeListenerAttributes(listener.arn)).toEqual(idle(6000));
  });

  it('TLS (fixed at 350) and UDP listeners have no attribute to read or set', async () => {
    const { lb, group } = await w.lbWithGroup();
    const udpGroup = await w.group({ name: 'web-53', protocol: 'UDP' });
    const tls = await w.elb.createListener(
      lb.arn,
      { port: 443, protocol: 'TLS', certificateArn: 'c', targetGroupArn: group.arn },
      {},
    );
    const udp = await w.elb.createListener(lb.arn, { port: 53, protocol: 'UDP', targetGroupArn: udpGroup.arn }, {});
    for (const listener of [tls, udp]) {
      expect(await w.elb.describeListenerAttributes(listener.arn)).toEqual({});
      expect(codeOf(await failure(w.elb.modifyListenerAttributes(listener.arn, idle(600))))).toBe(
        'InvalidConfigurationRequest',
      );
    }
    // A listener turned TCP starts from the default.
    await w.elb.modifyListener(tls.arn, tcp(group.arn, 443));
    expect(await w.elb.describeListenerAttributes(tls.arn)).toEqual(idle(DEFAULT_TCP_IDLE_TIMEOUT_SECONDS));
    await w.elb.deleteListener(tls.arn);
    expect(codeOf(await failure(w.elb.describeListenerAttributes(tls.arn)))).toBe('ListenerNotFound');
    expect(w.fake.listenerAttributes.has(tls.arn)).toBe(false);
  });
});
