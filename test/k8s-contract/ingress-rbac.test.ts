import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { IMPLICIT_GROUP_FINALIZER, type Ingress } from '../../shared/k8s/ingress-types.ts';
import { path } from '../../shared/k8s/rest-client.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { AdminApi, uniqueNamespace } from './backends.ts';
import type { KubeServer } from './clients.ts';
import { INGRESS_CLIENTS, installCrd, PARAMS_PATH } from './ingress-lab.ts';
import { useKubeLab } from './lab.ts';

/**
 * The Kubernetes permissions of the Ingress side, as documented, on a real API server with RBAC on: the
 * ClusterRole serverless-ccm:ingress of deploy/README-deploy.md lets the IngressesPort do everything it does
 * (through both clients, as a ServiceAccount bound to nothing else) and no more; deploy/relay/rbac-ingress.yaml
 * lets the relay list and watch what it forwards. Each role is installed under a name of this test's own, since
 * the run's API server is shared.
 */

const ROOT = join(import.meta.dirname, '../..');

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}
interface Manifest {
  kind: string;
  metadata: { name: string };
  rules?: Rule[];
}

/** The ClusterRole of that name in the guide's permissions block. */
function documentedRole(name: string): Rule[] {
  const guide = readFileSync(join(ROOT, 'deploy/README-deploy.md'), 'utf8');
  const section = guide.slice(guide.indexOf('### Grant the functions their Kubernetes permissions'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const role = (loadAll(yaml) as Manifest[]).find((m) => m?.kind === 'ClusterRole' && m.metadata.name === name);
  if (!role?.rules) throw new Error(`no ClusterRole ${name} in deploy/README-deploy.md`);
  return role.rules;
}

function relayRole(): Rule[] {
  const all = loadAll(readFileSync(join(ROOT, 'deploy/relay/rbac-ingress.yaml'), 'utf8')) as Manifest[];
  return all.find((m) => m.kind === 'ClusterRole')!.rules!;
}

/** A ServiceAccount of `namespace` bound to a ClusterRole of these rules, and a token of it. */
async function accountWith(api: AdminApi, namespace: string, role: string, rules: Rule[]): Promise<string> {
  const account = `${role}-account`;
  await api.post(path('api', 'v1', 'namespaces', namespace, 'serviceaccounts'), { metadata: { name: account } });
  await api.post('/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: role }, rules });
  await api.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: role },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
  });
  const answer = await api.post<{ status: { token: string } }>(
    `${path('api', 'v1', 'namespaces', namespace, 'serviceaccounts', account)}/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  );
  return answer.status.token;
}

/** What the API server's authorizer answers for a ServiceAccount (SubjectAccessReview). */
async function allowed(
  api: AdminApi,
  user: string,
  attributes: { group: string; resource: string; verb: string },
): Promise<boolean> {
  const review = await api.post<{ status: { allowed: boolean } }>(
    '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user, resourceAttributes: attributes },
    },
  );
  return review.status.allowed;
}

function ingress(name: string, namespace: string): Ingress {
  return {
    metadata: { name, namespace },
    spec: {
      ingressClassName: 'alb',
      defaultBackend: { service: { name: 'web', port: { number: 80 } } },
    },
  };
}

describe("the Ingress side's RBAC (real API server)", () => {
  if (!KUBE_LAB_AVAILABLE) {
    it.skip(KUBE_LAB_SKIPPED_MESSAGE);
    return;
  }
  const lab = useKubeLab();
  let api: AdminApi;
  let admin: KubeServer;
  let namespace: string;

  beforeAll(async () => {
    const access = lab();
    admin = { url: access.url, caData: access.caData, token: access.token };
    api = new AdminApi(admin);
    await installCrd(api);
    namespace = uniqueNamespace();
    await api.post('/api/v1/namespaces', { metadata: { name: namespace, labels: { team: 'shop' } } });
  }, 30_000);

  it.each(INGRESS_CLIENTS)(
    'serverless-ccm:ingress lets the IngressesPort over the $name do all it does, and nothing more',
    async (client) => {
      const role = `${namespace}-${client.name === 'client-node' ? 'cn' : 'rest'}-ingress`;
      const token = await accountWith(api, namespace, role, documentedRole('serverless-ccm:ingress'));
      const port = client.port({ ...admin, token });
      const created = await api.post<Ingress>(
        path('apis', 'networking.k8s.io', 'v1', 'namespaces', namespace, 'ingresses'),
        ingress(role, namespace),
      );
      await api.post(PARAMS_PATH, {
        apiVersion: 'elbv2.k8s.aws/v1beta1',
        kind: 'IngressClassParams',
        metadata: { name: role },
      });

      expect((await port.listIngresses()).some((i) => i.metadata.name === role)).toBe(true);
      expect(await port.getIngress(namespace, role)).toMatchObject({ metadata: { uid: created.metadata.uid } });
      expect(Array.isArray(await port.listIngressClasses())).toBe(true);
      expect(await port.getIngressClassParams(role)).toMatchObject({ metadata: { name: role } });
      expect((await port.getNamespace(namespace))?.metadata.labels).toMatchObject({ team: 'shop' });
      const guarded = await port.setIngressFinalizers(namespace, role, [IMPLICIT_GROUP_FINALIZER], {
        resourceVersion: created.metadata.resourceVersion!,
      });
      const hostname = 'k8s-shop-web-0123456789.eu-west-1.elb.amazonaws.com';
      expect((await port.setIngressStatus(namespace, role, [{ hostname }])).status?.loadBalancer?.ingress).toEqual([
        { hostname },
      ]);
      await port.setIngressFinalizers(namespace, role, [], {
        resourceVersion: (await port.getIngress(namespace, role))!.metadata.resourceVersion!,
      });
      expect(guarded.metadata.finalizers).toEqual([IMPLICIT_GROUP_FINALIZER]);

      const user = `system:serviceaccount:${namespace}:${role}-account`;
      for (const [group, resource, verb] of [
        ['networking.k8s.io', 'ingresses', 'delete'],
        ['networking.k8s.io', 'ingresses', 'update'],
        ['networking.k8s.io', 'ingressclasses', 'patch'],
        ['elbv2.k8s.aws', 'ingressclassparams', 'patch'],
        ['', 'secrets', 'get'],
        ['', 'services', 'patch'],
      ] as const) {
        expect(await allowed(api, user, { group, resource, verb }), `${group}/${resource}:${verb}`).toBe(false);
      }
    },
  );

  it('deploy/relay/rbac-ingress.yaml lets the relay list and watch what it forwards, and write nothing', async () => {
    const role = `${namespace}-relay-ingress`;
    await accountWith(api, namespace, role, relayRole());
    const user = `system:serviceaccount:${namespace}:${role}-account`;
    const kinds = [
      ['networking.k8s.io', 'ingresses'],
      ['networking.k8s.io', 'ingressclasses'],
      ['elbv2.k8s.aws', 'ingressclassparams'],
      ['', 'services'],
      ['discovery.k8s.io', 'endpointslices'],
    ] as const;
    for (const [group, resource] of kinds) {
      for (const verb of ['list', 'watch']) {
        expect(await allowed(api, user, { group, resource, verb }), `${group}/${resource}:${verb}`).toBe(true);
      }
      for (const verb of ['get', 'patch', 'create', 'delete']) {
        expect(await allowed(api, user, { group, resource, verb }), `${group}/${resource}:${verb}`).toBe(false);
      }
    }
  });
});
