import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng } from '../../src/raft/core/rng.js';

test('seededRng is reproducible from its seed and stays in range', () => {
  const a = seededRng(42), b = seededRng(42), c = seededRng(43);
  const xs = Array.from({ length: 100 }, () => a.int(0, 10));
  const ys = Array.from({ length: 100 }, () => b.int(0, 10));
  const zs = Array.from({ length: 100 }, () => c.int(0, 10));
  assert.deepEqual(xs, ys);
  assert.notDeepEqual(xs, zs);
  assert.ok(xs.every((x) => x >= 0 && x < 10));
  assert.ok(new Set(xs).size === 10, 'all values of a small range appear');
});
