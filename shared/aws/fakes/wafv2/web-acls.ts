import type * as Sdk from '@aws-sdk/client-wafv2';
import type { Clock } from '../../../clock.ts';
import { WAFV2_LIST_LIMIT } from '../../wafv2-port.ts';
import {
  acceptOnly,
  checkResourceArn,
  invalidParameter,
  isLoadBalancerArn,
  nonexistent,
  required,
  wafFailure,
} from './wire.ts';

/** A web ACL as WAF keeps it. */
export interface FakeWebAcl {
  name: string;
  id: string;
  arn: string;
  scope: 'REGIONAL' | 'CLOUDFRONT';
  description?: string;
  lockToken: string;
  defaultAction: Sdk.DefaultAction;
  rules: Sdk.Rule[];
  visibilityConfig: Sdk.VisibilityConfig;
  tags: Record<string, string>;
}

/**
 * The account's web ACLs and which resource each protects (resource ARN -> web ACL ARN: a resource has at most
 * one). `resourceExists`, when set (a link to a fake ELBv2 account), says whether a load balancer is there; WAF
 * answers WAFNonexistentItemException for one that is not, and forgets the association of one deleted.
 */
export class Wafv2State {
  readonly webAcls = new Map<string, FakeWebAcl>();
  readonly associations = new Map<string, string>();
  region = 'eu-west-1';
  account = '111122223333';
  private counter = 0;

  constructor(
    readonly clock: Clock,
    readonly resourceExists?: (arn: string) => boolean,
  ) {}

  nextId(): string {
    return `00000000-0000-4000-8000-${(++this.counter).toString(16).padStart(12, '0')}`;
  }

  /** The resource as WAF sees it: its ARN, or WAFNonexistentItemException when the linked account lacks it. */
  resourceOrThrow(arn: string | undefined): string {
    const resource = checkResourceArn(arn);
    if (this.resourceExists && isLoadBalancerArn(resource) && !this.resourceExists(resource)) throw nonexistent();
    return resource;
  }

  /** The web ACL protecting the resource now (none once a linked load balancer is gone). */
  webAclOf(resourceArn: string): FakeWebAcl | undefined {
    if (this.resourceExists && isLoadBalancerArn(resourceArn) && !this.resourceExists(resourceArn)) return undefined;
    const arn = this.associations.get(resourceArn);
    return arn ? this.webAcls.get(arn) : undefined;
  }

  /** The resources the web ACL protects now. */
  resourcesOf(webAclArn: string): string[] {
    return [...this.associations.keys()].filter((resource) => this.webAclOf(resource)?.arn === webAclArn);
  }
}

const NAME = /^[\w-]{1,128}$/;
const SCOPES: ReadonlySet<string> = new Set(['REGIONAL', 'CLOUDFRONT']);

function checkScope(scope: string | undefined): 'REGIONAL' | 'CLOUDFRONT' {
  const value = required(scope, 'SCOPE_VALUE');
  if (!SCOPES.has(value)) throw invalidParameter('SCOPE_VALUE', 'ILLEGAL_ARGUMENT');
  return value as 'REGIONAL' | 'CLOUDFRONT';
}

/** https://docs.aws.amazon.com/waf/latest/APIReference/API_CreateWebACL.html */
export function createWebAcl(waf: Wafv2State, input: Sdk.CreateWebACLRequest): Sdk.CreateWebACLResponse {
  acceptOnly('CreateWebACL', input, [
    'Name',
    'Scope',
    'DefaultAction',
    'Description',
    'Rules',
    'VisibilityConfig',
    'Tags',
  ]);
  const name = required(input.Name, 'NAME');
  if (!NAME.test(name)) throw invalidParameter('NAME', 'ILLEGAL_ARGUMENT');
  const scope = checkScope(input.Scope);
  const defaultAction = required(input.DefaultAction, 'DEFAULT_ACTION');
  const visibilityConfig = required(input.VisibilityConfig, 'VISIBILITY_CONFIG');
  if ([...waf.webAcls.values()].some((acl) => acl.scope === scope && acl.name === name)) {
    throw wafFailure(
      'WAFDuplicateItemException',
      "AWS WAF couldn't perform the operation because some resource in your request is a duplicate of an existing one.",
    );
  }
  const id = waf.nextId();
  // Regional ACLs live in their region; CloudFront ones are global (us-east-1).
  const where = scope === 'REGIONAL' ? `${waf.region}:${waf.account}:regional` : `us-east-1:${waf.account}:global`;
  const acl: FakeWebAcl = {
    name,
    id,
    arn: `arn:aws:wafv2:${where}/webacl/${name}/${id}`,
    scope,
    ...(input.Description ? { description: input.Description } : {}),
    lockToken: waf.nextId(),
    defaultAction,
    rules: input.Rules ?? [],
    visibilityConfig,
    tags: Object.fromEntries((input.Tags ?? []).map((t) => [t.Key ?? '', t.Value ?? ''])),
  };
  waf.webAcls.set(acl.arn, acl);
  return { Summary: summaryOf(acl) };
}

function summaryOf(acl: FakeWebAcl): Sdk.WebACLSummary {
  return {
    Name: acl.name,
    Id: acl.id,
    ARN: acl.arn,
    LockToken: acl.lockToken,
    ...(acl.description ? { Description: acl.description } : {}),
  };
}

function webAclOf(acl: FakeWebAcl): Sdk.WebACL {
  return {
    Name: acl.name,
    Id: acl.id,
    ARN: acl.arn,
    DefaultAction: acl.defaultAction,
    Rules: acl.rules,
    VisibilityConfig: acl.visibilityConfig,
    ...(acl.description ? { Description: acl.description } : {}),
    LabelNamespace: `awswaf:${acl.arn.split(':')[4]}:webacl:${acl.name}:`,
    ManagedByFirewallManager: false,
  };
}

function byNameAndId(waf: Wafv2State, input: { Name?: string; Scope?: string; Id?: string }): FakeWebAcl {
  const name = required(input.Name, 'NAME');
  const scope = checkScope(input.Scope);
  const id = required(input.Id, 'RESOURCE_ID');
  const acl = [...waf.webAcls.values()].find((a) => a.scope === scope && a.name === name && a.id === id);
  if (!acl) throw nonexistent();
  return acl;
}

/** https://docs.aws.amazon.com/waf/latest/APIReference/API_GetWebACL.html */
export function getWebAcl(waf: Wafv2State, input: Sdk.GetWebACLRequest): Sdk.GetWebACLResponse {
  acceptOnly('GetWebACL', input, ['Name', 'Scope', 'Id']);
  const acl = byNameAndId(waf, input);
  return { WebACL: webAclOf(acl), LockToken: acl.lockToken };
}

/**
 * The lock token must be the current one (WAFOptimisticLockException), and a web ACL still protecting a resource
 * cannot go (WAFAssociatedItemException). https://docs.aws.amazon.com/waf/latest/APIReference/API_DeleteWebACL.html
 */
export function deleteWebAcl(waf: Wafv2State, input: Sdk.DeleteWebACLRequest): Sdk.DeleteWebACLResponse {
  acceptOnly('DeleteWebACL', input, ['Name', 'Scope', 'Id', 'LockToken']);
  const acl = byNameAndId(waf, input);
  if (required(input.LockToken, 'LOCK_TOKEN') !== acl.lockToken) {
    throw wafFailure(
      'WAFOptimisticLockException',
      "AWS WAF couldn't save your changes because someone changed the resource after you started to edit it.",
    );
  }
  if (waf.resourcesOf(acl.arn).length > 0) {
    throw wafFailure(
      'WAFAssociatedItemException',
      "AWS WAF couldn't perform the operation because your resource is being used by another resource or it's associated with another resource.",
    );
  }
  waf.webAcls.delete(acl.arn);
  for (const [resource, arn] of waf.associations) if (arn === acl.arn) waf.associations.delete(resource);
  return {};
}

/**
 * ListWebACLs of one scope, at most Limit (1-100, 100 when absent) a page, NextMarker while more are left; a marker
 * not issued for this scope is WAFInvalidParameterException. https://docs.aws.amazon.com/waf/latest/APIReference/API_ListWebACLs.html
 */
export function listWebAcls(waf: Wafv2State, input: Sdk.ListWebACLsRequest): Sdk.ListWebACLsResponse {
  acceptOnly('ListWebACLs', input, ['Scope', 'Limit', 'NextMarker']);
  const scope = checkScope(input.Scope);
  const limit = input.Limit ?? WAFV2_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > WAFV2_LIST_LIMIT)
    throw invalidParameter('LIMIT', 'ILLEGAL_ARGUMENT');
  const acls = [...waf.webAcls.values()].filter((acl) => acl.scope === scope);
  let start = 0;
  if (input.NextMarker !== undefined) {
    const [markerScope, offset] = Buffer.from(input.NextMarker, 'base64').toString('utf8').split(':');
    start = Number(offset);
    if (markerScope !== scope || !Number.isInteger(start) || start < 0)
      throw invalidParameter('NEXT_MARKER', 'ILLEGAL_ARGUMENT');
  }
  const page = acls.slice(start, start + limit);
  const more = start + limit < acls.length;
  return {
    WebACLs: page.map(summaryOf),
    ...(more ? { NextMarker: Buffer.from(`${scope}:${start + limit}`).toString('base64') } : {}),
  };
}

function regionalAclOrThrow(waf: Wafv2State, arn: string | undefined): FakeWebAcl {
  const acl = waf.webAcls.get(required(arn, 'RESOURCE_ARN'));
  if (!acl) throw nonexistent();
  // A CloudFront web ACL protects distributions, through the distribution's own settings, never a regional resource.
  if (acl.scope !== 'REGIONAL') throw invalidParameter('RESOURCE_ARN', 'ILLEGAL_ARGUMENT');
  return acl;
}

/**
 * AssociateWebACL: the resource is protected by this web ACL from now on, in place of any other.
 * https://docs.aws.amazon.com/waf/latest/APIReference/API_AssociateWebACL.html
 */
export function associateWebAcl(waf: Wafv2State, input: Sdk.AssociateWebACLRequest): Sdk.AssociateWebACLResponse {
  acceptOnly('AssociateWebACL', input, ['WebACLArn', 'ResourceArn']);
  const acl = regionalAclOrThrow(waf, input.WebACLArn);
  const resource = waf.resourceOrThrow(input.ResourceArn);
  waf.associations.set(resource, acl.arn);
  return {};
}

/**
 * DisassociateWebACL: a resource without a web ACL is left as it is.
 * https://docs.aws.amazon.com/waf/latest/APIReference/API_DisassociateWebACL.html
 */
export function disassociateWebAcl(
  waf: Wafv2State,
  input: Sdk.DisassociateWebACLRequest,
): Sdk.DisassociateWebACLResponse {
  acceptOnly('DisassociateWebACL', input, ['ResourceArn']);
  waf.associations.delete(waf.resourceOrThrow(input.ResourceArn));
  return {};
}

/** https://docs.aws.amazon.com/waf/latest/APIReference/API_GetWebACLForResource.html */
export function getWebAclForResource(
  waf: Wafv2State,
  input: Sdk.GetWebACLForResourceRequest,
): Sdk.GetWebACLForResourceResponse {
  acceptOnly('GetWebACLForResource', input, ['ResourceArn']);
  const acl = waf.webAclOf(waf.resourceOrThrow(input.ResourceArn));
  return acl ? { WebACL: webAclOf(acl) } : {};
}

/**
 * The resources of one type (APPLICATION_LOAD_BALANCER when absent) a web ACL protects.
 * https://docs.aws.amazon.com/waf/latest/APIReference/API_ListResourcesForWebACL.html
 */
export function listResourcesForWebAcl(
  waf: Wafv2State,
  input: Sdk.ListResourcesForWebACLRequest,
): Sdk.ListResourcesForWebACLResponse {
  acceptOnly('ListResourcesForWebACL', input, ['WebACLArn', 'ResourceType']);
  const acl = regionalAclOrThrow(waf, input.WebACLArn);
  const type = input.ResourceType ?? 'APPLICATION_LOAD_BALANCER';
  if (type !== 'APPLICATION_LOAD_BALANCER')
    throw new Error(`FakeWafv2 does not model ListResourcesForWebACL of ${type}`);
  return { ResourceArns: waf.resourcesOf(acl.arn).filter(isLoadBalancerArn) };
}
