import { readFileSync } from 'node:fs';
import { CreateSubnetCommand, CreateVpcCommand, EC2Client } from '@aws-sdk/client-ec2';
import {
  CreateLoadBalancerCommand,
  DeleteLoadBalancerCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { CreateWebACLCommand, ListResourcesForWebACLCommand, WAFV2Client } from '@aws-sdk/client-wafv2';
import { describe, expect, it } from 'vitest';
import { elbv2World } from '../../shared/aws/fakes/elbv2/testing.ts';
import { FakeWafv2 } from '../../shared/aws/fakes/wafv2/fake-wafv2.ts';
import { webAclInput } from '../../shared/aws/fakes/wafv2/testing.ts';
import { Wafv2Adapter } from '../../shared/aws/wafv2-adapter.ts';
import type { Wafv2Port } from '../../shared/aws/wafv2-port.ts';
import { ControllerError, TerminalError } from '../../shared/errors.ts';
import { EMULATOR_AVAILABLE, EMULATOR_REGION, type Emulator, startEmulator } from '../helpers/emulator.ts';
import type { BackendFactory } from './backends.ts';
import { describeContract } from './contract.ts';
import { differenceRow, hasTest } from './difference-rows.ts';

/**
 * The WAFv2 behaviours the Ingress controller's `wafv2-acl-arn` / `wafv2-acl-name` annotations rely on, run on
 * `Wafv2Adapter` over the AWS API emulator and over `FakeWafv2` (linked to a FakeElbv2 account, as WAF knows the
 * account's load balancers). Web ACLs and Application Load Balancers are made with the same WAFv2 and ELBv2 commands
 * on both. What the emulator does not do like WAF is a row of docs/emulator-differences.md, and its test is expected
 * to fail there (`it.fails`; CONTRACT_SHOW_DIFFERENCES=1 runs it as a plain test).
 */
const EMULATOR_DIFFERS = {
  replaces: 'wafv2.associate-replaces',
  listResources: 'wafv2.list-resources',
  resourceType: 'wafv2.resource-type',
  missingLoadBalancer: 'wafv2.missing-load-balancer',
} as const;

interface Wafv2Backend {
  waf: Wafv2Port;
  /** The WAFv2 API itself, to make web ACLs and to look where the port does not. */
  client: Pick<WAFV2Client, 'send'>;
  /** An Application Load Balancer's ARN. */
  alb(name: string): Promise<string>;
  deleteLoadBalancer(arn: string): Promise<void>;
}

function emulatorFactory(): BackendFactory<Wafv2Backend> {
  let emulator: Emulator | undefined;
  return {
    kind: 'emulator',
    available: EMULATOR_AVAILABLE,
    async start() {
      emulator = await startEmulator();
    },
    async fresh() {
      if (!emulator) throw new Error('emulator backend not started');
      await emulator.reset();
      const client = new WAFV2Client(emulator.clientConfig);
      const ec2 = new EC2Client(emulator.clientConfig);
      const elbv2 = new ElasticLoadBalancingV2Client(emulator.clientConfig);
      let subnets: string[] | undefined;
      return {
        waf: new Wafv2Adapter(client),
        client,
        async alb(name) {
          if (!subnets) {
            const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc?.VpcId;
            subnets = [];
            for (const [i, zone] of ['a', 'b'].entries()) {
              const subnet = await ec2.send(
                new CreateSubnetCommand({
                  VpcId: vpcId,
                  CidrBlock: `10.0.${i + 1}.0/24`,
                  AvailabilityZone: `${EMULATOR_REGION}${zone}`,
                }),
              );
              subnets.push(subnet.Subnet!.SubnetId!);
            }
          }
          const created = await elbv2.send(
            new CreateLoadBalancerCommand({ Name: name, Type: 'application', Scheme: 'internal', Subnets: subnets }),
          );
          return created.LoadBalancers![0]!.LoadBalancerArn!;
        },
        async deleteLoadBalancer(arn) {
          await elbv2.send(new DeleteLoadBalancerCommand({ LoadBalancerArn: arn }));
        },
      };
    },
    async stop() {
      await emulator?.stop();
      emulator = undefined;
    },
  };
}

function fakeFactory(): BackendFactory<Wafv2Backend> {
  return {
    kind: 'fake',
    available: true,
    async start() {},
    async fresh() {
      const elb = elbv2World();
      const fake = new FakeWafv2(elb.clock, (arn) => elb.fake.loadBalancers.has(arn));
      return {
        waf: new Wafv2Adapter(fake),
        client: fake,
        alb: async (name) => (await elb.lb({ name, type: 'application', scheme: 'internal' })).arn,
        deleteLoadBalancer: (arn) => elb.elb.deleteLoadBalancer(arn),
      };
    },
    async stop() {},
  };
}

describeContract<Wafv2Backend>('WAFv2 web ACLs', [emulatorFactory(), fakeFactory()], (backend, _test, kind) => {
  const differs = (key: string, name: string, fn: () => Promise<void>) => {
    const expectFailure = kind === 'emulator' && !process.env.CONTRACT_SHOW_DIFFERENCES;
    (expectFailure ? it.fails : it)(kind === 'emulator' ? `${name} [emulator differs: ${key}]` : name, fn, 30_000);
  };
  const webAcl = async (name: string) => {
    const output = await backend().client.send(new CreateWebACLCommand(webAclInput(name)));
    return output.Summary!.ARN!;
  };

  it('a load balancer without a web ACL has none', async () => {
    expect(await backend().waf.webAclForResource(await backend().alb('web'))).toBeUndefined();
  });

  it('finds a regional web ACL by its name, and nothing by a name no web ACL has', async () => {
    await webAcl('other');
    const main = await webAcl('main');
    expect(await backend().waf.findWebAclArn('main')).toBe(main);
    expect(await backend().waf.findWebAclArn('mai')).toBeUndefined();
  });

  it('associates a web ACL with a load balancer, and disassociates it', async () => {
    const [lb, main] = [await backend().alb('web'), await webAcl('main')];
    await backend().waf.associate(main, lb);
    expect(await backend().waf.webAclForResource(lb)).toBe(main);
    await backend().waf.disassociate(lb);
    expect(await backend().waf.webAclForResource(lb)).toBeUndefined();
  });

  it('disassociating a load balancer that has no web ACL succeeds', async () => {
    const lb = await backend().alb('web');
    await backend().waf.disassociate(lb);
    expect(await backend().waf.webAclForResource(lb)).toBeUndefined();
  });

  it('refuses a web ACL that does not exist, as a terminal error', async () => {
    const [lb, main] = [await backend().alb('web'), await webAcl('main')];
    const missing = main.replace('/main/', '/missing/');
    const err = await backend()
      .waf.associate(missing, lb)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect(await backend().waf.webAclForResource(lb)).toBeUndefined();
  });

  differs(
    EMULATOR_DIFFERS.replaces,
    'associating another web ACL replaces the first, and disassociating then leaves none',
    async () => {
      const [lb, one, two] = [await backend().alb('web'), await webAcl('one'), await webAcl('two')];
      await backend().waf.associate(one, lb);
      await backend().waf.associate(two, lb);
      expect(await backend().waf.webAclForResource(lb)).toBe(two);
      await backend().waf.disassociate(lb);
      expect(await backend().waf.webAclForResource(lb)).toBeUndefined();
    },
  );

  differs(
    EMULATOR_DIFFERS.listResources,
    'ListResourcesForWebACL lists the load balancers a web ACL protects',
    async () => {
      const [lb, main] = [await backend().alb('web'), await webAcl('main')];
      await backend().waf.associate(main, lb);
      const listed = await backend().client.send(new ListResourcesForWebACLCommand({ WebACLArn: main }));
      expect(listed.ResourceArns).toEqual([lb]);
    },
  );

  differs(EMULATOR_DIFFERS.resourceType, 'refuses to associate a web ACL with a Network Load Balancer', async () => {
    const [lb, main] = [await backend().alb('web'), await webAcl('main')];
    const network = lb.replace('/app/', '/net/');
    await expect(backend().waf.associate(main, network)).rejects.toBeInstanceOf(ControllerError);
  });

  differs(
    EMULATOR_DIFFERS.missingLoadBalancer,
    'refuses to associate a web ACL with a load balancer that no longer exists',
    async () => {
      const [lb, main] = [await backend().alb('web'), await webAcl('main')];
      await backend().deleteLoadBalancer(lb);
      await expect(backend().waf.associate(main, lb)).rejects.toBeInstanceOf(ControllerError);
      expect(await backend().waf.webAclForResource(lb)).toBeUndefined();
    },
  );
});

describe('the rows of the differences table (docs) for this suite', () => {
  const source = readFileSync(import.meta.filename, 'utf8');
  it.each(Object.values(EMULATOR_DIFFERS))('%s has its row, naming tests of this file', (key) => {
    const row = differenceRow(key);
    expect(row?.file).toBe('wafv2.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
