import { describe, expect, it } from 'vitest';
import { controllerPlan, type RealPorts, realSwitches } from '../bin/real-plan.ts';
import { SIM_INGRESS_GROUP } from '../bin/sim-ingress.ts';
import { createSimulation } from '../bin/simulation.ts';
import { isStackBinding } from '../functions/target-group-binding/sync.ts';
import { loadConfig } from '../shared/config/config.ts';
import { TGB_FINALIZER } from '../shared/k8s/tgb-types.ts';
import { silentLog } from '../shared/observability/log.ts';

/**
 * Stack bindings in `npm start`: the Ingress and service controllers keep a TargetGroupBinding per target group they
 * make exactly when the binding controller runs beside them, as the stage turns STACK_TARGET_GROUP_BINDINGS on with
 * CCM_TARGET_GROUP_BINDING=true; real mode gives them its adapters, the simulation the fakes the binding controller
 * reads.
 */

const VPC = 'vpc-0123456789abcdef0';

describe("real mode's plan: the Ingress and service controllers' stack bindings", () => {
  const ports = new Proxy({} as RealPorts, { get: (_, name) => () => ({ port: String(name) }) });
  const plan = (on: { ingress: boolean; targetGroupBinding: boolean }, dryRun = false) => {
    const config = loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', VPC_ID: VPC });
    const switches = realSwitches(config, { interruption: false, ipam: false, ...on });
    return controllerPlan(config, switches, dryRun, ports).controllers;
  };

  it('are kept, on their own port, when the binding controller runs beside them', () => {
    const controllers = plan({ ingress: true, targetGroupBinding: true });
    expect(controllers.ingress?.stackBindings).toEqual({ port: 'stackBindings' });
    expect(controllers.service?.stackBindings).toEqual({ port: 'stackBindings' });
    // The binding controller itself is as it was.
    expect(controllers['target-group-binding']).not.toHaveProperty('stackBindings');
  });

  it('are not without it', () => {
    const controllers = plan({ ingress: true, targetGroupBinding: false });
    expect(controllers.ingress).toBeDefined();
    expect(controllers.ingress).not.toHaveProperty('stackBindings');
    expect(controllers.service).not.toHaveProperty('stackBindings');
  });

  it('nor in a dry run, where every controller that writes stays off', () => {
    const controllers = plan({ ingress: true, targetGroupBinding: true }, true);
    expect(controllers.ingress).toBeUndefined();
    expect(controllers['target-group-binding']).toBeUndefined();
  });

  it('are not made when the ports have none to give (a test world without them)', () => {
    const bare = new Proxy({} as RealPorts, {
      get: (_, name) => (name === 'stackBindings' ? undefined : () => ({ port: String(name) })),
    });
    const config = loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', VPC_ID: VPC });
    const switches = realSwitches(config, {
      interruption: false,
      ipam: false,
      ingress: true,
      targetGroupBinding: true,
    });
    const { controllers } = controllerPlan(config, switches, false, bare);
    expect(controllers.ingress).toBeDefined();
    expect(controllers.ingress).not.toHaveProperty('stackBindings');
  });
});

describe('npm start (the simulation)', () => {
  it("keeps a binding beside the IngressGroup's target group, named as it, labelled with the group", async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 2, log: silentLog });
    await sim.runToCompletion();
    expect(sim.problems()).toEqual([]);

    const groups = [...sim.elbv2.targetGroups.values()].filter(
      (g) => g.tags['ingress.k8s.aws/stack'] === SIM_INGRESS_GROUP,
    );
    expect(groups.length).toBeGreaterThan(0);
    for (const group of groups) {
      const binding = [...sim.bindings.bindings.values()].find((b) => b.metadata.name === group.tg.name);
      expect(binding, `a binding for ${group.tg.name}`).toBeDefined();
      expect(binding?.metadata.labels).toEqual({ 'ingress.k8s.aws/stack': SIM_INGRESS_GROUP });
      expect(binding?.metadata.finalizers).toEqual([TGB_FINALIZER]);
      expect(binding?.spec).toMatchObject({ targetGroupARN: group.tg.arn, targetType: group.tg.targetType });
      // So the binding controller keeps only its Pods' gates, never its targets.
      expect(isStackBinding(binding!)).toBe(true);
    }
  });
});
