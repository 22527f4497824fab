import { describe, expect, it } from 'vitest';
import { IPV4_RESOURCE, POD_IP_ANNOTATION } from '../../../shared/k8s/ipam-names.ts';
import { type AdmissionRequest, MalformedReviewError, parseAdmissionReview } from './admission.ts';
import type { IpamSwitch } from './ipam-switch.ts';
import { mutatePod } from './mutate-pod.ts';
import { ControllerIdentities, validatePod } from './validate-pod.ts';

/** The admission decisions alone: AdmissionRequest in, AdmissionResponse out. */

const CONTROLLER = 'system:serviceaccount:kube-system:serverless-ccm';
/** Windows IPAM on (the switch the webhooks follow, ipam-switch.ts), and off. */
const ON: IpamSwitch = { enabled: async () => true };
const OFF: IpamSwitch = { enabled: async () => false };

function request(overrides: Partial<AdmissionRequest>): AdmissionRequest {
  return { uid: 'uid-1', operation: 'CREATE', userInfo: { username: 'alice' }, ...overrides };
}

function pod(spec: Record<string, unknown>, annotations?: Record<string, string>) {
  return { metadata: { name: 'p', namespace: 'default', ...(annotations ? { annotations } : {}) }, spec };
}

type PodObject = Record<string, unknown>;

const decodePatch = (patch: string | undefined) => JSON.parse(Buffer.from(patch ?? '', 'base64').toString('utf8'));

/** Applies the `add` operations of a patch, as the API server would (enough for these tests). */
type Patched = { spec: { containers: { name?: string; resources?: unknown }[] } };
function applyPatch(object: unknown, patch: { op: string; path: string; value: unknown }[]): Patched {
  const copy = structuredClone(object) as Record<string, unknown>;
  for (const op of patch) {
    expect(op.op).toBe('add');
    const tokens = op.path
      .split('/')
      .slice(1)
      .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = tokens.pop()!;
    const parent = tokens.reduce<Record<string, unknown>>(
      (node, token) => node[token] as Record<string, unknown>,
      copy,
    );
    expect(parent, `parent of ${op.path}`).toBeDefined();
    parent[last] = op.value;
  }
  return copy as Patched;
}

const windows = { nodeSelector: { 'kubernetes.io/os': 'windows' } };

describe('mutatePod (mpod.vpc.k8s.aws)', () => {
  it.each([
    ['kubernetes.io/os', { 'kubernetes.io/os': 'windows' }],
    ['beta.kubernetes.io/os', { 'beta.kubernetes.io/os': 'windows' }],
  ])(
    'gives a Pod selecting Windows Nodes by %s one address on its first container only',
    async (_label, nodeSelector) => {
      const object = pod({ nodeSelector, containers: [{ name: 'a' }, { name: 'b' }] });
      const response = await mutatePod(request({ object }), ON);
      expect(response).toMatchObject({ uid: 'uid-1', allowed: true, patchType: 'JSONPatch' });
      const patch = decodePatch(response.patch);
      const patched = applyPatch(object, patch);
      expect(patched.spec.containers[0]?.resources).toEqual({
        requests: { [IPV4_RESOURCE]: '1' },
        limits: { [IPV4_RESOURCE]: '1' },
      });
      expect(patched.spec.containers[1]).toEqual({ name: 'b' });
    },
  );

  it('keeps existing requests and limits, and escapes the resource name in the pointer', async () => {
    const object = pod({
      ...windows,
      containers: [{ name: 'a', resources: { requests: { cpu: '1' }, limits: { memory: '1Gi' } } }],
    });
    const patch = decodePatch((await mutatePod(request({ object }), ON)).patch);
    expect(patch.map((op: { path: string }) => op.path)).toEqual([
      '/spec/containers/0/resources/requests/vpc.amazonaws.com~1PrivateIPv4Address',
      '/spec/containers/0/resources/limits/vpc.amazonaws.com~1PrivateIPv4Address',
    ]);
    expect(applyPatch(object, patch).spec.containers[0]?.resources).toEqual({
      requests: { cpu: '1', [IPV4_RESOURCE]: '1' },
      limits: { memory: '1Gi', [IPV4_RESOURCE]: '1' },
    });
  });

  it('creates the missing one of requests and limits', async () => {
    const object = pod({ ...windows, containers: [{ name: 'a', resources: { limits: { cpu: '2' } } }] });
    const patched = applyPatch(object, decodePatch((await mutatePod(request({ object }), ON)).patch));
    expect(patched.spec.containers[0]?.resources).toEqual({
      requests: { [IPV4_RESOURCE]: '1' },
      limits: { cpu: '2', [IPV4_RESOURCE]: '1' },
    });
  });

  it.each([
    ['a host-network Windows Pod', pod({ ...windows, hostNetwork: true, containers: [{ name: 'a' }] })],
    ['a Linux Pod', pod({ nodeSelector: { 'kubernetes.io/os': 'linux' }, containers: [{ name: 'a' }] })],
    ['a Pod without a node selector', pod({ containers: [{ name: 'a' }] })],
    [
      'a Windows Pod that already asks for one address',
      pod({
        ...windows,
        containers: [
          { name: 'a', resources: { requests: { [IPV4_RESOURCE]: '1' }, limits: { [IPV4_RESOURCE]: '1' } } },
        ],
      }),
    ],
  ])('allows %s without a patch', async (_what, object) => {
    expect(await mutatePod(request({ object }), ON)).toEqual({ uid: 'uid-1', allowed: true });
  });
});

describe('the webhooks while Windows IPAM is off', () => {
  it('mutatePod passes a Windows Pod through untouched: no Node advertises the resource it would ask for', async () => {
    const object = pod({ ...windows, containers: [{ name: 'a' }] });
    expect(await mutatePod(request({ object }), OFF)).toEqual({ uid: 'uid-1', allowed: true });
  });

  it('validatePod lets the annotation be set and changed by anyone (it is nobody’s then, as in the reference)', async () => {
    const controller = new ControllerIdentities([CONTROLLER]);
    const annotated = pod({ containers: [] }, { [POD_IP_ANNOTATION]: '10.0.0.5/19' });
    const plain = pod({ containers: [] });
    expect((await validatePod(request({ object: annotated }), controller, OFF)).allowed).toBe(true);
    const update = request({ operation: 'UPDATE', oldObject: plain, object: annotated });
    expect((await validatePod(update, controller, OFF)).allowed).toBe(true);
  });

  it('the switch is asked only about Pods it decides: never for a Linux Pod, nor for an update leaving the annotation', async () => {
    let asked = 0;
    const counting: IpamSwitch = {
      enabled: async () => {
        asked++;
        return true;
      },
    };
    await mutatePod(request({ object: pod({ containers: [{ name: 'a' }] }) }), counting);
    const annotated = pod({ containers: [] }, { [POD_IP_ANNOTATION]: '10.0.0.5/19' });
    await validatePod(
      request({ operation: 'UPDATE', oldObject: annotated, object: annotated }),
      new ControllerIdentities([]),
      counting,
    );
    await validatePod(request({ object: pod({ containers: [] }) }), new ControllerIdentities([]), counting);
    expect(asked).toBe(0);
  });
});

describe('validatePod (vpod.vpc.k8s.aws)', () => {
  const controller = new ControllerIdentities([CONTROLLER, 'arn:aws:sts::123456789012:assumed-role/ipam-role/*']);
  const annotated = (value: string) => pod({ containers: [] }, { [POD_IP_ANNOTATION]: value });
  const plain = pod({ containers: [] }, { other: 'x' });

  it('refuses a new Pod carrying the annotation, naming the annotation and the requester', async () => {
    const response = await validatePod(request({ object: annotated('10.0.0.5/19') }), controller, ON);
    expect(response.allowed).toBe(false);
    expect(response.status?.code).toBe(403);
    expect(response.status?.message).toContain(POD_IP_ANNOTATION);
    expect(response.status?.message).toContain('alice');
  });

  it('refuses it on create even from the controller', async () => {
    const response = await validatePod(
      request({ object: annotated('10.0.0.5/19'), userInfo: { username: CONTROLLER } }),
      controller,
      ON,
    );
    expect(response.allowed).toBe(false);
  });

  it('allows a new Pod without it', async () => {
    expect(await validatePod(request({ object: plain }), controller, ON)).toEqual({ uid: 'uid-1', allowed: true });
  });

  it.each<[string, PodObject, PodObject]>([
    ['added', plain, annotated('10.0.0.5/19')],
    ['changed', annotated('10.0.0.5/19'), annotated('10.0.0.6/19')],
    ['removed', annotated('10.0.0.5/19'), plain],
  ])(
    'on update, refuses it %s by someone else and allows it from the controller',
    async (change, oldObject, object) => {
      const byAlice = await validatePod(request({ operation: 'UPDATE', oldObject, object }), controller, ON);
      expect(byAlice.allowed).toBe(false);
      expect(byAlice.status?.message).toContain(change);
      expect(byAlice.status?.message).toContain('alice');
      expect(byAlice.status?.message).toContain(POD_IP_ANNOTATION);

      for (const username of [
        CONTROLLER,
        'arn:aws:sts::123456789012:assumed-role/ipam-role/prod-serverless-ccm-ipam',
      ]) {
        const response = await validatePod(
          request({ operation: 'UPDATE', oldObject, object, userInfo: { username } }),
          controller,
          ON,
        );
        expect(response.allowed, username).toBe(true);
      }
    },
  );

  it('allows any other update that leaves the annotation as it was', async () => {
    const before = annotated('10.0.0.5/19');
    const after = { ...annotated('10.0.0.5/19'), spec: { containers: [], activeDeadlineSeconds: 5 } };
    const response = await validatePod(
      request({ operation: 'UPDATE', oldObject: before, object: after }),
      controller,
      ON,
    );
    expect(response.allowed).toBe(true);
  });

  it('does not take a username that only starts like an exact entry', async () => {
    const response = await validatePod(
      request({
        operation: 'UPDATE',
        oldObject: plain,
        object: annotated('10.0.0.5/19'),
        userInfo: { username: `${CONTROLLER}x` },
      }),
      controller,
      ON,
    );
    expect(response.allowed).toBe(false);
  });
});

describe('parseAdmissionReview', () => {
  it('reads a v1 review', async () => {
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { uid: 'u', operation: 'CREATE', object: { kind: 'Pod' } },
    });
    expect(parseAdmissionReview(body)).toMatchObject({ uid: 'u', operation: 'CREATE' });
  });

  it.each([
    ['not JSON', '{', 'not JSON'],
    [
      'v1beta1',
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1beta1',
        kind: 'AdmissionReview',
        request: { uid: 'u', operation: 'CREATE' },
      }),
      'apiVersion',
    ],
    ['no request', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }), 'request'],
    [
      'no uid',
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { operation: 'CREATE' } }),
      'request.uid',
    ],
  ])('refuses %s with a MalformedReviewError naming the problem', async (_what, body, message) => {
    expect(() => parseAdmissionReview(body)).toThrow(MalformedReviewError);
    expect(() => parseAdmissionReview(body)).toThrow(message);
  });
});
