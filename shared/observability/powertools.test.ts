import middy from '@middy/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MetricName } from './metrics.ts';
import { createPowertools, publishMetrics } from './powertools.ts';

/** Every line Powertools writes (its Console writes to process.stdout and process.stderr), parsed. */
let lines: string[];
beforeEach(() => {
  lines = [];
  const take = (chunk: unknown) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(take as typeof process.stdout.write);
  vi.spyOn(process.stderr, 'write').mockImplementation(take as typeof process.stderr.write);
});
afterEach(() => vi.restoreAllMocks());

type Emf = {
  _aws: {
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
} & Record<string, unknown>;

const documents = () => lines.filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l) as Emf);
const ec2Describe = { awsService: 'EC2', operation: 'DescribeInstances' };

describe('powertoolsMetrics', () => {
  it('writes nothing until the invocation ends, then one EMF document per dimension set with every value', () => {
    const { metricsPort } = createPowertools('service');
    metricsPort.count(MetricName.AwsCalls, ec2Describe);
    metricsPort.count(MetricName.AwsCalls, { operation: 'DescribeInstances', awsService: 'EC2' });
    metricsPort.count(MetricName.AwsCalls, { awsService: 'ElasticLoadBalancingV2', operation: 'DescribeTags' });
    metricsPort.timing(MetricName.ReconcileDuration, 12, { reconciler: 'service' });
    metricsPort.timing(MetricName.ReconcileDuration, 30, { reconciler: 'service' });
    metricsPort.count(MetricName.Reconciles, { reconciler: 'service', result: 'done' }, 2);
    metricsPort.count(MetricName.NodesInitialized);
    expect(lines).toEqual([]);

    metricsPort.publish();
    const docs = documents();
    expect(docs).toHaveLength(5);
    expect(lines).toHaveLength(5);
    const find = (pairs: Record<string, string>) =>
      docs.filter((d) => Object.entries(pairs).every(([k, v]) => d[k] === v));
    const [describe] = find({ operation: 'DescribeInstances' });
    // Both orders of the same dimensions are one set; the function stays a dimension of every set.
    expect(describe).toMatchObject({ service: 'service', awsService: 'EC2', AwsCalls: [1, 1] });
    expect(describe!._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: 'ServerlessCCM',
      Dimensions: [['service', 'awsService', 'operation']],
      Metrics: [{ Name: 'AwsCalls', Unit: 'Count' }],
    });
    expect(find({ operation: 'DescribeTags' })[0]).toMatchObject({ AwsCalls: 1 });
    expect(find({ reconciler: 'service' }).map((d) => d.ReconcileDuration ?? d.Reconciles)).toEqual(
      expect.arrayContaining([[12, 30], 2]),
    );
    expect(docs.find((d) => 'NodesInitialized' in d)).toMatchObject({ service: 'service', NodesInitialized: 1 });
  });

  it('keeps the dimensions on every document when a set passes 100 values', () => {
    const { metricsPort } = createPowertools('service');
    for (let i = 0; i < 150; i++) metricsPort.count(MetricName.AwsCalls, ec2Describe);
    metricsPort.publish();
    const docs = documents();
    expect(docs.map((d) => (d.AwsCalls as number[]).length)).toEqual([100, 50]);
    for (const doc of docs) expect(doc).toMatchObject({ service: 'service', ...ec2Describe });
  });

  it('writes nothing, not even a warning, for an invocation without metrics, and nothing twice', () => {
    const { metricsPort } = createPowertools('route');
    metricsPort.publish();
    expect(lines).toEqual([]);
    metricsPort.count(MetricName.AwsCalls, ec2Describe);
    metricsPort.publish();
    metricsPort.publish();
    expect(documents()).toHaveLength(1);
    expect(lines).toHaveLength(1);
  });

  it('publishes when the handler throws, through the middleware', async () => {
    const { metricsPort } = createPowertools('node');
    const handler = middy(async () => {
      metricsPort.count(MetricName.AwsCalls, ec2Describe);
      throw new Error('boom');
    }).use(publishMetrics(metricsPort));
    await expect(handler({}, {} as never)).rejects.toThrow('boom');
    expect(documents()).toEqual([expect.objectContaining({ AwsCalls: 1, operation: 'DescribeInstances' })]);
  });
});

describe('powertoolsLog', () => {
  it('keeps fields named like the keys Powertools owns, under field_<name>, without a warning line', () => {
    const { log } = createPowertools('service');
    log.warn('node gets no route', { node: 'node-1', message: 'route table full', service: 'default/web' });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'WARN',
      message: 'node gets no route',
      service: 'service',
      node: 'node-1',
      field_message: 'route table full',
      field_service: 'default/web',
    });
  });
});
