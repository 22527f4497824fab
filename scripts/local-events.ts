/**
 * The local EC2 events plumbing: one command creates it, one removes it, on AWS or any AWS-compatible endpoint.
 *
 *   npm run events:create -- --name NAME [--region REGION]   prints the queue URL (for --ec2-events-queue-url)
 *   npm run events:remove -- --name NAME [--region REGION]
 *
 * What the stack deploys for the `ec2-events` router, minus the router: a standard SQS queue `NAME-ec2-events`
 * whose policy lets only these rules send to it, and one EventBridge rule per event type on the default bus,
 * `NAME-<type>`, with the stack's own patterns (shared/events/ec2-event-patterns.ts) and the queue as target.
 * `npm start -- --real` long-polls that queue (bin/ec2-events-poller.ts), so a local run hears EC2 as the
 * deployed router does. Both commands may be run again: create converges, remove skips what is gone.
 * Endpoints follow the SDK's settings (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_EVENTBRIDGE),
 * the region AWS_REGION or --region. The IAM actions it needs are in deploy/README-deploy.md.
 */
import { parseArgs } from 'node:util';
import {
  DeleteRuleCommand,
  EventBridgeClient,
  ListTargetsByRuleCommand,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { awsErrorCode } from '../shared/aws/errors.ts';
import { EC2_EVENT_PATTERNS, EC2_EVENT_RULE_IDS, type Ec2EventRuleId } from '../shared/events/ec2-event-patterns.ts';

export interface LocalEventsClients {
  sqs: SQSClient;
  events: EventBridgeClient;
}

export interface LocalEventsNames {
  queue: string;
  rules: Record<Ec2EventRuleId, string>;
}

export interface LocalEventsCreated {
  queueUrl: string;
  queueArn: string;
  rules: { id: Ec2EventRuleId; name: string; arn: string }[];
}

/** The one target each rule has; PutTargets with the same ID replaces it, so create converges. */
export const TARGET_ID = 'ec2-events-queue';

/**
 * Queue settings. Retention as the stack's default (CCM_EC2_EVENTS_RETENTION_SECONDS, 900 s: an EC2 event
 * minutes old is no news, and the resync catches up); SQS's default visibility timeout, ample for an
 * in-process delivery; encrypted at rest with SQS-managed keys, as the stack's queue is.
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html
 */
export const QUEUE_ATTRIBUTES = {
  MessageRetentionPeriod: '900',
  VisibilityTimeout: '30',
  SqsManagedSseEnabled: 'true',
} as const;

/** `NAME-RebalanceRecommendation` must fit EventBridge's 64-character rule names, `[.\-_A-Za-z0-9]+`. */
const NAME = /^[A-Za-z0-9_-]{1,40}$/;

export function localEventsNames(name: string): LocalEventsNames {
  if (!NAME.test(name)) {
    throw new Error(`--name must be 1-40 letters, digits, '-' or '_' (it prefixes the queue and rule names): ${name}`);
  }
  const rules = Object.fromEntries(EC2_EVENT_RULE_IDS.map((id) => [id, `${name}-${id}`]));
  return { queue: `${name}-ec2-events`, rules: rules as Record<Ec2EventRuleId, string> };
}

/**
 * The statement the stack puts on its queue (stacks/ec2-events.ts): EventBridge may send, for these rules
 * only, so no other rule in the account can feed the router "events".
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-sqs-permissions
 */
export function eventBridgeQueuePolicy(queueArn: string, ruleArns: readonly string[]) {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'EventBridgeRules',
        Effect: 'Allow',
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: queueArn,
        Condition: { ArnEquals: { 'aws:SourceArn': [...ruleArns] } },
      },
    ],
  };
}

/** Creates (or brings back in line) the queue, the rules, the queue's policy and the rules' targets. */
export async function createLocalEvents(clients: LocalEventsClients, name: string): Promise<LocalEventsCreated> {
  const names = localEventsNames(name);
  const { queueUrl, queueArn } = await ensureQueue(clients.sqs, names.queue);
  const rules: LocalEventsCreated['rules'] = [];
  for (const id of EC2_EVENT_RULE_IDS) {
    const pattern = EC2_EVENT_PATTERNS[id];
    // PutRule creates or updates: a rule left from an earlier run gets the current pattern.
    // https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html
    const { RuleArn } = await clients.events.send(
      new PutRuleCommand({
        Name: names.rules[id],
        EventPattern: JSON.stringify(pattern),
        State: 'ENABLED',
        Description: `${names.queue}: ${pattern['detail-type'][0]}`,
      }),
    );
    rules.push({ id, name: names.rules[id], arn: RuleArn! });
  }
  // The policy before the targets, so the first event a target sends is allowed.
  await clients.sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: queueUrl,
      Attributes: {
        Policy: JSON.stringify(
          eventBridgeQueuePolicy(
            queueArn,
            rules.map((r) => r.arn),
          ),
        ),
      },
    }),
  );
  for (const rule of rules) {
    // PutTargets reports refused targets in the answer, not as an error.
    // https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutTargets.html
    const { FailedEntryCount, FailedEntries } = await clients.events.send(
      new PutTargetsCommand({ Rule: rule.name, Targets: [{ Id: TARGET_ID, Arn: queueArn }] }),
    );
    if (FailedEntryCount) {
      const failed = FailedEntries?.[0];
      throw new Error(`rule ${rule.name}: target refused: ${failed?.ErrorCode}: ${failed?.ErrorMessage}`);
    }
  }
  return { queueUrl, queueArn, rules };
}

/**
 * CreateQueue answers the existing queue when the attributes it is given match; when they do not (the queue
 * was changed by hand), it refuses with QueueAlreadyExists, and the attributes are set on the existing queue.
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html
 */
async function ensureQueue(sqs: SQSClient, queueName: string): Promise<{ queueUrl: string; queueArn: string }> {
  let queueUrl: string;
  try {
    ({ QueueUrl: queueUrl = '' } = await sqs.send(
      new CreateQueueCommand({ QueueName: queueName, Attributes: { ...QUEUE_ATTRIBUTES } }),
    ));
  } catch (err) {
    if (!['QueueAlreadyExists', 'QueueNameExists'].includes(awsErrorCode(err) ?? '')) throw err;
    ({ QueueUrl: queueUrl = '' } = await sqs.send(new GetQueueUrlCommand({ QueueName: queueName })));
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: queueUrl, Attributes: { ...QUEUE_ATTRIBUTES } }));
  }
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return { queueUrl, queueArn: Attributes?.QueueArn ?? '' };
}

/**
 * Removes the rules' targets, the rules and the queue; whatever is missing already is skipped. A rule must
 * have no targets before DeleteRule takes it. Returns what it removed.
 * https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_DeleteRule.html
 */
export async function removeLocalEvents(clients: LocalEventsClients, name: string): Promise<string[]> {
  const names = localEventsNames(name);
  const removed: string[] = [];
  for (const id of EC2_EVENT_RULE_IDS) {
    const rule = names.rules[id];
    const targetIds = await ruleTargetIds(clients.events, rule);
    if (targetIds === undefined) continue; // no such rule
    if (targetIds.length > 0) {
      // All of the rule's targets, not only ours: the rule is ours, and DeleteRule refuses a rule with any.
      await ifExists(() => clients.events.send(new RemoveTargetsCommand({ Rule: rule, Ids: targetIds })));
    }
    if (await ifExists(() => clients.events.send(new DeleteRuleCommand({ Name: rule })))) removed.push(`rule ${rule}`);
  }
  const queueUrl = await ifExists(
    async () => (await clients.sqs.send(new GetQueueUrlCommand({ QueueName: names.queue }))).QueueUrl,
  );
  if (queueUrl && (await ifExists(() => clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }))))) {
    removed.push(`queue ${names.queue}`);
  }
  return removed;
}

/** The IDs of a rule's targets, or undefined when there is no such rule. */
async function ruleTargetIds(events: EventBridgeClient, rule: string): Promise<string[] | undefined> {
  const ids: string[] = [];
  let nextToken: string | undefined;
  do {
    const page = await ifExists(() => events.send(new ListTargetsByRuleCommand({ Rule: rule, NextToken: nextToken })));
    if (!page) return undefined;
    ids.push(...(page.Targets ?? []).map((t) => t.Id!));
    nextToken = page.NextToken;
  } while (nextToken);
  return ids;
}

/** EventBridge's and SQS's "it is not there" (SQS's JSON and query protocols name it differently). */
const MISSING = new Set(['ResourceNotFoundException', 'QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue']);

/** The call's answer, or undefined when what it names does not exist. */
async function ifExists<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    if (MISSING.has(awsErrorCode(err) ?? '')) return undefined;
    throw err;
  }
}

/**
 * Clients on the SDK's standard settings. By default the SQS client sends each request to its QueueUrl's host,
 * which would bypass an AWS-compatible endpoint; with one configured, the endpoint wins (as shared/aws/clients.ts).
 */
export function localEventsClients(region: string, env: NodeJS.ProcessEnv = process.env): LocalEventsClients {
  const sqsEndpoint = env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL;
  return {
    sqs: new SQSClient({ region, ...(sqsEndpoint ? { useQueueUrlAsEndpoint: false } : {}) }),
    events: new EventBridgeClient({ region }),
  };
}

const USAGE = `usage: npm run events:create -- --name NAME [--region REGION]
       npm run events:remove -- --name NAME [--region REGION]

create: a standard SQS queue NAME-ec2-events and the EventBridge rules NAME-<type> on the default bus with the
        stack's EC2 event patterns and the queue as target; prints the queue URL (for --ec2-events-queue-url)
remove: the rules' targets, the rules and the queue (what is missing is skipped)
Endpoints: AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_EVENTBRIDGE); region: --region or AWS_REGION.`;

export interface CliIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

/**
 * The command line: `create|remove --name NAME [--region REGION]`. Only the queue URL goes to stdout, so
 * `$(npm run -s events:create -- --name dev)` is the URL; what was done goes to stderr. Exit 0, 1 when AWS
 * refused, 2 for a usage error.
 */
export async function main(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  io: CliIo,
  makeClients: (region: string) => LocalEventsClients = (region) => localEventsClients(region, env),
): Promise<number> {
  let command: string | undefined;
  let name: string | undefined;
  let region: string | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { name: { type: 'string' }, region: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
    });
    if (values.help) {
      io.stdout(USAGE);
      return 0;
    }
    [command] = positionals;
    if (positionals.length !== 1 || (command !== 'create' && command !== 'remove'))
      throw new Error('create or remove?');
    if (!values.name) throw new Error('--name is required');
    name = values.name;
    localEventsNames(name);
    region = values.region ?? env.AWS_REGION;
    if (!region) throw new Error('no region: pass --region or set AWS_REGION');
  } catch (err) {
    io.stderr(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const clients = makeClients(region);
  try {
    if (command === 'create') {
      const created = await createLocalEvents(clients, name);
      io.stderr(`queue ${created.queueArn}`);
      for (const rule of created.rules) io.stderr(`rule ${rule.arn} -> queue`);
      io.stderr('start the controller with: npm start -- --real --ec2-events-queue-url <the URL below>');
      io.stdout(created.queueUrl);
    } else {
      const removed = await removeLocalEvents(clients, name);
      io.stderr(removed.length > 0 ? `removed ${removed.join(', ')}` : 'nothing to remove');
    }
    return 0;
  } catch (err) {
    io.stderr(`events:${command} failed: ${awsErrorCode(err) ?? 'Error'}: ${(err as Error).message}`);
    return 1;
  } finally {
    clients.sqs.destroy();
    clients.events.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const io: CliIo = { stdout: (line) => console.log(line), stderr: (line) => console.error(line) };
  process.exitCode = await main(process.argv.slice(2), process.env, io);
}
