import {
  AssociateWebACLCommand,
  DisassociateWebACLCommand,
  GetWebACLForResourceCommand,
  ListWebACLsCommand,
  WAFInvalidParameterException,
  WAFNonexistentItemException,
  WAFUnavailableEntityException,
  WAFV2Client,
} from '@aws-sdk/client-wafv2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { Wafv2Adapter } from './wafv2-adapter.ts';

const client = new WAFV2Client({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
});
const waf = mockClient(client);
const adapter = new Wafv2Adapter(client);

const LB_ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/app/web/0123456789abcdef';
const aclArn = (name: string) => `arn:aws:wafv2:eu-west-1:111122223333:regional/webacl/${name}/id-${name}`;
const acl = (name: string) => ({ Name: name, Id: `id-${name}`, ARN: aclArn(name), LockToken: 'token' });
const inputs = <T>(command: T) =>
  waf.commandCalls(command as Parameters<typeof waf.commandCalls>[0]).map((c) => c.args[0].input);
const meta = { $metadata: { httpStatusCode: 400 } };

beforeEach(() => {
  waf.reset();
});

describe('Wafv2Adapter.webAclForResource', () => {
  it("answers the ARN of the resource's web ACL, and undefined when it has none", async () => {
    waf
      .on(GetWebACLForResourceCommand)
      .resolvesOnce({ WebACL: { ...acl('main'), DefaultAction: { Allow: {} }, VisibilityConfig: undefined } as never })
      .resolvesOnce({});
    expect(await adapter.webAclForResource(LB_ARN)).toBe(aclArn('main'));
    expect(await adapter.webAclForResource(LB_ARN)).toBeUndefined();
    expect(inputs(GetWebACLForResourceCommand)).toEqual([{ ResourceArn: LB_ARN }, { ResourceArn: LB_ARN }]);
  });

  it('a resource WAF cannot see yet is retryable; throttling is ThrottledError', async () => {
    const throttled = Object.assign(new Error('Rate exceeded'), {
      name: 'ThrottlingException',
      $metadata: { httpStatusCode: 400 },
    });
    waf
      .on(GetWebACLForResourceCommand)
      .rejectsOnce(new WAFUnavailableEntityException({ ...meta, message: 'wait' }))
      .rejectsOnce(throttled);
    expect(await adapter.webAclForResource(LB_ARN).catch((e: unknown) => e)).toBeInstanceOf(RetryableError);
    const err = await adapter.webAclForResource(LB_ARN).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as Error).cause).toBe(throttled);
  });

  it('a resource WAF does not know (WAFNonexistentItemException) has no web ACL', async () => {
    waf.on(GetWebACLForResourceCommand).rejects(new WAFNonexistentItemException({ ...meta, message: 'gone' }));
    expect(await adapter.webAclForResource(LB_ARN)).toBeUndefined();
  });
});

describe('Wafv2Adapter.findWebAclArn', () => {
  it('lists regional web ACLs 100 a page, following NextMarker until the name shows up', async () => {
    waf
      .on(ListWebACLsCommand)
      .resolvesOnce({ WebACLs: [acl('one'), acl('two')], NextMarker: 'm2' })
      .resolvesOnce({ WebACLs: [acl('three'), acl('wanted')], NextMarker: 'm3' });
    expect(await adapter.findWebAclArn('wanted')).toBe(aclArn('wanted'));
    expect(inputs(ListWebACLsCommand)).toEqual([
      { Scope: 'REGIONAL', Limit: 100 },
      { Scope: 'REGIONAL', Limit: 100, NextMarker: 'm2' },
    ]);
  });

  it('answers undefined after the last page, and after a marker that comes back repeated', async () => {
    waf
      .on(ListWebACLsCommand)
      .resolvesOnce({ WebACLs: [acl('one')], NextMarker: 'm2' })
      .resolvesOnce({ WebACLs: [acl('two')] })
      .resolvesOnce({ WebACLs: [acl('one')], NextMarker: 'same' })
      .resolvesOnce({ WebACLs: [], NextMarker: 'same' });
    expect(await adapter.findWebAclArn('other')).toBeUndefined();
    expect(inputs(ListWebACLsCommand)).toHaveLength(2);
    expect(await adapter.findWebAclArn('other')).toBeUndefined();
    expect(inputs(ListWebACLsCommand)).toHaveLength(4);
  });

  it('does not take a web ACL whose name only starts with the one asked for', async () => {
    waf.on(ListWebACLsCommand).resolves({ WebACLs: [acl('wanted-2')] });
    expect(await adapter.findWebAclArn('wanted')).toBeUndefined();
  });
});

describe('Wafv2Adapter.associate and disassociate', () => {
  it('sends the web ACL and the resource', async () => {
    waf.on(AssociateWebACLCommand).resolves({});
    waf.on(DisassociateWebACLCommand).resolves({});
    await adapter.associate(aclArn('main'), LB_ARN);
    await adapter.disassociate(LB_ARN);
    expect(inputs(AssociateWebACLCommand)).toEqual([{ WebACLArn: aclArn('main'), ResourceArn: LB_ARN }]);
    expect(inputs(DisassociateWebACLCommand)).toEqual([{ ResourceArn: LB_ARN }]);
  });

  it('a resource WAF cannot see yet (WAFUnavailableEntityException) is retryable', async () => {
    waf.on(AssociateWebACLCommand).rejects(new WAFUnavailableEntityException({ ...meta, message: 'wait' }));
    const err = await adapter.associate(aclArn('main'), LB_ARN).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toMatch(/^associating web ACL .* with .*: WAFUnavailableEntityException: wait$/);
  });

  it('a web ACL that does not exist is terminal on associate', async () => {
    waf.on(AssociateWebACLCommand).rejects(new WAFNonexistentItemException({ ...meta, message: 'no acl' }));
    expect(await adapter.associate(aclArn('gone'), LB_ARN).catch((e: unknown) => e)).toBeInstanceOf(TerminalError);
  });

  it('disassociating what WAF does not know succeeds; other failures do not', async () => {
    waf
      .on(DisassociateWebACLCommand)
      .rejectsOnce(new WAFNonexistentItemException({ ...meta, message: 'gone' }))
      .rejectsOnce(new WAFInvalidParameterException({ ...meta, message: 'bad arn' }));
    await adapter.disassociate(LB_ARN);
    expect(await adapter.disassociate('arn:nope').catch((e: unknown) => e)).toBeInstanceOf(TerminalError);
  });
});
