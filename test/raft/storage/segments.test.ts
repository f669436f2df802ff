// LevelStorage keeps the entries of one write as one log segment (docs/storage.md,
// "Log segments"). These tests look at the keys on disk: a conflict or a compaction that
// falls inside a segment must rewrite exactly that segment, and the reopened log must be
// the one the calls described.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Level } from 'level';
import { LevelStorage } from '../../../src/raft/storage/level-storage.js';
import { SEGMENT_MAX_ENTRIES, decodeSegment, entryKeyIndex } from '../../../src/raft/storage/storage-codec.js';
import { SEED_CONF, entry, snapshotAt, tempDir } from './helpers.js';

const cleanups: (() => void)[] = [];
after(() => cleanups.forEach((f) => f()));

const range = (lo: number, hi: number, term: number) => Array.from({ length: hi - lo + 1 }, (_, k) => entry(lo + k, term));

/** segment start → [index, term] of each of its entries, read from the closed directory */
async function segmentsOnDisk(dir: string): Promise<Map<number, [number, number][]>> {
  const db = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const out = new Map<number, [number, number][]>();
  try {
    for await (const [key, value] of db.iterator({ gte: Buffer.from('e'), lt: Buffer.from('f') })) {
      const first = entryKeyIndex(key)!;
      out.set(first, decodeSegment(first, value).map((e) => [e.index, e.term]));
    }
  } finally {
    await db.close();
  }
  return out;
}

async function withStorage(prefix: string, body: (s: LevelStorage) => Promise<void>): Promise<string> {
  const { dir, remove } = tempDir(prefix);
  cleanups.push(remove);
  const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  try {
    await body(s);
  } finally {
    await s.close();
  }
  return dir;
}

async function reopenedLog(dir: string): Promise<[number, number][]> {
  const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  try {
    return s.entries(s.firstIndex(), s.lastIndex() + 1).map((e) => [e.index, e.term]);
  } finally {
    await s.close();
  }
}

test('one segment per write; a conflict inside one rewrites it and drops the later ones', async () => {
  const dir = await withStorage('seg-conflict', async (s) => {
    await s.save({ entries: range(1, 4, 1) }, { sync: true });
    await s.save({ entries: range(5, 8, 1) }, { sync: true });
    await s.save({ entries: range(9, 10, 1) }, { sync: true });
    // a new leader's entries replace 7.. (§5.3): segment 5 keeps 5..6, segment 9 goes
    await s.save({ hardState: { term: 2, vote: 'n2', commit: 0 }, entries: range(7, 7, 2) }, { sync: true });
  });
  assert.deepEqual([...(await segmentsOnDisk(dir)).entries()], [
    [1, [[1, 1], [2, 1], [3, 1], [4, 1]]],
    [5, [[5, 1], [6, 1]]],
    [7, [[7, 2]]],
  ]);
  assert.deepEqual(await reopenedLog(dir), [...range(1, 6, 1), entry(7, 2)].map((e) => [e.index, e.term]));
});

test('a conflict at a segment boundary replaces that segment without rewriting the one before', async () => {
  const dir = await withStorage('seg-boundary', async (s) => {
    await s.save({ entries: range(1, 3, 1) }, { sync: true });
    await s.save({ entries: range(4, 6, 1) }, { sync: true });
    await s.save({ hardState: { term: 2, vote: 'n2', commit: 0 }, entries: range(4, 5, 2) }, { sync: true });
  });
  assert.deepEqual([...(await segmentsOnDisk(dir)).keys()], [1, 4]);
  assert.deepEqual(await reopenedLog(dir), [...range(1, 3, 1), ...range(4, 5, 2)].map((e) => [e.index, e.term]));
});

test('compaction inside a segment rewrites it to start after the snapshot', async () => {
  const dir = await withStorage('seg-compact', async (s) => {
    await s.save({ entries: range(1, 5, 1) }, { sync: true });
    await s.save({ hardState: { term: 1, vote: null, commit: 9 }, entries: range(6, 10, 1) }, { sync: true });
    await s.compact(snapshotAt(7, 1));
  });
  assert.deepEqual([...(await segmentsOnDisk(dir)).entries()], [[8, [[8, 1], [9, 1], [10, 1]]]]);
  assert.deepEqual(await reopenedLog(dir), range(8, 10, 1).map((e) => [e.index, e.term]));
});

test('an installed snapshot that agrees keeps the suffix, rewriting the segment it cuts', async () => {
  const dir = await withStorage('seg-install', async (s) => {
    await s.save({ hardState: { term: 1, vote: null, commit: 2 }, entries: range(1, 6, 1) }, { sync: true });
    await s.save({ snapshot: snapshotAt(4, 1), entries: range(7, 8, 1) }, { sync: true });
  });
  assert.deepEqual([...(await segmentsOnDisk(dir)).keys()], [5, 7]);
  assert.deepEqual(await reopenedLog(dir), range(5, 8, 1).map((e) => [e.index, e.term]));
});

test(`a write of more than ${SEGMENT_MAX_ENTRIES} entries is split into segments`, async () => {
  const n = SEGMENT_MAX_ENTRIES * 2 + 3;
  const dir = await withStorage('seg-split', async (s) => {
    await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: range(1, n, 1) }, { sync: true });
  });
  const segs = await segmentsOnDisk(dir);
  assert.deepEqual([...segs.keys()], [1, SEGMENT_MAX_ENTRIES + 1, 2 * SEGMENT_MAX_ENTRIES + 1]);
  assert.deepEqual([...segs.values()].map((v) => v.length), [SEGMENT_MAX_ENTRIES, SEGMENT_MAX_ENTRIES, 3]);
  assert.equal((await reopenedLog(dir)).length, n);
});
