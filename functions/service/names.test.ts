import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isValidElbName } from '../../shared/aws/elbv2-port.ts';
import { backendRuleDescription } from '../../shared/load-balancers/node-rules.ts';
import { backendSecurityGroupName } from '../../shared/load-balancers/security-groups.ts';
import {
  HASH_LENGTH,
  loadBalancerName,
  loadBalancerNameFromHostname,
  readablePrefix,
  securityGroupName,
  targetGroupName,
} from './names.ts';

const id = (clusterName: string, namespace: string, name: string) => ({ clusterName, namespace, name });
const tg = (port = 80, protocol = 'TCP', targetType = 'instance', lb = 'lb') => ({
  loadBalancerName: lb,
  listenerPort: port,
  protocol,
  targetType,
});

/** DNS-1123 labels as Kubernetes allows for namespaces and Service names, hyphens included. */
const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
/** Cluster names as CLUSTER_NAME allows them. */
const cluster = fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/);

describe('readable names', () => {
  it.each([
    [id('prod', 'default', 'web'), /^prod-default-web-[0-9a-z]{8}$/],
    [id('test-cluster', 'default', 'web'), /^test-cluste-default-web-[0-9a-z]{8}$/],
    [id('production-eu-west-1', 'payments-gateway', 'api-server-public'), /^product-payment-api-ser-[0-9a-z]{8}$/],
    [id('Prod_EU.1', 'default', 'web'), /^prod-eu-1-default-web-[0-9a-z]{8}$/],
    [id('internal', 'default', 'web'), /^k8s-interna-default-web-[0-9a-z]{8}$/],
    [id('internal-lab', 'default', 'web'), /^k8s-interna-default-web-[0-9a-z]{8}$/],
  ])('%j -> %s', (identity, pattern) => {
    const name = loadBalancerName(identity);
    expect(name).toMatch(pattern);
    expect(name.length).toBeLessThanOrEqual(32);
    expect(isValidElbName(name)).toBe(true);
  });

  it('the name annotation wins', () => {
    expect(loadBalancerName(id('prod', 'default', 'web'), 'my-web')).toBe('my-web');
  });

  it('target group names carry the listener port and change with what AWS cannot modify in place', () => {
    const base = targetGroupName(id('prod', 'default', 'web'), tg());
    expect(base).toMatch(/^prod-default-web-80-[0-9a-z]{8}$/);
    expect(targetGroupName(id('prod', 'default', 'web'), tg(80, 'UDP'))).not.toBe(base);
    expect(targetGroupName(id('prod', 'default', 'web'), tg(80, 'TCP', 'ip'))).not.toBe(base);
    expect(targetGroupName(id('prod', 'default', 'web'), tg(80, 'TCP', 'instance', 'other-lb'))).not.toBe(base);
    expect(targetGroupName(id('prod', 'default', 'web'), tg())).toBe(base);
  });

  it('keeps each part readable when shortening', () => {
    expect(readablePrefix(['production-cluster', 'payments', 'api'], 20)).toBe('product-payments-api');
    expect(readablePrefix(['a--b_c', '-x-'], 10)).toBe('a-b-c-x');
    expect(readablePrefix(['abc'], 0)).toBe('');
  });

  it('security group names follow the load balancer name; the backend group and its rules the cluster', () => {
    expect(securityGroupName('my-web')).toBe('k8s-elb-my-web');
    expect(backendSecurityGroupName('prod')).toBe('k8s-traffic-prod');
    expect(backendRuleDescription('prod')).toBe('kubernetes.io/rule/nlb/backend=prod');
  });

  it.each([
    ['my-web-0123456789abcdef.elb.eu-west-1.amazonaws.com', 'my-web'],
    ['a-b-c-0123456789abcdef.elb.cn-north-1.amazonaws.com.cn', 'a-b-c'],
    ['a1b2c3-1234567890.eu-west-1.elb.amazonaws.com', undefined],
    ['example.com', undefined],
    [undefined, undefined],
  ])('the load balancer of hostname %s is %s', (hostname, name) => {
    expect(loadBalancerNameFromHostname(hostname)).toBe(name);
  });
});

describe('name properties', () => {
  it('every name is a valid ELB name of at most 32 characters, and deterministic', () => {
    fc.assert(
      fc.property(cluster, label, label, fc.integer({ min: 1, max: 65535 }), (c, ns, name, port) => {
        const lb = loadBalancerName(id(c, ns, name));
        const group = targetGroupName(id(c, ns, name), tg(port, 'TCP', 'instance', lb));
        for (const n of [lb, group]) {
          expect(n.length).toBeLessThanOrEqual(32);
          expect(isValidElbName(n)).toBe(true);
        }
        expect(lb.slice(-HASH_LENGTH)).toMatch(/^[0-9a-z]+$/);
        expect(loadBalancerName(id(c, ns, name))).toBe(lb);
        // The garbage collector finds our target groups by this prefix of the cluster name.
        expect(group.startsWith(readablePrefix([c], 5))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('two different Services never get the same load balancer name', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(cluster, label, label), {
          minLength: 2,
          maxLength: 200,
          selector: ([c, ns, n]) => `${c}\0${ns}\0${n}`,
        }),
        (services) => {
          const names = services.map(([c, ns, n]) => loadBalancerName(id(c, ns, n)));
          expect(new Set(names).size).toBe(services.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('names that read the same (hyphens, long names cut) still differ', () => {
    const ambiguous = [
      id('prod', 'a-b', 'c'),
      id('prod', 'a', 'b-c'),
      id('prod-a', 'b', 'c'),
      id('prod', 'payments-gateway-production-east', 'web'),
      id('prod', 'payments-gateway-production-west', 'web'),
    ];
    const names = ambiguous.map((i) => loadBalancerName(i));
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(names.map((n) => n.slice(0, -HASH_LENGTH - 1))).size).toBeLessThan(names.length);
  });

  it('target groups of different Services, ports, protocols or target types never share a name', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.tuple(
            label,
            label,
            fc.integer({ min: 1, max: 65535 }),
            fc.constantFrom('TCP', 'UDP', 'TCP_UDP', 'TLS'),
            fc.constantFrom('instance', 'ip'),
          ),
          { minLength: 2, maxLength: 200, selector: (t) => t.join('\0') },
        ),
        (groups) => {
          const names = groups.map(([ns, n, port, protocol, type]) =>
            targetGroupName(id('prod', ns, n), tg(port, protocol, type, loadBalancerName(id('prod', ns, n)))),
          );
          expect(new Set(names).size).toBe(groups.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
