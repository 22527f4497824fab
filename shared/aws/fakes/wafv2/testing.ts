import { CreateWebACLCommand } from '@aws-sdk/client-wafv2';
import { FakeClock } from '../../../clock.ts';
import { Wafv2Adapter } from '../../wafv2-adapter.ts';
import { FakeWafv2 } from './fake-wafv2.ts';

/** What the FakeWafv2 tests share: a fake WAF account reached through the real Wafv2Adapter. */

export const albArn = (name: string) =>
  `arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/app/${name}/0123456789abcdef`;
export const nlbArn = (name: string) =>
  `arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/${name}/0123456789abcdef`;

/** CreateWebACL's request for an allow-all web ACL without rules. */
export function webAclInput(name: string, scope: 'REGIONAL' | 'CLOUDFRONT' = 'REGIONAL') {
  return {
    Name: name,
    Scope: scope,
    DefaultAction: { Allow: {} },
    VisibilityConfig: { SampledRequestsEnabled: false, CloudWatchMetricsEnabled: false, MetricName: name },
  };
}

/** `loadBalancers`, when given, links the fake to them: a load balancer not in the set does not exist. */
export function wafWorld(loadBalancers?: Set<string>) {
  const clock = new FakeClock();
  const fake = new FakeWafv2(clock, loadBalancers ? (arn) => loadBalancers.has(arn) : undefined);
  const waf = new Wafv2Adapter(fake);
  const webAcl = async (name: string, scope: 'REGIONAL' | 'CLOUDFRONT' = 'REGIONAL') => {
    const output = await fake.send(new CreateWebACLCommand(webAclInput(name, scope)));
    return output.Summary!;
  };
  return { clock, fake, waf, webAcl };
}
