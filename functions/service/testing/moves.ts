import type { FakeElb } from '../../../shared/aws/fakes/elb/fake-elb.ts';
import type { ServiceWorld } from '../../../test/helpers/service-world.ts';
import type { ServiceDeps } from '../deps.ts';

/**
 * What a Service's clients would see while its load balancer is replaced: after every call the controller makes
 * (AWS or Kubernetes), whether the load balancer the Service's status names exists, serves (an active NLB, or a
 * Classic ELB) and forwards every port of the Service to a healthy target (a target group's `healthy` target, or an
 * instance in service). `elb`: the Classic ELB account, when the world has one.
 */
export function moveWatcher(w: ServiceWorld, elb?: FakeElb, name = 'web') {
  const service = () => w.kube.services.get(`default/${name}`)!;
  const hostname = () => service().status?.loadBalancer?.ingress?.[0]?.hostname;
  const networkLbs = () => [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
  const classicLbs = () => [...(elb?.loadBalancers.values() ?? [])];
  /** Every load balancer there is, by name and DNS name. */
  const loadBalancers = () => [
    ...networkLbs().map((lb) => ({ name: lb.name, dnsName: lb.dnsName })),
    ...classicLbs().map((lb) => ({ name: lb.name, dnsName: lb.dnsName })),
  ];

  const classicOutage = (dnsName: string): string | undefined => {
    const lb = classicLbs().find((l) => l.dnsName === dnsName)!;
    for (const port of service().spec?.ports ?? []) {
      if (!lb.listeners.has(port.port)) return `${lb.name} has no listener on port ${port.port}`;
    }
    const inService = [...lb.instances.entries()].some(
      ([id, r]) =>
        w.ec2.instances.get(id)?.state === 'running' &&
        (r.forced === 'InService' || (r.forced === undefined && r.outOfServiceDescribesLeft <= 0)),
    );
    return inService ? undefined : `${lb.name} has no instance in service`;
  };

  /** What is wrong with the state for a client of the Service now, or undefined when it is served. */
  const outage = (): string | undefined => {
    const dnsName = hostname();
    if (!dnsName) return 'the status names no load balancer';
    if (classicLbs().some((l) => l.dnsName === dnsName)) return classicOutage(dnsName);
    const lb = networkLbs().find((l) => l.dnsName === dnsName);
    if (!lb) return `the status names ${dnsName}, which does not exist`;
    if (lb.state !== 'active') return `the status names ${lb.name}, which is ${lb.state}`;
    for (const port of service().spec?.ports ?? []) {
      const listener = w.elbv2.listenersOf(lb.arn).find((l) => l.port === port.port);
      if (!listener?.targetGroupArn) return `${lb.name} has no listener forwarding port ${port.port}`;
      const healthy = w.elbv2.targetsOf(listener.targetGroupArn).some((t) => t.state === 'healthy');
      if (!healthy) return `${lb.name} has no healthy target behind port ${port.port}`;
    }
    return undefined;
  };

  /**
   * The controller's ports wrapped so that the state is looked at after every call (reads included: a read moves
   * the fakes' provisioning and health along), and what the move went through is recorded.
   */
  const watched = (deps: ServiceDeps) => {
    const seen = {
      calls: 0,
      outages: [] as string[],
      /** States in which two load balancers existed at once. */
      both: 0,
      /** The Service's finalizers (sorted, joined with commas) in each state. */
      finalizers: new Set<string>(),
      /** When the status first named each load balancer, and when each went. */
      namedAt: new Map<string, number>(),
      goneAt: new Map<string, number>(),
    };
    const known = new Set<string>();
    const look = (call: string) => {
      seen.calls += 1;
      const problem = outage();
      if (problem) seen.outages.push(`after call ${seen.calls} (${call}): ${problem}`);
      const now = loadBalancers();
      if (now.length > 1) seen.both += 1;
      for (const lb of now) {
        known.add(lb.name);
        if (lb.dnsName === hostname() && !seen.namedAt.has(lb.name)) seen.namedAt.set(lb.name, w.clock.now());
      }
      for (const gone of known) {
        if (!now.some((lb) => lb.name === gone) && !seen.goneAt.has(gone)) seen.goneAt.set(gone, w.clock.now());
      }
      seen.finalizers.add([...(service().metadata.finalizers ?? [])].sort().join(','));
    };
    const wrap = <P extends object>(port: P, label: string): P =>
      new Proxy(port, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            const call = `${label}.${String(property)}`;
            const result = value.apply(target, args);
            if (!(result instanceof Promise)) {
              look(call);
              return result;
            }
            return result.then(
              (r) => {
                look(call);
                return r;
              },
              (err) => {
                look(call);
                throw err;
              },
            );
          };
        },
      });
    return {
      seen,
      deps: {
        ...deps,
        elbv2: wrap(deps.elbv2, 'elbv2'),
        ec2: wrap(deps.ec2, 'ec2'),
        kube: wrap(deps.kube, 'kube'),
        ...(deps.elb ? { elb: wrap(deps.elb, 'elb') } : {}),
      },
    };
  };

  return { outage, watched, loadBalancers };
}

export type MoveRecord = ReturnType<ReturnType<typeof moveWatcher>['watched']>['seen'];
