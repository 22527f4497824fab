import { describe, expect, it } from 'vitest';
import { ConfigError, configSchema, loadConfig, parseEnvironment } from './config.ts';

/** The Ingress controller's settings (settings.ts INGRESS_*), as its Lambda and real mode read them. */

const base = { CLUSTER_NAME: 'prod-eu', AWS_REGION: 'eu-west-1' };

describe('the Ingress controller settings', () => {
  it("default to the reference controller's: ELBSecurityPolicy-2016-08, instance targets, no tags, no queue", () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({
      INGRESS_DEFAULT_SSL_POLICY: 'ELBSecurityPolicy-2016-08',
      INGRESS_DEFAULT_TARGET_TYPE: 'instance',
      INGRESS_DEFAULT_TAGS: {},
    });
    expect(config.INGRESS_QUEUE_URL).toBeUndefined();
  });

  it('read what is set', () => {
    const config = loadConfig({
      ...base,
      INGRESS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/prod-ingress.fifo',
      INGRESS_DEFAULT_SSL_POLICY: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      INGRESS_DEFAULT_TARGET_TYPE: 'ip',
      INGRESS_DEFAULT_TAGS: ' team=web , cost-center=42,empty=, path=a/b=c ',
    });
    expect(config).toMatchObject({
      INGRESS_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111122223333/prod-ingress.fifo',
      INGRESS_DEFAULT_SSL_POLICY: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      INGRESS_DEFAULT_TARGET_TYPE: 'ip',
      // The first `=` splits key from value: a value may hold one (AWS allows it).
      INGRESS_DEFAULT_TAGS: { team: 'web', 'cost-center': '42', empty: '', path: 'a/b=c' },
    });
  });

  it.each([
    [{ INGRESS_QUEUE_URL: 'ingress.fifo' }, /INGRESS_QUEUE_URL \(got "ingress.fifo"\): must be an https:\/\/ URL/],
    [
      { INGRESS_DEFAULT_TARGET_TYPE: 'pod' },
      /INGRESS_DEFAULT_TARGET_TYPE \(got "pod"\): must be instance \(Node ports\) or ip \(Pod addresses\)/,
    ],
    [
      { INGRESS_DEFAULT_SSL_POLICY: 'TLS 1.3 please' },
      /INGRESS_DEFAULT_SSL_POLICY \(got "TLS 1.3 please"\): must be an ELB security policy name/,
    ],
    [{ INGRESS_DEFAULT_TAGS: 'team' }, /INGRESS_DEFAULT_TAGS \(got "team"\): "team" must be key=value/],
    [{ INGRESS_DEFAULT_TAGS: '=web' }, /INGRESS_DEFAULT_TAGS.*"=web" must be key=value/],
    [{ INGRESS_DEFAULT_TAGS: 'team=a,team=b' }, /INGRESS_DEFAULT_TAGS.*team is named twice/],
    [{ INGRESS_DEFAULT_TAGS: 'aws:owner=me' }, /INGRESS_DEFAULT_TAGS.*"aws:owner": the aws: prefix is reserved/],
    [{ INGRESS_DEFAULT_TAGS: 'AWS:owner=me' }, /INGRESS_DEFAULT_TAGS.*the aws: prefix is reserved/],
    [
      { INGRESS_DEFAULT_TAGS: 'elbv2.k8s.aws/cluster=other' },
      /INGRESS_DEFAULT_TAGS.*"elbv2.k8s.aws\/cluster" is a tag the controller sets itself/,
    ],
    [
      { INGRESS_DEFAULT_TAGS: 'ingress.k8s.aws/stack=x' },
      /INGRESS_DEFAULT_TAGS.*"ingress.k8s.aws\/stack" is a tag the controller sets itself/,
    ],
    [
      { INGRESS_DEFAULT_TAGS: 'kubernetes.io/cluster/prod-eu=shared' },
      /INGRESS_DEFAULT_TAGS.*"kubernetes.io\/cluster\/prod-eu" is a tag the controller sets itself/,
    ],
    [{ INGRESS_DEFAULT_TAGS: `${'k'.repeat(129)}=v` }, /INGRESS_DEFAULT_TAGS.*is no tag key AWS accepts/],
    [{ INGRESS_DEFAULT_TAGS: 'team=a;b' }, /INGRESS_DEFAULT_TAGS.*the value of team is none AWS accepts/],
    [{ INGRESS_DEFAULT_TAGS: `team=${'v'.repeat(257)}` }, /INGRESS_DEFAULT_TAGS.*the value of team is none/],
    [
      { INGRESS_DEFAULT_TAGS: 'team=web,owner=ops', SERVICE_EXTERNAL_MANAGED_TAGS: 'owner, budget' },
      /INGRESS_DEFAULT_TAGS \(got "team=web,owner=ops"\): owner: also in SERVICE_EXTERNAL_MANAGED_TAGS/,
    ],
  ])('refuses %j, naming the setting', (env, pattern) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(pattern);
  });

  it('every problem of the tag list at once, one line for the setting', () => {
    try {
      loadConfig({ ...base, INGRESS_DEFAULT_TAGS: 'a,b=1,b=2,aws:x=1' });
      expect.unreachable('the tag list is refused');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems.join('\n')).toMatch(
        /"a" must be key=value[\s\S]*b is named twice[\s\S]*aws: prefix is reserved/,
      );
    }
  });

  it.each([
    ['all set', { INGRESS_DEFAULT_TAGS: 'team=web', INGRESS_DEFAULT_TARGET_TYPE: 'ip' }],
    ['a bad tag list', { INGRESS_DEFAULT_TAGS: 'team' }],
    ['the rule across settings', { INGRESS_DEFAULT_TAGS: 'team=web', SERVICE_EXTERNAL_MANAGED_TAGS: 'team' }],
  ])('the stacks read them as the Lambdas do: %s', (_name, env) => {
    const outcome = (parse: () => unknown) => {
      try {
        return { config: parse() };
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        return { problems: err.problems };
      }
    };
    const all = { ...base, ...env };
    expect(outcome(() => loadConfig(all))).toEqual(outcome(() => parseEnvironment(configSchema(), all)));
  });
});
