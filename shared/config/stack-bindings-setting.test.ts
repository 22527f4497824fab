import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

/** STACK_TARGET_GROUP_BINDINGS (settings.ts): whether the Ingress and service controllers keep stack bindings. */

const base = { CLUSTER_NAME: 'prod-eu', AWS_REGION: 'eu-west-1' };

describe('STACK_TARGET_GROUP_BINDINGS', () => {
  it('is off unless set: no binding is made where no binding controller would serve it', () => {
    expect(loadConfig(base).STACK_TARGET_GROUP_BINDINGS).toBe(false);
  });

  it.each([
    ['true', true],
    ['false', false],
  ])('reads %s', (value, expected) => {
    expect(loadConfig({ ...base, STACK_TARGET_GROUP_BINDINGS: value }).STACK_TARGET_GROUP_BINDINGS).toBe(expected);
  });

  it('refuses what is no boolean, naming it', () => {
    expect(() => loadConfig({ ...base, STACK_TARGET_GROUP_BINDINGS: 'maybe' })).toThrow(
      /STACK_TARGET_GROUP_BINDINGS \(got "maybe"\): must be true or false/,
    );
  });
});
