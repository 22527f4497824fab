import type { AcmPort } from '../shared/aws/acm-port.ts';
import type { AutoScalingPort } from '../shared/aws/autoscaling-port.ts';
import type { ElbPort } from '../shared/aws/elb-port.ts';
import type { Elbv2Port } from '../shared/aws/elbv2-port.ts';
import type { Wafv2Port } from '../shared/aws/wafv2-port.ts';
import type { Config } from '../shared/config/config.ts';
import {
  CONTROLLER_NAMES,
  CONTROLLERS,
  type ControllerName,
  type ControllerState,
  controllerStates,
  resyncSeconds,
  SWITCHES,
  type Switches,
  settingsOf,
} from '../shared/controllers.ts';
import type { DrainPort } from '../shared/k8s/drain-port.ts';
import type { IngressControllerKube } from '../shared/k8s/ingress-port.ts';
import type { IpamKubernetesPort } from '../shared/k8s/ipam-port.ts';
import type { LeaseReadPort } from '../shared/k8s/lbc-lease.ts';
import type { ServiceControllerKube } from '../shared/k8s/service-port.ts';
import type { StackBindingsPort } from '../shared/k8s/stack-bindings.ts';
import type { TgbControllerKube } from '../shared/k8s/tgb-port.ts';
import type { RealArgs } from './args.ts';
import type { ControllerOptions } from './engine.ts';

/**
 * What `npm start -- --real` runs: every controller of shared/controllers.ts, on or off by the switches the stage
 * uses, each with the settings its Lambda reads from the same configuration (shared/config). The ports are given:
 * the kubeconfig's and the AWS credential chain's in a real run (bin/real-cli.ts), the fakes in the tests
 * (test/helpers/local-real.ts), so both run this same plan.
 */

/** The ports the controllers beyond the Node ones reach Kubernetes and AWS with, made when first asked for. */
export interface RealPorts {
  /** With the Lease read: the AWS Load Balancer Controller's Services wait while it holds its leader Lease. */
  serviceKube(): ServiceControllerKube & LeaseReadPort;
  elbv2(): Elbv2Port;
  elb(): ElbPort;
  drain(): DrainPort;
  autoscaling(): AutoScalingPort;
  pods(): IpamKubernetesPort;
  ingressKube(): IngressControllerKube;
  acm(): AcmPort;
  wafv2(): Wafv2Port;
  tgbKube(): TgbControllerKube;
  /**
   * The Ingress and service controllers' TargetGroupBindings and the Pods behind them (shared/k8s/stack-bindings.ts),
   * used when the binding controller runs beside them; absent, they keep none.
   */
  stackBindings?(): StackBindingsPort;
}

/** The switches as real mode reads them: the settings the Lambdas read, and the stage's own four. */
export function realSwitches(
  config: Config,
  args: Pick<RealArgs, 'interruption' | 'ipam' | 'ingress'> & Partial<Pick<RealArgs, 'targetGroupBinding'>>,
): Switches {
  return {
    clusterCidrs: Boolean(config.CLUSTER_CIDRS),
    vpcId: Boolean(config.VPC_ID),
    interruption: args.interruption,
    ipam: args.ipam,
    ingress: args.ingress,
    targetGroupBinding: args.targetGroupBinding ?? false,
  };
}

/** One entry per controller, or the typecheck fails: its settings as its Lambda reads them, and its ports. */
const REAL_CONTROLLERS: { [N in ControllerName]: (config: Config, ports: RealPorts) => ControllerOptions[N] } = {
  node: () => ({}),
  'node-lifecycle': () => ({}),
  route: (config) => settingsOf('route', config),
  service: (config, ports) => ({
    ...settingsOf('service', config),
    elbv2: ports.elbv2(),
    elb: ports.elb(),
    kube: ports.serviceKube(),
  }),
  ipam: (config, ports) => ({ ...settingsOf('ipam', config), pods: ports.pods() }),
  ingress: (config, ports) => ({
    ...settingsOf('ingress', config),
    kube: ports.ingressKube(),
    elbv2: ports.elbv2(),
    acm: ports.acm(),
    wafv2: ports.wafv2(),
  }),
  'target-group-binding': (config, ports) => ({
    ...settingsOf('target-group-binding', config),
    kube: ports.tgbKube(),
    elbv2: ports.elbv2(),
  }),
  interruption: (config, ports) => ({
    ...settingsOf('interruption', config),
    drain: ports.drain(),
    autoscaling: ports.autoscaling(),
  }),
};

/** Why a controller is off: its switches that are off, as the command line spells them; or the dry run. */
function whyOff(state: ControllerState, dryRun: boolean): string | undefined {
  if (state.off.length > 0) {
    const spelt = state.off.map((s) => {
      const { flag, variable } = SWITCHES[s];
      // The stage's own switches are read from its variable too; the others from the Lambdas' setting.
      return variable.startsWith('CCM_') ? `${flag} or ${variable}=true` : flag;
    });
    return `no ${spelt.join(', no ')}`;
  }
  return dryRun && CONTROLLERS[state.name].writesAws ? 'dry run: it writes to AWS' : undefined;
}

export type RealControllers = { [N in ControllerName]?: ControllerOptions[N] };

/** Which controllers run, with their options, and for each one that does not, why. */
export function controllerPlan(
  config: Config,
  switches: Switches,
  dryRun: boolean,
  ports: RealPorts,
): { controllers: RealControllers; off: [ControllerName, string][] } {
  const off: [ControllerName, string][] = [];
  const built: Record<string, unknown> = {};
  for (const state of controllerStates(switches)) {
    const why = whyOff(state, dryRun);
    if (why) off.push([state.name, why]);
    else built[state.name] = REAL_CONTROLLERS[state.name](config, ports);
  }
  const controllers = built as RealControllers;
  // As the stage sets STACK_TARGET_GROUP_BINDINGS: the Ingress and service controllers keep a TargetGroupBinding per
  // target group they make exactly when the binding controller, which serves those bindings, runs beside them.
  if (controllers['target-group-binding'] && ports.stackBindings) {
    const stackBindings = ports.stackBindings();
    if (controllers.ingress) controllers.ingress = { ...controllers.ingress, stackBindings };
    if (controllers.service) controllers.service = { ...controllers.service, stackBindings };
  }
  return { controllers, off };
}

/** Each controller's resync period: `--resync-seconds` for all, else as deployed (shared/controllers.ts). */
export function resyncPlan(resyncSecondsFlag: number | undefined): Partial<Record<ControllerName, number>> {
  return Object.fromEntries(
    CONTROLLER_NAMES.flatMap((name) => {
      const period = resyncSeconds(name);
      return period === undefined ? [] : [[name, resyncSecondsFlag ?? period]];
    }),
  );
}
