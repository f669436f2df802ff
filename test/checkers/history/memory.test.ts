// memory.ts on small hand-written histories: it must accept a correct history and name
// the violation in a broken one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkMemory } from './memory.js';

test('memory: the bound is per node', () => {
  const rss = new Map<string, [number, number][]>([['n1', [[0, 100 * 1048576]]], ['n2', [[0, 600 * 1048576]]]]);
  const r = checkMemory(rss, 400 * 1048576);
  assert.deepEqual(r.maxMb, { n1: 100, n2: 600 });
  assert.equal(r.violations.length, 1);
});
