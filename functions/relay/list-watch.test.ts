import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesRestClient } from '../../shared/k8s/rest-client.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { ClientNodeListWatch } from './client-node-source.ts';
import type { KubeObject, WatchedKind } from './kinds.ts';
import type { ListWatchSource } from './kube-source.ts';
import {
  ListWatcher,
  type ListWatchHandler,
  type ListWatchOptions,
  WatchHealth,
  type WatchHealthEvent,
} from './list-watch.ts';
import { RestListWatch } from './rest-source.ts';
import {
  FakeCluster,
  type FakeKubeApi,
  type FakeKubeApiOptions,
  kubeConfigFor,
  restConfigFor,
  startFakeKubeApi,
} from './testing/fake-kube-api.ts';
import { makeNode, makePod, setReady, until } from './testing/objects.ts';

/**
 * ListWatcher against the local HTTPS API server: paging, bookmarks, server-side timeouts, 410, silence,
 * backoff; over both sources, which must behave alike: the REST one a relay uses in a Pod, and client-node's
 * from a kubeconfig.
 */
const SOURCES: [string, (api: FakeKubeApi) => ListWatchSource][] = [
  ['the REST client', (api) => new RestListWatch(new KubernetesRestClient(restConfigFor(api)))],
  ['client-node', (api) => new ClientNodeListWatch(kubeConfigFor(api))],
];
let sourceFor: (api: FakeKubeApi) => ListWatchSource = SOURCES[0]![1];

class Recorder implements ListWatchHandler {
  readonly names: string[] = [];
  readonly events: { type: string; name: string; revision?: string }[] = [];
  readonly reports: WatchHealthEvent[] = [];
  lists = 0;
  listStarted() {
    this.lists++;
  }
  listed(_kind: WatchedKind, object: KubeObject) {
    this.names.push(object.metadata!.name!);
  }
  listFinished() {}
  event(_kind: WatchedKind, type: string, object: KubeObject) {
    this.events.push({ type, name: object.metadata!.name!, revision: object.metadata?.resourceVersion });
  }
  health(event: WatchHealthEvent) {
    this.reports.push(event);
  }
  ended(reason: string) {
    return this.healthOf(WatchHealth.WatchEnded).filter((h) => h.reason === reason);
  }
  healthOf<T extends WatchHealthEvent['type']>(type: T) {
    return this.reports.filter((h): h is Extract<WatchHealthEvent, { type: T }> => h.type === type);
  }
}

const OPTIONS: ListWatchOptions = {
  pageSize: 500,
  watchTimeoutSeconds: 60,
  inactivityMs: 5_000,
  relistIntervalMs: 0,
  backoffBaseMs: 40,
  backoffMaxMs: 100,
};

let api: FakeKubeApi | undefined;
let watcher: ListWatcher | undefined;

afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
  await api?.close();
  api = undefined;
});

async function watchNodes(
  cluster: FakeCluster,
  options: Partial<ListWatchOptions> = {},
  server: FakeKubeApiOptions = {},
  random = () => 0.5,
) {
  api = await startFakeKubeApi(cluster, server);
  const recorder = new Recorder();
  watcher = new ListWatcher('Node', sourceFor(api), recorder, { ...OPTIONS, ...options }, random);
  watcher.start();
  return recorder;
}

const watchRequests = () => api!.requests.filter((r) => r.kind === 'Node' && r.watch);
const listRequests = () => api!.requests.filter((r) => r.kind === 'Node' && !r.watch);

describe.each(SOURCES)('ListWatcher over %s', (_name, source) => {
  beforeEach(() => {
    sourceFor = source;
  });

  it('lists in pages, then watches from the list revision with bookmarks and a randomized server timeout', async () => {
    const cluster = new FakeCluster();
    for (let i = 0; i < 1_200; i++) cluster.apply('Node', makeNode(`node-${String(i).padStart(4, '0')}`));
    const recorder = await watchNodes(cluster, {}, {}, () => 0.25);
    await until(() => watchRequests().length === 1 && api!.openWatches('Node') === 1, 'the watch');

    expect(recorder.names).toHaveLength(1_200);
    expect(listRequests().map((r) => [r.query.get('limit'), Boolean(r.query.get('continue'))])).toEqual([
      ['500', false],
      ['500', true],
      ['500', true],
    ]);
    const [finished] = recorder.healthOf(WatchHealth.ListFinished);
    expect(finished).toMatchObject({
      objects: 1_200,
      pages: 3,
      resourceVersion: String(cluster.revision),
      reason: 'initial',
    });
    const watch = watchRequests()[0]!;
    expect(Object.fromEntries(watch.query)).toMatchObject({
      watch: 'true',
      resourceVersion: String(cluster.revision),
      allowWatchBookmarks: 'true',
      timeoutSeconds: '75', // 60 x (1 + 0.25)
    });
    expect(watcher!.synced).toBe(true);

    cluster.mutate<Node>('Node', 'node-0007', (n) => setReady(n, false));
    await until(() => recorder.events.length === 1, 'the event');
    expect(recorder.events[0]).toEqual({ type: 'MODIFIED', name: 'node-0007', revision: String(cluster.revision) });
  });

  it('starts a list over when its continue token expires mid-way', async () => {
    const cluster = new FakeCluster();
    for (let i = 0; i < 30; i++) cluster.apply('Node', makeNode(`node-${i}`));
    api = await startFakeKubeApi(cluster);
    api.failNext((r) => r.kind === 'Node' && Boolean(r.query.get('continue')), 410);
    const recorder = new Recorder();
    watcher = new ListWatcher('Node', sourceFor(api), recorder, {
      ...OPTIONS,
      pageSize: 10,
    });
    watcher.start();
    await until(() => watcher!.synced, 'the list');

    expect(recorder.lists).toBe(2);
    expect(listRequests().map((r) => Boolean(r.query.get('continue')))).toEqual([false, true, false, true, true]);
    expect(new Set(recorder.names).size).toBe(30);
  });

  it('reconnects from the last bookmark when the server ends the watch, without listing again', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    // timeoutSeconds 60..119 x 5 ms: the server ends each watch after 300-600 ms.
    const recorder = await watchNodes(cluster, {}, { bookmarkIntervalMs: 20, timeoutScaleMs: 5 });
    await until(() => watchRequests().length === 1, 'the first watch');
    const listed = watchRequests()[0]!.query.get('resourceVersion');
    // Other kinds change: the Node watch sees no event, only bookmarks carrying the newer revision.
    cluster.apply('Pod', makePod('default', 'p', 'node-a'));
    const podRevision = String(cluster.revision);
    await until(() => watchRequests().length >= 2, 'the server to end the watch', 3_000);

    expect(recorder.ended('closed').length).toBeGreaterThanOrEqual(1);
    expect(watchRequests()[1]!.query.get('resourceVersion')).toBe(podRevision);
    expect(podRevision).not.toBe(listed);
    expect(listRequests()).toHaveLength(1);
    expect(recorder.events).toEqual([]);
  });

  it('restarts a silent watch and gets what it missed', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    const recorder = await watchNodes(cluster, { inactivityMs: 150 });
    await until(() => api!.openWatches('Node') === 1, 'the watch');

    api!.silenceWatches();
    cluster.mutate<Node>('Node', 'node-a', (n) => setReady(n, false));
    await until(() => recorder.events.length === 1, 'the missed event after the restart', 3_000);

    expect(recorder.ended('silent')).toHaveLength(1);
    expect(recorder.events[0]).toMatchObject({ type: 'MODIFIED', name: 'node-a' });
    expect(listRequests()).toHaveLength(1);
  });

  it('backs off with jitter, doubling up to the cap, when watches keep failing', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    const recorder = await watchNodes(cluster, {}, {}, () => 0.5);
    await until(() => api!.openWatches('Node') === 1, 'the watch');
    api!.failNext((r) => r.kind === 'Node' && r.watch, 503, 3);
    api!.dropWatches();
    await until(
      () => recorder.ended('error').length === 4 && api!.openWatches('Node') === 1,
      'four failures, then a watch',
    );

    // Equal jitter with random 0.5: 3/4 of the step; steps 40, 80, 100 (cap), 100.
    expect(recorder.ended('error').map((e) => e.retryInMs)).toEqual([30, 60, 75, 75]);
    expect(listRequests()).toHaveLength(1);
  });

  it('retries a failed list after a backoff', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    api = await startFakeKubeApi(cluster);
    api.failNext((r) => r.kind === 'Node' && !r.watch, 403);
    const recorder = new Recorder();
    watcher = new ListWatcher('Node', sourceFor(api), recorder, OPTIONS, () => 0);
    watcher.start();
    await until(() => watcher!.synced, 'the list');

    expect(recorder.healthOf(WatchHealth.ListFailed)).toMatchObject([{ retryInMs: 20, reason: 'initial' }]);
    expect(recorder.names).toEqual(['node-a']);
  });

  it('treats a non-410 ERROR event as a failure and reconnects from where it was', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    const recorder = await watchNodes(cluster);
    await until(() => api!.openWatches('Node') === 1, 'the watch');
    const revision = watcher!.resourceVersion;
    api!.failNext((r) => r.kind === 'Node' && r.watch, 500);
    api!.endWatches();
    await until(() => recorder.ended('error').length === 1 && api!.openWatches('Node') === 1, 'the reconnect');

    expect(watchRequests().map((r) => r.query.get('resourceVersion'))).toEqual([revision, revision, revision]);
  });

  it('relists periodically, and reports what disappeared meanwhile', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    const recorder = await watchNodes(cluster, { relistIntervalMs: 100 });
    await until(() => recorder.healthOf(WatchHealth.ListFinished).length >= 2, 'a periodic relist', 3_000);

    expect(
      recorder
        .healthOf(WatchHealth.ListStarted)
        .map((e) => e.reason)
        .slice(0, 2),
    ).toEqual(['initial', 'periodic']);
    expect(recorder.ended('relist').length).toBeGreaterThanOrEqual(1);
  });

  it.each(['event', 'status'] as const)(
    'lists again when its watch revision was compacted away (410 Gone as %s)',
    async (expiredAs) => {
      const cluster = new FakeCluster();
      cluster.apply('Node', makeNode('node-a'));
      const recorder = await watchNodes(cluster, {}, { expiredAs });
      await until(() => api!.openWatches('Node') === 1, 'the watch');
      api!.silenceWatches();
      cluster.apply('Node', makeNode('node-b'));
      cluster.compact();
      api!.endWatches();
      await until(() => recorder.healthOf(WatchHealth.ListFinished).length === 2, 'the relist');

      expect(recorder.ended('expired')).toHaveLength(1);
      expect(recorder.names).toEqual(['node-a', 'node-a', 'node-b']);
    },
  );

  it('closes its watch when stopped', async () => {
    const cluster = new FakeCluster();
    cluster.apply('Node', makeNode('node-a'));
    await watchNodes(cluster);
    await until(() => api!.openWatches('Node') === 1, 'the watch');
    await watcher!.stop();
    await until(() => api!.openWatches('Node') === 0, 'the watch to close');
  });
});
