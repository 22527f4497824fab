import { describe, expect, it } from 'vitest';
import { parseLocalArgs, UsageError } from '../bin/args.ts';
import { controllerPlan, type RealPorts, realSwitches } from '../bin/real-plan.ts';
import { Elbv2Adapter } from '../shared/aws/elbv2-adapter.ts';
import type { TargetGroup } from '../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../shared/aws/fakes/ec2/fake-ec2.ts';
import type { FakeElbv2 } from '../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { loadConfig } from '../shared/config/config.ts';
import { LBC_ACTIVE_REASON, LBC_RECHECK_SECONDS } from '../shared/k8s/lbc-lease.ts';
import { TGB_FINALIZER } from '../shared/k8s/tgb-types.ts';
import { LBC_TCP_HEALTH_CHECK } from '../shared/load-balancers/health-check.ts';
import { createLocalRealWorld, eventually, type LocalRealWorld, startLocalProcess } from './helpers/local-real.ts';

/**
 * The TargetGroupBinding controller in `npm start`: switched on as the stage switches it (`--target-group-binding` or
 * CCM_TARGET_GROUP_BINDING=true), given the settings its Lambda reads, and run against the relay stand-in: a binding
 * and its Service's EndpointSlice become registered targets, the relay sending the keys; nothing while the reference
 * controller holds its leader Lease.
 */

const VPC = 'vpc-0123456789abcdef0';
const NAMESPACE = 'shop';

describe('npm start -- --real --target-group-binding', () => {
  it('is off unless asked for, by flag or by the stage’s own variable', () => {
    expect(parseLocalArgs(['--real'], {})).toMatchObject({ targetGroupBinding: false });
    expect(parseLocalArgs(['--real', '--target-group-binding'], {})).toMatchObject({ targetGroupBinding: true });
    expect(parseLocalArgs(['--real'], { CCM_TARGET_GROUP_BINDING: 'true' })).toMatchObject({
      targetGroupBinding: true,
    });
    expect(parseLocalArgs(['--real'], { CCM_TARGET_GROUP_BINDING: 'false' })).toMatchObject({
      targetGroupBinding: false,
    });
  });

  it('refuses a variable the stage would refuse, and the flag in the simulation', () => {
    expect(() => parseLocalArgs(['--real'], { CCM_TARGET_GROUP_BINDING: 'maybe' })).toThrow(
      'CCM_TARGET_GROUP_BINDING must be true or false (got "maybe")',
    );
    expect(() => parseLocalArgs(['--target-group-binding'], {})).toThrow(UsageError);
    expect(() => parseLocalArgs(['--target-group-binding'], {})).toThrow(
      /--target-group-binding: real-cluster options/,
    );
  });
});

describe("real mode's plan for the binding controller", () => {
  const ports = new Proxy({} as RealPorts, { get: (_, name) => () => ({ port: String(name) }) });
  const config = (extra: Record<string, string> = {}) =>
    loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1', ...extra });
  const plan = (extra: Record<string, string>, on: boolean, dryRun = false) => {
    const c = config(extra);
    const switches = realSwitches(c, { interruption: false, ipam: false, ingress: false, targetGroupBinding: on });
    return controllerPlan(c, switches, dryRun, ports);
  };

  it('runs it with the flag, with the settings its Lambda reads (the VPC when given) and its own ports', () => {
    expect(plan({ VPC_ID: VPC, TGB_READINESS_REQUEUE_SECONDS: '5' }, true).controllers['target-group-binding']).toEqual(
      {
        vpcId: VPC,
        readinessRequeueSeconds: 5,
        checkLbcLease: true,
        kube: { port: 'tgbKube' },
        elbv2: { port: 'elbv2' },
      },
    );
    expect(plan({}, true).controllers['target-group-binding']).toEqual({
      readinessRequeueSeconds: 10,
      checkLbcLease: true,
      kube: { port: 'tgbKube' },
      elbv2: { port: 'elbv2' },
    });
  });

  it('leaves it off without the flag, saying which turns it on; a dry run keeps it off too', () => {
    const off = plan({ VPC_ID: VPC }, false);
    expect(off.controllers['target-group-binding']).toBeUndefined();
    expect(off.off).toContainEqual([
      'target-group-binding',
      'no --target-group-binding or CCM_TARGET_GROUP_BINDING=true',
    ]);
    expect(plan({}, true, true).off).toContainEqual(['target-group-binding', 'dry run: it writes to AWS']);
  });
});

/** A target group made outside the cluster (as Terraform would), behind a listener so its targets are checked. */
async function terraformTargetGroup(elbv2: FakeElbv2): Promise<TargetGroup> {
  const port = new Elbv2Adapter(elbv2);
  const group = await port.createTargetGroup({
    name: 'web-ip',
    protocol: 'TCP',
    port: 8080,
    targetType: 'ip',
    vpcId: 'vpc-0a1b2c3d',
    healthCheck: LBC_TCP_HEALTH_CHECK,
    tags: { owner: 'terraform' },
  });
  if (group === 'name-taken') throw new Error('web-ip exists');
  const lb = elbv2.putLoadBalancer({
    name: 'web-internal',
    scheme: 'internal',
    subnetMappings: [{ subnetId: makeSubnet({ index: 10, zone: 'eu-west-1a' }).subnetId }],
    securityGroups: [],
    tags: {},
    state: 'active',
  });
  await port.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
  return group;
}

/** The Service `shop/web` (80 -> 8080) and its EndpointSlice of these ready addresses. */
function putBackend(w: LocalRealWorld, ips: readonly string[]): void {
  w.kube.putService({
    metadata: { name: 'web', namespace: NAMESPACE },
    spec: {
      type: 'ClusterIP',
      selector: { app: 'web' },
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    },
  });
  w.kube.putEndpointSlice({
    metadata: { name: 'web-abc12', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true, serving: true, terminating: false } })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  });
}

const registered = (w: LocalRealWorld, arn: string) =>
  w.elbv2
    .targetsOf(arn)
    .filter((t) => t.state !== 'draining')
    .map((t) => `${t.target.id}:${t.target.port}`)
    .sort();

describe('npm start -- --real --target-group-binding, against the relay stand-in', () => {
  it('a binding gets its Service’s endpoints registered within seconds, and follows a scale-up; keys sent by the relay', async () => {
    const w = await createLocalRealWorld();
    try {
      const group = await terraformTargetGroup(w.elbv2);
      putBackend(w, ['10.0.20.11', '10.0.20.12']);
      const p = startLocalProcess(w, { targetGroupBinding: true });
      try {
        expect(p.mode.engine.reconcilers).toContain('target-group-binding');
        await eventually(() => p.mode.state.leading && p.mode.relay.status().synced, 'the process to lead and list');
        w.bindings.putBinding({
          metadata: { name: 'web', namespace: NAMESPACE },
          spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: group.arn },
        });
        await eventually(() => registered(w, group.arn).length === 2, 'the endpoints to be registered', 10_000);
        expect(registered(w, group.arn)).toEqual(['10.0.20.11:8080', '10.0.20.12:8080']);
        expect(w.bindings.bindings.get(`${NAMESPACE}/web`)?.metadata.finalizers).toEqual([TGB_FINALIZER]);

        putBackend(w, ['10.0.20.11', '10.0.20.12', '10.0.20.13']);
        await eventually(() => registered(w, group.arn).length === 3, 'the scale-up to be followed', 10_000);
        // The resync ran once, at the start, before the binding existed (the next one is an hour away).
        expect(p.mode.state.rounds).toBe(1);
      } finally {
        await p.stop();
      }
    } finally {
      await w.close();
    }
  });

  it('while the reference controller holds its leader Lease: a Warning on the binding, no target, the key back a recheck later', async () => {
    const w = await createLocalRealWorld();
    try {
      const group = await terraformTargetGroup(w.elbv2);
      putBackend(w, ['10.0.20.11']);
      w.kube.workloads.leases.holdLbcLease('aws-load-balancer-controller-5f7c_1', { durationSeconds: 15 });
      const p = startLocalProcess(w, { targetGroupBinding: true });
      try {
        await eventually(() => p.mode.state.leading && p.mode.relay.status().synced, 'the process to lead and list');
        w.bindings.putBinding({
          metadata: { name: 'web', namespace: NAMESPACE },
          spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: group.arn },
        });
        const warned = () => w.kube.eventsFor('TargetGroupBinding', 'web', LBC_ACTIVE_REASON).length > 0;
        await eventually(warned, 'the binding to be told the reference runs', 10_000);
        expect(registered(w, group.arn)).toEqual([]);
        expect(w.bindings.bindings.get(`${NAMESPACE}/web`)?.metadata.finalizers ?? []).toEqual([]);

        // The key comes back by itself a recheck later (60 s, the Lease lasting 15 s), whatever else happens: a
        // change meanwhile waits behind it in the binding's message group.
        expect(p.mode.engine.depth()).toBe(1);
        expect(p.mode.engine.nextVisibleInMs()).toBeGreaterThan(50_000);
        expect(p.mode.engine.nextVisibleInMs()).toBeLessThanOrEqual(LBC_RECHECK_SECONDS * 1000);
      } finally {
        await p.stop();
      }
    } finally {
      await w.close();
    }
  });
});
