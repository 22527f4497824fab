import { beforeEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../errors.ts';
import {
  type DesiredApplicationListener,
  deleteUnwantedListeners,
  ensureApplicationListeners,
} from './application-listeners.ts';
import { forwardTo, NOT_FOUND, rulesWorld, watchWrites } from './testing/rules-world.ts';

/** ensureApplicationListeners and deleteUnwantedListeners against the fake account, writes counted. */

let w: Awaited<ReturnType<typeof rulesWorld>>;
beforeEach(async () => {
  w = await rulesWorld();
  await w.elb.deleteListener(w.listener.arn); // a load balancer without listeners
});

const CERT = (n: string) => `arn:aws:acm:eu-west-1:111122223333:certificate/${n}`;
const REDIRECT = {
  type: 'redirect',
  statusCode: 'HTTP_301',
  protocol: 'HTTPS',
  host: '#{host}',
  port: '443',
  path: '/#{path}',
  query: '#{query}',
} as const;

const http = (port: number, extra: Partial<DesiredApplicationListener> = {}): DesiredApplicationListener => ({
  port,
  protocol: 'HTTP',
  certificateArns: [],
  defaultActions: [NOT_FOUND],
  attributes: {},
  tags: { owner: 'test' },
  ...extra,
});
const https = (port: number, certs: string[], extra: Partial<DesiredApplicationListener> = {}) =>
  http(port, { protocol: 'HTTPS', certificateArns: certs, ...extra });

const listeners = () => w.elb.describeListeners(w.lb.arn);
const sniOf = async (arn: string) =>
  (await w.elb.describeListenerCertificates(arn)).filter((c) => !c.isDefault).map((c) => c.certificateArn);

/** Ensures `desired` over what is there; answers the writes made and the listeners by port. */
async function ensure(desired: DesiredApplicationListener[]) {
  const { port, writes } = watchWrites(w.elb);
  const byPort = await ensureApplicationListeners(w.lb.arn, desired, await listeners(), port);
  return { writes, byPort };
}

describe('ensureApplicationListeners', () => {
  it('creates missing listeners with their SNI certificates and attributes, tagged; a second pass writes nothing', async () => {
    const desired = [
      http(8080, { attributes: { 'routing.http.response.server.enabled': 'false' } }),
      https(443, [CERT('a'), CERT('b'), CERT('c'), CERT('b')], { sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06' }),
    ];

    const { writes, byPort } = await ensure(desired);

    expect(writes.sort()).toEqual([
      'addListenerCertificates',
      'createApplicationListener',
      'createApplicationListener',
      'modifyListenerAttributes',
    ]);
    const https443 = byPort.get(443)!;
    expect(https443).toMatchObject({ protocol: 'HTTPS', certificateArns: [CERT('a')] });
    expect((await listeners()).find((l) => l.port === 443)?.sslPolicy).toBe('ELBSecurityPolicy-TLS13-1-2-2021-06');
    expect(await sniOf(https443.arn)).toEqual([CERT('b'), CERT('c')]);
    expect(await w.elb.describeListenerAttributes(byPort.get(8080)!.arn)).toMatchObject({
      'routing.http.response.server.enabled': 'false',
    });
    expect(w.fake.listenerTags.get(https443.arn)).toEqual({ owner: 'test' });

    expect((await ensure(desired)).writes).toEqual([]);
  });

  it('changes the default actions with one ModifyListener', async () => {
    await ensure([http(80)]);

    const { writes, byPort } = await ensure([http(80, { defaultActions: [forwardTo(w.groups[0]!)] })]);

    expect(writes).toEqual(['modifyApplicationListener']);
    expect(byPort.get(80)).toMatchObject({ targetGroupArn: w.groups[0], defaultActions: [forwardTo(w.groups[0]!)] });
    expect((await listeners()).find((l) => l.port === 80)?.defaultActions).toEqual([forwardTo(w.groups[0]!)]);
  });

  it('turns an HTTP listener into HTTPS in place (same listener), with its SNI certificates', async () => {
    const before = (await ensure([http(443)])).byPort.get(443)!;

    const { writes, byPort } = await ensure([https(443, [CERT('a'), CERT('b')])]);

    expect(writes).toEqual(['modifyApplicationListener', 'addListenerCertificates']);
    expect(byPort.get(443)?.arn).toBe(before.arn);
    expect((await listeners())[0]).toMatchObject({ protocol: 'HTTPS', certificateArns: [CERT('a')] });
    expect(await sniOf(before.arn)).toEqual([CERT('b')]);
  });

  it('turns HTTPS back into HTTP (AWS drops the certificates)', async () => {
    await ensure([https(80, [CERT('a'), CERT('b')])]);

    const { writes } = await ensure([http(80, { defaultActions: [REDIRECT] })]);

    expect(writes).toEqual(['modifyApplicationListener']);
    expect((await listeners())[0]).toMatchObject({ protocol: 'HTTP', certificateArns: [], defaultActions: [REDIRECT] });
  });

  it('keeps the SNI list in line: adds what is missing, removes what is extra, never the default', async () => {
    const listener = (await ensure([https(443, [CERT('a'), CERT('b'), CERT('c')])])).byPort.get(443)!;

    const { writes } = await ensure([https(443, [CERT('a'), CERT('c'), CERT('d')])]);

    expect(writes).toEqual(['removeListenerCertificates', 'addListenerCertificates']);
    expect((await sniOf(listener.arn)).sort()).toEqual([CERT('c'), CERT('d')]);
    expect((await listeners())[0]?.certificateArns).toEqual([CERT('a')]);
  });

  it('makes an SNI certificate the default: out of the list first, then the listener changed, the old default listed', async () => {
    const listener = (await ensure([https(443, [CERT('a'), CERT('b')])])).byPort.get(443)!;

    const { writes } = await ensure([https(443, [CERT('b'), CERT('a')])]);

    expect(writes).toEqual(['removeListenerCertificates', 'modifyApplicationListener', 'addListenerCertificates']);
    expect((await listeners())[0]?.certificateArns).toEqual([CERT('b')]);
    expect(await sniOf(listener.arn)).toEqual([CERT('a')]);
  });

  it('sets only the attributes that differ', async () => {
    const listener = (
      await ensure([http(80, { attributes: { 'routing.http.response.server.enabled': 'false' } })])
    ).byPort.get(80)!;

    const { writes } = await ensure([
      http(80, {
        attributes: {
          'routing.http.response.server.enabled': 'false',
          'routing.http.response.x_frame_options.header_value': 'DENY',
        },
      }),
    ]);

    expect(writes).toEqual(['modifyListenerAttributes']);
    expect(await w.elb.describeListenerAttributes(listener.arn)).toEqual({
      'routing.http.response.server.enabled': 'false',
      'routing.http.response.x_frame_options.header_value': 'DENY',
    });
  });

  it('refuses an HTTPS listener without a certificate before asking AWS', async () => {
    await expect(ensure([https(443, [])])).rejects.toThrow(TerminalError);
    expect(await listeners()).toEqual([]);
  });
});

describe('deleteUnwantedListeners', () => {
  it('deletes the listeners of ports no longer wanted (their rules with them), and a second listener on a port', async () => {
    const { byPort } = await ensure([http(80), http(8080), http(9090)]);
    await w.elb.createRule(
      byPort.get(8080)!.arn,
      { priority: 1, conditions: [{ field: 'path-pattern', values: ['/a'] }], actions: [forwardTo(w.groups[0]!)] },
      {},
    );
    // Two listeners on port 80, as an emulator lets one make: the second goes.
    const current = (await listeners()).map((l) => (l.port === 9090 ? { ...l, port: 80 } : l));
    const { port, writes } = watchWrites(w.elb);

    const deleted = await deleteUnwantedListeners([http(80)], current, port);

    expect(deleted).toBe(2);
    expect(writes).toEqual(['deleteListener', 'deleteListener']);
    expect((await listeners()).map((l) => l.port)).toEqual([80]);
    expect(w.fake.rules.size).toBe(0);
  });

  it('deletes nothing when every listener is wanted', async () => {
    await ensure([http(80)]);
    expect(await deleteUnwantedListeners([http(80)], await listeners(), w.elb)).toBe(0);
  });
});
