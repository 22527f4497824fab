import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.ts';
import { ConfigError } from '../../shared/config/config.ts';
import { silentLog } from '../../shared/observability/log.ts';
import type { Reconciler } from './controllers/index.ts';
import {
  type LeaderMigrationConfiguration,
  MigrationGate,
  migrationRole,
  parseLeaderMigrationConfiguration,
} from './leader-migration.ts';
import { microTime } from './lease.ts';
import { RelayMetrics } from './metrics.ts';
import { FakeLeaseStore } from './testing/fake-leases.ts';

const FILE = `
kind: LeaderMigrationConfiguration
apiVersion: controllermanager.config.k8s.io/v1
leaderName: cloud-provider-extraction-migration
controllerLeaders:
  - name: route
    component: cloud-controller-manager
  - name: service
    component: '*'
  - name: cloud-node-lifecycle
    component: kube-controller-manager
`;

describe('parseLeaderMigrationConfiguration', () => {
  it('reads the file the controller managers read', () => {
    expect(parseLeaderMigrationConfiguration(FILE, '/etc/relay/migration.yaml')).toEqual({
      kind: 'LeaderMigrationConfiguration',
      apiVersion: 'controllermanager.config.k8s.io/v1',
      leaderName: 'cloud-provider-extraction-migration',
      controllerLeaders: [
        { name: 'route', component: 'cloud-controller-manager' },
        { name: 'service', component: '*' },
        { name: 'cloud-node-lifecycle', component: 'kube-controller-manager' },
      ],
    });
  });

  it('defaults the leader name', () => {
    const config = parseLeaderMigrationConfiguration(
      'kind: LeaderMigrationConfiguration\napiVersion: controllermanager.config.k8s.io/v1\n',
      'f',
    );
    expect(config.leaderName).toBe('cloud-provider-extraction-migration');
    expect(config.controllerLeaders).toEqual([]);
  });

  it.each([
    ['kind: Other\napiVersion: controllermanager.config.k8s.io/v1', 'f: kind: must be LeaderMigrationConfiguration'],
    ['kind: LeaderMigrationConfiguration\napiVersion: v1', 'f: apiVersion: must be controllermanager.config.k8s.io/v1'],
    [
      'kind: LeaderMigrationConfiguration\napiVersion: controllermanager.config.k8s.io/v1\nresourceLock: endpoints',
      'f: resourceLock: must be leases',
    ],
    [
      'kind: LeaderMigrationConfiguration\napiVersion: controllermanager.config.k8s.io/v1\ncontrollerLeaders: [{name: route}]',
      'f: controllerLeaders.0.component',
    ],
    ['{ not: yaml', 'f: not YAML'],
  ])('names the file and field of a mistake (%#)', (text, message) => {
    expect(() => parseLeaderMigrationConfiguration(text, 'f')).toThrow(ConfigError);
    expect(() => parseLeaderMigrationConfiguration(text, 'f')).toThrow(message);
  });
});

describe('migrationRole', () => {
  const config = parseLeaderMigrationConfiguration(FILE, 'f');
  it.each<[Reconciler, string, string]>([
    ['route', 'cloud-controller-manager', 'ours'],
    ['service', 'cloud-controller-manager', 'ours'],
    ['node-lifecycle', 'cloud-controller-manager', 'theirs'],
    ['node-lifecycle', 'kube-controller-manager', 'ours'],
    ['node', 'cloud-controller-manager', 'unlisted'],
    ['ipam', 'cloud-controller-manager', 'unlisted'],
  ])('%s as %s: %s', (reconciler, component, role) => {
    expect(migrationRole(config, reconciler, component).role).toBe(role);
  });
});

describe('MigrationGate', () => {
  function gate(config: LeaderMigrationConfiguration = parseLeaderMigrationConfiguration(FILE, 'f')) {
    const clock = new FakeClock();
    const store = new FakeLeaseStore();
    const opened: Reconciler[] = [];
    const link = store.connect();
    const g = new MigrationGate(
      {
        config,
        component: 'cloud-controller-manager',
        reconcilers: ['node', 'route', 'service', 'node-lifecycle'],
        pollMs: 1_000,
      },
      { leases: link.port, clock, log: silentLog, metrics: new RelayMetrics(), onOpened: (r) => opened.push(r) },
    );
    const hold = (holder: string) =>
      store.put({
        metadata: { name: 'cloud-provider-extraction-migration', namespace: 'kube-system' },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: microTime(clock.now()) },
      });
    return { g, clock, store, link, opened, hold };
  }

  it('holds migrating controllers until the lock has been read', () => {
    const { g } = gate();
    expect(['node', 'route', 'service', 'node-lifecycle'].map((r) => g.allows(r as Reconciler))).toEqual([
      true,
      false,
      false,
      false,
    ]);
  });

  it('opens when nobody holds the lock, closes while another component renews it, reopens once it expires', async () => {
    const { g, clock, opened, hold } = gate();
    await g.poll();
    expect(g.allows('route')).toBe(true);
    expect(opened).toEqual(['route', 'service']);

    hold('kube-controller-manager-master-1_0a1b');
    await g.poll();
    expect(g.allows('route')).toBe(false);
    expect(g.allows('node')).toBe(true);

    // Renewed (a new resourceVersion) within its duration: still held.
    clock.advance(10_000);
    hold('kube-controller-manager-master-1_0a1b');
    await g.poll();
    clock.advance(10_000);
    await g.poll();
    expect(g.allows('service')).toBe(false);

    // Not renewed for longer than its duration, as measured here: free.
    clock.advance(6_000);
    await g.poll();
    expect(g.allows('service')).toBe(true);
    expect(opened).toEqual(['route', 'service', 'route', 'service']);
    expect(g.allows('node-lifecycle')).toBe(false);
  });

  it('keeps its last answer through a failed read or two, then stops trusting it', async () => {
    const { g, link } = gate();
    await g.poll();
    link.cut();
    await g.poll();
    await g.poll();
    expect(g.allows('route')).toBe(true);
    await g.poll();
    expect(g.allows('route')).toBe(false);
  });

  it('does not poll when no configured reconciler migrates', () => {
    const { g } = gate(
      parseLeaderMigrationConfiguration(`${FILE.split('controllerLeaders')[0]}controllerLeaders: []`, 'f'),
    );
    expect(g.needed).toBe(false);
    expect(g.allows('route')).toBe(true);
  });
});
