import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { controllerPlan, type RealPorts } from '../bin/real-plan.ts';
import { createSimulation } from '../bin/simulation.ts';
import {
  CONTROLLERS as RELAY_CONTROLLERS,
  RECONCILERS as RELAY_RECONCILERS,
} from '../functions/relay/controllers/index.ts';
import { resync } from '../functions/resync/resync.ts';
import { stubCode } from '../stacks/code.ts';
import { FUNCTION_NAMES, loadStageConfig } from '../stacks/config.ts';
import { stageSwitches } from '../stacks/control-plane.ts';
import { synthesizeOffline } from '../stacks/synth.ts';
import { createLocalRealWorld, startLocalProcess } from '../test/helpers/local-real.ts';
import { makeNode } from '../test/helpers/nodes.ts';
import { FakeClock } from './clock.ts';
import { loadConfig } from './config/config.ts';
import {
  CONTROLLER_NAMES,
  CONTROLLERS,
  type ControllerName,
  DEPLOYED_RESYNC_MINUTES,
  enabledControllers,
  fedBy,
  resyncQueues,
  SWITCHES,
  type Switches,
  type SwitchName,
} from './controllers.ts';
import { FakeKubernetes } from './k8s/fakes/fake-kubernetes.ts';
import { FakeIngresses } from './k8s/fakes/ingresses.ts';
import { FakeTargetGroupBindings } from './k8s/fakes/target-group-bindings.ts';
import { silentLog } from './observability/log.ts';
import { RecordingMetrics } from './observability/metrics.ts';
import type { KeyMessage } from './queue/message.ts';

/**
 * The table of controllers is the one list: the stack, the simulation, real mode and the Lambda handlers take the
 * controllers and their switches from it. Every test here goes through the table, so a controller added to it and
 * left out of one of those places fails here (or in the typecheck, for the maps keyed by controller name).
 */

const ALL_ON: Switches = {
  clusterCidrs: true,
  vpcId: true,
  interruption: true,
  ipam: true,
  ingress: true,
  targetGroupBinding: true,
};
const SWITCH_NAMES = Object.keys(SWITCHES) as SwitchName[];
const off = (name: SwitchName): Switches => ({ ...ALL_ON, [name]: false });

/** What turns each switch on in a stage (`.env.<stage>`), and in a Lambda's and real mode's environment. */
const STAGE_ON: Record<SwitchName, Record<string, string>> = {
  clusterCidrs: { CCM_CLUSTER_CIDRS: '10.244.0.0/16' },
  vpcId: { CCM_VPC_ID: 'vpc-0123456789abcdef0' },
  interruption: { CCM_INTERRUPTION: 'true' },
  ipam: { CCM_IPAM: 'true' },
  ingress: { CCM_INGRESS: 'true' },
  targetGroupBinding: { CCM_TARGET_GROUP_BINDING: 'true' },
};
const LAMBDA_ON: Record<string, string> = { CLUSTER_CIDRS: '10.244.0.0/16', VPC_ID: 'vpc-0123456789abcdef0' };
const BASE_STAGE = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};
const stageEnv = (switches: Switches) =>
  Object.assign({}, BASE_STAGE, ...SWITCH_NAMES.filter((s) => switches[s]).map((s) => STAGE_ON[s]));

describe('the table', () => {
  it('names functions the stage knows, one queue setting each, and a state-change and an interruption target', () => {
    for (const name of CONTROLLER_NAMES) expect(FUNCTION_NAMES).toContain(name);
    const settings = CONTROLLER_NAMES.map((n) => CONTROLLERS[n].queueUrlSetting);
    expect(new Set(settings).size).toBe(settings.length);
    expect(fedBy('ec2-state-change')).toHaveLength(1);
    expect(fedBy('ec2-interruption')).toHaveLength(1);
  });

  it('each switch turns off exactly the controllers that name it; with none on, only the switchless run', () => {
    expect(enabledControllers(ALL_ON)).toEqual(CONTROLLER_NAMES);
    for (const s of SWITCH_NAMES) {
      const named = CONTROLLER_NAMES.filter((n) => (CONTROLLERS[n].switches as readonly string[]).includes(s));
      expect(named.length).toBeGreaterThan(0);
      expect(enabledControllers(off(s))).toEqual(CONTROLLER_NAMES.filter((n) => !named.includes(n)));
    }
    const none = Object.fromEntries(SWITCH_NAMES.map((s) => [s, false])) as Switches;
    expect(enabledControllers(none)).toEqual(CONTROLLER_NAMES.filter((n) => CONTROLLERS[n].switches.length === 0));
  });

  it("the README's real-mode table has a row for every controller, naming its flags and the stage's switches", () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const rows = readme.split('\n').filter((line) => line.startsWith('| `'));
    for (const name of CONTROLLER_NAMES) {
      const row = rows.find((line) => line.split('|')[1]!.includes(`\`${name}\``));
      expect(row, `a README row for ${name}`).toBeDefined();
      for (const s of CONTROLLERS[name].switches) {
        expect(row).toContain(SWITCHES[s].flag);
        expect(row).toContain(SWITCHES[s].stage);
      }
    }
  });

  it('the resync period as deployed is the stage default of CCM_RESYNC_MINUTES', () => {
    expect(loadStageConfig(BASE_STAGE).resyncMinutes).toBe(DEPLOYED_RESYNC_MINUTES);
  });

  it('a Lambda bundle importing the table imports neither client-node nor CDK', async () => {
    const out = await build({
      entryPoints: [new URL('./controllers.ts', import.meta.url).pathname],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      logLevel: 'silent',
    });
    const inputs = Object.keys(out.metafile.inputs);
    expect(inputs.some((i) => i.includes('shared/controllers.ts'))).toBe(true);
    expect(inputs.filter((i) => /@kubernetes\/client-node|aws-cdk-lib|constructs|sst\//.test(i))).toEqual([]);
  });
});

describe('the stack builds every controller its switches turn on', () => {
  const work = mkdtempSync(join(tmpdir(), 'ccm-controllers-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  let synths = 0;
  const synth = async (switches: Switches) => {
    const dir = join(work, String(synths++));
    const result = await synthesizeOffline({
      stage: 'test',
      env: stageEnv(switches),
      outdir: join(dir, 'cdk.out'),
      code: stubCode(join(dir, 'code')),
    });
    expect(stageSwitches(result.config)).toEqual(switches);
    return result.template as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
  };
  /** The controllers with a FIFO queue, a function named after them and a mapping from the one to the other. */
  const deployed = (template: Awaited<ReturnType<typeof synth>>): ControllerName[] => {
    const resources = Object.entries(template.Resources);
    const idOf = (type: string, key: string, value: string) =>
      resources.find(([, r]) => r.Type === type && r.Properties[key] === value)?.[0];
    return CONTROLLER_NAMES.filter((name) => {
      const queue = idOf('AWS::SQS::Queue', 'QueueName', `test-serverless-ccm-${name}.fifo`);
      const fn = idOf('AWS::Lambda::Function', 'FunctionName', `test-serverless-ccm-${name}`);
      return resources.some(
        ([, r]) =>
          r.Type === 'AWS::Lambda::EventSourceMapping' &&
          JSON.stringify(r.Properties.EventSourceArn) === JSON.stringify({ 'Fn::GetAtt': [queue, 'Arn'] }) &&
          JSON.stringify(r.Properties.FunctionName) === JSON.stringify({ Ref: fn }),
      );
    });
  };

  it('all on: a queue, a function and its mapping for every controller', async () => {
    expect(deployed(await synth(ALL_ON))).toEqual(CONTROLLER_NAMES);
  });

  // The stage refuses CCM_IPAM and CCM_INGRESS without CCM_VPC_ID (their grants are limited to that VPC): all go.
  const variants = SWITCH_NAMES.map((s): [SwitchName, Switches] => [
    s,
    s === 'vpcId' ? { ...off(s), ipam: false, ingress: false } : off(s),
  ]);

  it.each(variants)('%s off: every controller but those it switches', async (_, switches) => {
    expect(deployed(await synth(switches))).toEqual(enabledControllers(switches));
  });
});

describe('the Lambda handler of every controller', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it.each(CONTROLLER_NAMES)(
    '%s: its handler loads with the settings its entry requires, and not without',
    async (name) => {
      const base = {
        CLUSTER_NAME: 'prod',
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'y',
      };
      for (const [k, v] of Object.entries(base)) vi.stubEnv(k, v);
      for (const k of Object.keys(LAMBDA_ON)) vi.stubEnv(k, undefined);
      const path = `../${CONTROLLERS[name].handler}`;
      for (const { setting } of CONTROLLERS[name].required) {
        await expect(import(path)).rejects.toThrow(new RegExp(`${setting}: is required`));
        vi.resetModules();
      }
      for (const [k, v] of Object.entries(LAMBDA_ON)) vi.stubEnv(k, v);
      expect(typeof (await import(path)).handler).toBe('function');
    },
  );
});

describe('the local runner runs every controller', () => {
  it('the simulation: each one', () => {
    const sim = createSimulation({ nodes: 3, ec2LatencyMs: 0, throttleDescribes: 0, speed: 0, log: silentLog });
    expect(sim.engine.reconcilers).toEqual(CONTROLLER_NAMES);
  });

  it('real mode with every switch on: each one, through its own plan, against the relay stand-in', async () => {
    const w = await createLocalRealWorld();
    const p = startLocalProcess(w, {
      services: true,
      interruption: true,
      ipam: true,
      ingress: true,
      targetGroupBinding: true,
      settings: { CLUSTER_CIDRS: '10.244.0.0/16' },
    });
    try {
      expect(p.mode.engine.reconcilers).toEqual(CONTROLLER_NAMES);
      // The relay is given the queue of each controller it feeds, and no other.
      expect(Object.keys(p.mode.engine.queueUrls)).toEqual(fedBy('relay'));
    } finally {
      await p.stop();
      await w.close();
    }
  });

  it('real mode: a controller whose switch is off says which flag turns it on; a dry run keeps off those that write to AWS', () => {
    const config = loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', ...LAMBDA_ON });
    // Ports are not what this is about: each is an empty stand-in.
    const unused = new Proxy({} as RealPorts, { get: () => () => ({}) });
    for (const s of SWITCH_NAMES) {
      const { controllers, off: offList } = controllerPlan(config, off(s), false, unused);
      const offNames = offList.map(([name]) => name);
      expect(offNames).toEqual(CONTROLLER_NAMES.filter((n) => !enabledControllers(off(s)).includes(n)));
      for (const [, why] of offList) expect(why).toContain(SWITCHES[s].flag);
      expect(Object.keys(controllers).length + offNames.length).toBe(CONTROLLER_NAMES.length);
    }
    const none = Object.fromEntries(SWITCH_NAMES.map((s) => [s, false])) as Switches;
    const dry = controllerPlan(config, none, true, unused);
    expect(Object.keys(dry.controllers)).toEqual(CONTROLLER_NAMES.filter((n) => !CONTROLLERS[n].writesAws));
  });
});

describe('real mode reads the settings each Lambda reads', () => {
  it('every setting of every controller, as its handler reads it, is in what real mode runs it with', () => {
    const config = loadConfig({
      CLUSTER_NAME: 'prod',
      AWS_REGION: 'eu-west-1',
      ...LAMBDA_ON,
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: '7',
      IPAM_COOLDOWN_SECONDS: '45',
    });
    const ports = new Proxy({} as RealPorts, { get: () => () => ({}) });
    const { controllers } = controllerPlan(config, ALL_ON, false, ports);
    for (const name of CONTROLLER_NAMES) {
      expect(controllers[name], name).toMatchObject(CONTROLLERS[name].settings(config));
    }
    expect(controllers.interruption).toMatchObject({ drainRequeueSeconds: 7 });
    expect(controllers.ipam).toMatchObject({ cooldownSeconds: 45 });
  });
});

describe('the producers feed every controller the table says they feed', () => {
  it('the relay: a module per controller it feeds, each reading the queue setting of the table', () => {
    expect([...RELAY_RECONCILERS].sort()).toEqual([...fedBy('relay')].sort());
    for (const name of RELAY_RECONCILERS) {
      expect(RELAY_CONTROLLERS[name].queueUrlVariable).toBe(CONTROLLERS[name as ControllerName].queueUrlSetting);
    }
  });

  it('the resync: a round sends keys to the queue of every controller it feeds', async () => {
    const kube = new FakeKubernetes(new FakeClock());
    kube.putNode(makeNode('linux-1'));
    kube.putNode(makeNode('windows-1', { initialized: true, labels: { 'kubernetes.io/os': 'windows' } }));
    kube.putService({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { type: 'LoadBalancer', ports: [{ port: 80, nodePort: 30080 }] },
    });
    // An Ingress of the reference controller's class, `alb`: the Ingress controller's.
    const ingresses = new FakeIngresses(new FakeClock());
    ingresses.putIngressClass({ metadata: { name: 'alb' }, spec: { controller: 'ingress.k8s.aws/alb' } });
    ingresses.putIngress({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { ingressClassName: 'alb', defaultBackend: { service: { name: 'web', port: { number: 80 } } } },
    });
    // A TargetGroupBinding: the binding controller's.
    const bindings = new FakeTargetGroupBindings(new FakeClock());
    bindings.putBinding({
      metadata: { name: 'web', namespace: 'shop' },
      spec: { serviceRef: { name: 'web', port: 80 }, targetGroupName: 'web' },
    });
    const sent = new Map<string, KeyMessage[]>();
    const url = (name: ControllerName) => `https://sqs.eu-west-1.amazonaws.com/111122223333/${name}.fifo`;
    await resync('round-1', {
      kube,
      services: kube,
      ingresses,
      targetGroupBindings: bindings,
      sqs: {
        sendKeys: async (queueUrl, messages) => {
          sent.set(queueUrl, [...(sent.get(queueUrl) ?? []), ...messages]);
          return [];
        },
      },
      queues: resyncQueues(url),
      log: silentLog,
      metrics: new RecordingMetrics(),
    });
    expect(fedBy('resync').filter((name) => (sent.get(url(name)) ?? []).length === 0)).toEqual([]);
    expect([...sent.keys()].sort()).toEqual(fedBy('resync').map(url).sort());
  });
});
