import { afterAll, beforeAll, beforeEach, describe, it } from 'vitest';
import { EMULATOR_SKIPPED_MESSAGE } from '../helpers/emulator.ts';
import type { BackendFactory, BackendKind } from './backends.ts';

/** How the EC2 and ELBv2 contract suites run: once per backend (backends.ts), each test on a fresh account. */

/**
 * Behaviours the emulator answers differently from AWS, one per row of docs/emulator-differences.md (the key opens
 * the row's behaviour column). A test of such a behaviour still runs on the emulator, as a test that must fail:
 * should the emulator start to behave like AWS, that test fails and the row can go.
 */
export const EMULATOR_DIFFERENCES = {
  'ec2.subnet-ipv6-state': "a subnet's IPv6 CIDR block association state",
  'ec2.route-blackhole': 'a route whose target is gone is a blackhole',
  'ec2.sg-delete-referenced': "deleting a security group another group's rule references",
  'ec2.sg-delete-in-use': 'deleting a security group a network interface uses',
  'elbv2.nlb-arn': "a Network Load Balancer's ARN",
  'elbv2.nlb-dns-name': "a Network Load Balancer's DNS name",
  'elbv2.lb-create-same-name': 'CreateLoadBalancer with the name of an existing load balancer',
  'elbv2.nlb-single-zone': 'a Network Load Balancer in a single zone',
  'elbv2.nlb-subnet-in-place': "changing the subnet of a Network Load Balancer's zone",
  'elbv2.dualstack-needs-ipv6-subnets': 'dualstack on subnets without IPv6',
  'elbv2.lb-attribute-defaults': "a new Network Load Balancer's attributes",
  'elbv2.lb-deletion-protection': 'deleting a load balancer with deletion protection',
  'elbv2.listener-create-same-port': 'CreateListener on a port the load balancer listens on already',
  'elbv2.target-group-load-balancers': "a target group's load balancers after its listener moved away",
  'elbv2.listener-sni-certificates': "a TLS listener's certificate list",
  'elbv2.modify-tls-listener': 'ModifyListener on a TLS listener',
  'elbv2.listener-idle-timeout': 'the TCP idle timeout listener attribute',
  'elbv2.tg-create-same-name': 'CreateTargetGroup with the name and settings of an existing target group',
  'elbv2.tg-attribute-defaults': "a new Network Load Balancer target group's attributes",
  'elbv2.deregister-unknown-target': 'DeregisterTargets naming a target that is not registered',
  'elbv2.target-draining': 'a deregistered target',
  'elbv2.target-unused': 'targets of a target group no load balancer uses',
  'elbv2.tags-unknown-arn': 'DescribeTags naming a resource that does not exist',
  'elbv2.alb-default-security-group': 'an Application Load Balancer created without security groups',
  'elbv2.alb-single-zone': 'an Application Load Balancer in a single zone',
  'elbv2.alb-attribute-defaults': "a new Application Load Balancer's attributes",
  'elbv2.alb-tg-attribute-defaults': "a new HTTP target group's attributes",
  'elbv2.https-listener-certificate': 'an HTTPS listener without a certificate',
  'elbv2.rule-condition-values': 'more than three values in one rule condition',
  'elbv2.default-rule-actions': "ModifyRule on a listener's default rule",
  'elbv2.rule-delete-unknown': 'DeleteRule naming a rule that does not exist',
  'elbv2.rule-default-delete': "DeleteRule on a listener's default rule",
  'elbv2.modify-listener-keeps-sni':
    'ModifyListener replacing the default certificate of a listener with SNI certificates',
  'elbv2.rule-priorities-swap': 'SetRulePriorities moving a rule to a priority another rule leaves in the same call',
  'elb.dns-name': "a Classic Load Balancer's DNS name",
  'elb.create-same-name': 'CreateLoadBalancer with the name and listeners of an existing Classic Load Balancer',
  'elb.internet-facing-needs-gateway': 'an internet-facing Classic Load Balancer in a VPC without an internet gateway',
  'elb.subnet-same-zone': 'AttachLoadBalancerToSubnets with a second subnet in a zone the load balancer has',
  'elb.health-check-timeout': 'ConfigureHealthCheck with a timeout not below the interval',
  'elb.listener-instance-protocol': "a Classic listener's back-end protocol",
  'elb.delete-listeners-several-ports': 'DeleteLoadBalancerListeners naming several ports',
  'elb.register-twice': 'RegisterInstancesWithLoadBalancer naming an instance registered already',
  'elb.register-unknown-instance': 'RegisterInstancesWithLoadBalancer naming an instance EC2 does not know',
  'elb.tags-quota': 'the number of tags on a Classic Load Balancer',
  'elb.backend-policies-new-listener': 'SetLoadBalancerPoliciesForBackendServer for a listener added after the create',
  'elb.policy-delete-in-use': 'DeleteLoadBalancerPolicy on a policy a back end uses',
} as const satisfies Record<string, string>;

export type EmulatorDifference = keyof typeof EMULATOR_DIFFERENCES;

type TestBody = () => Promise<void>;

/**
 * The `it` of a contract suite: `test(name, fn)` runs on both backends; `test.differs(key, name, fn)` is a
 * behaviour the emulator gets wrong (see EMULATOR_DIFFERENCES): on the fake it must pass, on the emulator it must
 * fail.
 */
export function contractTest(kind: BackendKind) {
  const test = (name: string, fn: TestBody, timeout?: number) => it(name, fn, timeout);
  test.differs = (key: EmulatorDifference, name: string, fn: TestBody, timeout?: number) => {
    if (kind !== 'emulator') return it(name, fn, timeout);
    const title = `${name} [emulator differs: ${key}, docs/emulator-differences.md]`;
    // CONTRACT_SHOW_DIFFERENCES=1 runs them as ordinary tests, to read how the emulator answers.
    if (process.env.CONTRACT_SHOW_DIFFERENCES) it(title, fn, timeout);
    else it.fails(title, fn, timeout);
  };
  return test;
}

/** The backend's lifecycle in the enclosing describe; the getter answers the current test's account. */
function useBackend<B>(factory: BackendFactory<B>): () => B {
  let current: B | undefined;
  beforeAll(() => factory.start(), 30_000);
  afterAll(() => factory.stop());
  beforeEach(async () => {
    current = await factory.fresh();
  });
  return () => {
    if (!current) throw new Error('no backend: the test runs outside its describe');
    return current;
  };
}

export type ContractTest = ReturnType<typeof contractTest>;

/**
 * One contract suite, run once per backend (`describe.each`). Where moto_server is not installed the emulator
 * half is one skipped test that says so.
 */
export function describeContract<B>(
  title: string,
  factories: BackendFactory<B>[],
  body: (backend: () => B, test: ContractTest, kind: BackendKind) => void,
): void {
  describe.each(factories)(`${title} ($kind)`, (factory) => {
    if (!factory.available) {
      it.skip(EMULATOR_SKIPPED_MESSAGE);
      return;
    }
    body(useBackend(factory), contractTest(factory.kind), factory.kind);
  });
}
