import { describe, expect, it } from 'vitest';
import { runCommand } from '../../functions/credential-provider/cli.ts';
import { MemoryOutput, stdinWith } from '../../functions/credential-provider/in-memory.ts';
import { ChangeRouter, type RoutedKey } from '../../functions/relay/change-router.ts';
import { RECONCILERS } from '../../functions/relay/controllers/index.ts';
import type { KubeObject, WatchedKind } from '../../functions/relay/kinds.ts';
import { makeNode, makeService } from '../../functions/relay/testing/objects.ts';
import { MalformedReviewError, parseAdmissionReview } from '../../functions/relay/webhook/admission.ts';
import { mutatePod } from '../../functions/relay/webhook/mutate-pod.ts';
import { ControllerIdentities, validatePod } from '../../functions/relay/webhook/validate-pod.ts';
import { KeyMessage } from '../../shared/queue/message.ts';
import {
  BAD_CREDENTIAL_REQUESTS,
  GARBAGE_BODIES,
  hugeMetadata,
  MALFORMED_REVIEWS,
  NAME_254,
  NON_ASCII_NAMES,
  ODD_POD_REVIEWS,
  prefixes,
  VALID_CREDENTIAL_REQUEST,
  VALID_REVIEW,
} from './inputs.ts';

/** The handlers that are not queue consumers: the relay's change router, its admission webhook, the credential provider. */

describe('relay change router: objects from watches', () => {
  const router = () => {
    const keys: RoutedKey[] = [];
    const r = new ChangeRouter({
      reconcilers: new Set(RECONCILERS),
      allows: () => true,
      emit: (key) => keys.push(key),
      nodeSetChanged: () => {},
    });
    return { r, keys };
  };
  const node = (name: string, metadata: Record<string, unknown> = {}) => {
    const n = makeNode(name, { providerID: 'aws:///eu-west-1a/i-0a1b2c3d4e5f60718' }) as unknown as KubeObject;
    return { ...n, metadata: { uid: 'u-1', resourceVersion: '10', ...n.metadata, ...metadata } } as KubeObject;
  };

  const odd: [string, WatchedKind, unknown][] = [
    ['no metadata', 'Node', { kind: 'Node' }],
    ['a null metadata', 'Node', { kind: 'Node', metadata: null }],
    ['an empty name', 'Node', node('')],
    ['a numeric name', 'Node', node('x', { name: 42 })],
    ['a spec that is a string', 'Node', { ...node('n-spec'), spec: 'x' }],
    ['a status that is a number', 'Node', { ...node('n-status'), status: 7 }],
    ['conditions that are no list', 'Node', { ...node('n-cond'), status: { conditions: 'Ready' } }],
    ['taints that are no list', 'Node', { ...node('n-taints'), spec: { taints: {} } }],
    ['labels that are a string', 'Node', node('n-labels', { labels: 'a=b' })],
    ['10 000 labels and a 1 MiB annotation', 'Node', node('n-huge', hugeMetadata())],
    ['a Service with a spec that is a list', 'Service', { ...makeService('default', 'web'), spec: [] }],
    [
      'a Service with ports that are a string',
      'Service',
      { ...makeService('default', 'web'), spec: { type: 'LoadBalancer', ports: '80' } },
    ],
    ['a Pod with no spec', 'Pod', { metadata: { name: 'p', namespace: 'default', resourceVersion: '3' } }],
    [
      'a ConfigMap with data that is a list',
      'ConfigMap',
      { metadata: { name: 'amazon-vpc-cni', namespace: 'kube-system' }, data: [] },
    ],
  ];

  it.each(odd)('%s: never throws', (_label, kind, object) => {
    const { r } = router();
    expect(() => r.observe(kind, object as KubeObject)).not.toThrow();
    expect(() => r.remove(kind, object as KubeObject)).not.toThrow();
  });

  it('an object the rules cannot read is reported, naming the object and the reconciler', () => {
    const problems: { kind: string; name: string; reason: string }[] = [];
    const r = new ChangeRouter({
      reconcilers: new Set(RECONCILERS),
      allows: () => true,
      emit: () => {},
      nodeSetChanged: () => {},
      invalid: (problem) => problems.push(problem),
    });
    r.observe('Node', { ...node('n-cond'), status: { conditions: 'Ready' } } as unknown as KubeObject);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatchObject({ kind: 'Node', name: 'n-cond' });
    expect(problems[0]!.reason).toMatch(/^unreadable for [a-z-]+: /);
  });

  // A key the relay sends must be one the reconciler's runner will take: otherwise the change is lost downstream
  // as a MalformedMessage, silently for the relay.
  const badKeys: [string, KubeObject][] = [
    ...NON_ASCII_NAMES.map(([label, name]): [string, KubeObject] => [`a name with ${label}`, node(name)]),
    ['a name of 254 characters', node(NAME_254)],
    ['a resourceVersion of 100 characters', node('n-rv', { resourceVersion: '9'.repeat(100) })],
    ['a uid of 100 characters', node('n-uid', { uid: 'u'.repeat(100) })],
  ];
  it.each(badKeys)('%s: every key emitted is a valid key message', (_label, object) => {
    const { r, keys } = router();
    r.observe('Node', object);
    for (const key of keys) {
      const parsed = KeyMessage.safeParse(key.message);
      expect(parsed.success, JSON.stringify(key.message).slice(0, 200)).toBe(true);
    }
  });
});

describe('admission webhook: AdmissionReviews', () => {
  const controller = new ControllerIdentities(['system:serviceaccount:kube-system:serverless-ccm']);
  // Windows IPAM on, so both webhooks decide every review (functions/relay/webhook/ipam-switch.ts).
  const ipam = { enabled: async () => true };
  const webhooks = [
    (r: Parameters<typeof mutatePod>[0]) => mutatePod(r, ipam),
    (r: Parameters<typeof validatePod>[0]) => validatePod(r, controller, ipam),
  ];

  it.each([...GARBAGE_BODIES, ...MALFORMED_REVIEWS, ...prefixes(VALID_REVIEW).filter((_, n) => n % 5 === 0)])(
    '%s: refused as a malformed review naming the problem (the server answers 400)',
    (_label, body) => {
      let error: unknown;
      try {
        parseAdmissionReview(body);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(MalformedReviewError);
      expect((error as Error).message).toMatch(/^reading the AdmissionReview: \S/);
    },
  );

  it.each(ODD_POD_REVIEWS)('%s: answered by both webhooks, never an error', async (_label, body) => {
    const request = parseAdmissionReview(body);
    for (const handle of webhooks) {
      const response = await handle(request);
      expect(response.uid).toBe(request.uid);
      expect(typeof response.allowed).toBe('boolean');
    }
  });
});

describe('credential provider: stdin', () => {
  const run = async (stdin: string) => {
    const stdout = new MemoryOutput();
    const stderr = new MemoryOutput();
    // Any AWS call fails loudly: a request that does not parse must never reach one.
    const unreachable = new Proxy(
      {},
      {
        get: () => () => {
          throw new Error('AWS reached');
        },
      },
    );
    const deps = () => ({ ecr: unreachable, ecrPublic: unreachable, sts: unreachable, clock: unreachable }) as never;
    const code = await runCommand({ args: [], stdin: stdinWith(stdin), stdout, stderr }, { version: 't', deps });
    return { code, stdout: stdout.text, stderr: stderr.text };
  };

  it.each([...GARBAGE_BODIES, ...prefixes(VALID_CREDENTIAL_REQUEST).filter((_, n) => n % 5 === 0)])(
    '%s: exit 1, one line on stderr naming the problem, nothing on stdout',
    async (_label, stdin) => {
      const { code, stdout, stderr } = await run(stdin);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/^ecr-credential-provider: reading the request: [^\n]+\n$/);
    },
  );

  it.each(BAD_CREDENTIAL_REQUESTS)('%s: exit 1, one line on stderr, nothing on stdout', async (_label, stdin) => {
    const { code, stdout, stderr } = await run(stdin);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^ecr-credential-provider: [^\n]+\n$/);
    expect(stderr.length).toBeLessThan(2200);
  });
});
