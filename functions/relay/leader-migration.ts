import { load } from 'js-yaml';
import * as z from 'zod';
import { ConfigError } from '../../shared/config/config.ts';
import { errorMessage } from '../../shared/errors.ts';
import { DEFAULT_LEADER_NAME, type LeaderMigrationConfiguration } from './migration-gate.ts';

export * from './migration-gate.ts';

/**
 * Reading a LeaderMigrationConfiguration file (the gate that applies it: migration-gate.ts). Its own
 * module because of the YAML parser (js-yaml, the one client-node uses, here without client-node and its
 * memory): the relay process imports this one only when RELAY_LEADER_MIGRATION_CONFIG names a file.
 */

const LeaderMigrationConfigurationSchema = z.object({
  apiVersion: z.enum(
    [
      'controllermanager.config.k8s.io/v1',
      'controllermanager.config.k8s.io/v1beta1',
      'controllermanager.config.k8s.io/v1alpha1',
    ],
    { error: 'must be controllermanager.config.k8s.io/v1 (or v1beta1, v1alpha1)' },
  ),
  kind: z.literal('LeaderMigrationConfiguration', { error: 'must be LeaderMigrationConfiguration' }),
  leaderName: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Lease name (lowercase RFC 1123)')
    .default(DEFAULT_LEADER_NAME),
  // Endpoints locks were removed from Kubernetes; only Leases remain.
  resourceLock: z.literal('leases', { error: 'must be leases' }).optional(),
  controllerLeaders: z.array(z.object({ name: z.string().min(1), component: z.string().min(1) }).strict()).default([]),
});

/** Parse the file (YAML or JSON); a ConfigError names the file and the bad field. */
export function parseLeaderMigrationConfiguration(text: string, source: string): LeaderMigrationConfiguration {
  let value: unknown;
  try {
    value = load(text);
  } catch (err) {
    throw new ConfigError([`${source}: not YAML: ${errorMessage(err)}`]);
  }
  const result = LeaderMigrationConfigurationSchema.safeParse(value);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => `${source}: ${issue.path.join('.') || '(document)'}: ${issue.message}`),
  );
}
