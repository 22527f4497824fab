import type {
  AddTagsInput,
  DescribeTagsInput,
  DescribeTagsOutput,
  RemoveTagsInput,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import type { Elbv2State } from './state.ts';
import { acceptOnly, checkListSize, checkTagCount, elbv2Failure, required, sdkTags, tagsOfRequest } from './wire.ts';

/**
 * The tag calls of the fake ELBv2 API, on load balancers, target groups, listeners and rules. Each takes up to 20
 * resources, and one resource it does not know (or a target group it still hides after its creation) fails the
 * whole call with the not-found error of that resource's kind.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTags.html
 */
const MAX_RESOURCES = 20;

function notFound(arn: string): never {
  if (arn.includes(':targetgroup/')) throw elbv2Failure('TargetGroupNotFound', 'One or more target groups not found');
  if (arn.includes(':listener/')) throw elbv2Failure('ListenerNotFound', 'One or more listeners not found');
  if (arn.includes(':listener-rule/')) throw elbv2Failure('RuleNotFound', 'One or more rules not found');
  throw elbv2Failure('LoadBalancerNotFound', 'One or more load balancers not found');
}

/** The live tag records of the resources a call names, each looked up once. */
function tagRecords(elb: Elbv2State, resourceArns: readonly string[] | undefined): Map<string, Record<string, string>> {
  const arns = required(resourceArns, 'resourceArns');
  checkListSize(arns, 'resourceArns', MAX_RESOURCES);
  const records = new Map<string, Record<string, string>>();
  for (const arn of new Set(arns)) {
    const tags = elb.visibleTagsRef(arn);
    if (tags) records.set(arn, tags);
  }
  const missing = arns.find((arn) => !records.has(arn));
  if (missing !== undefined) notFound(missing);
  return records;
}

export function describeTags(elb: Elbv2State, input: DescribeTagsInput): DescribeTagsOutput {
  acceptOnly('DescribeTags', input, ['ResourceArns']);
  const records = tagRecords(elb, input.ResourceArns);
  return { TagDescriptions: [...records].map(([ResourceArn, tags]) => ({ ResourceArn, Tags: sdkTags(tags) })) };
}

/**
 * A key the resource has already gets the new value; a resource holds at most 50 tags (TooManyTags, and no
 * resource is changed). https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddTags.html
 */
export function addTags(elb: Elbv2State, input: AddTagsInput): object {
  acceptOnly('AddTags', input, ['ResourceArns', 'Tags']);
  const records = tagRecords(elb, input.ResourceArns);
  const tags = tagsOfRequest(required(input.Tags, 'tags'));
  if (Object.keys(tags).length === 0) throw elbv2Failure('ValidationError', 'At least one tag must be specified');
  for (const record of records.values()) checkTagCount({ ...record, ...tags });
  for (const record of records.values()) Object.assign(record, tags);
  return {};
}

/** Keys the resource does not have are no error. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RemoveTags.html */
export function removeTags(elb: Elbv2State, input: RemoveTagsInput): object {
  acceptOnly('RemoveTags', input, ['ResourceArns', 'TagKeys']);
  const records = tagRecords(elb, input.ResourceArns);
  const keys = required(input.TagKeys, 'tagKeys');
  for (const record of records.values()) for (const key of keys) delete record[key];
  return {};
}
