import type { LoadBalancer } from '../../../shared/aws/elbv2-port.ts';
import type { ModelLoadBalancer } from '../model/types.ts';
import type { GroupPass } from './pass.ts';

/**
 * The regional web ACL of the load balancer, when the group names one (`wafv2-acl-arn`, `wafv2-acl-name`, or the
 * class params): associated when another or none is, removed with `none`, left as it is when the group says
 * nothing (as the reference does, so an ACL attached by other means stays).
 */
export async function ensureWebAcl(spec: ModelLoadBalancer, lb: LoadBalancer, pass: GroupPass): Promise<void> {
  const { wafv2 } = pass.deps;
  if (spec.wafv2AclArn === undefined && spec.wafv2AclName === undefined) return;
  const none = spec.wafv2AclArn === 'none' || spec.wafv2AclName === 'none';
  let wanted: string | undefined;
  if (!none) {
    wanted = spec.wafv2AclArn ?? (await wafv2.findWebAclArn(spec.wafv2AclName!));
    if (!wanted) throw pass.ctx.userError(`wafv2-acl-name: no regional web ACL named ${spec.wafv2AclName}`);
  }
  const current = await wafv2.webAclForResource(lb.arn);
  if (current === wanted) return;
  if (wanted) await wafv2.associate(wanted, lb.arn);
  else await wafv2.disassociate(lb.arn);
}
