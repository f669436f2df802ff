// The memory settings every launcher of `raftlock serve` applies (src/cli/serve-runtime.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SERVE_MALLOC_ENV, SERVE_NODE_FLAGS, memoryTuning, serveEnv } from '../../src/cli/serve-runtime.js';

test('serveEnv adds the malloc settings, but an operator value wins', () => {
  const env = serveEnv({ PATH: '/bin', MALLOC_ARENA_MAX: '4' });
  assert.equal(env.PATH, '/bin');
  assert.equal(env.MALLOC_ARENA_MAX, '4');
  assert.equal(env.MALLOC_MMAP_THRESHOLD_, SERVE_MALLOC_ENV.MALLOC_MMAP_THRESHOLD_);
});

test('memoryTuning tells what a process runs with (flags on the command line or in NODE_OPTIONS)', () => {
  assert.deepEqual(memoryTuning({}, []), { malloc: false, semiSpace: false });
  assert.deepEqual(memoryTuning({ ...SERVE_MALLOC_ENV }, [...SERVE_NODE_FLAGS]), { malloc: true, semiSpace: true });
  assert.deepEqual(memoryTuning({ MALLOC_ARENA_MAX: '2', NODE_OPTIONS: '--max-semi-space-size=8' }), { malloc: false, semiSpace: true });
});
