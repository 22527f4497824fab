import { describe, expect, it } from 'vitest';
import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import type { TargetGroupBinding } from '../../shared/k8s/tgb-types.ts';
import { LBC_TCP_HEALTH_CHECK } from '../../shared/load-balancers/health-check.ts';
import { formatRecord, parseRecord } from './record.ts';
import { checkBinding } from './resolve.ts';

/** The pure checks and fill-in, and the multi-cluster record's format. */

const group: TargetGroup = {
  arn: 'arn:tg',
  name: 'web',
  protocol: 'TCP',
  port: 8080,
  targetType: 'ip',
  ipAddressType: 'ipv4',
  vpcId: 'vpc-1',
  healthCheck: LBC_TCP_HEALTH_CHECK,
  loadBalancerArns: [],
};
const binding = (spec: Partial<TargetGroupBinding['spec']>): TargetGroupBinding => ({
  metadata: { name: 'b' },
  spec: { serviceRef: { name: 'web', port: 80 }, ...spec },
});

describe('checkBinding', () => {
  it('fills in every field left out, and only those', () => {
    expect(checkBinding(binding({ targetGroupName: 'web' }), group)).toEqual({
      fill: { targetGroupARN: 'arn:tg', targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-1' },
      problems: [],
      targetType: 'ip',
    });
    const full = binding({ targetGroupARN: 'arn:tg', targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-1' });
    expect(checkBinding(full, group, 'vpc-1')).toEqual({ fill: {}, problems: [], targetType: 'ip' });
  });

  it.each<[string, Partial<TargetGroupBinding['spec']>, string]>([
    ['a port that is neither a number nor a name', { serviceRef: { name: 'web', port: 0 } }, 'spec.serviceRef.port'],
    ['no Service name', { serviceRef: { name: '', port: 80 } }, 'spec.serviceRef.name'],
    ['assumeRoleExternalId alone', { assumeRoleExternalId: 'x' }, 'spec.assumeRoleExternalId'],
  ])('%s names %s', (_, spec, field) => {
    expect(checkBinding(binding({ targetGroupARN: 'arn:tg', ...spec }), group).problems.map((p) => p.field)).toEqual([
      field,
    ]);
  });
});

describe('the multi-cluster record', () => {
  it('is compact, sorted and read back; garbage items are skipped', () => {
    const text = formatRecord([
      { id: '10.0.0.2', port: 80 },
      { id: '10.0.0.1', port: 8080 },
      { id: '10.0.0.2', port: 80 },
      { id: 'fd00::1', port: 80 },
    ]);
    expect(text).toBe('10.0.0.1:8080,10.0.0.2:80,fd00::1:80');
    expect(parseRecord(text)).toEqual([
      { id: '10.0.0.1', port: 8080 },
      { id: '10.0.0.2', port: 80 },
      { id: 'fd00::1', port: 80 },
    ]);
    expect(parseRecord('junk,10.0.0.1:x,i-1:30080')).toEqual([{ id: 'i-1', port: 30080 }]);
    expect(parseRecord(undefined)).toBeUndefined();
    expect(parseRecord('')).toEqual([]);
  });
});
