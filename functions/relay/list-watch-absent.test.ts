import { afterEach, describe, expect, it } from 'vitest';
import { KubernetesRestClient } from '../../shared/k8s/rest-client.ts';
import { ClientNodeListWatch } from './client-node-source.ts';
import { KIND_INFO, type KubeObject, type WatchedKind } from './kinds.ts';
import type { ListWatchSource } from './kube-source.ts';
import {
  KindNotServedError,
  ListWatcher,
  type ListWatchHandler,
  type ListWatchOptions,
  WatchHealth,
  type WatchHealthEvent,
} from './list-watch.ts';
import { RestListWatch } from './rest-source.ts';
import {
  type ApiRequest,
  FakeCluster,
  type FakeKubeApi,
  kubeConfigFor,
  restConfigFor,
  startFakeKubeApi,
} from './testing/fake-kube-api.ts';
import { until } from './testing/objects.ts';

/**
 * A kind the API may not serve (KindInfo.optional: the AWS Load Balancer Controller's IngressClassParams, whose
 * CustomResourceDefinition a cluster may not have): a 404 is an empty kind, synced, said in a log line, and listed
 * again later; any other kind's 404 stays a failure.
 */
const SOURCES: [string, (api: FakeKubeApi) => ListWatchSource][] = [
  ['the REST client', (api) => new RestListWatch(new KubernetesRestClient(restConfigFor(api)))],
  ['client-node', (api) => new ClientNodeListWatch(kubeConfigFor(api))],
];

const OPTIONS: ListWatchOptions = {
  pageSize: 500,
  watchTimeoutSeconds: 60,
  inactivityMs: 5_000,
  relistIntervalMs: 0,
  backoffBaseMs: 40,
  backoffMaxMs: 100,
  absentRelistMs: 60,
};

class Recorder implements ListWatchHandler {
  readonly names: string[] = [];
  readonly reports: WatchHealthEvent[] = [];
  readonly finished: string[] = [];
  listStarted() {}
  listed(_kind: WatchedKind, object: KubeObject) {
    this.names.push(object.metadata!.name!);
  }
  listFinished(kind: WatchedKind) {
    this.finished.push(kind);
  }
  event(_kind: WatchedKind, _type: string, object: KubeObject) {
    this.names.push(object.metadata!.name!);
  }
  health(event: WatchHealthEvent) {
    this.reports.push(event);
  }
  failures() {
    return this.reports.filter((h) => h.type === WatchHealth.ListFailed);
  }
}

let api: FakeKubeApi | undefined;
let watcher: ListWatcher | undefined;

afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
  await api?.close();
  api = undefined;
});

async function watch(kind: WatchedKind, cluster: FakeCluster, source: (api: FakeKubeApi) => ListWatchSource) {
  api = await startFakeKubeApi(cluster);
  const recorder = new Recorder();
  watcher = new ListWatcher(kind, source(api), recorder, OPTIONS, () => 0.5);
  return { recorder, start: () => watcher!.start() };
}

const of = (kind: WatchedKind) => (r: ApiRequest) => r.kind === kind;

describe.each(SOURCES)('an optional kind over %s', (_name, source) => {
  it('declares IngressClassParams optional, and nothing the relay watched before', () => {
    expect(KIND_INFO.IngressClassParams.optional).toBe(true);
    for (const kind of ['Node', 'Service', 'EndpointSlice', 'Pod', 'ConfigMap', 'Ingress', 'IngressClass'] as const) {
      expect(KIND_INFO[kind].optional).toBeUndefined();
    }
  });

  it('a 404 is an empty kind, synced and said; listed again until the API serves it, then watched', async () => {
    const cluster = new FakeCluster();
    cluster.apply('IngressClassParams', { metadata: { name: 'shared' }, spec: { group: { name: 'web' } } });
    const { recorder, start } = await watch('IngressClassParams', cluster, source);
    api!.failNext(of('IngressClassParams'), 404, 2);
    start();

    await until(() => watcher!.synced, 'the empty list');
    expect(recorder.finished[0]).toBe('IngressClassParams');
    // Synced for the metric too (`relay_watch_synced`, an alert when 0).
    expect(recorder.reports.find((h) => h.type === WatchHealth.ListFinished)).toEqual(
      expect.objectContaining({ kind: 'IngressClassParams', reason: 'absent', objects: 0 }),
    );
    const [failure] = recorder.failures();
    expect(failure).toMatchObject({ kind: 'IngressClassParams', reason: 'absent', retryInMs: 60 });
    expect((failure as { error: unknown }).error).toBeInstanceOf(KindNotServedError);
    expect(String((failure as { error: unknown }).error)).toMatch(/IngressClassParams is not served.*listed again in/);

    // Installed later: the next list sees its objects, and a watch follows.
    await until(() => api!.openWatches('IngressClassParams') === 1, 'the watch once served', 3_000);
    expect(recorder.names).toEqual(['shared']);
    expect(recorder.failures()).toHaveLength(2);
    expect(api!.requests.filter((r) => of('IngressClassParams')(r) && !r.watch)).toHaveLength(3);
  });

  it('no longer served while watched (its definition deleted): listed again, empty', async () => {
    const cluster = new FakeCluster();
    cluster.apply('IngressClassParams', { metadata: { name: 'shared' } });
    const { recorder, start } = await watch('IngressClassParams', cluster, source);
    start();
    await until(() => api!.openWatches('IngressClassParams') === 1, 'the watch');
    api!.failNext(of('IngressClassParams'), 404, 1_000);
    api!.dropWatches('IngressClassParams');
    await until(() => recorder.failures().length >= 1, 'the empty list');

    expect(recorder.finished.slice(0, 2)).toEqual(['IngressClassParams', 'IngressClassParams']);
    expect(recorder.failures()[0]).toMatchObject({ reason: 'absent' });
  });

  it('any other kind answering 404 is a failure: retried with backoff, never synced', async () => {
    const cluster = new FakeCluster();
    const { recorder, start } = await watch('Ingress', cluster, source);
    api!.failNext(of('Ingress'), 404, 1_000);
    start();
    await until(() => recorder.failures().length >= 2, 'two failed lists');

    expect(watcher!.synced).toBe(false);
    expect(recorder.finished).toEqual([]);
    expect(recorder.failures().map((f) => f.reason)).toEqual(recorder.failures().map(() => 'initial'));
  });
});
