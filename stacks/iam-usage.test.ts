import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VPC_CNI_CONFIGMAP } from '../shared/k8s/ipam-names.ts';
import { LBC_LEASE } from '../shared/k8s/lbc-lease.ts';
import { analyzeEntries, type CodeUsage, iamActionOfCommand } from '../test/helpers/code-usage.ts';
import { stubCode } from './code.ts';
import { FUNCTION_NAMES, type FunctionName } from './config.ts';
import type { PolicyStatementJson } from './policy-rules.ts';
import { synthesizeOffline } from './synth.ts';

/**
 * Nothing is granted that no code uses, and nothing the code uses is missing.
 *
 * The AWS calls (and Kubernetes requests) each deployable can make are derived from its code
 * (`test/helpers/code-usage.ts`: from the entry point, through the ports, into the adapters' SDK
 * commands), then compared with what the synthesized template grants its role, and with the ClusterRoles
 * deploy/README-deploy.md tells users to apply. A new port call without its grant fails here, and so does
 * a grant left behind when the call goes away.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAGE = 'usage';
const PREFIX = `${STAGE}-serverless-ccm`;

/** Where each deployable starts: every Lambda the stack can deploy, and the relay's process. */
const LAMBDA_ENTRIES = Object.fromEntries(FUNCTION_NAMES.map((name) => [name, `functions/${name}/handler.ts`]));
const RELAY_ENTRY = 'functions/relay/main.ts';

/**
 * How a function reaches the Kubernetes API. The code holds both ways (`shared/k8s/lambda-access.ts` picks
 * one from KUBERNETES_AUTH_MODE at run time); the stage decides which one the role gets.
 */
const KUBERNETES_ACCESS_ACTIONS = ['eks:DescribeCluster', 'secretsmanager:GetSecretValue'];

/**
 * Calls the code never makes but AWS makes with the function's role: Lambda writes its logs, and the SQS
 * event source's poller receives and deletes messages and reads the queue's attributes.
 * https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html
 * https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html#events-sqs-permissions
 */
const LAMBDA_RUNTIME_ACTIONS = ['logs:CreateLogStream', 'logs:PutLogEvents'];
const SQS_POLLER_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

/**
 * Actions AWS checks besides the one a call is named for: WAF associates and disassociates an Application Load
 * Balancer's web ACL only if the caller may also `elasticloadbalancing:SetWebAcl` on it.
 * https://docs.aws.amazon.com/waf/latest/developerguide/security_iam_service-with-iam.html
 */
const ALSO_AUTHORIZED: Readonly<Record<string, string[]>> = {
  'wafv2:AssociateWebACL': ['elasticloadbalancing:SetWebAcl'],
  'wafv2:DisassociateWebACL': ['elasticloadbalancing:SetWebAcl'],
};
const withImplied = (actions: Iterable<string>) => [...actions].flatMap((a) => [a, ...(ALSO_AUTHORIZED[a] ?? [])]);

const BASE_ENV = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
  // Every controller deployed: the route, service and interruption controllers, the IP address manager, the
  // Ingress controller with the WAFv2 calls its code can make, and the TargetGroupBinding controller.
  CCM_CLUSTER_CIDRS: '100.64.0.0/16',
  CCM_VPC_ID: 'vpc-0123456789abcdef0',
  CCM_INTERRUPTION: 'true',
  CCM_IPAM: 'true',
  CCM_INGRESS: 'true',
  CCM_INGRESS_WAF: 'true',
  // The TargetGroupBinding controller, and the service controller serving the reference's Services too.
  CCM_TARGET_GROUP_BINDING: 'true',
  CCM_LBC_SERVICES: 'true',
};
const KMS_KEY = 'arn:aws:kms:eu-west-1:111122223333:key/abcd';
const CA_DATA = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');

/** The stages compared, and what each grants for Kubernetes access beyond the code's own calls. */
const STAGES: { label: string; env: Record<string, string>; access: string[] }[] = [
  { label: 'eks, CA read from EKS', env: BASE_ENV, access: ['eks:DescribeCluster'] },
  { label: 'eks, CA configured', env: { ...BASE_ENV, CCM_KUBERNETES_CA_DATA: CA_DATA }, access: [] },
  {
    label: 'token in Secrets Manager, customer-managed key',
    env: {
      ...BASE_ENV,
      CCM_KUBERNETES_AUTH_MODE: 'token',
      CCM_KUBERNETES_TOKEN_SECRET_ID: 'ccm/prod-eu',
      CCM_KUBERNETES_TOKEN_SECRET_KMS_KEY_ARN: KMS_KEY,
    },
    // Secrets Manager decrypts the secret with the caller's permission (kms:ViaService), not a call of ours.
    access: ['secretsmanager:GetSecretValue', 'kms:Decrypt'],
  },
];

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties?: Json;
}

const work = mkdtempSync(join(tmpdir(), 'ccm-iam-usage-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let usage: Map<string, CodeUsage>;
const templates = new Map<string, Json>();

beforeAll(async () => {
  // One TypeScript program for every entry: the checker reads the SDK's declarations once (seconds).
  usage = analyzeEntries(ROOT, { ...LAMBDA_ENTRIES, relay: RELAY_ENTRY });
  for (const [i, stage] of STAGES.entries()) {
    const dir = join(work, String(i));
    const { template } = await synthesizeOffline({
      stage: STAGE,
      env: stage.env,
      outdir: join(dir, 'cdk.out'),
      code: stubCode(join(dir, 'code')),
    });
    templates.set(stage.label, template);
  }
}, 180_000);

function codeUsage(name: string): CodeUsage {
  const found = usage.get(name);
  if (!found) throw new Error(`no code usage for ${name}`);
  return found;
}

function resources(template: Json): [string, Resource][] {
  return Object.entries(template.Resources as Record<string, Resource>);
}

/** `{ "Fn::GetAtt": [id, "Arn"] }` or `{ Ref: id }` -> id. */
function refId(value: unknown): string | undefined {
  const v = value as { 'Fn::GetAtt'?: [string, string]; Ref?: string } | undefined;
  return v?.['Fn::GetAtt']?.[0] ?? v?.Ref;
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The deployed functions by name (`node`, ...), with their logical ID and role. */
function deployedFunctions(template: Json): Map<string, { id: string; roleId: string }> {
  const found = new Map<string, { id: string; roleId: string }>();
  for (const [id, r] of resources(template)) {
    if (r.Type !== 'AWS::Lambda::Function') continue;
    const name = String(r.Properties?.FunctionName ?? '');
    if (!name.startsWith(`${PREFIX}-`)) throw new Error(`unexpected function ${name}`);
    found.set(name.slice(PREFIX.length + 1), { id, roleId: refId(r.Properties?.Role) ?? '' });
  }
  return found;
}

/** Every action a role may call: its inline policies and any policy attached to it, Allow statements only. */
function grantedActions(template: Json, roleId: string): string[] {
  const role = (template.Resources as Record<string, Resource>)[roleId];
  if (role?.Type !== 'AWS::IAM::Role') throw new Error(`${roleId} is not a role`);
  // A managed policy's actions are not in the template, so none may be attached in these stages.
  expect(role.Properties?.ManagedPolicyArns, `${roleId} managed policies`).toBeUndefined();
  const documents = [
    ...list(role.Properties?.Policies as { PolicyDocument: unknown }[] | undefined).map((p) => p.PolicyDocument),
    ...resources(template)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy')
      .filter(([, r]) => list(r.Properties?.Roles as unknown[] | undefined).some((x) => refId(x) === roleId))
      .map(([, r]) => r.Properties?.PolicyDocument),
  ];
  const statements = documents.flatMap((d) => list((d as { Statement?: PolicyStatementJson[] }).Statement));
  return sorted(statements.filter((s) => s.Effect === 'Allow').flatMap((s) => list(s.Action)));
}

/** Functions with an SQS event source mapping: Lambda polls their queue with their role. */
function polledFunctions(template: Json): Set<string> {
  return new Set(
    resources(template)
      .filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping')
      .map(([, r]) => refId(r.Properties?.FunctionName) ?? ''),
  );
}

const sorted = (actions: Iterable<string>) => [...new Set(actions)].sort();

describe('the AWS calls derived from the code', () => {
  it.each([
    ['client-ec2', 'DescribeInstancesCommand', 'ec2:DescribeInstances'],
    ['client-elastic-load-balancing-v2', 'AddTagsCommand', 'elasticloadbalancing:AddTags'],
    ['client-sqs', 'SendMessageBatchCommand', 'sqs:SendMessage'],
    ['client-sqs', 'ChangeMessageVisibilityBatchCommand', 'sqs:ChangeMessageVisibility'],
    ['client-secrets-manager', 'GetSecretValueCommand', 'secretsmanager:GetSecretValue'],
    ['client-ecr-public', 'GetAuthorizationTokenCommand', 'ecr-public:GetAuthorizationToken'],
    ['client-auto-scaling', 'CompleteLifecycleActionCommand', 'autoscaling:CompleteLifecycleAction'],
    ['client-ec2', 'AssignPrivateIpAddressesCommand', 'ec2:AssignPrivateIpAddresses'],
    ['client-ec2', 'UnassignPrivateIpAddressesCommand', 'ec2:UnassignPrivateIpAddresses'],
    ['client-ec2', 'DeleteNetworkInterfaceCommand', 'ec2:DeleteNetworkInterface'],
  ])('%s %s is %s', (pkg, command, action) => {
    expect(iamActionOfCommand(pkg, command)).toBe(action);
  });

  it.each([
    ['client-ec2', 'EC2Client'],
    ['client-unknown', 'DoThingCommand'],
  ])('%s %s is no AWS call', (pkg, name) => {
    expect(iamActionOfCommand(pkg, name)).toBeUndefined();
  });

  it('follow a port call into the adapter, and leave out a shared helper nobody calls', () => {
    const node = codeUsage('node').awsActions;
    // Ec2Facts.zoneId -> describeAvailabilityZones is called; Ec2Facts.instanceTypes is not.
    expect(node).toContain('ec2:DescribeAvailabilityZones');
    expect(node).not.toContain('ec2:DescribeInstanceTypes');
    // The workqueue runner requeues with a visibility change.
    expect(node).toContain('sqs:ChangeMessageVisibility');
  });

  it('include tagging on create wherever a create call carries tags', () => {
    const service = codeUsage('service').awsActions;
    expect(service).toContain('ec2:CreateTags');
    expect(service).toContain('elasticloadbalancing:AddTags');
  });

  it.each(FUNCTION_NAMES)('reach both ways to the Kubernetes API from %s', (name) => {
    for (const action of KUBERNETES_ACCESS_ACTIONS) expect(codeUsage(name).awsActions).toContain(action);
  });
});

describe.each(STAGES)('IAM grants exactly what the code calls ($label)', ({ label, access }) => {
  const template = () => templates.get(label)!;

  it('covers every deployed function', () => {
    expect(sorted(deployedFunctions(template()).keys())).toEqual(sorted(FUNCTION_NAMES));
  });

  it.each(FUNCTION_NAMES)('%s', (name: FunctionName) => {
    const fn = deployedFunctions(template()).get(name);
    if (!fn) throw new Error(`${name} is not deployed`);
    const fromCode = withImplied(codeUsage(name).awsActions).filter((a) => !KUBERNETES_ACCESS_ACTIONS.includes(a));
    const polled = polledFunctions(template()).has(fn.id);
    const needed = sorted([...fromCode, ...access, ...LAMBDA_RUNTIME_ACTIONS, ...(polled ? SQS_POLLER_ACTIONS : [])]);
    const granted = grantedActions(template(), fn.roleId);
    expect(
      {
        grantedButNotCalled: granted.filter((a) => !needed.includes(a)),
        calledButNotGranted: needed.filter((a) => !granted.includes(a)),
      },
      `${name}: granted ${granted.join(', ')}`,
    ).toEqual({ grantedButNotCalled: [], calledButNotGranted: [] });
  });

  it('relay', () => {
    const relayRole = refId((template().Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value);
    expect(grantedActions(template(), relayRole ?? '')).toEqual(sorted(codeUsage('relay').awsActions));
  });
});

describe('the Ingress controller without CCM_INGRESS_WAF', () => {
  const WAF = /^wafv2:|^elasticloadbalancing:SetWebAcl$/;
  let template: Json;
  beforeAll(async () => {
    const dir = join(work, 'no-waf');
    const { CCM_INGRESS_WAF: _, ...env } = BASE_ENV;
    ({ template } = await synthesizeOffline({
      stage: STAGE,
      env,
      outdir: join(dir, 'cdk.out'),
      code: stubCode(join(dir, 'code')),
    }));
  }, 120_000);

  it('is granted everything its code calls but the WAF calls, and none of those', () => {
    const fn = deployedFunctions(template).get('ingress');
    if (!fn) throw new Error('ingress is not deployed');
    const fromCode = withImplied(codeUsage('ingress').awsActions).filter((a) => !KUBERNETES_ACCESS_ACTIONS.includes(a));
    expect(fromCode.filter((a) => WAF.test(a)).length).toBeGreaterThan(0);
    const needed = sorted([
      ...fromCode.filter((a) => !WAF.test(a)),
      'eks:DescribeCluster',
      ...LAMBDA_RUNTIME_ACTIONS,
      ...SQS_POLLER_ACTIONS,
    ]);
    expect(grantedActions(template, fn.roleId)).toEqual(needed);
  });
});

describe('deploy/relay/iam-policy.json, the relay policy as documented', () => {
  const policy = JSON.parse(readFileSync(join(ROOT, 'deploy/relay/iam-policy.json'), 'utf8')) as {
    Statement: PolicyStatementJson[];
  };

  it('allows what the relay code calls, on the queues the stack makes when every controller is deployed', () => {
    const template = templates.get(STAGES[0]!.label)!;
    const relayRole = refId((template.Outputs as Record<string, { Value: unknown }>).RelayRoleArn?.Value) ?? '';
    const role = (template.Resources as Record<string, Resource>)[relayRole];
    const statements = list(
      role?.Properties?.Policies as { PolicyDocument: { Statement: PolicyStatementJson[] } }[],
    ).flatMap((p) => p.PolicyDocument.Statement);
    const queueNames = statements
      .flatMap((s) => list(s.Resource))
      .map((r) => (template.Resources as Record<string, Resource>)[refId(r) ?? '']?.Properties?.QueueName)
      .map((name) => String(name).replace(`${STAGE}-`, 'STAGE-'));
    expect(sorted(policy.Statement.flatMap((s) => list(s.Action)))).toEqual(sorted(codeUsage('relay').awsActions));
    expect(
      sorted(
        policy.Statement.flatMap((s) => list(s.Resource as string | string[])).map((arn) => arn.split(':').pop() ?? ''),
      ),
    ).toEqual(sorted(queueNames));
  });
});

/**
 * One client-node API method -> the RBAC rule it needs, `<group>/<resource>:<verb>`
 * (`CoreV1Api.patchNodeStatus` -> `/nodes/status:patch`). The generated method names follow one pattern.
 * https://kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-the-request-verb
 */
const API_GROUP: Readonly<Record<string, string>> = {
  CoreV1Api: '',
  DiscoveryV1Api: 'discovery.k8s.io',
  CoordinationV1Api: 'coordination.k8s.io',
  NetworkingV1Api: 'networking.k8s.io',
};
/**
 * Custom objects are named by arguments, not by the method: the cluster-scoped one read is IngressClassParams, the
 * namespaced ones are TargetGroupBindings.
 */
const CUSTOM_OBJECT_CALLS: Readonly<Record<string, string>> = {
  'CustomObjectsApi.getClusterCustomObject': 'elbv2.k8s.aws/ingressclassparams:get',
  'CustomObjectsApi.listCustomObjectForAllNamespaces': 'elbv2.k8s.aws/targetgroupbindings:list',
  'CustomObjectsApi.listNamespacedCustomObject': 'elbv2.k8s.aws/targetgroupbindings:list',
  'CustomObjectsApi.getNamespacedCustomObject': 'elbv2.k8s.aws/targetgroupbindings:get',
  'CustomObjectsApi.patchNamespacedCustomObject': 'elbv2.k8s.aws/targetgroupbindings:patch',
  'CustomObjectsApi.patchNamespacedCustomObjectStatus': 'elbv2.k8s.aws/targetgroupbindings/status:patch',
  'CustomObjectsApi.createNamespacedCustomObject': 'elbv2.k8s.aws/targetgroupbindings:create',
  'CustomObjectsApi.deleteNamespacedCustomObject': 'elbv2.k8s.aws/targetgroupbindings:delete',
};
const VERB: Readonly<Record<string, string>> = {
  read: 'get',
  list: 'list',
  create: 'create',
  patch: 'patch',
  replace: 'update',
  delete: 'delete',
};
/**
 * Subresources whose generated method names fuse the kind and the subresource: `createNamespacedPodEviction` is
 * a create of `pods/eviction` (the Eviction API), not of a resource "podevictions".
 * https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/
 */
const SUBRESOURCE_OF_KIND: Readonly<Record<string, string>> = { PodEviction: 'pods/eviction' };
const API_METHOD =
  /^(read|list|create|patch|replace|delete)(?:Namespaced)?([A-Z][A-Za-z]*?)(Status)?(?:ForAllNamespaces)?$/;

function rbacRule(call: string): string {
  const custom = CUSTOM_OBJECT_CALLS[call];
  if (custom) return custom;
  const [api = '', method = ''] = call.split('.');
  const match = API_METHOD.exec(method);
  const group = API_GROUP[api];
  if (!match || group === undefined) throw new Error(`no RBAC mapping for ${call}: add one`);
  const [, verb = '', kind = '', status] = match;
  const subresource = SUBRESOURCE_OF_KIND[kind];
  if (subresource) return `${group}/${subresource}:${VERB[verb]}`;
  // Plural resource names of the kinds in use (Node, Event, Service, EndpointSlice, Lease) add an `s`; those ending
  // in `s` (Ingress, IngressClass) add `es`.
  const plural = `${kind.toLowerCase()}${kind.endsWith('s') ? 'es' : 's'}`;
  return `${group}/${plural}${status ? '/status' : ''}:${VERB[verb]}`;
}

/** One documented grant: `<group>/<resource>:<verb>`, and where a namespaced Role or `resourceNames` narrow it. */
interface DocumentedRule {
  rule: string;
  /** A Role's namespace; undefined for a ClusterRole. */
  namespace?: string;
  resourceNames?: string[];
}

/**
 * The ClusterRoles of deploy/README-deploy.md, by name, with the rules of the namespaced Roles of the same name (a
 * function reading one object of one namespace, like the VPC CNI's ConfigMap, gets a Role for it).
 */
function documentedRoles(): Map<string, DocumentedRule[]> {
  const guide = readFileSync(join(ROOT, 'deploy/README-deploy.md'), 'utf8');
  const section = guide.slice(guide.indexOf('### Grant the functions their Kubernetes permissions'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  // `[""]` (the core group) is one empty item.
  const items = (text: string) => text.split(',').map((s) => s.trim().replace(/^"|"$/g, ''));
  const roles = new Map<string, DocumentedRule[]>();
  for (const document of yaml.split(/^---$/m)) {
    const kind = /^kind: (ClusterRole|Role)$/m.exec(document)?.[1];
    if (!kind) continue;
    const [, name, namespace] = /^metadata: \{ name: ([^\s,]+)(?:, namespace: (\S+))? \}$/m.exec(document) ?? [];
    if (!name) throw new Error(`a ${kind} without a name in deploy/README-deploy.md:\n${document}`);
    if ((kind === 'Role') !== (namespace !== undefined)) {
      throw new Error(`${kind} ${name} in deploy/README-deploy.md: only a Role has a namespace`);
    }
    const rules = roles.get(name) ?? [];
    for (const [, groups = '', kinds = '', names, verbs = ''] of document.matchAll(
      /^ {2}- \{ apiGroups: \[(.*?)\], resources: \[(.*?)\],(?: resourceNames: \[(.*?)\],)? verbs: \[(.*?)\] \}$/gm,
    )) {
      for (const group of items(groups))
        for (const resource of items(kinds))
          for (const verb of items(verbs))
            rules.push({
              rule: `${group}/${resource}:${verb}`,
              ...(namespace ? { namespace } : {}),
              ...(names !== undefined ? { resourceNames: items(names) } : {}),
            });
    }
    roles.set(name, rules);
  }
  return roles;
}

describe('the ClusterRoles in deploy/README-deploy.md allow exactly what the code requests', () => {
  it.each([
    ['CoreV1Api.readNode', '/nodes:get'],
    ['CoreV1Api.patchNodeStatus', '/nodes/status:patch'],
    ['CoreV1Api.listServiceForAllNamespaces', '/services:list'],
    ['CoreV1Api.patchNamespacedServiceStatus', '/services/status:patch'],
    ['CoreV1Api.createNamespacedEvent', '/events:create'],
    ['DiscoveryV1Api.listNamespacedEndpointSlice', 'discovery.k8s.io/endpointslices:list'],
    ['CoordinationV1Api.replaceNamespacedLease', 'coordination.k8s.io/leases:update'],
    ['CoreV1Api.createNamespacedPodEviction', '/pods/eviction:create'],
    ['CoreV1Api.deleteNamespacedPod', '/pods:delete'],
    ['CoreV1Api.listPodForAllNamespaces', '/pods:list'],
    ['NetworkingV1Api.listIngressForAllNamespaces', 'networking.k8s.io/ingresses:list'],
    ['NetworkingV1Api.patchNamespacedIngressStatus', 'networking.k8s.io/ingresses/status:patch'],
    ['NetworkingV1Api.listIngressClass', 'networking.k8s.io/ingressclasses:list'],
    ['CoreV1Api.readNamespace', '/namespaces:get'],
    ['CustomObjectsApi.getClusterCustomObject', 'elbv2.k8s.aws/ingressclassparams:get'],
  ])('%s needs %s', (call, rule) => {
    expect(rbacRule(call)).toBe(rule);
  });

  it.each(FUNCTION_NAMES)('serverless-ccm:%s', (name) => {
    const documented = documentedRoles().get(`serverless-ccm:${name}`);
    expect(documented, `no ClusterRole serverless-ccm:${name} in deploy/README-deploy.md`).toBeDefined();
    expect(sorted((documented ?? []).map((r) => r.rule))).toEqual(
      sorted([...codeUsage(name).kubernetesCalls].map(rbacRule)),
    );
  });

  it('serverless-ccm:ipam reads only the VPC CNI ConfigMap, the load balancer controllers only the reference’s Lease, and nothing else is narrowed to one namespace', () => {
    const narrowed = [...documentedRoles()].flatMap(([name, rules]) =>
      rules.filter((r) => r.namespace !== undefined || r.resourceNames !== undefined).map((r) => ({ name, ...r })),
    );
    const lease = (name: string) => ({
      name,
      rule: 'coordination.k8s.io/leases:get',
      namespace: LBC_LEASE.namespace,
      resourceNames: [LBC_LEASE.name],
    });
    expect(narrowed).toEqual([
      lease('serverless-ccm:service'),
      lease('serverless-ccm:ingress'),
      lease('serverless-ccm:target-group-binding'),
      {
        name: 'serverless-ccm:ipam',
        rule: '/configmaps:get',
        namespace: VPC_CNI_CONFIGMAP.namespace,
        resourceNames: [VPC_CNI_CONFIGMAP.name],
      },
    ]);
  });
});
