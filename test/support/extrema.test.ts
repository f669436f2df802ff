import { test } from 'node:test';
import assert from 'node:assert/strict';
import { maxOf, minOf } from './extrema.js';

test('maxOf and minOf take a list longer than any call stack, and fall back on empty', () => {
  const xs = Array.from({ length: 1_000_000 }, (_, i) => (i * 7919) % 1_000_003);
  assert.throws(() => Math.max(...xs), RangeError); // what the checkers did before
  assert.equal(maxOf(xs), xs.reduce((a, b) => (a > b ? a : b)));
  assert.equal(minOf(xs), 0);
  assert.equal(maxOf([], -1), -1);
  assert.equal(minOf([], 5), 5);
  assert.equal(maxOf([3, 9, 4], 1), 9);
  assert.equal(minOf([3, 9, 4], 1), 1);
});
