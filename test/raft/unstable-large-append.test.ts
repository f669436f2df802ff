// A follower catching up receives appends of up to maxEntriesPerRequest (100,000) entries;
// the unstable log must take them without passing them as call arguments
// (src/raft/core/log-unstable.ts appendAll).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Unstable } from '../../src/raft/core/log-unstable.js';
import type { Entry } from '../../src/raft/core/types.js';

function run(from: number, n: number): Entry[] {
  return Array.from({ length: n }, (_, k) => ({ index: from + k, term: 1, kind: 'normal', data: new Uint8Array(0) }));
}

test('the unstable log appends and splices in 300,000 entries at a time without a stack overflow', () => {
  const u = new Unstable(1);
  u.truncateAndAppend(run(1, 300_000));
  u.truncateAndAppend(run(300_001, 300_000)); // right after the last entry
  u.truncateAndAppend(run(200_001, 300_000)); // inside: drops the tail first
  assert.equal(u.maybeLastIndex(), 500_000);
  assert.equal(u.maybeTerm(250_000), 1);
});
