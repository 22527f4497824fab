import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IngressClassParams } from '../../shared/k8s/ingress-types.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE, type KubeLab, startKubeLab } from '../helpers/kube-lab.ts';
import { AdminApi } from './backends.ts';
import type { KubeServer } from './clients.ts';
import { CRD_NAME, crdManifest, INGRESS_CLIENTS, installCrd, PARAMS_PATH, uninstallCrd } from './ingress-lab.ts';

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

  it.each([
    ['a scheme outside the enum', { scheme: 'public' }, /spec.scheme: Unsupported value: "public"/],
    ['an ipAddressType outside the enum', { ipAddressType: 'ipv6' }, /spec.ipAddressType: Unsupported value/],
    ['a targetType outside the enum', { targetType: 'pod' }, /spec.targetType: Unsupported value/],
    ['a subnet ID that is not one', { subnets: { ids: ['vpc-0123'] } }, /spec.subnets.ids\[0\]/],
    ['an empty list of subnet IDs', { subnets: { ids: [] } }, /spec.subnets.ids/],
    ['a tag without its value', { tags: [{ key: 'team' }] }, /spec.tags\[0\].value: Required value/],
    ['a group without a name', { group: {} }, /spec.group.name: Required value/],
    [
      'both prefixListsIDs and the legacy PrefixListsIDs',
      { prefixListsIDs: ['pl-1'], PrefixListsIDs: ['pl-1'] },
      /set prefixListsIDs or the older PrefixListsIDs, not both/,
    ],
  ])('refuses %s (422)', async (_what, spec, message) => {
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
});
