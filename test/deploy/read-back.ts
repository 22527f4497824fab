import type { Answer, EmulatorAws } from './emulator-aws.ts';

/**
 * Reads a deployed stack back through the services' ordinary describe and list calls (not through
 * CloudFormation's own account of it) and compares every resource with what the template asked for.
 *
 * Each reader describes one resource type in the shape of its template properties, so that the template's
 * properties, with their intrinsic functions resolved, can be compared with it key by key. Attributes other
 * resources refer to (`Fn::GetAtt`, `Ref`) come from the same reads.
 */

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}
export interface Template {
  Resources: Record<string, TemplateResource>;
  Parameters?: Record<string, { Default?: string }>;
  Outputs?: Record<string, { Value: unknown }>;
}

export interface StackInfo {
  stackName: string;
  stackId: string;
  region: string;
  account: string;
  parameters: Record<string, string>;
  /** Logical ID to physical ID, as CloudFormation lists them (ListStackResources). */
  physicalIds: Map<string, string>;
  status?: string;
}

/** A resource as the emulator describes it. */
export interface Observed {
  /** Keys of docs/emulator-differences.md rows the read had to work around. */
  quirks?: string[];
  /** What `Ref` gives. */
  ref: string;
  /** What `Fn::GetAtt` gives, by attribute. */
  attrs: Record<string, string>;
  /** The resource in the shape of its template properties. */
  props: Record<string, unknown>;
}

type Reader = (
  aws: EmulatorAws,
  physicalId: string | undefined,
  props: () => Record<string, unknown>,
) => Promise<Observed | undefined>;

const tagList = (tags: Record<string, string> | undefined) =>
  Object.entries(tags ?? {}).map(([Key, Value]) => ({ Key, Value }));

/** Whether a failed call says the resource is not there (each service has its own name for it). */
function notFound(err: unknown): boolean {
  const name = (err as { name?: string }).name ?? '';
  return /NotFound|NonExistent|NoSuchEntity|DoesNotExist|ResourceNotFound|NoSuchKey/i.test(name);
}

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (notFound(err)) return undefined;
    throw err;
  }
}

const withoutUndefined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const parseJson = (s: unknown) => (typeof s === 'string' ? JSON.parse(s) : undefined);

/** XML text of the first <name> element (the CloudWatch query answers), entities decoded. */
function xmlText(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  if (!m) return undefined;
  return m[1]!
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** docs/emulator-differences.md: GetRolePolicy answers a CloudFormation-made inline policy as Python text. */
export const ROLE_POLICY_REPR = 'cfn.role-policy-python-text';

/**
 * A Python literal of dicts, lists, strings, numbers, True, False and None, as `str()` of a dict writes it: the
 * emulator's answer for an inline policy a stack created (ROLE_POLICY_REPR).
 */
export function pythonLiteral(text: string): unknown {
  let at = 0;
  const space = () => {
    while (/\s/.test(text[at] ?? '')) at++;
  };
  const expect = (c: string) => {
    space();
    if (text[at] !== c) throw new Error(`Python literal: "${c}" expected at ${at} of ${text.slice(0, 80)}`);
    at++;
  };
  const value = (): unknown => {
    space();
    const c = text[at];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      at++;
      const items: unknown[] = [];
      const dict: Record<string, unknown> = {};
      space();
      while (text[at] !== close) {
        const v = value();
        if (c === '{') {
          expect(':');
          dict[String(v)] = value();
        } else items.push(v);
        space();
        if (text[at] === ',') at++;
        space();
      }
      at++;
      return c === '{' ? dict : items;
    }
    if (c === "'" || c === '"') {
      at++;
      let s = '';
      while (text[at] !== c) {
        if (text[at] === '\\') {
          const next = text[++at]!;
          s += next === 'n' ? '\n' : next === 't' ? '\t' : next;
        } else s += text[at];
        at++;
        if (at > text.length) throw new Error('Python literal: unterminated string');
      }
      at++;
      return s;
    }
    const word = /^(True|False|None|-?\d+(\.\d+)?)/.exec(text.slice(at))?.[0];
    if (!word) throw new Error(`Python literal: unexpected "${c}" at ${at}`);
    at += word.length;
    return word === 'True' ? true : word === 'False' ? false : word === 'None' ? null : Number(word);
  };
  const result = value();
  space();
  if (at !== text.length) throw new Error(`Python literal: text after the value at ${at}`);
  return result;
}

/** docs/emulator-differences.md: ListTags answers an event source mapping's tags as a list, not a map. */
export const ESM_TAGS_LIST = 'lambda.esm-tags-list';

const SQS_NUMBERS = [
  'MessageRetentionPeriod',
  'VisibilityTimeout',
  'DelaySeconds',
  'MaximumMessageSize',
  'ReceiveMessageWaitTimeSeconds',
];
const SQS_BOOLEANS = ['FifoQueue', 'ContentBasedDeduplication', 'SqsManagedSseEnabled'];

export const READERS: Record<string, Reader> = {
  async 'AWS::SQS::Queue'(aws, url) {
    const attributes: Record<string, string> | undefined = await orUndefined(
      async () => (await aws.sqs.call('GetQueueAttributes', { QueueUrl: url, AttributeNames: ['All'] })).Attributes,
    );
    if (!attributes) return undefined;
    const tags = (await aws.sqs.call('ListQueueTags', { QueueUrl: url })).Tags;
    const props: Record<string, unknown> = {
      QueueName: url!.split('/').pop(),
      DeduplicationScope: attributes.DeduplicationScope,
      FifoThroughputLimit: attributes.FifoThroughputLimit,
      KmsMasterKeyId: attributes.KmsMasterKeyId,
      RedrivePolicy: parseJson(attributes.RedrivePolicy),
      RedriveAllowPolicy: parseJson(attributes.RedriveAllowPolicy),
      Tags: tagList(tags),
    };
    for (const n of SQS_NUMBERS) props[n] = attributes[n] === undefined ? undefined : Number(attributes[n]);
    for (const b of SQS_BOOLEANS) props[b] = attributes[b] === undefined ? undefined : attributes[b] === 'true';
    return {
      ref: url!,
      attrs: { Arn: attributes.QueueArn!, QueueName: url!.split('/').pop()!, QueueUrl: url! },
      props: withoutUndefined(props),
    };
  },

  async 'AWS::Logs::LogGroup'(aws, name) {
    const groups: Answer[] = (await aws.logs.call('DescribeLogGroups', { logGroupNamePrefix: name })).logGroups ?? [];
    const group = groups.find((g) => g.logGroupName === name);
    if (!group) return undefined;
    const tags = (await aws.logs.call('ListTagsLogGroup', { logGroupName: name })).tags;
    return {
      ref: name!,
      attrs: { Arn: group.arn },
      props: withoutUndefined({ LogGroupName: name, RetentionInDays: group.retentionInDays, Tags: tagList(tags) }),
    };
  },

  async 'AWS::IAM::Role'(aws, name) {
    const role: Answer = await orUndefined(async () => (await aws.iam.call('GetRole', { RoleName: name })).Role);
    if (!role) return undefined;
    const policyNames: string[] = (await aws.iam.call('ListRolePolicies', { RoleName: name })).PolicyNames ?? [];
    const policies = [];
    const quirks: string[] = [];
    for (const PolicyName of policyNames) {
      const doc = decodeURIComponent(
        (await aws.iam.call('GetRolePolicy', { RoleName: name, PolicyName })).PolicyDocument,
      );
      try {
        policies.push({ PolicyName, PolicyDocument: JSON.parse(doc) });
      } catch {
        // The emulator answers an inline policy CloudFormation created as the text of a Python dict.
        quirks.push(ROLE_POLICY_REPR);
        policies.push({ PolicyName, PolicyDocument: pythonLiteral(doc) });
      }
    }
    const attached: Answer[] =
      (await aws.iam.call('ListAttachedRolePolicies', { RoleName: name })).AttachedPolicies ?? [];
    const tags: Answer[] = (await aws.iam.call('ListRoleTags', { RoleName: name })).Tags ?? [];
    return {
      quirks,
      ref: name!,
      attrs: { Arn: role.Arn, RoleId: role.RoleId },
      props: withoutUndefined({
        RoleName: role.RoleName,
        Path: role.Path,
        Description: role.Description,
        MaxSessionDuration: role.MaxSessionDuration,
        AssumeRolePolicyDocument: JSON.parse(decodeURIComponent(role.AssumeRolePolicyDocument)),
        Policies: policies,
        ManagedPolicyArns: attached.map((p) => p.PolicyArn),
        Tags: tags.map(({ Key, Value }) => ({ Key, Value })),
      }),
    };
  },

  async 'AWS::Lambda::Function'(aws, name) {
    const fn: Answer = await orUndefined(() => aws.lambda.call('GetFunction', { FunctionName: name }));
    if (!fn) return undefined;
    const c = fn.Configuration;
    const tags = (await aws.lambda.call('ListTags', { Resource: c.FunctionArn })).Tags;
    const concurrency = await aws.lambda.call('GetFunctionConcurrency', { FunctionName: name });
    return {
      ref: name!,
      attrs: { Arn: c.FunctionArn },
      props: withoutUndefined({
        FunctionName: c.FunctionName,
        Description: c.Description,
        Runtime: c.Runtime,
        Handler: c.Handler,
        MemorySize: c.MemorySize,
        Timeout: c.Timeout,
        Role: c.Role,
        Architectures: c.Architectures,
        Environment: c.Environment ? { Variables: c.Environment.Variables ?? {} } : undefined,
        LoggingConfig: c.LoggingConfig,
        VpcConfig: c.VpcConfig?.SubnetIds?.length
          ? { SubnetIds: c.VpcConfig.SubnetIds, SecurityGroupIds: c.VpcConfig.SecurityGroupIds }
          : undefined,
        ReservedConcurrentExecutions: concurrency.ReservedConcurrentExecutions,
        Tags: tagList(tags),
        // Code is compared with the published asset by codeProblems().
        Code: { CodeSha256: c.CodeSha256 },
      }),
    };
  },

  async 'AWS::Lambda::EventSourceMapping'(aws, uuid) {
    const m: Answer = await orUndefined(() => aws.lambda.call('GetEventSourceMapping', { UUID: uuid }));
    if (!m) return undefined;
    const answered = m.EventSourceMappingArn
      ? (await aws.lambda.call('ListTags', { Resource: m.EventSourceMappingArn })).Tags
      : undefined;
    const quirks: string[] = [];
    // Lambda answers tags as a map; the emulator answers a mapping's as a list of {Key, Value}.
    if (Array.isArray(answered)) quirks.push(ESM_TAGS_LIST);
    const tags: Record<string, string> | undefined = Array.isArray(answered)
      ? Object.fromEntries(answered.map((t: Answer) => [t.Key, t.Value]))
      : answered;
    return {
      quirks,
      ref: uuid!,
      attrs: { Id: uuid!, EventSourceMappingArn: m.EventSourceMappingArn },
      props: withoutUndefined({
        BatchSize: m.BatchSize,
        EventSourceArn: m.EventSourceArn,
        // The template names the function; the mapping answers its ARN.
        FunctionName: String(m.FunctionArn).split(':function:')[1],
        FunctionResponseTypes: m.FunctionResponseTypes,
        MaximumBatchingWindowInSeconds: m.MaximumBatchingWindowInSeconds,
        ScalingConfig: m.ScalingConfig,
        Enabled: m.State === undefined ? undefined : m.State === 'Enabled' || m.State === 'Enabling',
        Tags: tags ? tagList(tags) : undefined,
      }),
    };
  },

  async 'AWS::Events::Rule'(aws, name) {
    const rule: Answer = await orUndefined(() => aws.events.call('DescribeRule', { Name: name }));
    if (!rule) return undefined;
    const targets: Answer[] = (await aws.events.call('ListTargetsByRule', { Rule: name })).Targets ?? [];
    const tags: Answer[] = (await aws.events.call('ListTagsForResource', { ResourceARN: rule.Arn })).Tags ?? [];
    return {
      ref: name!,
      attrs: { Arn: rule.Arn },
      props: withoutUndefined({
        Name: rule.Name,
        Description: rule.Description,
        EventBusName: rule.EventBusName,
        EventPattern: parseJson(rule.EventPattern),
        ScheduleExpression: rule.ScheduleExpression,
        State: rule.State,
        Targets: targets,
        Tags: tags.map(({ Key, Value }) => ({ Key, Value })),
      }),
    };
  },

  async 'AWS::Lambda::Permission'(aws, _id, props) {
    const p = props();
    const policy: Answer = await orUndefined(() => aws.lambda.call('GetPolicy', { FunctionName: p.FunctionName }));
    if (!policy) return undefined;
    const statements: Answer[] = JSON.parse(policy.Policy).Statement ?? [];
    const statement = statements.find(
      (s) =>
        (s.Condition?.ArnLike?.['AWS:SourceArn'] ?? undefined) === p.SourceArn &&
        (s.Principal?.Service ?? s.Principal?.AWS ?? s.Principal) === p.Principal,
    );
    if (!statement) return undefined;
    return {
      ref: statement.Sid,
      attrs: {},
      props: withoutUndefined({
        Action: statement.Action,
        FunctionName: statement.Resource,
        Principal: statement.Principal?.Service ?? statement.Principal?.AWS ?? statement.Principal,
        SourceArn: statement.Condition?.ArnLike?.['AWS:SourceArn'],
        SourceAccount: statement.Condition?.StringEquals?.['AWS:SourceAccount'],
      }),
    };
  },

  async 'AWS::CloudWatch::Dashboard'(aws, name) {
    const xml = await orUndefined(() => aws.cloudWatch('GetDashboard', { DashboardName: name! }));
    const body = xml ? xmlText(xml, 'DashboardBody') : undefined;
    if (!body) return undefined;
    return {
      ref: name!,
      attrs: {},
      props: { DashboardName: xmlText(xml!, 'DashboardName') ?? name, DashboardBody: body },
    };
  },

  async 'AWS::SQS::QueuePolicy'(aws, _id, props) {
    const queues = props().Queues as string[];
    const policies: unknown[] = [];
    for (const url of queues) {
      const attributes = (await aws.sqs.call('GetQueueAttributes', { QueueUrl: url, AttributeNames: ['Policy'] }))
        .Attributes;
      if (!attributes?.Policy) return undefined;
      policies.push(JSON.parse(attributes.Policy));
    }
    return { ref: '', attrs: {}, props: { Queues: queues, PolicyDocument: policies[0] } };
  },

  async 'AWS::CloudWatch::Alarm'(aws, _id, props) {
    const name = props().AlarmName as string;
    const xml = await aws.cloudWatch('DescribeAlarms', { 'AlarmNames.member.1': name });
    if (!xml.includes(`<AlarmName>${name}</AlarmName>`)) return undefined;
    return { ref: name, attrs: {}, props: { AlarmName: name } };
  },

  async 'AWS::EKS::AccessEntry'(aws, _id, props) {
    const p = props();
    const entries: string[] | undefined = await aws.eks
      .call('ListAccessEntries', { clusterName: p.ClusterName })
      .then((a: Answer) => a.accessEntries as string[])
      .catch(() => undefined);
    if (!entries?.includes(p.PrincipalArn as string)) return undefined;
    return { ref: String(p.PrincipalArn), attrs: {}, props: { PrincipalArn: p.PrincipalArn } };
  },

  async 'AWS::EKS::PodIdentityAssociation'(aws, _id, props) {
    const p = props();
    const associations: Answer[] | undefined = await aws.eks
      .call('ListPodIdentityAssociations', {
        clusterName: p.ClusterName,
        namespace: p.Namespace,
        serviceAccount: p.ServiceAccount,
      })
      .then((a: Answer) => a.associations)
      .catch(() => undefined);
    if (!associations?.length) return undefined;
    return { ref: '', attrs: {}, props: { ServiceAccount: p.ServiceAccount } };
  },
};

/** Types whose physical ID the readers start from; the others are found from their (resolved) properties. */
const FOUND_BY_PROPERTIES = new Set([
  'AWS::Lambda::Permission',
  'AWS::SQS::QueuePolicy',
  'AWS::CloudWatch::Alarm',
  'AWS::EKS::AccessEntry',
  'AWS::EKS::PodIdentityAssociation',
]);

/** Resolves CloudFormation intrinsic functions against the stack and what was read of its resources. */
export function resolver(stack: StackInfo, observed: Map<string, Observed>) {
  const pseudo: Record<string, string> = {
    'AWS::Region': stack.region,
    'AWS::AccountId': stack.account,
    'AWS::Partition': 'aws',
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': stack.stackName,
    'AWS::StackId': stack.stackId,
    'AWS::NoValue': '',
  };
  const ref = (name: string): string => {
    if (name in pseudo) return pseudo[name]!;
    if (name in stack.parameters) return stack.parameters[name]!;
    const o = observed.get(name);
    if (!o) throw new Error(`Ref ${name}: not read from the emulator`);
    return o.ref;
  };
  const att = (id: string, attr: string): string => {
    const value = observed.get(id)?.attrs[attr];
    if (value === undefined) throw new Error(`Fn::GetAtt ${id}.${attr}: not read from the emulator`);
    return value;
  };
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value);
    if (entries.length === 1) {
      const [fn, arg] = entries[0]! as [string, Answer];
      if (fn === 'Ref') return ref(arg);
      if (fn === 'Fn::GetAtt')
        return Array.isArray(arg) ? att(arg[0], arg[1]) : att(...(arg.split('.') as [string, string]));
      if (fn === 'Fn::Join') return (resolve(arg[1]) as unknown[]).join(arg[0]);
      if (fn === 'Fn::Select') return (resolve(arg[1]) as unknown[])[Number(resolve(arg[0]))];
      if (fn === 'Fn::Split') return String(resolve(arg[1])).split(arg[0]);
      if (fn === 'Fn::Sub') {
        const [text, vars] = Array.isArray(arg)
          ? [arg[0] as string, (arg[1] ?? {}) as Record<string, unknown>]
          : [arg as string, {}];
        return text.replace(/\$\{([^}!]+)\}/g, (_, name: string) => {
          if (name in vars) return String(resolve(vars[name]));
          const dot = name.indexOf('.');
          return dot > 0 && !name.startsWith('AWS::') ? att(name.slice(0, dot), name.slice(dot + 1)) : ref(name);
        });
      }
      if (fn.startsWith('Fn::')) throw new Error(`${fn} is not resolved by the test`);
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, resolve(v)]));
  };
  return resolve;
}

/** Keyed lists: matched element by element on the key, not by position. Tags may carry more (AWS adds its own). */
const KEYED_LISTS: Record<string, { key: string; more: boolean }> = {
  Tags: { key: 'Key', more: true },
  Policies: { key: 'PolicyName', more: false },
  Targets: { key: 'Id', more: false },
};

/** One place where the emulator's answer is not what the template asked for. */
export interface Difference {
  /** `<logical ID>.<property>...`, list elements as `[index]` or `[key]`. */
  path: string;
  expected: unknown;
  actual: unknown;
}

export const describeDifference = (d: Difference) =>
  `${d.path}: template ${JSON.stringify(d.expected)}, emulator ${d.actual === undefined ? 'nothing' : JSON.stringify(d.actual)}`;

/**
 * Where `actual` differs from what `expected` asks: every key of an expected object must match (the service may
 * answer defaults besides), lists element by element, scalars by their text (SQS answers "true", "360").
 */
export function differences(expected: unknown, actual: unknown, path: string, out: Difference[] = []): Difference[] {
  const differ = () => out.push({ path, expected, actual });
  if (typeof expected === 'string' && actual !== null && typeof actual === 'object') {
    // A JSON document the template gives as text (a dashboard body, a policy built with Fn::Join).
    let parsed: unknown;
    try {
      parsed = JSON.parse(expected);
    } catch {
      differ();
      return out;
    }
    return differences(parsed, actual, path, out);
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) {
      differ();
      return out;
    }
    const keyed = KEYED_LISTS[path.split('.').pop() ?? ''];
    if (keyed) {
      const byKey = new Map(actual.map((a: Answer) => [a?.[keyed.key], a]));
      for (const e of expected as Answer[]) {
        const k = e?.[keyed.key];
        differences(e, byKey.get(k), `${path}[${k}]`, out);
      }
      if (!keyed.more) {
        const wanted = new Set((expected as Answer[]).map((e) => e?.[keyed.key]));
        for (const [k, a] of byKey)
          if (!wanted.has(k)) out.push({ path: `${path}[${k}]`, expected: undefined, actual: a });
      }
      return out;
    }
    if (expected.length !== actual.length) {
      differ();
      return out;
    }
    expected.forEach((e, i) => {
      differences(e, actual[i], `${path}[${i}]`, out);
    });
    return out;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') {
      differ();
      return out;
    }
    for (const [k, v] of Object.entries(expected)) differences(v, (actual as Answer)[k], `${path}.${k}`, out);
    return out;
  }
  if (actual === undefined || String(expected) !== String(actual)) differ();
  return out;
}

export interface ReadBack {
  /** What was read of each resource the emulator has; absent: the emulator has nothing for it. */
  observed: Map<string, Observed>;
  /** Each resource's template properties, intrinsic functions resolved. */
  expected: Map<string, Record<string, unknown>>;
  /** Resources whose properties could not be resolved (they refer to something the emulator does not have). */
  unresolved: Map<string, string>;
}

/** Reads every resource of the template back from the emulator. */
export async function readBack(aws: EmulatorAws, template: Template, stack: StackInfo): Promise<ReadBack> {
  const observed = new Map<string, Observed>();
  const expected = new Map<string, Record<string, unknown>>();
  const unresolved = new Map<string, string>();
  const resolve = resolver(stack, observed);
  const entries = Object.entries(template.Resources);
  const unknown = entries.filter(([, r]) => !READERS[r.Type]).map(([id, r]) => `${id} (${r.Type})`);
  if (unknown.length > 0) throw new Error(`no reader for ${unknown.join(', ')}: add one to test/deploy/read-back.ts`);
  // Those with a physical ID first: the others' properties refer to them.
  for (const [id, r] of entries.filter(([, r]) => !FOUND_BY_PROPERTIES.has(r.Type))) {
    const physicalId = stack.physicalIds.get(id);
    const o = physicalId ? await READERS[r.Type]!(aws, physicalId, () => ({})) : undefined;
    if (o) observed.set(id, o);
  }
  for (const [id, r] of entries) {
    try {
      expected.set(id, resolve(r.Properties ?? {}) as Record<string, unknown>);
    } catch (err) {
      unresolved.set(id, (err as Error).message);
    }
  }
  for (const [id, r] of entries.filter(([, r]) => FOUND_BY_PROPERTIES.has(r.Type))) {
    if (!expected.has(id)) continue;
    const o = await READERS[r.Type]!(aws, stack.physicalIds.get(id), () => expected.get(id)!);
    if (o) observed.set(id, o);
  }
  return { observed, expected, unresolved };
}
