import type { Ec2RoutePort } from '../../shared/aws/ec2-port.ts';
import type { Clock } from '../../shared/clock.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Cidr } from '../../shared/net/cidr.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { MetricsPort } from '../../shared/observability/metrics.ts';

/** What the route controller (reconciler.ts) is given: the handler builds it, the tests give fakes. */
export interface RouteDeps {
  clusterName: string;
  /** ROUTE_TABLE_ID; unset: the one table tagged with the cluster. */
  routeTableId?: string;
  /** CLUSTER_CIDRS: only routes inside these are ours. */
  clusterCidrs: readonly Cidr[];
  /** ROUTE_TABLE_LIMIT: the account's "Routes per route table" quota. */
  routeTableLimit: number;
  kube: KubernetesPort;
  ec2: Ec2RoutePort;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
  /** EC2 writes in flight at once during a pass (default 5): quick convergence without a throttling burst. */
  writeConcurrency?: number;
}
