// Lock sets as one partition (linearizability.ts, test/model/history-model.ts): the names
// linked by acquire-all / release-all are searched together against the model's
// acquireAll / releaseAll, so "all together" is part of the check, not only the per-name
// projection. A set granted while another session holds one of its names, a set answered
// with some of its names, a release-all naming what it did not release, and a read that
// misses a set's grant are caught; valid interleavings pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLinearizable, partitionByName } from './linearizability.js';
import { ops, type HistoryRow } from './history-rows.js';
import { projectLockSets } from './lock-sets.js';

const SA = 'a'.repeat(32);
const SB = 'b'.repeat(32);
const SC = 'c'.repeat(32);

const open = (p: string, s: string): HistoryRow => [p, 'open', {}, 0, 'ok', { session: s }, 1];

test('lock sets: the names linked by sets are one partition; other names stay alone', () => {
  const h = ops([
    open('c1', SA),
    open('c2', SB),
    ['c1', 'acquire-all', { names: ['ja-1', 'ja-0'], session: SA, wait_ms: 0 }, 10, 'ok', { set: [{ name: 'ja-1', token: 11 }, { name: 'ja-0', token: 10 }] }, 20],
    ['c2', 'acquire-all', { names: ['ja-2', 'ja-1'], session: SB, wait_ms: 0 }, 30, 'fail', { code: 'lock_held' }, 40],
    ['c2', 'acquire', { lock: 'jl-0', session: SB, wait_ms: 0 }, 50, 'ok', { token: 12 }, 60],
  ]);
  const parts = partitionByName(h);
  assert.deepEqual(parts.map((p) => p.name), ['ja-0+ja-1+ja-2', 'jl-0']);
  assert.deepEqual(parts[0]!.names, ['ja-0', 'ja-1', 'ja-2']);
  assert.equal(checkLinearizable(h).valid, true);
});

test('lock sets: a valid interleaving of overlapping sets, refusals, releases and reads passes', () => {
  const h = ops([
    open('c1', SA),
    open('c2', SB),
    open('c3', SC),
    // SA takes {ja-0, ja-1}; SB's {ja-1, ja-2}, concurrent, is refused (ja-1 held) and later granted
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 500 }, 10, 'ok', { set: [{ name: 'ja-0', token: 10 }, { name: 'ja-1', token: 11 }] }, 30],
    ['c2', 'acquire-all', { names: ['ja-1', 'ja-2'], session: SB, wait_ms: 300 }, 20, 'fail', { code: 'lock_held' }, 400],
    ['c3r', 'read', { lock: 'ja-2' }, 100, 'ok', { held: false }, 110],
    ['c3r', 'read', { lock: 'ja-1' }, 120, 'ok', { held: true, holder: SA, holder_token: 11 }, 130],
    // SC takes ja-2 alone (a set of one) while SA holds the others
    ['c3', 'acquire-all', { names: ['ja-2'], session: SC, wait_ms: 0 }, 140, 'ok', { set: [{ name: 'ja-2', token: 14 }] }, 150],
    ['c1', 'release-all', { names: ['ja-0', 'ja-1'], session: SA }, 500, 'ok', { released: ['ja-0', 'ja-1'] }, 510],
    ['c3', 'release-all', { names: ['ja-2'], session: SC }, 520, 'ok', { released: ['ja-2'] }, 530],
    // SB again: granted both, concurrently with a read that may come before or after it
    ['c2', 'acquire-all', { names: ['ja-2', 'ja-1'], session: SB, wait_ms: 0 }, 600, 'ok', { set: [{ name: 'ja-2', token: 21 }, { name: 'ja-1', token: 20 }] }, 700],
    ['c3r', 'read', { lock: 'ja-1' }, 650, 'ok', { held: true, holder: SB, holder_token: 20 }, 660],
    // an unknown set: granted or not — a later read shows it was not
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-3'], session: SA, wait_ms: 0 }, 800, 'info', { code: 'timeout' }, 900],
    ['c3r', 'read', { lock: 'ja-3' }, 950, 'ok', { held: false }, 960],
    ['c2', 'release-all', { names: ['ja-1', 'ja-2'], session: SB }, 1000, 'ok', { released: ['ja-1', 'ja-2'] }, 1010],
    // a release-all of a name the session does not hold lists only what it released
    ['c3', 'release-all', { names: ['ja-2', 'ja-0'], session: SC }, 1100, 'ok', { released: [] }, 1110],
  ]);
  const r = checkLinearizable(h);
  assert.equal(r.valid, true, JSON.stringify(r.perLock));
  assert.deepEqual(r.perLock.map((p) => p.lock), ['ja-0+ja-1+ja-2+ja-3']);
});

test('lock sets: a set granted while another session holds one of its names is caught', () => {
  const h = ops([
    open('c1', SA),
    open('c2', SB),
    ['c1', 'acquire-all', { names: ['ja-1'], session: SA, wait_ms: 0 }, 10, 'ok', { set: [{ name: 'ja-1', token: 10 }] }, 20],
    // SB's set granted whole while SA still holds ja-1 (no release between)
    ['c2', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SB, wait_ms: 0 }, 30, 'ok', { set: [{ name: 'ja-0', token: 12 }, { name: 'ja-1', token: 13 }] }, 40],
    ['c1', 'release-all', { names: ['ja-1'], session: SA }, 100, 'ok', { released: ['ja-1'] }, 110],
  ]);
  const r = checkLinearizable(h);
  assert.equal(r.valid, false);
  assert.match(r.perLock[0]!.detail!, /could not place: c2:3 acquire-all/);
  // the same set granted after SA's release passes
  const after = ops([
    open('c1', SA),
    open('c2', SB),
    ['c1', 'acquire-all', { names: ['ja-1'], session: SA, wait_ms: 0 }, 10, 'ok', { set: [{ name: 'ja-1', token: 10 }] }, 20],
    ['c1', 'release-all', { names: ['ja-1'], session: SA }, 25, 'ok', { released: ['ja-1'] }, 28],
    ['c2', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SB, wait_ms: 0 }, 30, 'ok', { set: [{ name: 'ja-0', token: 12 }, { name: 'ja-1', token: 13 }] }, 40],
  ]);
  assert.equal(checkLinearizable(after).valid, true);
});

test('lock sets: a set held partly — one name granted, the other still another session\'s — is caught', () => {
  // SB holds ja-1; SA's set {ja-0, ja-1} is answered with ja-0 only, and reads show SA on
  // ja-0 while SB keeps ja-1: every per-name view is consistent, the set is not
  const partial = ops([
    open('c1', SA),
    open('c2', SB),
    ['c2', 'acquire', { lock: 'ja-1', session: SB, wait_ms: 0 }, 10, 'ok', { token: 10 }, 20],
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 0 }, 30, 'ok', { set: [{ name: 'ja-0', token: 12 }] }, 40],
    ['c3r', 'read', { lock: 'ja-0' }, 50, 'ok', { held: true, holder: SA, holder_token: 12 }, 60],
    ['c3r', 'read', { lock: 'ja-1' }, 70, 'ok', { held: true, holder: SB, holder_token: 10 }, 80],
  ]);
  assert.equal(checkLinearizable(partial).valid, false);
  // an unknown set that only a partial grant explains: SA seen on ja-0 but not on ja-1, free then
  const unseen = ops([
    open('c1', SA),
    open('c2', SB),
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 0 }, 30, 'info', { code: 'timeout' }, 400],
    ['c3r', 'read', { lock: 'ja-0' }, 500, 'ok', { held: true, holder: SA, holder_token: 12 }, 510],
    ['c3r', 'read', { lock: 'ja-1' }, 520, 'ok', { held: false }, 530],
    ['c1', 'keepalive', { session: SA }, 540, 'ok', {}, 550],
  ]);
  assert.equal(checkLinearizable(unseen).valid, false);
  // projected per name (test/checkers/history/lock-sets.ts), as checker 1 checked sets before, it passes: each
  // name alone has an explanation (ja-0 granted, ja-1 never)
  assert.equal(checkLinearizable(projectLockSets(unseen)).valid, true);
  // the same reads with ja-1 held by SA too: the set was granted whole
  const whole = ops([
    open('c1', SA),
    open('c2', SB),
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 0 }, 30, 'info', { code: 'timeout' }, 400],
    ['c3r', 'read', { lock: 'ja-0' }, 500, 'ok', { held: true, holder: SA, holder_token: 12 }, 510],
    ['c3r', 'read', { lock: 'ja-1' }, 520, 'ok', { held: true, holder: SA, holder_token: 13 }, 530],
  ]);
  assert.equal(checkLinearizable(whole).valid, true);
});

test('lock sets: a release-all that lists a name it did not release, or leaves out one it held, is caught', () => {
  const rows = (released: string[]): HistoryRow[] => [
    open('c1', SA),
    ['c1', 'acquire-all', { names: ['ja-0', 'ja-1'], session: SA, wait_ms: 0 }, 10, 'ok', { set: [{ name: 'ja-0', token: 10 }, { name: 'ja-1', token: 11 }] }, 20],
    ['c1', 'release-all', { names: ['ja-0', 'ja-1', 'ja-2'], session: SA }, 30, 'ok', { released }, 40],
  ];
  assert.equal(checkLinearizable(ops(rows(['ja-0', 'ja-1']))).valid, true);
  assert.equal(checkLinearizable(ops(rows(['ja-0']))).valid, false);
  assert.equal(checkLinearizable(ops(rows(['ja-0', 'ja-1', 'ja-2']))).valid, false);
});
