import { Readable } from 'node:stream';
import { DescribeAvailabilityZonesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { HttpResponse } from '@smithy/protocol-http';
import { describe, expect, it } from 'vitest';
import { Ec2Adapter } from '../aws/ec2-adapter.ts';
import { type AwsCallDetail, instrumentAwsClient } from './aws-call-metrics.ts';
import { MetricName, RecordingMetrics } from './metrics.ts';

/**
 * Real SDK clients whose only fake is the HTTP layer, so the whole middleware stack (serialization, retries,
 * error parsing) runs around the counting middleware as it does in Lambda.
 */
type Canned = { status: number; body: string; headers?: Record<string, string> } | Error;

function cannedHttp(answers: Canned[]) {
  const http = {
    requests: 0,
    async handle() {
      const answer = answers[Math.min(http.requests, answers.length - 1)]!;
      http.requests++;
      if (answer instanceof Error) throw answer;
      return {
        response: new HttpResponse({
          statusCode: answer.status,
          headers: { 'content-type': 'text/xml', ...answer.headers },
          body: Readable.from([Buffer.from(answer.body)]),
        }),
      };
    },
  };
  return http;
}

/** The SDK's own retry loop, minus the waiting: up to `maxAttempts` attempts for anything but a client error. */
function retriesWithoutDelay(maxAttempts: number) {
  const token = (retries: number) => ({ getRetryCount: () => retries, getRetryDelay: () => 0 });
  return {
    acquireInitialRetryToken: async () => token(0),
    async refreshRetryTokenForRetry(previous: { getRetryCount(): number }, info: { errorType: string }) {
      const retries = previous.getRetryCount() + 1;
      if (info.errorType === 'CLIENT_ERROR' || retries >= maxAttempts) throw new Error('out of retries');
      return token(retries);
    },
    recordSuccess() {},
  };
}

const credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret' };

function ec2Client(answers: Canned[]) {
  const http = cannedHttp(answers);
  const client = new EC2Client({
    region: 'us-east-1',
    credentials,
    requestHandler: http,
    retryStrategy: retriesWithoutDelay(3),
  });
  return { client, http };
}

const ZONES_XML = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r-1</requestId>
  <availabilityZoneInfo>
    <item><zoneName>us-east-1a</zoneName><zoneId>use1-az4</zoneId><zoneType>availability-zone</zoneType></item>
  </availabilityZoneInfo>
</DescribeAvailabilityZonesResponse>`;

function ec2Error(code: string, status: number): Canned {
  return {
    status,
    body: `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>${code}</Code><Message>${code} happened</Message></Error></Errors><RequestID>r-2</RequestID></Response>`,
  };
}

const ZONES = { awsService: 'EC2', operation: 'DescribeAvailabilityZones' };

/** One SendMessageBatch through an instrumented SQS client, which SQS answers with a throttling error; the error. */
async function throttledSendMessageBatch(metrics: RecordingMetrics, detail: AwsCallDetail): Promise<unknown> {
  const http = cannedHttp([
    {
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: JSON.stringify({ __type: 'com.amazonaws.sqs#RequestThrottled', message: 'slow down' }),
    },
  ]);
  const client = new SQSClient({ region: 'us-east-1', credentials, requestHandler: http, maxAttempts: 1 });
  instrumentAwsClient(client, metrics, detail);
  return client
    .send(new SendMessageBatchCommand({ QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q.fifo', Entries: [] }))
    .catch((err: unknown) => err);
}

describe('instrumentAwsClient', () => {
  it('counts a successful call once, by service and operation', async () => {
    const { client, http } = ec2Client([{ status: 200, body: ZONES_XML }]);
    const metrics = new RecordingMetrics();

    const zones = await new Ec2Adapter(instrumentAwsClient(client, metrics)).describeAvailabilityZones();

    expect(zones).toEqual([{ zoneName: 'us-east-1a', zoneId: 'use1-az4', zoneType: 'availability-zone' }]);
    expect(http.requests).toBe(1);
    expect(metrics.entries).toEqual([{ name: MetricName.AwsCalls, value: 1, dimensions: ZONES }]);
  });

  it.each([
    ['throttled on every attempt', [ec2Error('RequestLimitExceeded', 503)], 3, 1],
    ['throttled, then answered', [ec2Error('RequestLimitExceeded', 503), { status: 200, body: ZONES_XML }], 2, 0],
    ['failing on every attempt, but not throttled', [ec2Error('InternalError', 500)], 3, 0],
    ['refused', [ec2Error('UnauthorizedOperation', 403)], 1, 0],
    ['unreachable', [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })], 3, 0],
  ])('counts one call however often the SDK retries (%s)', async (_, answers, requests, throttles) => {
    const { client, http } = ec2Client(answers);
    const metrics = new RecordingMetrics();
    instrumentAwsClient(client, metrics);

    await client.send(new DescribeAvailabilityZonesCommand({})).catch(() => undefined);

    expect(http.requests).toBe(requests);
    expect(metrics.total(MetricName.AwsCalls, ZONES)).toBe(1);
    expect(metrics.total(MetricName.AwsThrottles, ZONES)).toBe(throttles);
  });

  it('passes the error on unchanged', async () => {
    const { client } = ec2Client([ec2Error('UnauthorizedOperation', 403)]);
    instrumentAwsClient(client, new RecordingMetrics());

    await expect(client.send(new DescribeAvailabilityZonesCommand({}))).rejects.toMatchObject({
      name: 'UnauthorizedOperation',
      message: 'UnauthorizedOperation happened',
    });
  });

  it('names other services and operations the same way', async () => {
    const metrics = new RecordingMetrics();
    const error = await throttledSendMessageBatch(metrics, 'operation');

    expect((error as Error).name).toBe('RequestThrottled');
    const sendBatch = { awsService: 'SQS', operation: 'SendMessageBatch' };
    expect(metrics.total(MetricName.AwsCalls, sendBatch)).toBe(1);
    expect(metrics.total(MetricName.AwsThrottles, sendBatch)).toBe(1);
    expect(metrics.total(MetricName.AwsCalls, ZONES)).toBe(0);
  });

  it('counts calls by AWS service only with detail "service", and throttles still by operation', async () => {
    const metrics = new RecordingMetrics();
    await throttledSendMessageBatch(metrics, 'service');

    expect(metrics.entries.filter((e) => e.name === MetricName.AwsCalls).map((e) => e.dimensions)).toEqual([
      { awsService: 'SQS' },
    ]);
    expect(metrics.total(MetricName.AwsThrottles, { awsService: 'SQS', operation: 'SendMessageBatch' })).toBe(1);
  });

  it('counts each call once even when a client is instrumented twice', async () => {
    const { client } = ec2Client([{ status: 200, body: ZONES_XML }]);
    const first = new RecordingMetrics();
    const second = new RecordingMetrics();

    instrumentAwsClient(client, first);
    instrumentAwsClient(client, second);
    await client.send(new DescribeAvailabilityZonesCommand({}));
    await client.send(new DescribeAvailabilityZonesCommand({}));

    expect(first.total(MetricName.AwsCalls) + second.total(MetricName.AwsCalls)).toBe(2);
    expect(second.total(MetricName.AwsCalls, ZONES)).toBe(2);
  });

  it('returns the client it was given', () => {
    const { client } = ec2Client([]);

    expect(instrumentAwsClient(client, new RecordingMetrics())).toBe(client);
  });
});
