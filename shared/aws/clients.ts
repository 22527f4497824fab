import { ACMClient } from '@aws-sdk/client-acm';
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EC2Client } from '@aws-sdk/client-ec2';
import { ElasticLoadBalancingClient } from '@aws-sdk/client-elastic-load-balancing';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { SQSClient } from '@aws-sdk/client-sqs';
import { WAFV2Client } from '@aws-sdk/client-wafv2';
import type { Config } from '../config/config.ts';
import { envProxyAgents } from '../net/proxy.ts';
import { instrumentAwsClient } from '../observability/aws-call-metrics.ts';
import type { MetricsPort } from '../observability/metrics.ts';
import { SqsAdapter } from '../queue/sqs-adapter.ts';
import { AcmAdapter } from './acm-adapter.ts';
import { AutoScalingAdapter } from './autoscaling-adapter.ts';
import { Ec2Adapter, Ec2InstanceReads, Ec2Interfaces, Ec2LoadBalancerNetwork, Ec2Routes } from './ec2-adapter.ts';
import { ElbAdapter } from './elb-adapter.ts';
import { Elbv2Adapter } from './elbv2-adapter.ts';
import { Wafv2Adapter } from './wafv2-adapter.ts';

/**
 * Real clients, built once per Lambda container. Endpoints come from the SDK's own settings
 * (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2, ...), so the same code runs against any AWS-compatible
 * endpoint. Adaptive retry mode adds client-side rate limiting on top of the standard backoff: once
 * EC2 throttles, this container slows all its calls down, not just the one that was throttled.
 */
export function createEc2Port(config: Config, metrics: MetricsPort): Ec2Adapter {
  return new Ec2Adapter(ec2Client(config, metrics));
}

/** The instance and zone reads alone: a function that builds only this port bundles no other EC2 command. */
export function createEc2InstanceReadPort(config: Config, metrics: MetricsPort): Ec2InstanceReads {
  return new Ec2InstanceReads(ec2Client(config, metrics));
}

/** The instance reads, subnets, security groups and tags: the service function's EC2, without route or ENI commands. */
export function createEc2LoadBalancerNetworkPort(config: Config, metrics: MetricsPort): Ec2LoadBalancerNetwork {
  return new Ec2LoadBalancerNetwork(ec2Client(config, metrics));
}

/** The instance reads, route tables and routes: the route function's EC2, without security group or ENI commands. */
export function createEc2RoutePort(config: Config, metrics: MetricsPort): Ec2Routes {
  return new Ec2Routes(ec2Client(config, metrics));
}

/** The instance reads, subnets, tags, instance types and network interfaces: the IP address manager's EC2. */
export function createEc2InterfacePort(config: Config, metrics: MetricsPort): Ec2Interfaces {
  return new Ec2Interfaces(ec2Client(config, metrics));
}

/**
 * What every client here shares: the region, adaptive retries, and the proxy the environment names, if any
 * (`HTTPS_PROXY`, `NO_PROXY`, ...: shared/net/proxy.ts), as the Go controllers' calls honour it.
 */
export function clientSettings(config: Config, env: Record<string, string | undefined> = process.env) {
  const agents = envProxyAgents(env);
  return { region: config.AWS_REGION, retryMode: 'adaptive' as const, ...(agents ? { requestHandler: agents } : {}) };
}

function ec2Client(config: Config, metrics: MetricsPort) {
  const client = new EC2Client({ ...clientSettings(config), maxAttempts: 5 });
  return instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS);
}

/** ELBv2 throttles per account and API (Describe* share a bucket): adaptive retries slow this container down too. */
export function createElbv2Port(config: Config, metrics: MetricsPort): Elbv2Adapter {
  const client = new ElasticLoadBalancingV2Client({ ...clientSettings(config), maxAttempts: 5 });
  return new Elbv2Adapter(instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS));
}

/**
 * Classic Load Balancers (API 2012-06-01), endpoint from the SDK's settings (AWS_ENDPOINT_URL,
 * AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING). API version 1 has its own throttling buckets, apart from ELBv2's,
 * with the same token-bucket rules: the same adaptive retries.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html
 */
export function createElbPort(config: Config, metrics: MetricsPort): ElbAdapter {
  const client = new ElasticLoadBalancingClient({ ...clientSettings(config), maxAttempts: 5 });
  return new ElbAdapter(instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS));
}

/**
 * Auto Scaling (lifecycle hooks of the interruption controller), endpoint from the SDK's settings
 * (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_AUTO_SCALING). A drain wave completes and heartbeats many hooks at once,
 * and Auto Scaling throttles per account like EC2: the same adaptive retries.
 */
export function createAutoScalingPort(config: Config, metrics: MetricsPort): AutoScalingAdapter {
  const client = new AutoScalingClient({ ...clientSettings(config), maxAttempts: 5 });
  return new AutoScalingAdapter(instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS));
}

/**
 * ACM (the Ingress controller's certificate discovery), endpoint from the SDK's settings (AWS_ENDPOINT_URL,
 * AWS_ENDPOINT_URL_ACM). ListCertificates and DescribeCertificate share the account's request rate: the same
 * adaptive retries. https://docs.aws.amazon.com/acm/latest/userguide/acm-limits.html
 */
export function createAcmPort(config: Config, metrics: MetricsPort): AcmAdapter {
  const client = new ACMClient({ ...clientSettings(config), maxAttempts: 5 });
  return new AcmAdapter(instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS));
}

/**
 * WAFv2 (the Ingress controller's `wafv2-acl-*` annotations), endpoint from the SDK's settings (AWS_ENDPOINT_URL,
 * AWS_ENDPOINT_URL_WAFV2). WAF throttles per account: the same adaptive retries.
 */
export function createWafv2Port(config: Config, metrics: MetricsPort): Wafv2Adapter {
  const client = new WAFV2Client({ ...clientSettings(config), maxAttempts: 5 });
  return new Wafv2Adapter(instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS));
}

/**
 * By default the SQS client sends each request to its QueueUrl's host, which would bypass an
 * AWS-compatible endpoint configured with AWS_ENDPOINT_URL(_SQS); with one configured, the endpoint wins.
 */
export function createSqsPort(config: Config, metrics: MetricsPort): SqsAdapter {
  const endpoint = process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL;
  const client = new SQSClient({
    ...clientSettings(config),
    ...(endpoint ? { useQueueUrlAsEndpoint: false } : {}),
  });
  return new SqsAdapter(instrumentAwsClient(client, metrics, config.AWS_CALL_METRICS), endpoint ? { endpoint } : {});
}
