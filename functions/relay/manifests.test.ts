import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { READINESS_GATE_INJECT_LABEL, TGB_GROUP, TGB_PLURAL } from '../../shared/k8s/tgb-types.ts';
import { loadRelayConfig, QUEUE_URL_VARIABLES } from './config.ts';
import type { Reconciler } from './controllers/index.ts';
import { kindsFor } from './forwarding.ts';
import { KIND_INFO, type WatchedKind } from './kinds.ts';
import {
  MUTATING_WEBHOOK,
  POD_READINESS_WEBHOOK,
  TGB_VALIDATING_WEBHOOK,
  VALIDATING_WEBHOOK,
} from './webhook/names.ts';
import { serviceDnsNames } from './webhook/start.ts';

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
    ['rbac-ingress.yaml', 'ingress'],
    ['rbac-target-group-binding.yaml', 'target-group-binding'],
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
    for (const optional of [
      'rbac-service.yaml',
      'rbac-ipam.yaml',
      'rbac-ingress.yaml',
      'leader-migration.yaml',
      'webhook.yaml',
      'rbac-webhook.yaml',
      'webhook-cert-manager.yaml',
      'rbac-target-group-binding.yaml',
      'webhook-tgb.yaml',
      'webhook-tgb-cert-manager.yaml',
    ]) {
      expect(text).toMatch(new RegExp(`^ {2}# - ${optional.replace('.', '\\.')}$`, 'm'));
    }
  });
});

interface WebhookDoc {
  kind?: string;
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  spec?: {
    ports?: { port: number; targetPort: string }[];
    secretName?: string;
    dnsNames?: string[];
    template?: { spec?: { containers?: { ports?: { name: string; containerPort: number }[] }[] } };
  };
  rules?: (Rule & { resourceNames?: string[] })[];
  webhooks?: {
    name: string;
    clientConfig: { caBundle?: string; service: { name: string; namespace: string; path: string; port: number } };
    rules: { operations: string[]; apiGroups: string[]; apiVersions: string[]; resources: string[] }[];
    failurePolicy: string;
    sideEffects: string;
    admissionReviewVersions: string[];
    namespaceSelector?: unknown;
    objectSelector?: unknown;
    timeoutSeconds?: number;
  }[];
}

const docs = (file: string) => manifests(file) as unknown as WebhookDoc[];
const one = (file: string, kind: string) => docs(file).find((d) => d.kind === kind)!;
/** The defaults the relay starts with: the manifests must name the same objects. */
const defaults = loadRelayConfig({ NODE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/n.fifo' });

describe.each(['webhook.yaml', 'webhook-cert-manager.yaml'])('deploy/relay/%s', (file) => {
  it('registers the webhooks the relay serves, by name and path, failing open', () => {
    const mutating = one(file, 'MutatingWebhookConfiguration');
    const validating = one(file, 'ValidatingWebhookConfiguration');
    expect(mutating.metadata?.name).toBe(defaults.RELAY_WEBHOOK_CONFIGURATION);
    expect(validating.metadata?.name).toBe(defaults.RELAY_WEBHOOK_CONFIGURATION);
    const service = { name: defaults.RELAY_WEBHOOK_SERVICE, namespace: 'kube-system', port: 443 };
    expect(mutating.webhooks).toEqual([
      expect.objectContaining({
        name: MUTATING_WEBHOOK.name,
        clientConfig: { service: { ...service, path: MUTATING_WEBHOOK.path } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      }),
    ]);
    expect(validating.webhooks).toEqual([
      expect.objectContaining({
        name: VALIDATING_WEBHOOK.name,
        clientConfig: { service: { ...service, path: VALIDATING_WEBHOOK.path } },
        rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      }),
    ]);
  });

  it("sends the Service's port 443 to the container port the relay listens on", () => {
    const service = one(file, 'Service');
    expect(service.metadata).toMatchObject({ name: defaults.RELAY_WEBHOOK_SERVICE, namespace: 'kube-system' });
    const [port] = service.spec?.ports ?? [];
    expect(port).toMatchObject({ port: 443 });
    const container = one('deployment.yaml', 'Deployment').spec?.template?.spec?.containers?.[0];
    expect(container?.ports).toContainEqual({
      name: port!.targetPort,
      containerPort: defaults.RELAY_WEBHOOK_PORT,
      protocol: 'TCP',
    });
  });
});

describe('webhook TLS manifests', () => {
  it('webhook-cert-manager.yaml issues the certificate for the Service and injects its CA into both configurations', () => {
    const certificate = one('webhook-cert-manager.yaml', 'Certificate');
    expect(certificate.spec?.secretName).toBe(defaults.RELAY_WEBHOOK_SECRET);
    expect(certificate.spec?.dnsNames).toEqual(serviceDnsNames(defaults.RELAY_WEBHOOK_SERVICE, 'kube-system'));
    const source = `${certificate.metadata?.namespace}/${certificate.metadata?.name}`;
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      expect(one('webhook-cert-manager.yaml', kind).metadata?.annotations).toEqual({
        'cert-manager.io/inject-ca-from': source,
      });
      expect(one('webhook.yaml', kind).metadata?.annotations).toBeUndefined();
    }
  });

  it('rbac-webhook.yaml grants the one Secret and the two configurations by name, create alone unnamed', () => {
    const rules = docs('rbac-webhook.yaml')
      .filter((d) => d.kind === 'Role' || d.kind === 'ClusterRole')
      .flatMap((d) => d.rules ?? []);
    expect(rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [defaults.RELAY_WEBHOOK_SECRET],
        verbs: ['get', 'update'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
        resourceNames: [defaults.RELAY_WEBHOOK_CONFIGURATION],
        verbs: ['get', 'patch'],
      },
    ]);
  });
});

describe.each(['webhook-tgb.yaml', 'webhook-tgb-cert-manager.yaml'])('deploy/relay/%s', (file) => {
  it('registers the TargetGroupBinding webhooks the relay serves, by name and path, on the webhook Service', () => {
    const mutating = one(file, 'MutatingWebhookConfiguration');
    const validating = one(file, 'ValidatingWebhookConfiguration');
    expect(mutating.metadata?.name).toBe(defaults.RELAY_WEBHOOK_TGB_CONFIGURATION);
    expect(validating.metadata?.name).toBe(defaults.RELAY_WEBHOOK_TGB_CONFIGURATION);
    const service = { name: defaults.RELAY_WEBHOOK_SERVICE, namespace: 'kube-system', port: 443 };
    expect(one('webhook.yaml', 'Service').metadata?.name).toBe(service.name);
    // The reference's selectors: namespaces labelled for readiness gates, never its own Pods.
    expect(mutating.webhooks).toEqual([
      expect.objectContaining({
        name: POD_READINESS_WEBHOOK.name,
        clientConfig: { service: { ...service, path: POD_READINESS_WEBHOOK.path } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: {
          matchExpressions: [{ key: READINESS_GATE_INJECT_LABEL, operator: 'In', values: ['enabled'] }],
        },
        objectSelector: {
          matchExpressions: [
            { key: 'app.kubernetes.io/name', operator: 'NotIn', values: ['aws-load-balancer-controller'] },
          ],
        },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      }),
    ]);
    // Fail, as the reference's: a binding admitted unchecked could take over another's target group.
    expect(validating.webhooks).toEqual([
      expect.objectContaining({
        name: TGB_VALIDATING_WEBHOOK.name,
        clientConfig: { service: { ...service, path: TGB_VALIDATING_WEBHOOK.path } },
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: [TGB_GROUP],
            apiVersions: ['v1beta1'],
            resources: [TGB_PLURAL],
          },
        ],
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      }),
    ]);
    expect(validating.webhooks?.[0]?.timeoutSeconds).toBeLessThanOrEqual(5);
  });

  it('takes its CA as the IPAM pair of the same TLS mode does', () => {
    const certificate = one('webhook-cert-manager.yaml', 'Certificate');
    const source = `${certificate.metadata?.namespace}/${certificate.metadata?.name}`;
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const annotations = one(file, kind).metadata?.annotations;
      if (file === 'webhook-tgb.yaml') expect(annotations).toBeUndefined();
      else expect(annotations).toEqual({ 'cert-manager.io/inject-ca-from': source });
    }
    const rules = docs(file)
      .filter((d) => d.kind === 'ClusterRole')
      .flatMap((d) => d.rules ?? []);
    // Self-signed: the relay writes the caBundle of these two configurations, by name; cert-manager: nothing.
    expect(rules).toEqual(
      file === 'webhook-tgb.yaml'
        ? [
            {
              apiGroups: ['admissionregistration.k8s.io'],
              resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
              resourceNames: [defaults.RELAY_WEBHOOK_TGB_CONFIGURATION],
              verbs: ['get', 'patch'],
            },
          ]
        : [],
    );
  });
});
