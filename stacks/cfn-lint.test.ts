import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubCode } from './code.ts';
import { synthesizeOffline } from './synth.ts';

/**
 * cfn-lint (the CloudFormation linter: resource schemas, allowed values per region, intrinsic functions,
 * dependencies) on every template variant the stack produces: with and without the route controller
 * (CCM_CLUSTER_CIDRS) and the service controller (CCM_VPC_ID), in eks and token auth modes, and with the
 * interruption controller, the IP address manager and the Ingress controller (with and without WAF). Any error
 * fails, and so does any warning not listed in
 * stacks/cfn-lint-ignores.json (the ones aws-cdk-lib itself causes, each with its reason). cfn-lint is a Python tool that is not in package.json: where it is not on
 * PATH this check is skipped, and says so.
 */

const CFN_LINT_AVAILABLE = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v cfn-lint'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!CFN_LINT_AVAILABLE) {
  console.warn('cfn-lint check skipped: cfn-lint is not on PATH (pip install cfn-lint to run it)');
}

const REGION = 'eu-west-1';
const BASE = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: REGION,
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};
const ROUTE = { CCM_CLUSTER_CIDRS: '100.64.0.0/16,fd00:64::/56' };
const SERVICE = { CCM_VPC_ID: 'vpc-0123456789abcdef0' };
/** Token mode with everything optional that comes with it: a KMS key, subnets, IRSA for the relay, an alarm topic. */
const TOKEN = {
  CCM_KUBERNETES_AUTH_MODE: 'token',
  CCM_KUBERNETES_TOKEN_SECRET_ID: 'ccm/prod-eu',
  CCM_KUBERNETES_TOKEN_SECRET_KMS_KEY_ARN: `arn:aws:kms:${REGION}:111122223333:key/abcd`,
  CCM_VPC_SUBNET_IDS: 'subnet-0123abcd,subnet-0456ef01',
  CCM_VPC_SECURITY_GROUP_IDS: 'sg-0123abcd',
  CCM_RELAY_IDENTITY: 'irsa',
  CCM_RELAY_OIDC_PROVIDER_ARN: `arn:aws:iam::111122223333:oidc-provider/oidc.eks.${REGION}.amazonaws.com/id/ABC123`,
  CCM_ALARM_TOPIC_ARN: `arn:aws:sns:${REGION}:111122223333:oncall`,
};
/** EKS mode with the CA given (no DescribeCluster) and no access entries or Pod Identity association. */
const EKS_CONFIGURED = {
  CCM_KUBERNETES_CA_DATA: Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString(
    'base64',
  ),
  CCM_EKS_ACCESS_ENTRIES: 'false',
  CCM_RELAY_POD_IDENTITY_ASSOCIATION: 'false',
};

const VARIANTS: Record<string, Record<string, string>> = {};
for (const [auth, authEnv] of Object.entries({ eks: {}, token: TOKEN })) {
  for (const [controllers, controllerEnv] of Object.entries({
    'node controllers': {},
    '+route': ROUTE,
    '+service': SERVICE,
    '+route +service': { ...ROUTE, ...SERVICE },
  })) {
    VARIANTS[`${auth}, ${controllers}`] = { ...BASE, ...authEnv, ...controllerEnv };
  }
}
VARIANTS['eks with CA, no access entries, +route +service'] = { ...BASE, ...EKS_CONFIGURED, ...ROUTE, ...SERVICE };
// The interruption controller: its queue, function, extra EC2 event rules and Auto Scaling grants.
const INTERRUPTION = { CCM_INTERRUPTION: 'true', CCM_INTERRUPTION_ACTIONS: 'rebalance-recommendation=drain' };
VARIANTS['eks, +interruption'] = { ...BASE, ...INTERRUPTION };
VARIANTS['token, +route +service +interruption'] = { ...BASE, ...TOKEN, ...ROUTE, ...SERVICE, ...INTERRUPTION };
// The Windows IP address manager (in the service controller's VPC): its queue, function and network interface grants.
const IPAM = { CCM_IPAM: 'true', CCM_IPAM_COOLDOWN_SECONDS: '45' };
VARIANTS['eks, +service +ipam'] = { ...BASE, ...SERVICE, ...IPAM };
VARIANTS['token, +route +service +interruption +ipam'] = {
  ...BASE,
  ...TOKEN,
  ...ROUTE,
  ...SERVICE,
  ...INTERRUPTION,
  ...IPAM,
};
// The Ingress controller (in the service controller's VPC): its queue, function, ALB, ACM and (with WAF) WAFv2 grants.
const INGRESS = { CCM_INGRESS: 'true', CCM_INGRESS_DEFAULT_TAGS: 'team=web' };
VARIANTS['eks, +service +ingress'] = { ...BASE, ...SERVICE, ...INGRESS };
VARIANTS['token, +route +service +ingress with WAF'] = {
  ...BASE,
  ...TOKEN,
  ...ROUTE,
  ...SERVICE,
  ...INGRESS,
  CCM_INGRESS_WAF: 'true',
};
// The TargetGroupBinding controller: without a VPC (its rule grants by tag only), and in one beside the service
// controller serving the reference's Services (its adoption grants).
const TARGET_GROUP_BINDING = { CCM_TARGET_GROUP_BINDING: 'true', CCM_TGB_READINESS_REQUEUE_SECONDS: '15' };
VARIANTS['eks, +target-group-binding'] = { ...BASE, ...TARGET_GROUP_BINDING };
VARIANTS['token, +service with the reference’s Services +ingress +target-group-binding'] = {
  ...BASE,
  ...TOKEN,
  ...SERVICE,
  ...INGRESS,
  ...TARGET_GROUP_BINDING,
  CCM_LBC_SERVICES: 'true',
};

interface Finding {
  Filename: string;
  Level: 'Error' | 'Warning' | 'Informational';
  Message: string;
  Location: { Path: (string | number)[] };
  Rule: { Id: string };
}

interface Ignore {
  rule: string;
  resourceType: string;
  message: string;
  reason: string;
}

const IGNORES: Ignore[] = JSON.parse(readFileSync(join(import.meta.dirname, 'cfn-lint-ignores.json'), 'utf8')).ignores;

/** Runs cfn-lint on the templates; findings as its JSON output gives them. A crash of cfn-lint itself throws. */
function cfnLint(templates: string[]): Promise<Finding[]> {
  return new Promise((resolve, reject) => {
    // Exit status: a bit mask, 2 errors, 4 warnings, 8 informational; 1 means cfn-lint itself failed.
    execFile(
      'cfn-lint',
      ['--format', 'json', '--regions', REGION, '--', ...templates],
      { cwd: tmpdir(), maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = typeof err?.code === 'number' ? err.code : 0;
        if (code & 1 || (err && typeof err.code !== 'number')) {
          reject(new Error(`cfn-lint failed (exit ${err?.code}): ${stderr || err?.message}`));
          return;
        }
        try {
          resolve(JSON.parse(stdout || '[]') as Finding[]);
        } catch {
          reject(new Error(`cfn-lint printed no JSON: ${stdout.slice(0, 500)} ${stderr.slice(0, 500)}`));
        }
      },
    );
  });
}

function ignoredBy(finding: Finding, template: Record<string, unknown>): Ignore | undefined {
  const [section, logicalId] = finding.Location.Path;
  const resources = template.Resources as Record<string, { Type: string }>;
  const type = section === 'Resources' ? resources[String(logicalId)]?.Type : undefined;
  return IGNORES.find(
    (i) => i.rule === finding.Rule.Id && i.resourceType === type && new RegExp(i.message).test(finding.Message),
  );
}

const describeLint = (f: Finding) => `${f.Level} ${f.Rule.Id} at ${f.Location.Path.join('/')}: ${f.Message}`;

describe.skipIf(!CFN_LINT_AVAILABLE)('cfn-lint on every template variant of the stack', () => {
  const work = mkdtempSync(join(tmpdir(), 'ccm-cfn-lint-'));
  const templates = new Map<string, { file: string; template: Record<string, unknown> }>();
  let findings: Finding[] = [];

  beforeAll(async () => {
    let n = 0;
    for (const [label, env] of Object.entries(VARIANTS)) {
      const dir = join(work, String(n++));
      const { template } = await synthesizeOffline({
        stage: 'lint',
        env,
        outdir: join(dir, 'cdk.out'),
        code: stubCode(join(dir, 'code')),
      });
      const file = join(dir, 'template.json');
      writeFileSync(file, JSON.stringify(template, null, 1));
      templates.set(label, { file, template });
    }
    findings = await cfnLint([...templates.values()].map((t) => t.file));
  }, 180_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it.each(Object.keys(VARIANTS))('%s: no error, and no warning but the listed CDK ones', (label) => {
    const { file, template } = templates.get(label)!;
    const own = findings.filter((f) => f.Filename === file && !ignoredBy(f, template));
    expect(own.map(describeLint)).toEqual([]);
  });

  it('lists no ignore that matches nothing any more', () => {
    const used = new Set<Ignore>();
    for (const f of findings) {
      const template = [...templates.values()].find((t) => t.file === f.Filename)?.template;
      const ignore = template && ignoredBy(f, template);
      if (ignore) used.add(ignore);
    }
    expect(IGNORES.filter((i) => !used.has(i)).map((i) => `${i.rule} on ${i.resourceType}`)).toEqual([]);
  });

  it('reports what it finds: a template with an error and a stray warning fails', async () => {
    const file = join(work, 'broken.json');
    writeFileSync(
      file,
      JSON.stringify({
        Resources: {
          Queue: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 'soon' } },
          Topic: {
            Type: 'AWS::SNS::Topic',
            DependsOn: 'Queue',
            Properties: { TopicName: { 'Fn::GetAtt': ['Queue', 'QueueName'] } },
          },
        },
      }),
    );
    const found = await cfnLint([file]);
    expect(found.some((f) => f.Level === 'Error' && f.Location.Path.includes('VisibilityTimeout'))).toBe(true);
    // Not a Lambda function's role: the CDK ignore does not cover it.
    const stray = found.find((f) => f.Rule.Id === 'W3005');
    expect(stray).toBeDefined();
    expect(ignoredBy(stray!, JSON.parse(readFileSync(file, 'utf8')))).toBeUndefined();
  });
});
