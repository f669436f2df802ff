// watchLauncher (src/cli/launcher-watch.ts): a node started by `raftlock cluster` notices
// that its launcher is gone by its parent pid changing. The end-to-end case (the launcher
// SIGKILLed, its nodes stop and free their ports) is in test/cluster/cli.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LAUNCHER_CHECK_MS, LAUNCHER_PID_ENV, watchLauncher } from '../../src/cli/launcher-watch.js';
import { eventually } from '../support/cluster-harness.js';

describe('watchLauncher', () => {
  it('does nothing for a node no launcher started, or a malformed pid', () => {
    for (const env of [{}, { [LAUNCHER_PID_ENV]: '' }, { [LAUNCHER_PID_ENV]: '0' }, { [LAUNCHER_PID_ENV]: '12x' }, { [LAUNCHER_PID_ENV]: '-4' }]) {
      assert.equal(watchLauncher(() => assert.fail('called'), env, () => 1), null, JSON.stringify(env));
    }
  });

  it('calls back once when the parent is no longer the launcher, never while it is', async () => {
    let parent = 4242;
    const gone: number[] = [];
    const timer = watchLauncher((pid) => gone.push(pid), { [LAUNCHER_PID_ENV]: '4242' }, () => parent);
    assert.ok(timer !== null);
    try {
      // three checks with the launcher alive
      await new Promise((r) => setTimeout(r, 3 * LAUNCHER_CHECK_MS + 50));
      assert.deepEqual(gone, []);
      parent = 1; // re-parented to init: the launcher died
      await eventually(async () => gone.length > 0, 5000, 'the callback');
      await new Promise((r) => setTimeout(r, 2 * LAUNCHER_CHECK_MS + 50));
      assert.deepEqual(gone, [4242], 'called once, with the launcher pid');
    } finally {
      clearInterval(timer);
    }
  });
});
