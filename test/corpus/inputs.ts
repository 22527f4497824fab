import { readFileSync } from 'node:fs';
import type { ANNOTATION } from '../../shared/k8s/service-annotations.ts';

/**
 * The bad-input corpus: what any handler may be given that it must survive. Each entry is `[label, input]` so a
 * failing case names itself. The handlers' tests in this folder push every entry through every handler that
 * takes that kind of input (docs/architecture.md "The queue is the workqueue" says what must become of it).
 */
export type Case<T = string> = readonly [label: string, input: T];

const fixtures = new URL('../fixtures/', import.meta.url);
export const fixture = (path: string) => readFileSync(new URL(path, fixtures), 'utf8').trim();

/** Every strict prefix of `text`, the empty one included: a body cut off anywhere. */
export function prefixes(text: string): Case[] {
  return Array.from({ length: text.length }, (_, n) => [`first ${n} of ${text.length} characters`, text.slice(0, n)]);
}

export const MIB = 1024 * 1024;

// ---- names ----------------------------------------------------------------------------------------------

/** The longest name a Node or Service may have (a DNS subdomain): valid. */
export const NAME_253 = `n${'a'.repeat(251)}1`;
/** One character too long. */
export const NAME_254 = `n${'a'.repeat(252)}1`;
/** The longest namespace (a DNS label): valid. */
export const NAMESPACE_63 = `s${'b'.repeat(61)}1`;
export const NAMESPACE_64 = `s${'b'.repeat(62)}1`;

/** Names no Kubernetes object can have: non-ASCII, invisible or upper case. */
export const NON_ASCII_NAMES: Case[] = [
  ['a ligature', 'nœud-1'],
  ['an emoji', 'node-🚀'],
  ['right-to-left script', 'צומת-1'],
  ['a right-to-left override', 'node-\u202e1-edon'],
  ['a zero-width space', 'no\u200bde-1'],
  ['a Cyrillic look-alike', 'nоde-1'],
  ['a lone surrogate', 'node-\ud800'],
  ['upper case', 'Node-1'],
  ['a NUL', 'node\u00001'],
];

// ---- bodies that are no message of any kind -------------------------------------------------------------

/** Bodies no queue's schema can take, whatever the queue. */
export const GARBAGE_BODIES: Case[] = [
  ['the empty body', ''],
  ['whitespace', ' \n\t '],
  ['plain text', 'not json'],
  ['null', 'null'],
  ['a number', '42'],
  ['a string', '"Node"'],
  ['true', 'true'],
  ['an array', '[{"kind":"Node","name":"a"}]'],
  ['an empty object', '{}'],
  ['a trailing comma', '{"kind":"Node","name":"a",}'],
  ['single quotes', "{'kind':'Node','name':'a'}"],
  ['a byte order mark', '\ufeff{"kind":"Node","name":"a"}'],
  ['deeply nested arrays', `${'['.repeat(5000)}${']'.repeat(5000)}`],
  ['an unterminated string', '{"kind":"Node","name":"a'],
  ['binary', '\u0000\u0001\u0002\u00ff'],
  ['1 MiB of text', 'x'.repeat(MIB)],
];

// ---- key messages (shared/queue/message.ts) -------------------------------------------------------------

export const GOOD_NODE = 'ip-10-0-1-23.eu-west-1.compute.internal';

export const VALID_KEY_BODY = JSON.stringify({
  kind: 'Node',
  name: GOOD_NODE,
  hint: {
    eventType: 'MODIFIED',
    resourceVersion: '48121',
    uid: '6f1c9a2e-0000-4000-8000-000000000001',
    source: 'relay',
  },
});

const key = (fields: Record<string, unknown>) => JSON.stringify({ kind: 'Node', name: 'node-a', ...fields });

/** Parseable JSON that is no key message: every one must be acknowledged and counted, never retried. */
export const BAD_KEY_BODIES: Case[] = [
  ['no name', JSON.stringify({ kind: 'Node' })],
  ['no kind', JSON.stringify({ name: 'node-a' })],
  ['an unknown kind', key({ kind: 'Secret' })],
  ['a lower-case kind', key({ kind: 'node' })],
  ['a numeric name', key({ name: 42 })],
  ['a null name', key({ name: null })],
  ['an empty name', key({ name: '' })],
  ['a name of 254 characters', key({ name: NAME_254 })],
  ['a namespace of 64 characters', key({ kind: 'Service', namespace: NAMESPACE_64 })],
  ['a numeric namespace', key({ kind: 'Service', namespace: 7 })],
  ...NON_ASCII_NAMES.map(([label, name]): Case => [`a name with ${label}`, key({ name })]),
  ['an unknown field', key({ priority: 'high' })],
  ['an unknown hint field', key({ hint: { eventType: 'MODIFIED', color: 'red' } })],
  ['an unknown event type', key({ hint: { eventType: 'CREATED' } })],
  ['a hint that is a string', key({ hint: 'MODIFIED' })],
  ['a resourceVersion of 65 characters', key({ hint: { resourceVersion: '1'.repeat(65) } })],
  ['an eventId of 129 characters', key({ hint: { eventId: 'e'.repeat(129) } })],
  ['a 1 MiB unknown field', key({ padding: 'p'.repeat(MIB) })],
  ['a 1 MiB hint source', key({ hint: { source: 's'.repeat(MIB) } })],
  ['a duplicated name, the last invalid', '{"kind":"Node","name":"node-a","name":"Node-A"}'],
  ['a __proto__ field', '{"kind":"Node","name":"node-a","__proto__":{"admin":true}}'],
];

// ---- EventBridge EC2 events (functions/ec2-events/parse.ts) -------------------------------------------

export const STATE_CHANGE = JSON.parse(fixture('events/ec2-state-change-stopped.json')) as Record<string, unknown>;
const event = (fields: Record<string, unknown>) => JSON.stringify({ ...STATE_CHANGE, ...fields });
const detail = (fields: Record<string, unknown>) =>
  event({ detail: { 'instance-id': 'i-0a1b2c3d4e5f60718', ...fields } });

/** Parseable JSON that is no EC2 event the router knows: acknowledged and counted. */
export const BAD_EC2_EVENTS: Case[] = [
  ['no detail', JSON.stringify({ ...STATE_CHANGE, detail: undefined })],
  ['a null detail', event({ detail: null })],
  ['a string detail', event({ detail: 'stopped' })],
  ['no detail-type', JSON.stringify({ ...STATE_CHANGE, 'detail-type': undefined })],
  ['an unknown detail-type', event({ 'detail-type': 'EC2 Instance Teleported' })],
  ['another service', event({ source: 'aws.s3', 'detail-type': 'Object Created' })],
  ['a CloudTrail call', event({ 'detail-type': 'AWS API Call via CloudTrail' })],
  ['no id', JSON.stringify({ ...STATE_CHANGE, id: undefined })],
  ['a numeric id', event({ id: 12345 })],
  ['a numeric instance-id', detail({ 'instance-id': 12345 })],
  ['an instance-id that is no instance ID', detail({ 'instance-id': 'vol-0a1b2c3d4e5f60718' })],
  ['an instance-id with upper case', detail({ 'instance-id': 'i-0A1B2C3D4E5F60718' })],
  ['a non-ASCII instance-id', detail({ 'instance-id': 'i-0a1b2c3d4e5f6071８' })],
  ['an instance-id of 10 000 characters', detail({ 'instance-id': `i-${'0'.repeat(10_000)}` })],
  ['an unknown state', detail({ state: 'exploding' })],
  ['a numeric state', detail({ state: 3 })],
  ['no state', detail({})],
];

/** Events with fields the router does not know: AWS adds fields to events, so these must still be routed. */
export const TOLERATED_EC2_EVENTS: Case[] = [
  ['an unknown detail field of 1 MiB', detail({ state: 'stopped', padding: 'p'.repeat(MIB) })],
  ['an unknown top-level field', event({ 'new-field': { nested: [1, 2, 3] } })],
];

// ---- interruption notices (shared/queue/interruption.ts) ---------------------------------------------

export const GOOD_NOTICE = {
  kind: 'Node',
  name: GOOD_NODE,
  notice: {
    kind: 'spot-interruption',
    eventId: 'evt-good',
    eventTime: '2026-11-02T10:40:00.000Z',
    deadline: '2026-11-02T10:42:00.000Z',
    instanceId: 'i-0a1b2c3d4e5f60718',
  },
};
const notice = (fields: Record<string, unknown>, top: Record<string, unknown> = {}) =>
  JSON.stringify({ ...GOOD_NOTICE, name: 'node-a', ...top, notice: { ...GOOD_NOTICE.notice, ...fields } });

export const BAD_NOTICES: Case[] = [
  ['a plain key message', key({})],
  ['no notice', JSON.stringify({ kind: 'Node', name: 'node-a' })],
  ['an unknown notice kind', notice({ kind: 'meteor-strike' })],
  ['an event time that is no time', notice({ eventTime: 'yesterday' })],
  ['a deadline that is no time', notice({ deadline: '2026-13-45T99:99:99Z' })],
  ['an instance ID that is no instance ID', notice({ instanceId: 'node-a' })],
  ['an empty event ID', notice({ eventId: '' })],
  ['an event ID of 129 characters', notice({ eventId: 'e'.repeat(129) })],
  [
    'a lifecycle hook on a spot notice',
    notice({ lifecycleHook: { autoScalingGroupName: 'g', lifecycleHookName: 'h' } }),
  ],
  ['a termination hook notice without its hook', notice({ kind: 'asg-lifecycle-termination' })],
  ['an Instance key for a spot notice', notice({}, { kind: 'Instance', name: 'i-0a1b2c3d4e5f60718' })],
  ['a Node name of 254 characters', notice({}, { name: NAME_254 })],
  ['a non-ASCII Node name', notice({}, { name: 'nœud-1' })],
  ['an unknown notice field', notice({ severity: 'high' })],
  ['an unknown top-level field', notice({}, { extra: true })],
];

// ---- Nodes ----------------------------------------------------------------------------------------------

/**
 * Provider IDs that name no AWS instance, though some look like one. `instanceIdFromProviderId`
 * (shared/aws/provider-id.ts) must refuse each.
 */
export const MALFORMED_AWS_PROVIDER_IDS: Case[] = [
  ['the scheme alone', 'aws://'],
  ['the scheme and a slash', 'aws:///'],
  ['a zone without an instance', 'aws:///eu-west-1a/'],
  ['an instance ID prefix alone', 'aws:///eu-west-1a/i-'],
  ['upper-case hex', 'aws:///eu-west-1a/i-0A1B2C3D4E5F60718'],
  ['a trailing path', 'aws:///eu-west-1a/i-0a1b2c3d4e5f60718/extra'],
  ['a trailing newline', 'aws:///eu-west-1a/i-0a1b2c3d4e5f60718\n'],
  ['a trailing space', 'aws:///eu-west-1a/i-0a1b2c3d4e5f60718 '],
  ['a Cyrillic i', 'aws:///eu-west-1a/і-0a1b2c3d4e5f60718'],
  ['two slashes', 'aws://eu-west-1a/i-0a1b2c3d4e5f60718'],
  ['an upper-case zone', 'aws:///EU-WEST-1A/i-0a1b2c3d4e5f60718'],
  ['a 10 000-character zone', `aws:///${'z'.repeat(10_000)}/i-0a1b2c3d4e5f60718`],
];

/** Provider IDs of other clouds: not ours, and not a problem. */
export const FOREIGN_PROVIDER_IDS: Case[] = [
  ['GCE', 'gce://project/europe-west1-b/node-1'],
  ['kind', 'kind://docker/kind/kind-worker'],
];

/** Annotations and labels of the largest sizes the fakes will store: the handlers must carry them. */
export function hugeMetadata(): { annotations: Record<string, string>; labels: Record<string, string> } {
  const labels: Record<string, string> = {};
  for (let i = 0; i < 10_000; i++) labels[`corpus.example.com/label-${i}`] = `v${i}`;
  return { annotations: { 'corpus.example.com/blob': 'b'.repeat(MIB) }, labels };
}

// ---- Services -------------------------------------------------------------------------------------------

/**
 * One value per Service annotation the controller parses (functions/service/annotation-schemas.ts) that it
 * must refuse; `undefined` where the annotation accepts any string (say why). Typed over every annotation, so
 * a new one cannot be added without an entry here.
 */
export const BAD_SERVICE_ANNOTATIONS: Record<keyof typeof ANNOTATION, string | undefined> = {
  type: undefined, // any value but nlb, external and nlb-ip means a Classic ELB
  internal: 'perhaps',
  scheme: 'public',
  name: '-bad-name-',
  subnets: ' , ',
  eipAllocations: 'eip-123',
  privateIpv4Addresses: '10.0.0.300',
  nlbTargetType: 'pod',
  sslCert: 'not-an-arn',
  sslPorts: '443', // needs the certificate annotation
  sslNegotiationPolicy: '   ',
  alpnPolicy: 'HTTP3',
  ipAddressType: 'ipv6-only',
  backendProtocol: 'udp',
  proxyProtocol: 'v1',
  healthcheckProtocol: 'ICMP',
  healthcheckPort: '70000',
  healthcheckPath: 'no-slash',
  healthcheckInterval: 'often',
  healthcheckTimeout: '1',
  healthcheckHealthyThreshold: '11',
  healthcheckUnhealthyThreshold: '-2',
  targetGroupAttributes: 'no-equals-sign',
  attributes: '=value',
  crossZone: 'maybe',
  accessLogEnabled: 'yes',
  accessLogBucket: 'Not_A_Bucket',
  accessLogPrefix: undefined, // any prefix is a prefix
  accessLogEmitInterval: '15',
  additionalResourceTags: 'a=1,a=2',
  securityGroups: ',',
  extraSecurityGroups: ' ',
  targetNodeLabels: '=x',
  connectionIdleTimeout: '0',
  connectionDrainingEnabled: 'sometimes',
  connectionDrainingTimeout: '3601',
  manageBackendSecurityGroupRules: 'perhaps',
  sourceRanges: '10.0.0.0/33',
};

// ---- IPAM -----------------------------------------------------------------------------------------------

/** Values of the VPC CNI ConfigMap (`kube-system/amazon-vpc-cni`) that are no setting (functions/ipam/settings.ts). */
export const BAD_IPAM_SETTINGS: Case<Record<string, string>>[] = [
  ['a word as warm-ip-target', { 'warm-ip-target': 'lots' }],
  ['a negative warm-ip-target', { 'warm-ip-target': '-1' }],
  ['an exponent as warm-ip-target', { 'warm-ip-target': '1e3' }],
  ['a fraction as minimum-ip-target', { 'minimum-ip-target': '3.5' }],
  // Go's strconv.Atoi takes any int64 (1000000 is a target, capped by the interface): beyond it, it is none.
  ['twenty digits as minimum-ip-target', { 'minimum-ip-target': '99999999999999999999' }],
  ['a space before warm-ip-target', { 'warm-ip-target': ' 3' }],
  ['a Roman numeral as windows-warm-ip-target', { 'windows-warm-ip-target': 'Ⅻ' }],
  ['a word as warm-prefix-target', { 'enable-windows-prefix-delegation': 'true', 'warm-prefix-target': 'x' }],
];

/** `vpc.amazonaws.com/PrivateIPv4Address` values that are no `<IPv4>/<prefix length>`. */
export const MALFORMED_POD_ADDRESSES: Case[] = [
  ['an empty value', ''],
  ['a word', 'garbage'],
  ['an address out of range', '999.1.1.1/32'],
  ['a prefix length that is no number', '10.0.1.77/abc'],
  ['an IPv6 address', 'fd00::1/128'],
  ['two addresses', '10.0.1.77/32,10.0.1.78/32'],
  ['a non-ASCII digit', '10.0.1.７/32'],
];

// ---- admission reviews (functions/relay/webhook/admission.ts) ----------------------------------------

const review = (request: unknown, top: Record<string, unknown> = {}) =>
  JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request, ...top });
const windows = { nodeSelector: { 'kubernetes.io/os': 'windows' } };
const podReview = (spec: unknown, extra: Record<string, unknown> = {}) =>
  review({ uid: 'u-1', operation: 'CREATE', userInfo: { username: 'alice' }, object: { spec }, ...extra });

export const VALID_REVIEW = podReview({ ...windows, containers: [{ name: 'a' }] });

/** Reviews that cannot be read: the webhook answers 400. */
export const MALFORMED_REVIEWS: Case[] = [
  ['the wrong apiVersion', review({ uid: 'u', operation: 'CREATE' }, { apiVersion: 'admission.k8s.io/v1beta1' })],
  ['the wrong kind', review({ uid: 'u', operation: 'CREATE' }, { kind: 'Pod' })],
  ['no request', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' })],
  ['an empty uid', review({ uid: '', operation: 'CREATE' })],
  ['an unknown operation', review({ uid: 'u', operation: 'PATCH' })],
  ['an object that is an array', review({ uid: 'u', operation: 'CREATE', object: [] })],
  ['an object that is a string', review({ uid: 'u', operation: 'CREATE', object: 'pod' })],
  ['groups that are no list', review({ uid: 'u', operation: 'CREATE', userInfo: { groups: 'admins' } })],
];

/** Reviews that read, of Pods no API server would store: answered (allowed or denied), never an error. */
export const ODD_POD_REVIEWS: Case[] = [
  ['containers that are a string', podReview({ ...windows, containers: 'app' })],
  ['a null container', podReview({ ...windows, containers: [null] })],
  ['a container that is a number', podReview({ ...windows, containers: [7] })],
  ['resources that are a string', podReview({ ...windows, containers: [{ resources: 'lots' }] })],
  ['requests that are a number', podReview({ ...windows, containers: [{ resources: { requests: 5 } }] })],
  ['a null nodeSelector', podReview({ nodeSelector: null, containers: [{ name: 'a' }] })],
  ['a spec that is a string', podReview('spec')],
  ['a null spec', podReview(null)],
  ['no object', review({ uid: 'u-1', operation: 'CREATE' })],
  [
    '10 000 labels',
    podReview({ ...windows, containers: [{ name: 'a' }] }, { object: { metadata: hugeMetadata(), spec: windows } }),
  ],
  [
    'a malformed address annotation',
    podReview(windows, {
      object: { metadata: { annotations: { 'vpc.amazonaws.com/PrivateIPv4Address': 'garbage' } }, spec: windows },
    }),
  ],
  [
    'an UPDATE changing the address annotation to garbage',
    podReview(windows, {
      operation: 'UPDATE',
      object: { metadata: { annotations: { 'vpc.amazonaws.com/PrivateIPv4Address': '🚀' } }, spec: windows },
      oldObject: {
        metadata: { annotations: { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.1.5/24' } },
        spec: windows,
      },
    }),
  ],
];

// ---- credential provider requests (functions/credential-provider/request.ts) -------------------------

export const VALID_CREDENTIAL_REQUEST = JSON.stringify({
  apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
  kind: 'CredentialProviderRequest',
  image: '111122223333.dkr.ecr.eu-west-1.amazonaws.com/app:1',
});
const credentialRequest = (fields: Record<string, unknown>) =>
  JSON.stringify({ ...JSON.parse(VALID_CREDENTIAL_REQUEST), ...fields });

export const BAD_CREDENTIAL_REQUESTS: Case[] = [
  ['an unknown apiVersion', credentialRequest({ apiVersion: 'credentialprovider.kubelet.k8s.io/v2' })],
  ['the wrong kind', credentialRequest({ kind: 'CredentialProviderResponse' })],
  ['no image', credentialRequest({ image: undefined })],
  ['a numeric image', credentialRequest({ image: 42 })],
  ['a blank image', credentialRequest({ image: '   ' })],
  ['a numeric token', credentialRequest({ serviceAccountToken: 42 })],
  ['annotations with a numeric value', credentialRequest({ serviceAccountAnnotations: { a: 1 } })],
  ['annotations that are a list', credentialRequest({ serviceAccountAnnotations: ['a'] })],
  ['an image of another registry', credentialRequest({ image: 'docker.io/library/nginx:1' })],
  ['a non-ASCII image', credentialRequest({ image: '111122223333.dkr.ecr.eu-west-1.amazonaws.com/aplicación:1' })],
  ['an image with a newline', credentialRequest({ image: '111122223333.dkr.ecr.eu-west-1.amazonaws.com/app\n:1' })],
  ['more than 1 MiB', credentialRequest({ padding: 'p'.repeat(MIB + 1) })],
];

/**
 * An Ingress member's bad annotations (keys without `/` take `alb.ingress.kubernetes.io/`), with its backend when the
 * case needs one (`use-annotation`, an unknown Service, a missing port) and the text the Warning Event must name.
 */
export interface BadIngress {
  annotations: Record<string, string>;
  backend?: { service: string; port: number | string };
  /** What the Warning Event's message names (the annotation, the field, the Service). */
  names: string;
}

export const BAD_INGRESS_ANNOTATIONS: Case<BadIngress>[] = [
  [
    'actions: truncated JSON',
    {
      annotations: { 'actions.go': '{"type": "forward", "forwardConfig": {' },
      backend: { service: 'go', port: 'use-annotation' },
      names: 'actions.go',
    },
  ],
  [
    'actions: an unknown action type',
    {
      annotations: { 'actions.go': '{"type": "teleport", "teleportConfig": {"to": "mars"}}' },
      backend: { service: 'go', port: 'use-annotation' },
      names: 'actions.go',
    },
  ],
  [
    'conditions: truncated JSON',
    { annotations: { 'conditions.web': '[{"field": "host-header", ' }, names: 'conditions.web' },
  ],
  [
    'conditions: an object, not a list',
    { annotations: { 'conditions.web': '{"field": "path-pattern"}' }, names: 'conditions.web' },
  ],
  ['listen-ports: not JSON', { annotations: { 'listen-ports': 'HTTP:80' }, names: 'listen-ports' }],
  ['listen-ports: port out of range', { annotations: { 'listen-ports': '[{"HTTP": 99999}]' }, names: 'listen-ports' }],
  ['listen-ports: unknown protocol', { annotations: { 'listen-ports': '[{"GOPHER": 70}]' }, names: 'listen-ports' }],
  ['group.order: above 1000', { annotations: { 'group.order': '1001' }, names: 'group.order' }],
  ['group.order: not a number', { annotations: { 'group.order': 'first' }, names: 'group.order' }],
  [
    'inbound-cidrs: prefix /33 and a word',
    { annotations: { 'inbound-cidrs': '10.0.0.0/33,foo' }, names: 'inbound-cidrs' },
  ],
  ['target-type: pod', { annotations: { 'target-type': 'pod' }, names: 'target-type' }],
  ['healthcheck-port: a word', { annotations: { 'healthcheck-port': 'http-ish' }, names: 'healthcheck-port' }],
  [
    'backend: a Service that does not exist',
    { annotations: {}, backend: { service: 'nope', port: 80 }, names: 'nope' },
  ],
  [
    'backend: a port the Service does not have',
    { annotations: {}, backend: { service: 'web', port: 81 }, names: '81' },
  ],
  [
    'backend: a named port the Service does not have',
    { annotations: {}, backend: { service: 'web', port: 'grpc' }, names: 'grpc' },
  ],
];

/** Valid though unusual: PascalCase JSON keys (the reference's JSON decoding ignores case), served without a warning. */
export const TOLERATED_INGRESS_ANNOTATIONS: Case<BadIngress>[] = [
  [
    'actions: PascalCase JSON',
    {
      annotations: {
        'actions.go':
          '{"Type": "forward", "ForwardConfig": {"TargetGroups": [{"ServiceName": "web", "ServicePort": "80"}]}}',
      },
      backend: { service: 'go', port: 'use-annotation' },
      names: '',
    },
  ],
  [
    'conditions: PascalCase JSON',
    {
      annotations: {
        'conditions.web':
          '[{"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": "X-Shop", "Values": ["yes"]}}]',
      },
      names: '',
    },
  ],
];

/**
 * IngressClassParams specs the CRD's schema may not have checked (an object stored under an older CRD, or a
 * schema-less install), with the field the Warning Event must name.
 */
export const BAD_INGRESS_CLASS_PARAMS: Case<{ spec: Record<string, unknown>; names: string }>[] = [
  [
    'subnets: both ids and tags',
    { spec: { subnets: { ids: ['subnet-00000000000000010'], tags: { Name: ['public'] } } }, names: 'subnets' },
  ],
  ['inboundCIDRs: prefix /40', { spec: { inboundCIDRs: ['10.0.0.0/40'] }, names: 'inboundCIDRs' }],
];

/** Specs the CRD's schema refuses (the API server answers 422 naming the field): no controller ever reads them. */
export const REFUSED_INGRESS_CLASS_PARAMS: Case<{ spec: Record<string, unknown>; names: string }>[] = [
  ['scheme: public', { spec: { scheme: 'public' }, names: 'spec.scheme' }],
  [
    'subnets: an id that is no subnet ID',
    { spec: { subnets: { ids: ['vpc-0a1b2c3d'] } }, names: 'spec.subnets.ids[0]' },
  ],
];
