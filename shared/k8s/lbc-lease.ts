/**
 * The AWS Load Balancer Controller's leader Lease. While a running instance of it holds the Lease, the objects it
 * serves (Ingresses, TargetGroupBindings, its Services) are left to it: two controllers writing the same load
 * balancers fight. The check is the one client-go's leader election makes: held when it has a holder whose last
 * renewal is less than `leaseDurationSeconds` ago. A Lease released on shutdown (holder emptied) is free at once.
 */

export const LBC_LEASE = { namespace: 'kube-system', name: 'aws-load-balancer-controller-leader' } as const;

/** The Event reason on an object left alone because the reference controller runs. */
export const LBC_ACTIVE_REASON = 'LoadBalancerControllerActive';

/** How often an object left alone is looked at again, at least (the Lease's expiry, when later, wins). */
export const LBC_RECHECK_SECONDS = 60;

/** What of a `coordination.k8s.io/v1` Lease the check reads. */
export interface LeaseSnapshot {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    /** metav1.MicroTime (RFC 3339). */
    renewTime?: string;
    acquireTime?: string;
  };
}

export interface LeaseReadPort {
  /** undefined when the Lease does not exist. */
  getLease(namespace: string, name: string): Promise<LeaseSnapshot | undefined>;
}

export type LeaseState = { held: false } | { held: true; holder: string; expiresInSeconds: number };

/** Whether the Lease is held at `nowMs`, and for how long more at least. */
export function leaseState(lease: LeaseSnapshot | undefined, nowMs: number): LeaseState {
  const holder = lease?.spec?.holderIdentity;
  if (!holder) return { held: false };
  const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '');
  // A holder without a readable renewal time is taken as holding for one duration from now: never act on a guess.
  const duration = lease.spec?.leaseDurationSeconds ?? 15;
  const expiresAt = Number.isFinite(renewed) ? renewed + duration * 1000 : nowMs + duration * 1000;
  if (expiresAt <= nowMs) return { held: false };
  return { held: true, holder, expiresInSeconds: Math.ceil((expiresAt - nowMs) / 1000) };
}

/** The seconds to wait before looking again at an object left alone. */
export function recheckSeconds(state: Extract<LeaseState, { held: true }>): number {
  return Math.max(LBC_RECHECK_SECONDS, state.expiresInSeconds + 1);
}

/**
 * How many times in a row a key left to the reference is requeued: every requeue is a receive (docs/adr/0002), and a
 * reference controller running for days would otherwise walk the key into its DLQ. After that the key is let go and
 * the resync (every CCM_RESYNC_MINUTES) brings it back, as it does every key.
 */
export const LBC_GATE_REQUEUES = 20;

/** What a reconciler answers for a key left to the reference: look again later, unless it has been requeued enough. */
export function gateRequeue(
  state: Extract<LeaseState, { held: true }>,
  receiveCount: number,
): { requeueAfterSeconds: number } | undefined {
  return receiveCount < LBC_GATE_REQUEUES ? { requeueAfterSeconds: recheckSeconds(state) } : undefined;
}

/** The Warning's message. */
export function lbcActiveMessage(state: Extract<LeaseState, { held: true }>): string {
  return (
    `the AWS Load Balancer Controller holds its leader Lease ${LBC_LEASE.namespace}/${LBC_LEASE.name} ` +
    `(holder ${state.holder}): nothing is done here while it runs; work starts when the Lease expires`
  );
}

/** Reads the Lease and answers its state; a Lease that cannot be read is an error (never taken as free). */
export async function lbcLeaseState(port: LeaseReadPort, nowMs: number): Promise<LeaseState> {
  return leaseState(await port.getLease(LBC_LEASE.namespace, LBC_LEASE.name), nowMs);
}
