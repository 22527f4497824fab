import { describe, expect, it } from 'vitest';
import { loadConfig } from '../shared/config/config.ts';
import { functionSetting, loadStageConfig, STAGE_SETTINGS, StageConfigError } from './config.ts';
import { interruptionEnvironment } from './config-interruption.ts';

const base = {
  CCM_CLUSTER_NAME: 'prod-eu',
  CCM_REGION: 'eu-west-1',
  CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
};

function problems(env: Record<string, string>): string[] {
  try {
    loadStageConfig(env);
  } catch (err) {
    if (err instanceof StageConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('the interruption controller stage settings', () => {
  it('leave the controller out unless CCM_INTERRUPTION is on', () => {
    expect(loadStageConfig(base).interruption).toBeUndefined();
    expect(loadStageConfig({ ...base, CCM_INTERRUPTION: 'false' }).interruption).toBeUndefined();
  });

  it('deploy it with the runtime defaults when on', () => {
    const config = loadStageConfig({ ...base, CCM_INTERRUPTION: 'true' });
    expect(config.interruption).toEqual({
      actions: {},
      outOfServiceTaint: false,
      excludeFromLoadBalancers: true,
      drainRequeueSeconds: 5,
    });
    expect(config.functions.interruption).toEqual({
      memoryMb: 512,
      timeoutSeconds: 60,
      maxConcurrency: 10,
      maxReceiveCount: 1000,
    });
  });

  it('pass their CCM_ forms on, in an environment the function reads back as configured', () => {
    const config = loadStageConfig({
      ...base,
      CCM_INTERRUPTION: 'true',
      CCM_INTERRUPTION_ACTIONS: 'rebalance-recommendation=drain,instance-stopping=taint-only',
      CCM_INTERRUPTION_OUT_OF_SERVICE_TAINT: 'true',
      CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'false',
      CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS: '15',
      [functionSetting('interruption', 'timeoutSeconds')]: '90',
    });
    expect(config.functions.interruption.timeoutSeconds).toBe(90);
    const environment = interruptionEnvironment(config.interruption!);
    expect(environment).toEqual({
      INTERRUPTION_ACTIONS: 'rebalance-recommendation=drain,instance-stopping=taint-only',
      INTERRUPTION_OUT_OF_SERVICE_TAINT: 'true',
      INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'false',
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: '15',
    });
    expect(loadConfig({ CLUSTER_NAME: 'prod-eu', AWS_REGION: 'eu-west-1', ...environment })).toMatchObject({
      INTERRUPTION_ACTIONS: { 'rebalance-recommendation': 'drain', 'instance-stopping': 'taint-only' },
      INTERRUPTION_OUT_OF_SERVICE_TAINT: true,
      INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: false,
      INTERRUPTION_DRAIN_REQUEUE_SECONDS: 15,
    });
  });

  it('leave INTERRUPTION_ACTIONS unset when no kind is overridden, so the defaults apply', () => {
    const config = loadStageConfig({ ...base, CCM_INTERRUPTION: 'true' });
    expect(interruptionEnvironment(config.interruption!)).not.toHaveProperty('INTERRUPTION_ACTIONS');
  });

  it.each([
    [{ CCM_INTERRUPTION: 'yes please' }, 'CCM_INTERRUPTION (got "yes please"): must be true or false'],
    [
      { CCM_INTERRUPTION: 'true', CCM_INTERRUPTION_ACTIONS: 'spot-interruption=ignore' },
      'CCM_INTERRUPTION_ACTIONS (got "spot-interruption=ignore"): "ignore" for spot-interruption must be drain or taint-only',
    ],
    [
      { CCM_INTERRUPTION: 'true', CCM_INTERRUPTION_ACTIONS: 'reboot=drain' },
      'CCM_INTERRUPTION_ACTIONS (got "reboot=drain"): "reboot" is no interruption kind',
    ],
    [
      { CCM_INTERRUPTION: 'true', CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS: 'maybe' },
      'CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS (got "maybe"): must be true or false',
    ],
    [
      { CCM_INTERRUPTION: 'true', CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS: '0' },
      'CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS (got "0"): must be at least 1 second',
    ],
  ])('refuse %j, naming the setting', (env, message) => {
    expect(problems({ ...base, ...env }).join('\n')).toContain(message);
  });

  it.each([
    'CCM_INTERRUPTION_ACTIONS',
    'CCM_INTERRUPTION_OUT_OF_SERVICE_TAINT',
    'CCM_INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS',
    'CCM_INTERRUPTION_DRAIN_REQUEUE_SECONDS',
  ])('refuse %s without CCM_INTERRUPTION, which would deploy nothing to use it', (setting) => {
    const value = setting.endsWith('ACTIONS')
      ? 'spot-interruption=drain'
      : /TAINT|BALANCERS/.test(setting)
        ? 'true'
        : '5';
    expect(problems({ ...base, [setting]: value })).toEqual([
      `${setting} (got "${value}"): has no effect without CCM_INTERRUPTION=true, which deploys the interruption controller`,
    ]);
  });

  it('are all known settings, with the function settings of the controller', () => {
    for (const setting of ['CCM_INTERRUPTION', 'CCM_INTERRUPTION_ACTIONS', 'CCM_INTERRUPTION_MAX_RECEIVE_COUNT']) {
      expect(STAGE_SETTINGS).toContain(setting);
    }
  });
});
