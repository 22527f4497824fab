import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeRuleCommand,
  EventBridgeClient,
  ListTargetsByRuleCommand,
  PutEventsCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type CliIo,
  createLocalEvents,
  eventBridgeQueuePolicy,
  type LocalEventsClients,
  localEventsNames,
  main,
  QUEUE_ATTRIBUTES,
  removeLocalEvents,
  TARGET_ID,
} from '../scripts/local-events.ts';
import { EC2_EVENT_RULE_IDS } from '../shared/events/ec2-event-patterns.ts';
import { stubCode } from '../stacks/code.ts';
import { synthesizeOffline } from '../stacks/synth.ts';
import { analyzeEntries } from './helpers/code-usage.ts';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator, startEmulator } from './helpers/emulator.ts';

/**
 * scripts/local-events.ts (`npm run events:create` / `events:remove`): the local EC2 events plumbing on an
 * AWS API emulator, held to the stack's synthesized template (the same patterns, the same queue policy), and
 * the command line's arguments without any AWS.
 */

type Json = Record<string, unknown>;

/** What one run of the command line printed, and its exit code. */
async function cli(argv: string[], env: NodeJS.ProcessEnv = {}, makeClients?: () => LocalEventsClients) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l) };
  const code = await main(argv, env, io, makeClients);
  return { code, out, err: err.join('\n') };
}

describe('events:create / events:remove command line', () => {
  it.each([
    [['create'], '--name is required'],
    [['create', '--name', 'a b'], "--name must be 1-40 letters, digits, '-' or '_'"],
    [['create', '--name', 'x'.repeat(41)], '--name must be 1-40'],
    [['create', '--name', 'dev'], 'no region: pass --region or set AWS_REGION'],
    [['launch', '--name', 'dev', '--region', 'eu-west-1'], 'create or remove?'],
    [['create', '--name', 'dev', '--nme', 'x'], "Unknown option '--nme'"],
  ])('refuses %j with a usage error (exit 2): %s', async (argv, message) => {
    const { code, out, err } = await cli(argv);

    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err).toContain(message);
    expect(err).toContain('usage: npm run events:create -- --name NAME');
  });

  it('says what failed and exits 1 when the endpoint cannot be reached', async () => {
    const unreachable = {
      endpoint: 'http://127.0.0.1:9',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      maxAttempts: 1,
    };
    const clients = () => ({ sqs: new SQSClient(unreachable), events: new EventBridgeClient(unreachable) });

    const { code, out, err } = await cli(['create', '--name', 'dev', '--region', 'eu-west-1'], {}, clients);

    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err).toMatch(/^events:create failed: /);
  });

  it('names the queue and one rule per event type after --name', () => {
    expect(localEventsNames('dev')).toEqual({
      queue: 'dev-ec2-events',
      rules: {
        StateChange: 'dev-StateChange',
        SpotInterruption: 'dev-SpotInterruption',
        RebalanceRecommendation: 'dev-RebalanceRecommendation',
        ScheduledChange: 'dev-ScheduledChange',
      },
    });
  });
});

describe('deploy/README-deploy.md "Local EC2 events plumbing"', () => {
  it('lists exactly the IAM actions events:create, events:remove and the poller call', () => {
    const root = join(import.meta.dirname, '..');
    const guide = readFileSync(join(root, 'deploy/README-deploy.md'), 'utf8');
    const section = guide.slice(guide.indexOf('### Local EC2 events plumbing'));
    const policy = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!) as { Statement: { Action: string[] }[] };
    const documented = policy.Statement.flatMap((s) => s.Action).sort();

    const script = analyzeEntries(root, { script: 'scripts/local-events.ts' }).get('script')!.awsActions;
    // The poller calls SqsReceiverPort; SqsAdapter sends ReceiveMessage and DeleteMessageBatch (IAM: DeleteMessage).
    const poller = ['sqs:ReceiveMessage', 'sqs:DeleteMessage'];
    expect(documented).toEqual([...new Set([...script, ...poller])].sort());
  }, 60_000);
});

if (!EMULATOR_AVAILABLE) console.warn(EMULATOR_SKIPPED_MESSAGE);

describe.skipIf(!EMULATOR_AVAILABLE)('local EC2 events plumbing on the AWS API emulator', () => {
  let emulator: Emulator;
  let clients: LocalEventsClients;
  /** The stack's rules, from the synthesized template: EventPattern and the queue policy statement. */
  let stackPatterns: Json[];
  let stackStatement: Json;
  const work = mkdtempSync(join(tmpdir(), 'ccm-local-events-'));

  beforeAll(async () => {
    emulator = await startEmulator();
    clients = { sqs: new SQSClient(emulator.clientConfig), events: new EventBridgeClient(emulator.clientConfig) };
    const env = {
      CCM_CLUSTER_NAME: 'prod-eu',
      CCM_REGION: 'eu-west-1',
      CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
    };
    const { template } = await synthesizeOffline({
      stage: 'test',
      env,
      outdir: join(work, 'cdk.out'),
      code: stubCode(join(work, 'code')),
    });
    const resources = Object.values(template.Resources as Record<string, { Type: string; Properties: Json }>);
    stackPatterns = resources
      .filter((r) => r.Type === 'AWS::Events::Rule' && r.Properties.EventPattern)
      .map((r) => r.Properties.EventPattern as Json);
    const policies = resources.filter((r) => r.Type === 'AWS::SQS::QueuePolicy');
    const statements = policies.flatMap((p) => (p.Properties.PolicyDocument as { Statement: Json[] }).Statement);
    stackStatement = statements.find((s) => s.Sid === 'EventBridgeRules')!;
  }, 60_000);
  afterAll(async () => {
    clients?.sqs.destroy();
    clients?.events.destroy();
    await emulator?.stop();
    rmSync(work, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await emulator.reset();
  });

  async function rule(name: string) {
    return clients.events.send(new DescribeRuleCommand({ Name: name }));
  }
  async function targets(name: string) {
    return (await clients.events.send(new ListTargetsByRuleCommand({ Rule: name }))).Targets ?? [];
  }
  async function queueAttributes(queueUrl: string): Promise<Record<string, string>> {
    return (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] })))
      .Attributes!;
  }
  const codeOf = (promise: Promise<unknown>) =>
    promise.then(
      () => 'exists',
      (err: { name: string }) => err.name,
    );

  it('creates a standard queue and one rule per event type with exactly the stack patterns, targeting it', async () => {
    const created = await createLocalEvents(clients, 'dev');

    expect(created.queueUrl).toBe(`${emulator.endpoint}/123456789012/dev-ec2-events`);
    expect(stackPatterns).toHaveLength(EC2_EVENT_RULE_IDS.length);
    const patterns: Json[] = [];
    for (const { name, arn } of created.rules) {
      const described = await rule(name);
      expect(described).toMatchObject({ Arn: arn, State: 'ENABLED', EventBusName: 'default' });
      patterns.push(JSON.parse(described.EventPattern!));
      expect(await targets(name)).toEqual([{ Id: TARGET_ID, Arn: created.queueArn }]);
    }
    const canonical = (list: Json[]) => list.map((p) => JSON.stringify(p)).sort();
    expect(canonical(patterns)).toEqual(canonical(stackPatterns));

    const attributes = await queueAttributes(created.queueUrl);
    expect(attributes.FifoQueue).toBeUndefined();
    expect(attributes).toMatchObject(QUEUE_ATTRIBUTES);
    expect(JSON.parse(attributes.Policy!)).toEqual(
      eventBridgeQueuePolicy(
        created.queueArn,
        created.rules.map((r) => r.arn),
      ),
    );
  });

  it('puts on the queue the statement the stack puts on its queue, for its own rules', async () => {
    const created = await createLocalEvents(clients, 'dev');

    const [statement] = JSON.parse((await queueAttributes(created.queueUrl)).Policy!).Statement;
    const { Resource, Condition, ...rest } = stackStatement;
    expect(statement).toEqual({
      ...rest,
      Resource: created.queueArn,
      Condition: { ArnEquals: { 'aws:SourceArn': created.rules.map((r) => r.arn) } },
    });
    expect(Object.keys(Condition as Json)).toEqual(['ArnEquals']);
    expect((Condition as { ArnEquals: { 'aws:SourceArn': unknown[] } }).ArnEquals['aws:SourceArn']).toHaveLength(4);
    expect(Resource).toEqual({ 'Fn::GetAtt': [expect.any(String), 'Arn'] });
  });

  it('creates twice in a row to the same result, and puts back what was changed by hand', async () => {
    const first = await createLocalEvents(clients, 'dev');
    await clients.sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: first.queueUrl, Attributes: { VisibilityTimeout: '600' } }),
    );
    await clients.events.send(
      new PutTargetsCommand({
        Rule: 'dev-StateChange',
        Targets: [{ Id: TARGET_ID, Arn: 'arn:aws:sqs:eu-west-1:123456789012:elsewhere' }],
      }),
    );

    const second = await createLocalEvents(clients, 'dev');

    expect(second).toEqual(first);
    expect((await queueAttributes(second.queueUrl)).VisibilityTimeout).toBe('30');
    for (const { name } of second.rules) expect(await targets(name)).toEqual([{ Id: TARGET_ID, Arn: first.queueArn }]);
  });

  it('removes the targets, the rules and the queue; a second remove is fine', async () => {
    await createLocalEvents(clients, 'dev');
    await createLocalEvents(clients, 'other');

    expect((await removeLocalEvents(clients, 'dev')).sort()).toEqual(
      [...EC2_EVENT_RULE_IDS.map((id) => `rule dev-${id}`), 'queue dev-ec2-events'].sort(),
    );

    for (const id of EC2_EVENT_RULE_IDS) expect(await codeOf(rule(`dev-${id}`))).toBe('ResourceNotFoundException');
    expect(await codeOf(clients.sqs.send(new GetQueueUrlCommand({ QueueName: 'dev-ec2-events' })))).toBe(
      'QueueDoesNotExist',
    );
    expect(await removeLocalEvents(clients, 'dev')).toEqual([]);
    // Another name's plumbing is untouched.
    expect(await codeOf(rule('other-StateChange'))).toBe('exists');
    expect(await codeOf(clients.sqs.send(new GetQueueUrlCommand({ QueueName: 'other-ec2-events' })))).toBe('exists');
  });

  it('removes what is left when pieces are gone already, and nothing when nothing was made', async () => {
    const created = await createLocalEvents(clients, 'dev');
    await clients.sqs.send(new DeleteQueueCommand({ QueueUrl: created.queueUrl }));

    expect(await removeLocalEvents(clients, 'dev')).toHaveLength(EC2_EVENT_RULE_IDS.length);
    expect(await removeLocalEvents(clients, 'never-made')).toEqual([]);
  });

  it('the command line prints only the queue URL on stdout, and removes with exit 0 twice', async () => {
    // Clients of its own: the command line destroys its clients when done.
    const fresh = () => ({
      sqs: new SQSClient(emulator.clientConfig),
      events: new EventBridgeClient(emulator.clientConfig),
    });
    const created = await cli(['create', '--name', 'dev', '--region', 'eu-west-1'], {}, fresh);
    expect(created).toMatchObject({ code: 0, out: [`${emulator.endpoint}/123456789012/dev-ec2-events`] });
    expect(created.err).toContain('--ec2-events-queue-url');

    for (const expected of ['removed rule dev-StateChange', 'nothing to remove']) {
      const removed = await cli(['remove', '--name', 'dev'], { AWS_REGION: 'eu-west-1' }, fresh);
      expect(removed).toMatchObject({ code: 0, out: [] });
      expect(removed.err).toContain(expected);
    }
  });

  it('routes an event put on the default bus that matches a pattern to the queue, and no other', async () => {
    const { queueUrl } = await createLocalEvents(clients, 'dev');
    const stateChange = { 'instance-id': 'i-0123456789abcdef0', state: 'stopped' };
    const scheduled = { service: 'EC2', eventTypeCategory: 'scheduledChange' };
    const put = await clients.events.send(
      new PutEventsCommand({
        Entries: [
          {
            Source: 'aws.ec2',
            DetailType: 'EC2 Instance State-change Notification',
            Detail: JSON.stringify(stateChange),
          },
          { Source: 'aws.ec2', DetailType: 'EC2 Instance Launch Successful', Detail: '{}' },
          { Source: 'aws.health', DetailType: 'AWS Health Event', Detail: JSON.stringify(scheduled) },
          {
            Source: 'aws.health',
            DetailType: 'AWS Health Event',
            Detail: JSON.stringify({ ...scheduled, service: 'RDS' }),
          },
        ],
      }),
    );
    expect(put.FailedEntryCount).toBe(0);

    const { Messages = [] } = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }),
    );
    const bodies = Messages.map((m) => JSON.parse(m.Body!) as Json);
    expect(bodies.map((b) => [b.source, b['detail-type'], b.detail]).sort()).toEqual(
      [
        ['aws.ec2', 'EC2 Instance State-change Notification', stateChange],
        ['aws.health', 'AWS Health Event', scheduled],
      ].sort(),
    );
  });
});
