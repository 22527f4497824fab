import type * as Sdk from '@aws-sdk/client-elastic-load-balancing';
import { CLASSIC_TAGS_PER_LOAD_BALANCER } from '../../elb-defaults.ts';
import { CLASSIC_TAGS_NAMES_PER_CALL } from '../../elb-port.ts';
import { checkTags, classicFailure, type FakeClassicLoadBalancer } from './model.ts';

/**
 * The Classic ELB tag calls over load balancers the fake has already found by name (an unknown name is
 * LoadBalancerNotFound before these run).
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DescribeTags.html
 */

/** DescribeTags takes 1 to 20 names. */
export function checkTagNames(names: readonly string[]): void {
  if (names.length < 1 || names.length > CLASSIC_TAGS_NAMES_PER_CALL) {
    throw classicFailure('ValidationError', `LoadBalancerNames takes 1 to ${CLASSIC_TAGS_NAMES_PER_CALL} names`);
  }
}

export function describeTags(found: readonly FakeClassicLoadBalancer[]): Sdk.DescribeTagsOutput {
  return {
    TagDescriptions: found.map((lb) => ({
      LoadBalancerName: lb.name,
      Tags: Object.entries(lb.tags).map(([Key, Value]) => ({ Key, Value })),
    })),
  };
}

/** At most 50 tags on a load balancer: TooManyTags, and nothing added, when the call would pass that. */
export function addTags(found: readonly FakeClassicLoadBalancer[], tags: readonly Sdk.Tag[]): void {
  checkTags([...tags]);
  const added = Object.fromEntries(tags.map((t) => [t.Key ?? '', t.Value ?? '']));
  if (found.some((lb) => Object.keys({ ...lb.tags, ...added }).length > CLASSIC_TAGS_PER_LOAD_BALANCER)) {
    throw classicFailure('TooManyTags', `A load balancer can have at most ${CLASSIC_TAGS_PER_LOAD_BALANCER} tags`);
  }
  for (const lb of found) Object.assign(lb.tags, added);
}

export function removeTags(found: readonly FakeClassicLoadBalancer[], keys: readonly Sdk.TagKeyOnly[]): void {
  for (const lb of found) for (const t of keys) delete lb.tags[t.Key ?? ''];
}
