import { describe, expect, it } from 'vitest';
import { IPV4_RESOURCE, POD_IP_ANNOTATION } from '../../../shared/k8s/ipam-names.ts';
import { type AdmissionRequest, MalformedReviewError, parseAdmissionReview } from './admission.ts';
import { mutatePod } from './mutate-pod.ts';
import { ControllerIdentities, validatePod } from './validate-pod.ts';

/** The admission decisions alone: AdmissionRequest in, AdmissionResponse out. */

const CONTROLLER = 'system:serviceaccount:kube-system:serverless-ccm';

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
  ])('gives a Pod selecting Windows Nodes by %s one address on its first container only', (_label, nodeSelector) => {
    const object = pod({ nodeSelector, containers: [{ name: 'a' }, { name: 'b' }] });
    const response = mutatePod(request({ object }));
    expect(response).toMatchObject({ uid: 'uid-1', allowed: true, patchType: 'JSONPatch' });
    const patch = decodePatch(response.patch);
    const patched = applyPatch(object, patch);
    expect(patched.spec.containers[0]?.resources).toEqual({
      requests: { [IPV4_RESOURCE]: '1' },
      limits: { [IPV4_RESOURCE]: '1' },
    });
    expect(patched.spec.containers[1]).toEqual({ name: 'b' });
  });

  it('keeps existing requests and limits, and escapes the resource name in the pointer', () => {
    const object = pod({
      ...windows,
      containers: [{ name: 'a', resources: { requests: { cpu: '1' }, limits: { memory: '1Gi' } } }],
    });
    const patch = decodePatch(mutatePod(request({ object })).patch);
    expect(patch.map((op: { path: string }) => op.path)).toEqual([
      '/spec/containers/0/resources/requests/vpc.amazonaws.com~1PrivateIPv4Address',
      '/spec/containers/0/resources/limits/vpc.amazonaws.com~1PrivateIPv4Address',
    ]);
    expect(applyPatch(object, patch).spec.containers[0]?.resources).toEqual({
      requests: { cpu: '1', [IPV4_RESOURCE]: '1' },
      limits: { memory: '1Gi', [IPV4_RESOURCE]: '1' },
    });
  });

  it('creates the missing one of requests and limits', () => {
    const object = pod({ ...windows, containers: [{ name: 'a', resources: { limits: { cpu: '2' } } }] });
    const patched = applyPatch(object, decodePatch(mutatePod(request({ object })).patch));
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
  ])('allows %s without a patch', (_what, object) => {
    expect(mutatePod(request({ object }))).toEqual({ uid: 'uid-1', allowed: true });
  });
});

describe('validatePod (vpod.vpc.k8s.aws)', () => {
  const controller = new ControllerIdentities([CONTROLLER, 'arn:aws:sts::123456789012:assumed-role/ipam-role/*']);
  const annotated = (value: string) => pod({ containers: [] }, { [POD_IP_ANNOTATION]: value });
  const plain = pod({ containers: [] }, { other: 'x' });

  it('refuses a new Pod carrying the annotation, naming the annotation and the requester', () => {
    const response = validatePod(request({ object: annotated('10.0.0.5/19') }), controller);
    expect(response.allowed).toBe(false);
    expect(response.status?.code).toBe(403);
    expect(response.status?.message).toContain(POD_IP_ANNOTATION);
    expect(response.status?.message).toContain('alice');
  });

  it('refuses it on create even from the controller', () => {
    const response = validatePod(
      request({ object: annotated('10.0.0.5/19'), userInfo: { username: CONTROLLER } }),
      controller,
    );
    expect(response.allowed).toBe(false);
  });

  it('allows a new Pod without it', () => {
    expect(validatePod(request({ object: plain }), controller)).toEqual({ uid: 'uid-1', allowed: true });
  });

  it.each<[string, PodObject, PodObject]>([
    ['added', plain, annotated('10.0.0.5/19')],
    ['changed', annotated('10.0.0.5/19'), annotated('10.0.0.6/19')],
    ['removed', annotated('10.0.0.5/19'), plain],
  ])('on update, refuses it %s by someone else and allows it from the controller', (change, oldObject, object) => {
    const byAlice = validatePod(request({ operation: 'UPDATE', oldObject, object }), controller);
    expect(byAlice.allowed).toBe(false);
    expect(byAlice.status?.message).toContain(change);
    expect(byAlice.status?.message).toContain('alice');
    expect(byAlice.status?.message).toContain(POD_IP_ANNOTATION);

    for (const username of [CONTROLLER, 'arn:aws:sts::123456789012:assumed-role/ipam-role/prod-serverless-ccm-ipam']) {
      const response = validatePod(
        request({ operation: 'UPDATE', oldObject, object, userInfo: { username } }),
        controller,
      );
      expect(response.allowed, username).toBe(true);
    }
  });

  it('allows any other update that leaves the annotation as it was', () => {
    const before = annotated('10.0.0.5/19');
    const after = { ...annotated('10.0.0.5/19'), spec: { containers: [], activeDeadlineSeconds: 5 } };
    expect(validatePod(request({ operation: 'UPDATE', oldObject: before, object: after }), controller).allowed).toBe(
      true,
    );
  });

  it('does not take a username that only starts like an exact entry', () => {
    const response = validatePod(
      request({
        operation: 'UPDATE',
        oldObject: plain,
        object: annotated('10.0.0.5/19'),
        userInfo: { username: `${CONTROLLER}x` },
      }),
      controller,
    );
    expect(response.allowed).toBe(false);
  });
});

describe('parseAdmissionReview', () => {
  it('reads a v1 review', () => {
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
  ])('refuses %s with a MalformedReviewError naming the problem', (_what, body, message) => {
    expect(() => parseAdmissionReview(body)).toThrow(MalformedReviewError);
    expect(() => parseAdmissionReview(body)).toThrow(message);
  });
});
