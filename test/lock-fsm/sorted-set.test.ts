// SortedStringSet (the ordered index behind listLocks) against a plain sorted array.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SortedStringSet } from '../../src/lock-fsm/sorted-set.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { testSeed } from '../support/seed.js';

test('SortedStringSet matches a sorted array under random adds, deletes and range scans', () => {
  const seed = testSeed('SORTED_SEED', { what: 'sorted-set', replay: 'node --test dist/test/lock-fsm/sorted-set.test.js' });
  const rng = seededRng(seed);
  const set = new SortedStringSet();
  const ref = new Set<string>();
  const key = (): string => `k${rng.int(0, 5000).toString(36)}/${rng.int(0, 3)}`;
  for (let i = 0; i < 40_000; i++) {
    const k = key();
    // phases: grow, then mostly shrink (exercises chunk splits and merges)
    const add = i < 20_000 ? rng.next() < 0.75 : rng.next() < 0.2;
    if (add) {
      assert.equal(set.add(k), !ref.has(k));
      ref.add(k);
    } else {
      assert.equal(set.delete(k), ref.has(k));
      ref.delete(k);
    }
    if (i % 4000 === 0) {
      set.assertValid();
      const sorted = [...ref].sort();
      assert.deepEqual([...set.values()], sorted);
      const from = key();
      assert.deepEqual([...set.from(from)].slice(0, 50), sorted.filter((x) => x >= from).slice(0, 50));
    }
  }
  assert.equal(set.size, ref.size);
  for (const k of ref) assert.equal(set.has(k), true);
  assert.equal(set.has('nope'), false);
});
