import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.ts';
import { FakeIngresses } from '../../shared/k8s/fakes/ingresses.ts';
import type { IngressClassParams } from '../../shared/k8s/ingress-types.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE, type KubeLab, startKubeLab } from '../helpers/kube-lab.ts';
import { AdminApi } from './backends.ts';
import type { KubeServer } from './clients.ts';
import {
  CRD_NAME,
  crdManifest,
  INGRESS_CLIENTS,
  installCrd,
  PARAMS_PATH,
  TGB_CRD_FILE,
  uninstallCrd,
} from './ingress-lab.ts';

/**
 * deploy/crds/ingressclassparams.yaml on a real API server: it installs and is served; IngressClassParams written
 * as the AWS Load Balancer Controller's documentation writes them (every field) apply unchanged and read back
 * through both clients; what its schema refuses is refused. This file starts an API server of its own (not the
 * run's shared one), since it installs and removes the CRD, which every other file would see.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/ingress/ingress_class/
 */

/** Every field, in the shapes of the reference's documentation examples. */
function everyField(name: string): IngressClassParams & Record<string, unknown> {
  return {
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'IngressClassParams',
    metadata: { name },
    spec: {
      loadBalancerName: 'awesome-alb',
      namespaceSelector: {
        matchLabels: { team: 'team-a' },
        matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'staging'] }],
      },
      group: { name: 'my-group' },
      scheme: 'internal',
      inboundCIDRs: ['10.0.0.0/16', '172.16.0.0/18'],
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      sslRedirectPort: '443',
      subnets: { tags: { 'kubernetes.io/role/internal-elb': ['1'], myKey: ['myVal0', 'myVal1'] } },
      ipAddressType: 'dualstack-without-public-ipv4',
      tags: [
        { key: 'org', value: 'my-org' },
        { key: 'env', value: 'prod' },
      ],
      targetType: 'ip',
      certificateArn: ['arn:aws:acm:us-west-2:123456789012:certificate/12345678-1234-1234-1234-123456789012'],
      loadBalancerAttributes: [
        { key: 'deletion_protection.enabled', value: 'true' },
        { key: 'idle_timeout.timeout_seconds', value: '120' },
      ],
      listeners: [
        {
          protocol: 'HTTPS',
          port: 443,
          listenerAttributes: [{ key: 'routing.http.response.server.enabled', value: 'false' }],
        },
      ],
      minimumLoadBalancerCapacity: { capacityUnits: 1000 },
      ipamConfiguration: { ipv4IPAMPoolId: 'ipam-pool-0123456789abcdef0' },
      prefixListsIDs: ['pl-00000000', 'pl-11111111'],
      wafv2AclArn: 'arn:aws:wafv2:us-west-2:123456789012:regional/webacl/my-acl/12345678-1234-1234-1234-123456789012',
      wafv2AclName: 'my-acl',
    },
  };
}

/** The legacy spelling and the other shapes the documentation shows (subnets by ID, the authentication block). */
function otherShapes(name: string): IngressClassParams & Record<string, unknown> {
  return {
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'IngressClassParams',
    metadata: { name },
    spec: {
      scheme: 'internet-facing',
      ipAddressType: 'ipv4',
      subnets: { ids: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'] },
      PrefixListsIDs: ['pl-22222222'],
      wafv2AclArn: 'none',
      // Not in the port's type: accepted and kept, so objects written for the reference survive a reinstall.
      authenticationConfiguration: {
        type: 'oidc',
        idpOidcConfiguration: {
          issuer: 'https://example.com',
          authorizationEndpoint: 'https://example.com/authorize',
          tokenEndpoint: 'https://example.com/token',
          userInfoEndpoint: 'https://example.com/userinfo',
          secretName: 'my-k8s-secret',
          authenticationRequestExtraParams: { display: 'page' },
        },
        onUnauthenticatedRequest: 'authenticate',
        scope: 'openid email',
        sessionCookie: 'AWSELBAuthSessionCookie',
        sessionTimeout: 604800,
      },
    } as IngressClassParams['spec'],
  };
}

/** What the CRD's schema refuses, each with the API server's words for it (FakeIngresses refuses the same). */
const REFUSED: [string, Record<string, unknown>, RegExp][] = [
  ['a scheme outside the enum', { scheme: 'public' }, /spec.scheme: Unsupported value: "public"/],
  ['an ipAddressType outside the enum', { ipAddressType: 'ipv6' }, /spec.ipAddressType: Unsupported value/],
  ['a targetType outside the enum', { targetType: 'pod' }, /spec.targetType: Unsupported value/],
  ['a subnet ID that is not one', { subnets: { ids: ['vpc-0123'] } }, /spec.subnets.ids\[0\]/],
  ['an empty list of subnet IDs', { subnets: { ids: [] } }, /spec.subnets.ids/],
  ['a tag without its value', { tags: [{ key: 'team' }] }, /spec.tags\[0\].value: Required value/],
  ['a group without a name', { group: {} }, /spec.group.name: Required value/],
  ['a capacity without its units', { minimumLoadBalancerCapacity: {} }, /capacityUnits: Required value/],
  [
    'a listener attribute without its key',
    { listeners: [{ protocol: 'HTTP', port: 80, listenerAttributes: [{ value: 'v' }] }] },
    /spec.listeners\[0\].listenerAttributes\[0\].key: Required value/,
  ],
  [
    'a namespace selector requirement without its operator',
    { namespaceSelector: { matchExpressions: [{ key: 'team' }] } },
    /spec.namespaceSelector.matchExpressions\[0\].operator: Required value/,
  ],
  [
    'an authentication type outside the enum',
    { authenticationConfiguration: { type: 'saml' } },
    /spec.authenticationConfiguration.type: Unsupported value/,
  ],
  [
    'both prefixListsIDs and the legacy PrefixListsIDs',
    { prefixListsIDs: ['pl-1'], PrefixListsIDs: ['pl-1'] },
    /set prefixListsIDs or the older PrefixListsIDs, not both/,
  ],
];

/** A GET as `kubectl get` asks for it: a Table, whose columns are the CRD's printer columns. */
function table(
  server: KubeServer,
  at: string,
): Promise<{ columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${at}`,
      {
        ca: Buffer.from(server.caData, 'base64'),
        headers: { authorization: `Bearer ${server.token}`, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('IngressClassParams CRD (real API server)', () => {
  if (!KUBE_LAB_AVAILABLE) {
    it.skip(KUBE_LAB_SKIPPED_MESSAGE);
    return;
  }
  let lab: KubeLab;
  let api: AdminApi;
  let server: KubeServer;

  beforeAll(async () => {
    lab = await startKubeLab();
    server = { url: lab.url, caData: lab.caData, token: lab.token };
    api = new AdminApi(server);
  }, 90_000);

  afterAll(async () => {
    await lab?.stop();
  });

  it('without the CRD, both clients read IngressClassParams as undefined (the API server answers 404)', async () => {
    await expect(api.get(`${PARAMS_PATH}/anything`)).rejects.toMatchObject({ statusCode: 404 });
    for (const client of INGRESS_CLIENTS) {
      expect(await client.port(server).getIngressClassParams('anything'), client.name).toBeUndefined();
    }
  });

  it('installs: cluster-scoped elbv2.k8s.aws/v1beta1 under the reference names, structural, established', async () => {
    const crd = await installCrd(api);
    const conditions = Object.fromEntries((crd.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(conditions).toMatchObject({ NamesAccepted: 'True', Established: 'True' });
    expect(conditions.NonStructuralSchema).toBeUndefined();
    expect(crd.status).toMatchObject({
      acceptedNames: {
        kind: 'IngressClassParams',
        listKind: 'IngressClassParamsList',
        plural: 'ingressclassparams',
        singular: 'ingressclassparams',
      },
    });
    expect(crd.spec).toMatchObject({ group: 'elbv2.k8s.aws', scope: 'Cluster' });
    expect(crd.metadata.name).toBe(CRD_NAME);
  });

  it('takes every field as the reference documents them, unchanged, and both clients read them back', async () => {
    await installCrd(api);
    for (const params of [everyField('every-field'), otherShapes('other-shapes')]) {
      const created = await api.post<IngressClassParams>(PARAMS_PATH, params);
      expect(created.spec).toEqual(params.spec);
      const read = await api.get<IngressClassParams>(`${PARAMS_PATH}/${params.metadata.name}`);
      expect(read.spec).toEqual(params.spec);
      for (const client of INGRESS_CLIENTS) {
        expect(await client.port(server).getIngressClassParams(params.metadata.name), client.name).toEqual(read);
      }
    }
  });

  it('shows GROUP-NAME, SCHEME, IP-ADDRESS-TYPE and AGE in kubectl get', async () => {
    await installCrd(api);
    await api.post(PARAMS_PATH, everyField('printed')).catch(() => undefined);
    const answer = await table(server, `${PARAMS_PATH}/printed`);
    expect(answer.columnDefinitions.map((c) => c.name)).toEqual([
      'Name',
      'GROUP-NAME',
      'SCHEME',
      'IP-ADDRESS-TYPE',
      'AGE',
    ]);
    expect(answer.rows[0]!.cells.slice(0, 4)).toEqual([
      'printed',
      'my-group',
      'internal',
      'dualstack-without-public-ipv4',
    ]);
  });

  it.each(REFUSED)('refuses %s (422)', async (_what, spec, message) => {
    await installCrd(api);
    const name = `invalid-${Math.abs(
      JSON.stringify(spec)
        .split('')
        .reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7),
    )}`;
    const refused = await api
      .post(PARAMS_PATH, { apiVersion: 'elbv2.k8s.aws/v1beta1', kind: 'IngressClassParams', metadata: { name }, spec })
      .catch((err: unknown) => err);
    expect(refused).toMatchObject({ statusCode: 422 });
    expect(String((refused as Error).message)).toMatch(message);
    await expect(api.get(`${PARAMS_PATH}/${name}`)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('keeps stored objects when installed again over itself, and stops serving them once removed', async () => {
    await installCrd(api);
    await api.post(PARAMS_PATH, everyField('kept')).catch(() => undefined);
    await installCrd(api);
    expect((await api.get<IngressClassParams>(`${PARAMS_PATH}/kept`)).spec).toEqual(everyField('kept').spec);
    await uninstallCrd(api);
    for (const client of INGRESS_CLIENTS) {
      expect(await client.port(server).getIngressClassParams('kept'), client.name).toBeUndefined();
    }
    expect(crdManifest().metadata.name).toBe(CRD_NAME);
  }, 60_000);

  describe('TargetGroupBinding CRD', () => {
    const tgbs = (version: string, namespace: string) =>
      `/apis/elbv2.k8s.aws/${version}/namespaces/${namespace}/targetgroupbindings`;
    const ARN =
      'arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/k8s-shop-web-0123456789/0123456789abcdef';

    /** As the reference documents a binding: every field of v1beta1. */
    function binding(name: string) {
      return {
        apiVersion: 'elbv2.k8s.aws/v1beta1',
        kind: 'TargetGroupBinding',
        metadata: { name, namespace: 'tgb' },
        spec: {
          serviceRef: { name: 'awesome-service', port: 80 },
          targetGroupARN: ARN,
          targetType: 'instance',
          targetGroupProtocol: 'HTTP',
          ipAddressType: 'ipv4',
          vpcID: 'vpc-0123456789abcdef0',
          nodeSelector: { matchLabels: { 'node.kubernetes.io/role': 'web' } },
          networking: {
            ingress: [
              {
                from: [{ securityGroup: { groupID: 'sg-0123456789abcdef0' } }, { ipBlock: { cidr: '10.0.0.0/16' } }],
                ports: [{ protocol: 'TCP', port: 80 }, { port: 'http' }],
              },
            ],
          },
          multiClusterTargetGroup: true,
          iamRoleArnToAssume: 'arn:aws:iam::210987654321:role/cross-account',
          assumeRoleExternalId: 'external-id',
        },
      };
    }

    beforeAll(async () => {
      await installCrd(api, TGB_CRD_FILE);
      await api.post('/api/v1/namespaces', { metadata: { name: 'tgb' } }).catch(() => undefined);
    });

    it('takes a binding with every field unchanged, serves it as v1alpha1 too, and keeps its status apart', async () => {
      const sent = binding('every-field');
      const created = await api.post<{ metadata: { resourceVersion: string }; spec: unknown }>(
        tgbs('v1beta1', 'tgb'),
        sent,
      );
      expect(created.spec).toEqual(sent.spec);
      const alpha = await api.get<{ apiVersion: string; spec: { serviceRef: unknown; targetGroupARN: string } }>(
        `${tgbs('v1alpha1', 'tgb')}/every-field`,
      );
      expect(alpha.apiVersion).toBe('elbv2.k8s.aws/v1alpha1');
      expect(alpha.spec).toMatchObject({ serviceRef: sent.spec.serviceRef, targetGroupARN: ARN });
      const status = { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled' }] };
      await api.patch(`${tgbs('v1beta1', 'tgb')}/every-field`, { status });
      expect((await api.get<{ status?: unknown }>(`${tgbs('v1beta1', 'tgb')}/every-field`)).status).toBeUndefined();
      const written = await api.patch<{ status: unknown; spec: unknown }>(
        `${tgbs('v1beta1', 'tgb')}/every-field/status`,
        {
          status,
          spec: { targetType: 'ip' },
        },
      );
      expect(written.status).toEqual(status);
      expect(written.spec).toEqual(sent.spec);
    });

    it('takes a binding by target group name, without an ARN (v1beta1), and a name-port', async () => {
      const { targetGroupARN: _arn, ...spec } = binding('by-name').spec;
      const sent = {
        ...binding('by-name'),
        spec: { ...spec, targetGroupName: 'k8s-shop-web-0123456789', serviceRef: { name: 'web', port: 'http' } },
      };
      const created = await api.post<{ spec: unknown }>(tgbs('v1beta1', 'tgb'), sent);
      expect(created.spec).toEqual(sent.spec);
    });

    it.each([
      ['a targetType outside the enum', { targetType: 'pod' }, /spec.targetType: Unsupported value/],
      ['an ipAddressType outside the enum', { ipAddressType: 'dualstack' }, /spec.ipAddressType: Unsupported value/],
      ['no serviceRef', { serviceRef: undefined }, /spec.serviceRef: Required value/],
      [
        'a networking rule without ports',
        { networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }] } },
        /spec.networking.ingress\[0\].ports: Required value/,
      ],
      [
        'a port protocol outside TCP and UDP',
        { networking: { ingress: [{ from: [], ports: [{ protocol: 'SCTP' }] }] } },
        /protocol: Unsupported value/,
      ],
    ])('refuses %s (422)', async (what, change, message) => {
      const name = `bad-${what.replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '')}`.slice(0, 60);
      const sent = binding(name);
      const refused = await api
        .post(tgbs('v1beta1', 'tgb'), { ...sent, spec: { ...sent.spec, ...change } })
        .catch((err: unknown) => err);
      expect(refused).toMatchObject({ statusCode: 422 });
      expect(String((refused as Error).message)).toMatch(message);
    });

    it('v1alpha1 still requires the ARN', async () => {
      const { targetGroupARN: _arn, ...spec } = binding('alpha-no-arn').spec;
      const refused = await api
        .post(tgbs('v1alpha1', 'tgb'), { ...binding('alpha-no-arn'), apiVersion: 'elbv2.k8s.aws/v1alpha1', spec })
        .catch((err: unknown) => err);
      expect(refused).toMatchObject({ statusCode: 422 });
      expect(String((refused as Error).message)).toMatch(/spec.targetGroupARN: Required value/);
    });
  });
});

describe('IngressClassParams CRD (FakeIngresses)', () => {
  it('takes every field as the reference documents them, unchanged', () => {
    const fake = new FakeIngresses(new FakeClock());
    for (const params of [everyField('every-field'), otherShapes('other-shapes')]) {
      expect(fake.putIngressClassParams(params).spec).toEqual(params.spec);
    }
  });

  it.each(REFUSED)('refuses %s (422), as the API server does', (_what, spec, message) => {
    const fake = new FakeIngresses(new FakeClock());
    const refused = (() => {
      try {
        fake.putIngressClassParams({ metadata: { name: 'invalid' }, spec } as IngressClassParams);
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toMatchObject({ statusCode: 422 });
    expect(String((refused as Error).message)).toMatch(message);
    expect(fake.params.size).toBe(0);
  });
});
