import { errorMessage } from '../../../shared/errors.ts';
import { windowsIpamEnabled } from '../../../shared/k8s/ipam-flags.ts';
import { VPC_CNI_CONFIGMAP } from '../../../shared/k8s/ipam-names.ts';
import type { Log } from '../../../shared/observability/log.ts';
import type { KubeObject } from '../kinds.ts';
import type { ListWatchSource } from '../kube-source.ts';
import {
  DEFAULT_LIST_WATCH_OPTIONS,
  ListWatcher,
  type ListWatchHandler,
  type ListWatchOptions,
  WatchHealth,
  type WatchHealthEvent,
} from '../list-watch.ts';
import { Gauge, type Registry } from '../prometheus.ts';

/**
 * Whether Windows IP address management is on, as the webhooks need it: the same flag of the same ConfigMap
 * (`enable-windows-ipam` in kube-system/amazon-vpc-cni) the IPAM controller reads, through the same parse
 * (shared/k8s/ipam-flags.ts). While it is off no Node advertises `vpc.amazonaws.com/PrivateIPv4Address`, so a Pod
 * the mutating webhook gave that request would stay Pending: the reference (the VPC resource controller) mutates,
 * and polices the address annotation, only while it is on.
 *
 * Every replica watches the ConfigMap (list + watch by name, the relay's reflector: list-watch.ts), so a change is
 * followed within the watch's latency and an admission never waits for the API server. The relay's role for IPAM
 * (deploy/relay/rbac-ipam.yaml) grants exactly that list and watch.
 */
export interface IpamSwitch {
  enabled(): Promise<boolean>;
}

/** How long an admission waits for the first list before it answers as if IPAM were off (the webhook's own timeout is 10 s). */
const FIRST_LIST_WAIT_MS = 2_000;

export class WatchedIpamSwitch implements IpamSwitch, ListWatchHandler {
  private readonly watcher: ListWatcher;
  private listedObject: KubeObject | undefined;
  private on: boolean | undefined;
  /** Resolves when the first list has answered, or failed (then the switch reads as off until a list succeeds). */
  private readonly settled: Promise<void>;
  private settle: () => void = () => {};
  private readonly gauge = new Gauge(
    'relay_windows_ipam_enabled',
    'Whether Windows IPAM is on (enable-windows-ipam of kube-system/amazon-vpc-cni): the webhooks mutate and validate Windows Pods only then',
  );

  constructor(
    source: ListWatchSource,
    private readonly deps: { log: Log; registry?: Registry },
    options: ListWatchOptions = DEFAULT_LIST_WATCH_OPTIONS,
  ) {
    this.settled = new Promise((resolve) => {
      this.settle = resolve;
    });
    deps.registry?.register(this.gauge);
    this.watcher = new ListWatcher('ConfigMap', source, this, options);
  }

  start(): void {
    this.watcher.start();
  }

  stop(): Promise<void> {
    this.settle();
    return this.watcher.stop();
  }

  async enabled(): Promise<boolean> {
    if (this.on === undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.settled,
        new Promise((resolve) => {
          timer = setTimeout(resolve, FIRST_LIST_WAIT_MS);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    }
    // Unknown (the ConfigMap could not be read yet) answers as the webhook being away would under its
    // failurePolicy Ignore: the Pod passes untouched.
    return this.on ?? false;
  }

  listStarted(): void {
    this.listedObject = undefined;
  }

  listed(_kind: string, object: KubeObject): void {
    if (isVpcCniConfigMap(object)) this.listedObject = object;
  }

  listFinished(): void {
    this.apply(this.listedObject);
    this.settle();
  }

  event(_kind: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject): void {
    if (!isVpcCniConfigMap(object)) return;
    this.apply(type === 'DELETED' ? undefined : object);
  }

  health(event: WatchHealthEvent): void {
    if (event.type === WatchHealth.ListFailed) {
      this.settle();
      this.deps.log.warn('reading the VPC CNI ConfigMap failed: the webhooks keep the last known IPAM switch', {
        configMap: `${VPC_CNI_CONFIGMAP.namespace}/${VPC_CNI_CONFIGMAP.name}`,
        known: this.on ?? 'none (off)',
        error: errorMessage(event.error),
        retryInMs: event.retryInMs,
      });
    }
  }

  private apply(object: KubeObject | undefined): void {
    const on = object !== undefined && windowsIpamEnabled((object as { data?: Record<string, string> }).data);
    if (on !== this.on) {
      this.deps.log.info(
        on
          ? 'Windows IPAM is on: the webhooks give Windows Pods an address request and police the address annotation'
          : 'Windows IPAM is off: the webhooks pass Windows Pods through untouched',
        { configMap: `${VPC_CNI_CONFIGMAP.namespace}/${VPC_CNI_CONFIGMAP.name}` },
      );
    }
    this.on = on;
    this.gauge.set({}, on ? 1 : 0);
  }
}

function isVpcCniConfigMap(object: KubeObject): boolean {
  return object.metadata?.namespace === VPC_CNI_CONFIGMAP.namespace && object.metadata?.name === VPC_CNI_CONFIGMAP.name;
}
