import * as z from '../zod.ts';
import { csv } from './csv.ts';
import {
  cidr,
  clusterName,
  INGRESS_TARGET_TYPES,
  interruptionActions,
  matching,
  once,
  SECONDS,
  SERVICE_LOAD_BALANCER_TYPES,
  tagMap,
  url,
  wholeNumber,
} from './schemas.ts';

/*
 * Every setting of the configuration (config.ts reads them): its schema, made on first use, and what it is when unset.
 */

export type Schema = z.core.$ZodType;

/**
 * A setting: its schema (made on first use) and what it is when the environment leaves it unset: refused with
 * the schema's own message (`required`), absent (`optional`), or a default value (`withDefault`).
 */
export type Setting<S extends Schema = Schema> =
  | { unset: 'required'; schema: () => S }
  | { unset: 'optional'; schema: () => S }
  | { unset: 'default'; schema: () => S; value: z.output<S> };

const required = <S extends Schema>(make: () => S) => ({ unset: 'required' as const, schema: once(make) });
const optional = <S extends Schema>(make: () => S) => ({ unset: 'optional' as const, schema: once(make) });
const withDefault = <S extends Schema>(make: () => S, value: z.output<S>) => ({
  unset: 'default' as const,
  schema: once(make),
  value,
});

/** Every setting, in the order problems are listed. */
export const SETTINGS = {
  CLUSTER_NAME: required(clusterName),
  AWS_REGION: required(() =>
    z
      .string({ error: 'is required (the AWS region of the cluster, e.g. eu-west-1)' })
      .check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region name such as eu-west-1')),
  ),
  NODE_IP_FAMILIES: withDefault(
    () =>
      z.pipe(
        csv(z.enum(['ipv4', 'ipv6'], { error: 'each family must be ipv4 or ipv6' })),
        z.array(z.enum(['ipv4', 'ipv6'])).check(z.minLength(1, 'must name at least one family')),
      ),
    ['ipv4'],
  ),
  KUBERNETES_AUTH_MODE: withDefault(
    () => z.enum(['eks', 'token', 'kubeconfig'], { error: 'must be eks, token or kubeconfig' }),
    'kubeconfig',
  ),
  KUBERNETES_API_ENDPOINT: optional(url),
  KUBERNETES_CA_DATA: optional(() => z.base64({ error: 'must be the base64 PEM CA bundle' })),
  KUBERNETES_TOKEN_SECRET_ID: optional(() => z.string().check(z.minLength(1))),
  EKS_CLUSTER_NAME: optional(() => z.string().check(z.minLength(1))),
  NODE_QUEUE_URL: optional(url),
  NODE_LIFECYCLE_QUEUE_URL: optional(url),
  ROUTE_QUEUE_URL: optional(url),
  /**
   * The interruption FIFO queue: with it, the EC2 events router sends interruption notices there
   * (shared/queue/interruption.ts) for the interruption controller (functions/interruption); unset, no notices
   * are sent. The stack sets it with CCM_INTERRUPTION=true.
   */
  INTERRUPTION_QUEUE_URL: optional(url),
  /** The route table pod routes go in; unset: the one table tagged kubernetes.io/cluster/<name>. */
  ROUTE_TABLE_ID: optional(() =>
    matching(/^rtb-(?:[0-9a-f]{8}|[0-9a-f]{17})$/, 'must be a route table ID such as rtb-0123456789abcdef0'),
  ),
  /** kube-controller-manager's --cluster-cidr: only routes inside these blocks are the route controller's. */
  CLUSTER_CIDRS: optional(() => csv(cidr(), 'must name at least one CIDR block')),
  /** The "Routes per route table" quota of the account (50 unless raised, at most 1000). */
  ROUTE_TABLE_LIMIT: withDefault(
    () =>
      wholeNumber(
        { number: 'must be the number of routes a route table may hold', whole: 'must be a whole number of routes' },
        [1, 'must be at least 1'],
        [1000, 'cannot exceed 1000, the most EC2 allows in one route table'],
      ),
    50,
  ),
  /** The service controller's FIFO queue (producers send Service keys and the garbage collection key). */
  SERVICE_QUEUE_URL: optional(url),
  /** The VPC load balancers, target groups and security groups go in (required by the service controller). */
  VPC_ID: optional(() =>
    matching(/^vpc-(?:[0-9a-f]{8}|[0-9a-f]{17})$/, 'must be a VPC ID such as vpc-0123456789abcdef0'),
  ),
  /**
   * A `spec.loadBalancerClass` the service controller handles besides Services without a class. Unset: only
   * Services without a class are ours.
   */
  LOAD_BALANCER_CLASS: optional(() =>
    matching(
      /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
      'must be a label-style name such as example.com/nlb',
    ),
  ),
  /**
   * kube-apiserver's `--service-node-port-range`: the service controller allows this whole range from the
   * load balancers on the Nodes' security groups (one rule per protocol, however many Services).
   */
  SERVICE_NODE_PORT_RANGE: optional(() =>
    z
      .pipe(
        matching(/^\d{1,5}-\d{1,5}$/, 'must be a port range such as 30000-32767'),
        z.transform((text: string) => {
          const [from, to] = text.split('-').map(Number) as [number, number];
          return { from, to };
        }),
      )
      .check(
        z.refine(
          (r) => r.from >= 1 && r.to <= 65535 && r.from <= r.to,
          'must be a range of ports from 1 to 65535, low-high',
        ),
      ),
  ),
  /**
   * Tag keys another tool manages on the load balancers, target groups and managed security groups (comma
   * separated). The service controller removes tags it did not set (an entry dropped from
   * `additional-resource-tags`) except these and AWS's own `aws:` tags; a Service may not set them.
   */
  SERVICE_EXTERNAL_MANAGED_TAGS: withDefault(
    () =>
      csv(
        z
          .string()
          .check(
            z.maxLength(128, 'each tag key must be at most 128 characters'),
            z.regex(
              /^[\p{L}\p{Z}\p{N}_.:/=+\-@]+$/u,
              'each tag key must be letters, digits, spaces or _ . : / = + - @',
            ),
          ),
      ),
    [],
  ),
  /**
   * The kind of load balancer a `type: LoadBalancer` Service gets when its annotations do not say: `nlb` (a
   * Network Load Balancer, the default) or `classic` (a Classic Load Balancer, as the reference cloud
   * controller makes by default).
   */
  SERVICE_DEFAULT_LOAD_BALANCER_TYPE: withDefault(
    () =>
      z.enum(SERVICE_LOAD_BALANCER_TYPES, {
        error: 'must be nlb (Network Load Balancer) or classic (Classic Load Balancer)',
      }),
    'nlb',
  ),
  /** How long to wait before looking again at a load balancer that is still provisioning (NLBs take minutes). */
  SERVICE_PROVISIONING_REQUEUE_SECONDS: withDefault(
    () =>
      wholeNumber(
        SECONDS,
        [5, 'must be at least 5 seconds'],
        [900, 'cannot exceed 900 seconds (the longest SQS visibility change this controller makes)'],
      ),
    60,
  ),
  /** How long to wait while a deletion waits for AWS (ENIs of a deleted NLB holding its security group). */
  SERVICE_CLEANUP_REQUEUE_SECONDS: withDefault(
    () => wholeNumber(SECONDS, [5, 'must be at least 5 seconds'], [900, 'cannot exceed 900 seconds']),
    60,
  ),
  /**
   * How long a replaced Network Load Balancer keeps serving after the Service's status moved to its successor,
   * before it is deleted: clients that still resolve its name (DNS TTLs, external-dns) and connections in flight
   * reach it meanwhile. The default is the DNS TTL of its name (60 s) plus the default deregistration delay (300 s).
   */
  SERVICE_REPLACEMENT_GRACE_SECONDS: withDefault(
    () => wholeNumber(SECONDS, [0, 'must be 0 or more seconds'], [86_400, 'cannot exceed 86400 seconds (a day)']),
    360,
  ),
  /** The Ingress controller's FIFO queue: IngressGroup keys (shared/ingress/membership.ts `groupKey`). */
  INGRESS_QUEUE_URL: optional(url),
  /**
   * The security policy of an HTTPS listener whose Ingresses name none (`ssl-policy`): the AWS Load Balancer
   * Controller's default, so that a group moved over from it keeps its listeners as they are.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/describe-ssl-policies.html
   */
  INGRESS_DEFAULT_SSL_POLICY: withDefault(
    () =>
      matching(
        /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/,
        'must be an ELB security policy name such as ELBSecurityPolicy-TLS13-1-2-2021-06',
      ),
    'ELBSecurityPolicy-2016-08',
  ),
  /** The target type of an Ingress backend without a `target-type` annotation: `instance` (Node ports) or `ip`. */
  INGRESS_DEFAULT_TARGET_TYPE: withDefault(
    () => z.enum(INGRESS_TARGET_TYPES, { error: 'must be instance (Node ports) or ip (Pod addresses)' }),
    'instance',
  ),
  /**
   * Tags on every AWS resource the Ingress controller makes, over any an Ingress or IngressClassParams gives
   * (`key=value,key2=value2`); as the AWS Load Balancer Controller's `--default-tags`.
   */
  INGRESS_DEFAULT_TAGS: withDefault(tagMap, {}),
  /**
   * The Services the AWS Load Balancer Controller serves (`aws-load-balancer-type: external` or `nlb-ip`, and
   * `loadBalancerClass: service.k8s.aws/nlb`) are the service controller's too, as that controller makes them
   * (docs/target-group-binding.md). Off: they are left alone. The stage sets it with CCM_LBC_SERVICES=true.
   */
  SERVICE_LBC_SERVICES: withDefault(() => z.stringbool({ error: 'must be true or false' }), false),
  /**
   * The Ingress controller, and the service controller for the AWS Load Balancer Controller's Services, keep a
   * TargetGroupBinding beside each target group they make, as the reference does (shared/k8s/stack-bindings.ts), so
   * the binding controller keeps the readiness gates of the Pods behind it. Off: none are made. The stage sets it
   * with CCM_TARGET_GROUP_BINDING=true, which deploys the binding controller those bindings need.
   */
  STACK_TARGET_GROUP_BINDINGS: withDefault(() => z.stringbool({ error: 'must be true or false' }), false),
  /** The TargetGroupBinding controller's FIFO queue: TargetGroupBinding keys (functions/target-group-binding). */
  TARGET_GROUP_BINDING_QUEUE_URL: optional(url),
  /**
   * Seconds between looks at a TargetGroupBinding while a Pod held by its readiness gate waits for its target to be
   * healthy: the gate's condition turns True at most this long after ELB says `healthy`.
   */
  TGB_READINESS_REQUEUE_SECONDS: withDefault(
    () =>
      wholeNumber(
        SECONDS,
        [1, 'must be at least 1 second'],
        [900, 'cannot exceed 900 seconds (the longest SQS visibility change this controller makes)'],
      ),
    10,
  ),
  /** Per kind of interruption notice, `drain` or `taint-only` (see `interruptionActions`); unset: the defaults. */
  INTERRUPTION_ACTIONS: withDefault(interruptionActions, {}),
  /**
   * Add `node.kubernetes.io/out-of-service` to a drained Node, so its remaining Pods are force-deleted and
   * their volumes detached without waiting for the kubelet. Off by default: it is only safe once the instance
   * is really going, which Kubernetes leaves to whoever sets the taint.
   */
  INTERRUPTION_OUT_OF_SERVICE_TAINT: withDefault(() => z.stringbool({ error: 'must be true or false' }), false),
  /**
   * Label a Node to be drained `node.kubernetes.io/exclude-from-external-load-balancers=aws-node-termination-handler`,
   * so the service controller takes it out of every load balancer before its Pods go; the label comes off (that value
   * only) once the Node outlives the interruption. Off: load balancers keep the Node until its instance goes.
   */
  INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: withDefault(() => z.stringbool({ error: 'must be true or false' }), true),
  /**
   * Seconds between drain passes while Pods are still going. A spot notice leaves two minutes, so a pass more
   * than a minute apart would leave most of it unused.
   */
  INTERRUPTION_DRAIN_REQUEUE_SECONDS: withDefault(
    () =>
      wholeNumber(
        SECONDS,
        [1, 'must be at least 1 second'],
        [60, 'cannot exceed 60 seconds (a spot notice leaves two minutes)'],
      ),
    5,
  ),
  /**
   * The IP address manager's FIFO queue: Node keys of Windows Nodes (and its garbage-collection key). The relay and
   * the resync feed it when set; unset, nothing about Pods is watched or sent.
   */
  IPAM_QUEUE_URL: optional(url),
  /**
   * Seconds a released Pod address waits before another Pod may get it (kube-proxy and the Windows host need
   * time to forget it). 30 s as the VPC resource controller.
   */
  IPAM_COOLDOWN_SECONDS: withDefault(
    () => wholeNumber(SECONDS, [0, 'cannot be negative'], [600, 'cannot exceed 600 seconds']),
    30,
  ),
  NODE_INDEX_TTL_SECONDS: withDefault(() => wholeNumber({ number: 'must be a number of seconds' }, [0], [3600]), 60),
  LOG_LEVEL: withDefault(() => z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR']), 'INFO'),
  /**
   * The dimensions of the `AwsCalls` metric: `operation` (the AWS service and the operation: one custom metric per
   * operation in use) or `service` (the AWS service only: three or so). `AwsThrottles` keeps the operation either
   * way. docs/cost.md has what each costs.
   */
  AWS_CALL_METRICS: withDefault(() => z.enum(['operation', 'service']), 'operation'),
} satisfies Record<string, Setting>;
