import type { Elbv2Port, Listener, LoadBalancer, TargetGroup } from '../aws/elbv2-port.ts';

/** A load balancer as one look at AWS found it: its listeners, the target groups they use, and all their tags. */
export interface ObservedLoadBalancer {
  lb: LoadBalancer;
  attached: TargetGroup[];
  listeners: Listener[];
  /** By ARN, for the load balancer, its target groups and its listeners (one DescribeTags). */
  tags: Map<string, Record<string, string>>;
}

export async function observeLoadBalancer(lb: LoadBalancer, elbv2: Elbv2Port): Promise<ObservedLoadBalancer> {
  const attached = await elbv2.describeTargetGroupsOfLoadBalancer(lb.arn);
  const listeners = await elbv2.describeListeners(lb.arn);
  const tags = await elbv2.describeTags([lb.arn, ...attached.map((g) => g.arn), ...listeners.map((l) => l.arn)]);
  return { lb, attached, listeners, tags };
}

/** A load balancer made in this pass: nothing attached yet, its tags those it was made with. */
export function freshLoadBalancer(lb: LoadBalancer, tags: Record<string, string>): ObservedLoadBalancer {
  return { lb, attached: [], listeners: [], tags: new Map([[lb.arn, tags]]) };
}
