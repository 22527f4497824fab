import { describe, expect, it } from 'vitest';
import {
  LBC_LEASE,
  LBC_RECHECK_SECONDS,
  type LeaseSnapshot,
  lbcActiveMessage,
  lbcLeaseState,
  leaseState,
  recheckSeconds,
} from './lbc-lease.ts';

/** The reference controller's leader Lease check: client-go's rule (held while renewed less than a duration ago). */

const NOW = Date.parse('2026-11-02T08:00:00Z');

function lease(spec: LeaseSnapshot['spec']): LeaseSnapshot {
  return { metadata: { namespace: LBC_LEASE.namespace, name: LBC_LEASE.name }, spec };
}

describe('leaseState', () => {
  it('is free when there is no Lease, or no spec', () => {
    expect(leaseState(undefined, NOW)).toEqual({ held: false });
    expect(leaseState(lease(undefined), NOW)).toEqual({ held: false });
  });

  it('is free when no one holds it (never acquired, or released on shutdown: holder emptied)', () => {
    expect(leaseState(lease({ leaseDurationSeconds: 15, renewTime: '2026-11-02T07:59:59.000000Z' }), NOW)).toEqual({
      held: false,
    });
    const released = lease({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: '2026-11-02T07:59:59.900000Z',
      acquireTime: '2026-11-02T07:59:59.900000Z',
    });
    expect(leaseState(released, NOW)).toEqual({ held: false });
  });

  it('is held while renewed less than its duration ago, and says for how long more (rounded up)', () => {
    const renewed = lease({
      holderIdentity: 'lbc-1',
      leaseDurationSeconds: 15,
      renewTime: '2026-11-02T07:59:54.500000Z',
    });
    expect(leaseState(renewed, NOW)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 10 });
    expect(leaseState(renewed, NOW + 9_499)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 1 });
  });

  it('is free once its duration has passed since the last renewal (the instance is gone or stuck)', () => {
    const renewed = lease({
      holderIdentity: 'lbc-1',
      leaseDurationSeconds: 15,
      renewTime: '2026-11-02T07:59:45.000000Z',
    });
    expect(leaseState(renewed, NOW)).toEqual({ held: false });
    expect(leaseState(renewed, NOW - 1)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 1 });
  });

  it('reads the acquire time when there is no renewal, and 15 seconds when there is no duration', () => {
    const acquired = lease({ holderIdentity: 'lbc-1', acquireTime: '2026-11-02T07:59:50.000000Z' });
    expect(leaseState(acquired, NOW)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 5 });
    expect(leaseState(acquired, NOW + 5_000)).toEqual({ held: false });
  });

  it('takes a holder whose renewal time cannot be read as holding for one duration from now (never a guess)', () => {
    const unreadable = lease({ holderIdentity: 'lbc-1', leaseDurationSeconds: 30, renewTime: 'yesterday' });
    expect(leaseState(unreadable, NOW)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 30 });
    expect(leaseState(lease({ holderIdentity: 'lbc-1' }), NOW)).toEqual({
      held: true,
      holder: 'lbc-1',
      expiresInSeconds: 15,
    });
  });

  it('reads a renewal time written in milliseconds (client-node) as one in microseconds', () => {
    const millis = lease({ holderIdentity: 'lbc-1', leaseDurationSeconds: 15, renewTime: '2026-11-02T07:59:54.500Z' });
    expect(leaseState(millis, NOW)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 10 });
  });
});

describe('the check around the state', () => {
  it('looks again no sooner than the recheck interval, later when the Lease expires later', () => {
    expect(recheckSeconds({ held: true, holder: 'lbc-1', expiresInSeconds: 10 })).toBe(LBC_RECHECK_SECONDS);
    expect(recheckSeconds({ held: true, holder: 'lbc-1', expiresInSeconds: 120 })).toBe(121);
  });

  it('names the Lease and its holder in the Warning', () => {
    const message = lbcActiveMessage({ held: true, holder: 'lbc-7d9f_1', expiresInSeconds: 10 });
    expect(message).toContain('kube-system/aws-load-balancer-controller-leader');
    expect(message).toContain('lbc-7d9f_1');
  });

  it('reads the reference Lease by its namespace and name; a failed read is an error, never taken as free', async () => {
    const asked: string[] = [];
    const held = await lbcLeaseState(
      {
        getLease: async (namespace, name) => {
          asked.push(`${namespace}/${name}`);
          return lease({ holderIdentity: 'lbc-1', leaseDurationSeconds: 15, renewTime: '2026-11-02T08:00:00.000000Z' });
        },
      },
      NOW,
    );
    expect(held).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 15 });
    expect(asked).toEqual(['kube-system/aws-load-balancer-controller-leader']);
    const failing = { getLease: () => Promise.reject(new Error('403 Forbidden')) };
    await expect(lbcLeaseState(failing, NOW)).rejects.toThrow('403 Forbidden');
  });
});
