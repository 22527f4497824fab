import { describe, expect, it } from 'vitest';
import { parseLocalArgs, UsageError } from '../bin/args.ts';
import { createEngine, CONTROLLER_QUEUES as QUEUES } from '../bin/engine.ts';
import { controllerPlan, type RealPorts, realSwitches } from '../bin/real-plan.ts';
import { makeIngress, makeService, path, rule } from '../functions/ingress/model/testing/builders.ts';
import { AcmAdapter } from '../shared/aws/acm-adapter.ts';
import { FakeAcm } from '../shared/aws/fakes/acm/fake-acm.ts';
import { FakeWafv2 } from '../shared/aws/fakes/wafv2/fake-wafv2.ts';
import { Wafv2Adapter } from '../shared/aws/wafv2-adapter.ts';
import { loadConfig } from '../shared/config/config.ts';
import { FakeIngresses, fakeIngressControllerKube } from '../shared/k8s/fakes/ingresses.ts';
import { silentLog } from '../shared/observability/log.ts';
import { ALB_CLASS } from './helpers/ingress-world.ts';
import { createLocalRealWorld, eventually, startLocalProcess } from './helpers/local-real.ts';
import { createServiceWorld } from './helpers/service-world.ts';
import { CLUSTER } from './helpers/world.ts';

/**
 * The Ingress controller in `npm start`: switched on as the stage switches it (`--ingress` or CCM_INGRESS=true, with
 * the VPC), given the settings its Lambda reads, and run by the local engine from a resync round to an Application
 * Load Balancer, as the deployed queue and function would.
 */

const VPC = 'vpc-0123456789abcdef0';

describe('npm start -- --real --ingress', () => {
  it('is off unless asked for, by flag or by the stage’s own variable', () => {
    expect(parseLocalArgs(['--real'], {})).toMatchObject({ ingress: false });
    expect(parseLocalArgs(['--real', '--ingress'], {})).toMatchObject({ ingress: true });
    expect(parseLocalArgs(['--real'], { CCM_INGRESS: 'true' })).toMatchObject({ ingress: true });
    expect(parseLocalArgs(['--real'], { CCM_INGRESS: 'false' })).toMatchObject({ ingress: false });
  });

  it('refuses a variable the stage would refuse, and the flag in the simulation', () => {
    expect(() => parseLocalArgs(['--real'], { CCM_INGRESS: 'maybe' })).toThrow(
      'CCM_INGRESS must be true or false (got "maybe")',
    );
    expect(() => parseLocalArgs(['--ingress'], {})).toThrow(UsageError);
    expect(() => parseLocalArgs(['--ingress'], {})).toThrow(/--ingress: real-cluster options/);
  });
});

describe("real mode's plan for the Ingress controller", () => {
  const ports = new Proxy({} as RealPorts, { get: (_, name) => () => ({ port: String(name) }) });
  const config = (extra: Record<string, string> = {}) =>
    loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', ...extra });

  it('runs it with --ingress and a VPC, with the settings its Lambda reads and its own ports', () => {
    const c = config({
      VPC_ID: VPC,
      INGRESS_DEFAULT_TAGS: 'team=web',
      INGRESS_DEFAULT_TARGET_TYPE: 'ip',
      SERVICE_NODE_PORT_RANGE: '31000-31999',
    });
    const { controllers } = controllerPlan(
      c,
      realSwitches(c, { interruption: false, ipam: false, ingress: true }),
      false,
      ports,
    );
    expect(controllers.ingress).toMatchObject({
      vpcId: VPC,
      defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
      defaultTargetType: 'ip',
      defaultTags: { team: 'web' },
      externalManagedTags: [],
      provisioningRequeueSeconds: 60,
      nodePortRange: { from: 31000, to: 31999 },
      kube: { port: 'ingressKube' },
      elbv2: { port: 'elbv2' },
      acm: { port: 'acm' },
      wafv2: { port: 'wafv2' },
    });
  });

  it.each([
    ['without --ingress', { VPC_ID: VPC }, false, 'no --ingress or CCM_INGRESS=true'],
    ['without a VPC', {}, true, 'no --vpc-id'],
  ])('leaves it off %s, saying which flag turns it on', (_, extra, ingress, why) => {
    const c = config(extra);
    const { controllers, off } = controllerPlan(
      c,
      realSwitches(c, { interruption: false, ipam: false, ingress }),
      false,
      ports,
    );
    expect(controllers.ingress).toBeUndefined();
    expect(off.find(([name]) => name === 'ingress')?.[1]).toContain(why);
  });

  it('a dry run keeps it off: it writes to AWS', () => {
    const c = config({ VPC_ID: VPC });
    const { off } = controllerPlan(
      c,
      realSwitches(c, { interruption: false, ipam: false, ingress: true }),
      true,
      ports,
    );
    expect(off).toContainEqual(['ingress', 'dry run: it writes to AWS']);
  });
});

describe('the local engine with the Ingress controller', () => {
  it('takes an Ingress from a resync round to an Application Load Balancer with its default tags', async () => {
    const w = createServiceWorld();
    w.addNode(1);
    w.addNode(2);
    w.kube.putService(makeService({ name: 'web' }));
    const ingresses = new FakeIngresses(w.clock);
    ingresses.putIngressClass(ALB_CLASS);
    ingresses.putIngress(
      makeIngress({
        name: 'web',
        annotations: { scheme: 'internet-facing' },
        rules: [rule('shop.example.com', path('/', 'Prefix', { service: { name: 'web', port: { number: 80 } } }))],
      }),
    );
    const engine = createEngine({
      clusterName: CLUSTER,
      region: 'eu-west-1',
      ipFamilies: ['ipv4'],
      clock: w.clock,
      ec2: w.ec2Port,
      kube: w.kube,
      log: silentLog,
      metrics: w.metrics,
      controllers: {
        ingress: {
          vpcId: w.serviceDeps.vpcId,
          kube: fakeIngressControllerKube(ingresses, w.kube),
          elbv2: w.elbv2Port,
          acm: new AcmAdapter(new FakeAcm(w.clock)),
          wafv2: new Wafv2Adapter(new FakeWafv2(w.clock)),
          defaultTags: { team: 'web' },
        },
      },
    });
    expect(engine.reconcilers).toContain('ingress');

    await engine.resync('round-1');
    // The group's key (and whatever else the resync sends the controller, such as a garbage-collection key).
    expect(engine.sqs.bodies(QUEUES.ingress).map((b) => JSON.parse(b))).toContainEqual(
      expect.objectContaining({ kind: 'IngressGroup', namespace: 'default', name: 'web' }),
    );
    // The event source mapping until the queue is empty, waiting out the requeues on the fake clock.
    for (let polls = 0; engine.depth() > 0 && polls < 200; polls++) {
      if ((await engine.pumpOnce()) === 0) w.clock.advance(engine.nextVisibleInMs() ?? 1_000);
    }
    expect(engine.depth()).toBe(0);
    expect(engine.dlqDepth()).toBe(0);

    const albs = [...w.elbv2.loadBalancers.values()].filter((l) => l.lb.type === 'application');
    expect(albs).toHaveLength(1);
    expect(albs[0]!.tags).toMatchObject({
      team: 'web',
      'elbv2.k8s.aws/cluster': CLUSTER,
      'ingress.k8s.aws/stack': 'default/web',
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
    });
    const status = ingresses.ingresses.get('default/web')?.status?.loadBalancer?.ingress?.[0]?.hostname;
    expect(status).toBe(albs[0]!.lb.dnsName.toLowerCase());
  });
});

describe('npm start -- --real --ingress, against the relay stand-in', () => {
  it('an Ingress of class alb gets its ALB within seconds, its key sent by the relay, not by a resync', async () => {
    const w = await createLocalRealWorld();
    try {
      const { node } = w.launch(8);
      w.kube.putNode(node);
      w.kube.putService(makeService({ name: 'web' }));
      w.ingresses.putIngressClass(ALB_CLASS);
      const p = startLocalProcess(w, { ingress: true });
      try {
        expect(p.mode.engine.reconcilers).toContain('ingress');
        await eventually(() => p.mode.state.leading && p.mode.relay.status().synced, 'the process to lead and list');
        w.ingresses.putIngress(
          makeIngress({
            name: 'web',
            annotations: { scheme: 'internet-facing' },
            rules: [rule('shop.example.com', path('/', 'Prefix', { service: { name: 'web', port: { number: 80 } } }))],
          }),
        );
        const hostname = () => w.ingresses.ingresses.get('default/web')?.status?.loadBalancer?.ingress?.[0]?.hostname;
        await eventually(() => hostname() !== undefined, 'the Ingress to get its load balancer', 10_000);
        const alb = [...w.elbv2.loadBalancers.values()].find((l) => l.lb.type === 'application');
        expect(hostname()).toBe(alb?.lb.dnsName.toLowerCase());
        // The resync ran once, at the start, before the Ingress existed (the next one is an hour away).
        expect(p.mode.state.rounds).toBe(1);
      } finally {
        await p.stop();
      }
    } finally {
      await w.close();
    }
  });
});
