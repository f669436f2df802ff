// DeadlineHeap: pops in (deadline, insertion) order, with push and pushAll mixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeadlineHeap } from '../../src/lock-fsm/deadline-heap.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { testSeed } from '../support/seed.js';

test('DeadlineHeap pops by deadline, ties in insertion order', () => {
  const seed = testSeed('HEAP_SEED', { what: 'deadline-heap', replay: 'node --test dist/test/lock-fsm/deadline-heap.test.js' });
  const rng = seededRng(seed);
  const h = new DeadlineHeap<number>();
  const ref: { atMs: number; value: number }[] = [];
  let v = 0;
  for (let round = 0; round < 50; round++) {
    const bulk = Array.from({ length: rng.int(0, 200) }, () => ({ atMs: rng.int(0, 100), value: v++ }));
    h.pushAll(bulk);
    ref.push(...bulk);
    for (let i = rng.int(0, 50); i > 0; i--) {
      const it = { atMs: rng.int(0, 100), value: v++ };
      h.push(it.atMs, it.value);
      ref.push(it);
    }
    ref.sort((a, b) => a.atMs - b.atMs || a.value - b.value);
    for (let i = rng.int(0, 150); i > 0 && ref.length > 0; i--) {
      const want = ref.shift()!;
      assert.equal(h.peekAt(), want.atMs);
      const got = h.pop()!;
      assert.deepEqual([got.atMs, got.value], [want.atMs, want.value]);
    }
    assert.equal(h.size, ref.length);
  }
});
