import { describe, expect, it } from 'vitest';
import type { EndpointSlice } from '../../../shared/k8s/types.ts';
import { instanceTargets, ipTargets } from '../../../shared/load-balancers/targets.ts';
import { ANNOTATION } from '../annotations.ts';
import { spec, svc } from '../testing/model.ts';

// The targets (shared/load-balancers/targets.ts) of a Service's model.
describe('targets', () => {
  it('instance targets use the node port', () => {
    const group = spec(svc()).targetGroups[0]!;
    expect(instanceTargets(group, ['i-1', 'i-2'])).toEqual([
      { id: 'i-1', port: 30080 },
      { id: 'i-2', port: 30080 },
    ]);
  });

  it('IP targets: ready IPv4 endpoints on the port the slice gives for the Service port name and protocol', () => {
    const group = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [{ name: 'http', port: 80, targetPort: 'web' }],
      }),
    ).targetGroups[0]!;
    const slice = (
      addressType: EndpointSlice['addressType'],
      ports: EndpointSlice['ports'],
      endpoints: EndpointSlice['endpoints'],
    ): EndpointSlice => ({
      metadata: { name: 's' },
      addressType,
      ports,
      endpoints,
    });
    const slices = [
      slice(
        'IPv4',
        [{ name: 'http', protocol: 'TCP', port: 8080 }],
        [
          { addresses: ['10.0.0.2'], conditions: { ready: true } },
          { addresses: ['10.0.0.1'] },
          { addresses: ['10.0.0.3'], conditions: { ready: false } },
          { addresses: ['10.0.0.4'], conditions: { ready: true, terminating: true } },
        ],
      ),
      slice('IPv4', [{ name: 'http', protocol: 'TCP', port: 9090 }], [{ addresses: ['10.0.0.5'] }]),
      slice('IPv4', [{ name: 'metrics', protocol: 'TCP', port: 9100 }], [{ addresses: ['10.0.0.6'] }]),
      slice('IPv6', [{ name: 'http', protocol: 'TCP', port: 8080 }], [{ addresses: ['fd00::1'] }]),
    ];
    expect(ipTargets(group, slices)).toEqual([
      { id: '10.0.0.1', port: 8080 },
      { id: '10.0.0.2', port: 8080 },
      { id: '10.0.0.5', port: 9090 },
    ]);
  });
});
