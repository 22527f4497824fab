import { describe, expect, it } from 'vitest';
import { nodeRules } from '../../../shared/load-balancers/node-rules.ts';
import { ANNOTATION } from '../annotations.ts';
import { spec, svc } from '../testing/model.ts';

// The Node rules (shared/load-balancers/node-rules.ts) a Service's model asks for.
describe('security group rules', () => {
  it('Node rules: from the backend group, node ports as the whole node port range, other ports one by one', () => {
    const s = spec(
      svc({
        spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
        ports: [
          { name: 'a', protocol: 'TCP', port: 80, nodePort: 30080 },
          { name: 'b', protocol: 'UDP', port: 53, nodePort: 30053 },
          { name: 'c', protocol: 'TCP', port: 81, nodePort: 8081 },
        ],
      }),
    );
    const rules = nodeRules(s, new Map(), 'sg-backend');
    expect(rules.map((r) => `${r.sourceGroupId} ${r.protocol}:${r.fromPort}-${r.toPort}`)).toEqual([
      'sg-backend udp:30000-32767',
      'sg-backend tcp:30000-32767',
      'sg-backend tcp:8081-8081',
    ]);
    expect(new Set(rules.map((r) => r.description))).toEqual(new Set(['kubernetes.io/rule/nlb/backend=prod']));
    expect(
      nodeRules(s, new Map(), 'sg-backend', { from: 8000, to: 9000 }).map(
        (r) => `${r.protocol}:${r.fromPort}-${r.toPort}`,
      ),
    ).toEqual(['udp:30053-30053', 'tcp:32000-32000', 'tcp:30080-30080', 'tcp:8000-9000']);
  });

  it('IP targets open the Pod ports that the targets use', () => {
    const s = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [{ name: 'http', port: 80, targetPort: 'web' }],
      }),
    );
    const targets = new Map([
      [
        s.targetGroups[0]!.name,
        [
          { id: '10.0.0.1', port: 8080 },
          { id: '10.0.0.2', port: 8081 },
        ],
      ],
    ]);
    expect(nodeRules(s, targets, 'sg-backend').map((r) => `${r.fromPort}`)).toEqual(['8080', '8081']);
  });
});
