import {
  AssociateWebACLCommand,
  DisassociateWebACLCommand,
  GetWebACLForResourceCommand,
  ListWebACLsCommand,
  type WAFV2Client,
} from '@aws-sdk/client-wafv2';
import { RetryableError } from '../errors.ts';
import { awsErrorCode, toControllerError } from './errors.ts';
import { WAFV2_LIST_LIMIT, type Wafv2Port } from './wafv2-port.ts';

/**
 * WAF answers WAFUnavailableEntityException for a resource it cannot see yet ("if you've just created a resource
 * ..., you might just need to wait a few minutes"): a load balancer created moments ago. Trying again later helps.
 * https://docs.aws.amazon.com/waf/latest/APIReference/API_AssociateWebACL.html (Errors)
 */
const RETRYABLE_CODES: ReadonlySet<string | undefined> = new Set([
  'WAFUnavailableEntityException',
  'WAFInternalErrorException',
]);

function wafv2Error(doing: string, err: unknown): Error {
  const code = awsErrorCode(err);
  if (RETRYABLE_CODES.has(code)) {
    return new RetryableError(`${doing}: ${code}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  return toControllerError(doing, err);
}

const NONEXISTENT = 'WAFNonexistentItemException';

/**
 * Wafv2Port over the AWS SDK, for regional web ACLs (the scope of Application Load Balancers): a pure translation,
 * no caching. WAFv2 speaks JSON: the SDK names each error after its `__type` (`WAFNonexistentItemException`).
 * https://docs.aws.amazon.com/waf/latest/APIReference/CommonErrors.html
 */
export class Wafv2Adapter implements Wafv2Port {
  constructor(private readonly client: Pick<WAFV2Client, 'send'>) {}

  /** https://docs.aws.amazon.com/waf/latest/APIReference/API_GetWebACLForResource.html */
  async webAclForResource(resourceArn: string): Promise<string | undefined> {
    try {
      const output = await this.client.send(new GetWebACLForResourceCommand({ ResourceArn: resourceArn }));
      return output.WebACL?.ARN;
    } catch (err) {
      if (awsErrorCode(err) === NONEXISTENT) return undefined;
      throw wafv2Error(`reading the web ACL of ${resourceArn}`, err);
    }
  }

  /**
   * Pages ListWebACLs until the name shows up (names are unique per scope and region). A marker repeated, which
   * AWS never sends, ends the search rather than looping.
   * https://docs.aws.amazon.com/waf/latest/APIReference/API_ListWebACLs.html
   */
  async findWebAclArn(name: string): Promise<string | undefined> {
    try {
      let marker: string | undefined;
      for (;;) {
        const output = await this.client.send(
          new ListWebACLsCommand({
            Scope: 'REGIONAL',
            Limit: WAFV2_LIST_LIMIT,
            ...(marker ? { NextMarker: marker } : {}),
          }),
        );
        const found = (output.WebACLs ?? []).find((acl) => acl.Name === name);
        if (found?.ARN) return found.ARN;
        const next = output.NextMarker;
        if (!next || next === marker) return undefined;
        marker = next;
      }
    } catch (err) {
      throw wafv2Error(`looking up web ACL ${name}`, err);
    }
  }

  /**
   * A resource has at most one web ACL: associating another replaces it.
   * https://docs.aws.amazon.com/waf/latest/APIReference/API_AssociateWebACL.html
   */
  async associate(webAclArn: string, resourceArn: string): Promise<void> {
    try {
      await this.client.send(new AssociateWebACLCommand({ WebACLArn: webAclArn, ResourceArn: resourceArn }));
    } catch (err) {
      throw wafv2Error(`associating web ACL ${webAclArn} with ${resourceArn}`, err);
    }
  }

  /** https://docs.aws.amazon.com/waf/latest/APIReference/API_DisassociateWebACL.html */
  async disassociate(resourceArn: string): Promise<void> {
    try {
      await this.client.send(new DisassociateWebACLCommand({ ResourceArn: resourceArn }));
    } catch (err) {
      if (awsErrorCode(err) === NONEXISTENT) return;
      throw wafv2Error(`removing the web ACL of ${resourceArn}`, err);
    }
  }
}
