import { readFileSync } from 'node:fs';
import {
  CreateWebACLCommand,
  DeleteWebACLCommand,
  GetWebACLCommand,
  ListResourcesForWebACLCommand,
  ListWebACLsCommand,
  UpdateWebACLCommand,
  WAFAssociatedItemException,
  WAFDuplicateItemException,
  WAFInvalidParameterException,
  WAFNonexistentItemException,
  WAFOptimisticLockException,
} from '@aws-sdk/client-wafv2';
import { beforeEach, describe, expect, it } from 'vitest';
import { TerminalError, ThrottledError } from '../../../errors.ts';
import { WAFV2_OPERATIONS } from './fake-wafv2.ts';
import { albArn, nlbArn, wafWorld, webAclInput } from './testing.ts';

/** The fake WAFv2 API behind the real adapter, and through raw SDK commands where the adapter does not reach. */
let w: ReturnType<typeof wafWorld>;
beforeEach(() => {
  w = wafWorld();
});

const failure = async (promise: Promise<unknown>) => promise.then(() => undefined).catch((e: unknown) => e);
const resourcesOf = async (arn: string) =>
  (await w.fake.send(new ListResourcesForWebACLCommand({ WebACLArn: arn }))).ResourceArns;

describe('FakeWafv2 web ACLs', () => {
  it('are created with a regional ARN and found by name among all pages', async () => {
    const main = await w.webAcl('main');
    expect(main.ARN).toMatch(/^arn:aws:wafv2:eu-west-1:111122223333:regional\/webacl\/main\/[0-9a-f-]{36}$/);
    for (let i = 0; i < 150; i++) await w.webAcl(`acl-${i}`);
    const last = await w.webAcl('last');
    w.fake.resetCalls();
    expect(await w.waf.findWebAclArn('last')).toBe(last.ARN);
    expect(w.fake.callCount('ListWebACLs')).toBe(2);
    expect(await w.waf.findWebAclArn('missing')).toBeUndefined();
  });

  it('are listed per scope: a CloudFront web ACL is not found among the regional ones', async () => {
    await w.webAcl('edge', 'CLOUDFRONT');
    expect(await w.waf.findWebAclArn('edge')).toBeUndefined();
    const global = await w.fake.send(new ListWebACLsCommand({ Scope: 'CLOUDFRONT' }));
    expect(global.WebACLs?.map((a) => a.Name)).toEqual(['edge']);
  });

  it('pages by Limit with a NextMarker of its scope; a Limit beyond 100 is refused', async () => {
    for (const name of ['a', 'b', 'c']) await w.webAcl(name);
    const first = await w.fake.send(new ListWebACLsCommand({ Scope: 'REGIONAL', Limit: 2 }));
    expect(first.WebACLs?.map((a) => a.Name)).toEqual(['a', 'b']);
    const second = await w.fake.send(
      new ListWebACLsCommand({ Scope: 'REGIONAL', Limit: 2, NextMarker: first.NextMarker }),
    );
    expect(second.WebACLs?.map((a) => a.Name)).toEqual(['c']);
    expect(second.NextMarker).toBeUndefined();
    const otherScope = new ListWebACLsCommand({ Scope: 'CLOUDFRONT', NextMarker: first.NextMarker });
    expect(await failure(w.fake.send(otherScope))).toBeInstanceOf(WAFInvalidParameterException);
    expect(await failure(w.fake.send(new ListWebACLsCommand({ Scope: 'REGIONAL', Limit: 101 })))).toBeInstanceOf(
      WAFInvalidParameterException,
    );
  });

  it('a name is taken once per scope (WAFDuplicateItemException), and must be letters, digits, - and _', async () => {
    await w.webAcl('main');
    expect(await failure(w.webAcl('main'))).toBeInstanceOf(WAFDuplicateItemException);
    await w.webAcl('main', 'CLOUDFRONT');
    expect(await failure(w.webAcl('not valid'))).toBeInstanceOf(WAFInvalidParameterException);
  });

  it('cannot be deleted while it protects a resource, or with a stale lock token', async () => {
    const main = await w.webAcl('main');
    const remove = (LockToken: string) =>
      w.fake.send(new DeleteWebACLCommand({ Name: 'main', Scope: 'REGIONAL', Id: main.Id, LockToken }));
    await w.waf.associate(main.ARN!, albArn('web'));
    expect(await failure(remove(main.LockToken!))).toBeInstanceOf(WAFAssociatedItemException);
    await w.waf.disassociate(albArn('web'));
    expect(await failure(remove('stale'))).toBeInstanceOf(WAFOptimisticLockException);
    await remove(main.LockToken!);
    const get = new GetWebACLCommand({ Name: 'main', Scope: 'REGIONAL', Id: main.Id });
    expect(await failure(w.fake.send(get))).toBeInstanceOf(WAFNonexistentItemException);
  });
});

describe('FakeWafv2 associations, through Wafv2Adapter', () => {
  it('protect a load balancer with one web ACL; associating another replaces it', async () => {
    const [one, two] = [await w.webAcl('one'), await w.webAcl('two')];
    expect(await w.waf.webAclForResource(albArn('web'))).toBeUndefined();
    await w.waf.associate(one.ARN!, albArn('web'));
    expect(await w.waf.webAclForResource(albArn('web'))).toBe(one.ARN);
    await w.waf.associate(two.ARN!, albArn('web'));
    expect(await w.waf.webAclForResource(albArn('web'))).toBe(two.ARN);
    expect(await resourcesOf(one.ARN!)).toEqual([]);
    expect(await resourcesOf(two.ARN!)).toEqual([albArn('web')]);
  });

  it('disassociating leaves the resource unprotected, and succeeds on one that has no web ACL', async () => {
    const one = await w.webAcl('one');
    await w.waf.associate(one.ARN!, albArn('web'));
    await w.waf.disassociate(albArn('web'));
    await w.waf.disassociate(albArn('web'));
    expect(await w.waf.webAclForResource(albArn('web'))).toBeUndefined();
    expect(w.fake.writeCallCount()).toBe(4);
  });

  it('refuses a web ACL that does not exist, a CloudFront one, and a Network Load Balancer (terminal errors)', async () => {
    const edge = await w.webAcl('edge', 'CLOUDFRONT');
    const one = await w.webAcl('one');
    const gone = one.ARN!.replace('/one/', '/gone/');
    for (const [acl, resource] of [
      [gone, albArn('web')],
      [edge.ARN!, albArn('web')],
      [one.ARN!, nlbArn('tcp')],
    ] as const) {
      expect(await failure(w.waf.associate(acl, resource))).toBeInstanceOf(TerminalError);
    }
    expect(w.fake.associations.size).toBe(0);
  });

  it('linked to load balancers: one that does not exist is nonexistent, and a deleted one loses its web ACL', async () => {
    const loadBalancers = new Set([albArn('web')]);
    w = wafWorld(loadBalancers);
    const one = await w.webAcl('one');
    expect(await failure(w.waf.associate(one.ARN!, albArn('gone')))).toBeInstanceOf(TerminalError);
    await w.waf.associate(one.ARN!, albArn('web'));
    loadBalancers.delete(albArn('web'));
    expect(await w.waf.webAclForResource(albArn('web'))).toBeUndefined();
    expect(await resourcesOf(one.ARN!)).toEqual([]);
    await w.waf.disassociate(albArn('web'));
  });
});

describe('FakeWafv2 controls', () => {
  it('throttles, queues errors and counts calls per operation', async () => {
    w.fake.throttle('GetWebACLForResource', 1);
    expect(await failure(w.waf.webAclForResource(albArn('web')))).toBeInstanceOf(ThrottledError);
    w.fake.queueError('ListWebACLs', new WAFInvalidParameterException({ $metadata: {}, message: 'queued' }));
    expect(await failure(w.waf.findWebAclArn('x'))).toBeInstanceOf(TerminalError);
    expect(await w.waf.webAclForResource(albArn('web'))).toBeUndefined();
    expect(w.fake.callCount('GetWebACLForResource')).toBe(2);
    expect(w.fake.callCount()).toBe(3);
  });

  it('answers every command Wafv2Adapter sends', () => {
    const adapter = readFileSync(new URL('../../wafv2-adapter.ts', import.meta.url), 'utf8');
    const sent = [...adapter.matchAll(/new (\w+)Command\(/g)].map((m) => m[1]);
    expect(sent).toHaveLength(4);
    for (const command of sent) expect(WAFV2_OPERATIONS).toContain(command);
  });

  it('refuses commands and fields it does not model, loudly', async () => {
    const update = new UpdateWebACLCommand({ ...webAclInput('x'), Id: 'id', LockToken: 't' });
    await expect(w.fake.send(update as never)).rejects.toThrow('FakeWafv2 does not implement UpdateWebACL');
    const withCaptcha = new CreateWebACLCommand({ ...webAclInput('x'), CaptchaConfig: {} });
    await expect(w.fake.send(withCaptcha)).rejects.toThrow('FakeWafv2 does not model CreateWebACL with CaptchaConfig');
  });
});
