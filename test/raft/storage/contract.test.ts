// One contract, two implementations of the DurableStorage seam (src/raft/seams.ts):
// MemoryDurableStorage (the in-memory twin the driver tests and both simulators use) and
// LevelStorage must agree on every read after every write, and read back the same state
// after a reopen.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng } from '../../../src/raft/core/rng.js';
import { MemoryStorage, StorageAssertionError } from '../../../src/raft/core/storage.js';
import type { DurableStorage } from '../../../src/raft/seams.js';
import { LevelStorage } from '../../../src/raft/storage/level-storage.js';
import { MemoryDurableStorage } from '../../../src/raft/storage/memory-durable-storage.js';
import { SEED_CONF, dump, entry, genOp, snapshotAt, tempDir, type ReadableStorage } from './helpers.js';
import { testSeed } from '../../support/seed.js';

type Subject = DurableStorage & ReadableStorage;

interface Fixture {
  name: string;
  /** a fresh, empty storage */
  create(): Promise<Subject>;
  /** close and open again from disk (the same object for memory) */
  reopen(s: Subject): Promise<Subject>;
}

const dirs: (() => void)[] = [];
after(() => dirs.forEach((remove) => remove()));

const fixtures: Fixture[] = [
  {
    // its reopen is a process crash, which keeps everything written (power loss is the
    // simulators' business: test/sim/network.test.ts)
    name: 'MemoryDurableStorage',
    create: () => Promise.resolve(new MemoryDurableStorage(SEED_CONF)),
    reopen: async (s) => {
      await s.close();
      (s as MemoryDurableStorage).crash(false);
      return s;
    },
  },
  {
    name: 'LevelStorage',
    create: async () => {
      const { dir, remove } = tempDir('contract');
      dirs.push(remove);
      return LevelStorage.open(dir, { seedConf: SEED_CONF });
    },
    reopen: async (s) => {
      const dir = (s as LevelStorage).dir;
      await s.close();
      // the seed must not matter once data exists
      return LevelStorage.open(dir, { seedConf: { voters: ['other'], learners: [] } });
    },
  },
];

for (const fx of fixtures) {
  describe(`storage contract: ${fx.name}`, () => {
    /** run `body` on a fresh storage, then check a reopen reads back the same state */
    async function withStorage(body: (s: Subject) => Promise<void>): Promise<void> {
      let s = await fx.create();
      try {
        await body(s);
        const before = dump(s);
        s = await fx.reopen(s);
        assert.deepEqual(dump(s), before, 'state after reopen');
      } finally {
        await s.close();
      }
    }

    test('a fresh storage is empty with the seed membership', () =>
      withStorage(async (s) => {
        assert.equal(s.firstIndex(), 1);
        assert.equal(s.lastIndex(), 0);
        assert.equal(s.term(0), 0);
        assert.equal(s.term(1), undefined);
        assert.deepEqual(s.initialState(), { hardState: { term: 0, vote: null, commit: 0 }, conf: SEED_CONF });
        assert.deepEqual(s.snapshot().meta, { index: 0, term: 0, conf: SEED_CONF });
        assert.equal(s.snapshot().data.length, 0);
        assert.deepEqual(s.entries(1, 1), []);
      }));

    test('append, then read entries, terms and bounds', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 2, vote: 'n1', commit: 0 }, entries: [entry(1, 1), entry(2, 1), entry(3, 2, 'x'.repeat(100), 'noop')] }, { sync: true });
        assert.equal(s.firstIndex(), 1);
        assert.equal(s.lastIndex(), 3);
        assert.deepEqual([0, 1, 2, 3, 4].map((i) => s.term(i)), [0, 1, 1, 2, undefined]);
        assert.deepEqual(s.entries(2, 4), [entry(2, 1), entry(3, 2, 'x'.repeat(100), 'noop')]);
        assert.deepEqual(s.entries(1, 4, 1).map((e) => e.index), [1], 'maxBytes still returns one entry');
        assert.deepEqual(s.entries(1, 4, 60).map((e) => e.index), [1, 2]);
        assert.throws(() => s.entries(0, 2), StorageAssertionError);
        assert.throws(() => s.entries(1, 5), StorageAssertionError);
        assert.deepEqual(s.initialState().hardState, { term: 2, vote: 'n1', commit: 0 });
      }));

    test('a conflicting append truncates every later entry (§5.3)', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 1, vote: null, commit: 1 }, entries: [1, 2, 3, 4, 5].map((i) => entry(i, 1)) }, { sync: true });
        await s.save({ hardState: { term: 2, vote: 'n2', commit: 1 }, entries: [entry(3, 2, 'new3'), entry(4, 2, 'new4')] }, { sync: true });
        assert.equal(s.lastIndex(), 4);
        assert.deepEqual(s.entries(1, 5), [entry(1, 1), entry(2, 1), entry(3, 2, 'new3'), entry(4, 2, 'new4')]);
        assert.equal(s.term(5), undefined);
        // an append that overwrites the tail with a longer one
        await s.save({ entries: [entry(4, 2, 'again4'), entry(5, 2), entry(6, 2)] }, { sync: false });
        assert.equal(s.lastIndex(), 6);
        assert.deepEqual(s.entries(4, 5), [entry(4, 2, 'again4')]);
      }));

    test('hard state alone, and entries without a hard state', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 5, vote: 'n3', commit: 0 }, entries: [] }, { sync: true });
        await s.save({ entries: [entry(1, 5)] }, { sync: true });
        await s.save({ hardState: { term: 5, vote: 'n3', commit: 1 }, entries: [] }, { sync: false });
        assert.deepEqual(s.initialState().hardState, { term: 5, vote: 'n3', commit: 1 });
        assert.equal(s.lastIndex(), 1);
      }));

    test('install a snapshot that agrees with the log: the suffix after it stays', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 1, vote: null, commit: 2 }, entries: [1, 2, 3, 4, 5].map((i) => entry(i, 1)) }, { sync: true });
        await s.save({ snapshot: snapshotAt(3, 1), entries: [] }, { sync: true });
        assert.equal(s.firstIndex(), 4);
        assert.equal(s.lastIndex(), 5);
        assert.equal(s.term(3), 1);
        assert.equal(s.term(2), undefined);
        assert.deepEqual(s.entries(4, 6), [entry(4, 1), entry(5, 1)]);
        assert.equal(s.initialState().hardState.commit, 3, 'installing a snapshot raises commit to it');
        assert.deepEqual(s.snapshot(), snapshotAt(3, 1));
      }));

    test('install a snapshot that disagrees: the whole log is replaced', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 1, vote: null, commit: 1 }, entries: [1, 2, 3, 4].map((i) => entry(i, 1)) }, { sync: true });
        await s.save({ hardState: { term: 3, vote: 'n1', commit: 1 }, snapshot: snapshotAt(3, 2), entries: [entry(4, 3, 'after')] }, { sync: true });
        assert.equal(s.firstIndex(), 4);
        assert.equal(s.lastIndex(), 4);
        assert.equal(s.term(3), 2);
        assert.deepEqual(s.entries(4, 5), [entry(4, 3, 'after')]);
        assert.deepEqual(s.initialState().hardState, { term: 3, vote: 'n1', commit: 3 });
        // a snapshot beyond the log empties it
        await s.save({ snapshot: snapshotAt(10, 3), entries: [] }, { sync: true });
        assert.equal(s.firstIndex(), 11);
        assert.equal(s.lastIndex(), 10);
        assert.equal(s.term(10), 3);
        // an older snapshot is ignored
        await s.save({ snapshot: snapshotAt(7, 3), entries: [] }, { sync: true });
        assert.equal(s.snapshot().meta.index, 10);
      }));

    test('compaction drops entries up to the snapshot and keeps the rest', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 2, vote: null, commit: 6 }, entries: [1, 2, 3, 4, 5, 6, 7].map((i) => entry(i, i < 4 ? 1 : 2)) }, { sync: true });
        await s.compact(snapshotAt(4, 2, 'fsm@4'));
        assert.equal(s.firstIndex(), 5);
        assert.equal(s.lastIndex(), 7);
        assert.equal(s.term(4), 2);
        assert.equal(s.term(3), undefined);
        assert.throws(() => s.entries(4, 6), StorageAssertionError);
        assert.deepEqual(s.entries(5, 8).map((e) => e.index), [5, 6, 7]);
        await s.compact(snapshotAt(3, 1)); // older: no-op
        assert.deepEqual(s.snapshot(), snapshotAt(4, 2, 'fsm@4'));
        await s.compact(snapshotAt(6, 2, 'fsm@6'));
        assert.equal(s.firstIndex(), 7);
        await assert.rejects(s.compact(snapshotAt(7, 1)), StorageAssertionError, 'term must match the log');
      }));

    test('a batch that would leave a gap or overwrite the snapshot is refused', () =>
      withStorage(async (s) => {
        await s.save({ hardState: { term: 1, vote: null, commit: 2 }, entries: [entry(1, 1), entry(2, 1), entry(3, 1)] }, { sync: true });
        await s.compact(snapshotAt(2, 1));
        await assert.rejects(s.save({ entries: [entry(5, 1)] }, { sync: true }), StorageAssertionError);
        await assert.rejects(s.save({ entries: [entry(2, 1)] }, { sync: true }), StorageAssertionError);
        await assert.rejects(s.save({ entries: [entry(3, 1), entry(5, 1)] }, { sync: true }), StorageAssertionError);
        assert.equal(s.lastIndex(), 3, 'a refused batch changes nothing');
      }));

    test('random Raft-valid writes match the MemoryStorage model (seeded)', async () => {
      const seed = testSeed('STORAGE_SEED', { what: `storage contract ${fx.name}`, replay: 'node --test dist/test/raft/storage/contract.test.js' });
      const rng = seededRng(seed);
      const model = new MemoryStorage(SEED_CONF);
      let s = await fx.create();
      try {
        for (let step = 0; step < 300; step++) {
          const op = genOp(rng, model, 0.5);
          if (op.kind === 'save') {
            model.applyBatch(op.batch);
            await s.save(op.batch, { sync: op.sync });
          } else {
            model.compact(op.snapshot);
            await s.compact(op.snapshot);
          }
          assert.deepEqual(dump(s), dump(model), `step ${step} (${op.kind}), replay with STORAGE_SEED=${seed}`);
          if (rng.next() < 0.05) {
            s = await fx.reopen(s);
            assert.deepEqual(dump(s), dump(model), `after reopen at step ${step}, replay with STORAGE_SEED=${seed}`);
          }
        }
      } finally {
        await s.close();
      }
    });
  });
}
