import { describe, expect, it } from 'vitest';
import { type LifecycleObservation, lifecycleAction } from './lifecycle-plan.ts';

describe('lifecycleAction', () => {
  it.each<[string, LifecycleObservation, ReturnType<typeof lifecycleAction>]>([
    ['ready, running', { ready: true, instanceState: 'running', hasShutdownTaint: false }, 'none'],
    [
      'ready again after a stop',
      { ready: true, instanceState: 'running', hasShutdownTaint: true },
      'remove-shutdown-taint',
    ],
    [
      'ready with taint, EC2 still says stopped',
      { ready: true, instanceState: 'stopped', hasShutdownTaint: true },
      'remove-shutdown-taint',
    ],
    ['not ready, stopped', { ready: false, instanceState: 'stopped', hasShutdownTaint: false }, 'add-shutdown-taint'],
    ['not ready, stopped, already tainted', { ready: false, instanceState: 'stopped', hasShutdownTaint: true }, 'none'],
    ['not ready, terminated', { ready: false, instanceState: 'terminated', hasShutdownTaint: false }, 'delete-node'],
    ['not ready, not found', { ready: false, instanceState: undefined, hasShutdownTaint: true }, 'delete-node'],
    [
      'not ready, not found, but the Node is young (EC2 may not show a new instance yet)',
      { ready: false, instanceState: undefined, hasShutdownTaint: false, instanceMayAppear: true },
      'wait-for-instance',
    ],
    [
      'not ready, terminated, young: terminated is known, not a visibility gap',
      { ready: false, instanceState: 'terminated', hasShutdownTaint: false, instanceMayAppear: true },
      'delete-node',
    ],
    ['not ready, stopping', { ready: false, instanceState: 'stopping', hasShutdownTaint: false }, 'none'],
    ['not ready, shutting-down', { ready: false, instanceState: 'shutting-down', hasShutdownTaint: false }, 'none'],
    ['not ready, pending', { ready: false, instanceState: 'pending', hasShutdownTaint: false }, 'none'],
    [
      'not ready, running (kubelet trouble is not ours)',
      { ready: false, instanceState: 'running', hasShutdownTaint: false },
      'none',
    ],
    [
      'ready, terminated (wait for NotReady)',
      { ready: true, instanceState: 'terminated', hasShutdownTaint: false },
      'none',
    ],
  ])('%s', (_name, observation, want) => {
    expect(lifecycleAction(observation)).toBe(want);
  });
});
