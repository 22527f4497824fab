import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { QUEUE_URL_VARIABLES } from './config.ts';
import { kindsFor, type Reconciler } from './forwarding.ts';
import { KIND_INFO, type WatchedKind } from './kinds.ts';

/**
 * deploy/relay grants the relay what it watches and nothing more: rbac.yaml what the default
 * settings of deployment.yaml make it watch, each optional file what one more queue adds.
 */

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
}

const manifests = (file: string) =>
  loadAllYaml(readFileSync(new URL(`../../deploy/relay/${file}`, import.meta.url), 'utf8')) as {
    kind?: string;
    metadata?: { name?: string; namespace?: string };
    roleRef?: { kind?: string; name?: string };
    rules?: Rule[];
    spec?: { template?: { spec?: { containers?: { env?: { name: string }[] }[] } } };
  }[];

/**
 * `group/resource` the ClusterRoles of a file let the relay list and watch, and the Roles (which also grant the
 * Lease: their rules without list or watch are not about watching).
 */
function watchable(file: string): string[] {
  const all = manifests(file);
  const clusterRules = all.filter((m) => m.kind === 'ClusterRole').flatMap((m) => m.rules ?? []);
  const roleRules = all
    .filter((m) => m.kind === 'Role')
    .flatMap((m) => m.rules ?? [])
    .filter((r) => r.verbs?.some((v) => v === 'list' || v === 'watch'));
  const rules = [...clusterRules, ...roleRules];
  for (const rule of rules) expect(rule.verbs).toEqual(['list', 'watch']);
  return rules
    .flatMap((r) => (r.apiGroups ?? []).flatMap((g) => (r.resources ?? []).map((res) => `${g}/${res}`)))
    .sort();
}

/** `group/resource` of the kinds, as the relay's list and watch paths name them. */
function resources(kinds: readonly WatchedKind[]): string[] {
  return kinds
    .map((kind) => {
      const [, api, ...rest] = KIND_INFO[kind].path.split('/');
      return api === 'api' ? `/${rest.at(-1)}` : `${rest[0]}/${rest.at(-1)}`;
    })
    .sort();
}

const defaultReconcilers = (): Reconciler[] => {
  const names = new Set(
    manifests('deployment.yaml').flatMap((m) => m.spec?.template?.spec?.containers?.flatMap((c) => c.env ?? []) ?? []),
  );
  const configured = [...names].map((e) => e.name);
  return (Object.entries(QUEUE_URL_VARIABLES) as [Reconciler, string][])
    .filter(([, variable]) => configured.includes(variable))
    .map(([reconciler]) => reconciler);
};

describe('deploy/relay RBAC', () => {
  it('rbac.yaml lets the relay watch exactly what the default deployment.yaml makes it watch', () => {
    const reconcilers = defaultReconcilers();
    expect(reconcilers).toEqual(['node', 'node-lifecycle', 'route']);
    expect(watchable('rbac.yaml')).toEqual(resources(kindsFor(reconcilers)));
    expect(watchable('rbac.yaml')).not.toContain('/pods');
  });

  it.each<[string, Reconciler]>([
    ['rbac-service.yaml', 'service'],
    ['rbac-ipam.yaml', 'ipam'],
  ])('%s adds exactly what the %s queue makes the relay watch', (file, reconciler) => {
    const base = kindsFor(defaultReconcilers());
    const added = kindsFor([reconciler]).filter((kind) => !base.includes(kind));
    expect(watchable(file)).toEqual(resources(added));
  });

  it('a kind watched in one namespace, by name, is granted there for that name only (a Role and its binding)', () => {
    const scoped = kindsFor(['ipam']).filter((kind) => KIND_INFO[kind].path.includes('/namespaces/'));
    expect(scoped).toEqual(['ConfigMap']);
    const all = manifests('rbac-ipam.yaml');
    for (const kind of scoped) {
      const { path, fieldSelector } = KIND_INFO[kind];
      const [, namespace, resource] = path.match(/\/namespaces\/([^/]+)\/([^/]+)$/)!;
      const role = all.find((m) => m.kind === 'Role' && m.rules?.some((r) => r.resources?.includes(resource!)));
      expect(role?.metadata?.namespace).toBe(namespace);
      expect(role?.rules).toEqual([
        {
          apiGroups: [''],
          resources: [resource],
          resourceNames: [fieldSelector!.replace('metadata.name=', '')],
          verbs: ['list', 'watch'],
        },
      ]);
      const binding = all.find((m) => m.kind === 'RoleBinding' && m.roleRef?.name === role?.metadata?.name);
      expect(binding?.metadata?.namespace).toBe(namespace);
    }
    expect(
      all
        .filter((m) => m.kind === 'ClusterRole')
        .flatMap((m) => m.rules ?? [])
        .flatMap((r) => r.resources),
    ).not.toContain('configmaps');
  });

  it('kustomization.yaml applies the base files and names each optional one', () => {
    const text = readFileSync(new URL('../../deploy/relay/kustomization.yaml', import.meta.url), 'utf8');
    expect(text).toMatch(/^ {2}- rbac\.yaml$/m);
    for (const optional of ['rbac-service.yaml', 'rbac-ipam.yaml', 'leader-migration.yaml']) {
      expect(text).toMatch(new RegExp(`^ {2}# - ${optional.replace('.', '\\.')}$`, 'm'));
    }
  });
});
