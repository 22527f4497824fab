/**
 * AWS WAFv2 as the Ingress controller needs it: which regional web ACL protects an Application Load Balancer, and
 * changing it (the `wafv2-acl-arn` and `wafv2-acl-name` annotations).
 * https://docs.aws.amazon.com/waf/latest/APIReference/API_GetWebACLForResource.html
 * https://docs.aws.amazon.com/waf/latest/APIReference/API_AssociateWebACL.html
 */
export interface Wafv2Port {
  /** The ARN of the web ACL associated with the resource, or undefined. */
  webAclForResource(resourceArn: string): Promise<string | undefined>;
  /** The ARN of the regional web ACL of that name, or undefined (all pages of ListWebACLs). */
  findWebAclArn(name: string): Promise<string | undefined>;
  /** Replaces any association the resource has. */
  associate(webAclArn: string, resourceArn: string): Promise<void>;
  /** Succeeds when none is associated. */
  disassociate(resourceArn: string): Promise<void>;
}

/** ListWebACLs' largest page (`Limit`, 1-100). */
export const WAFV2_LIST_LIMIT = 100;
