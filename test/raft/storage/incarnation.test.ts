// Each data directory's incarnation (docs/storage.md, "Layout"; docs/membership.md,
// "Incarnations"): made once, kept across opens; a directory written before incarnations
// existed still opens and gets one; snapshots keep the configuration's bindings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Level } from 'level';
import { LevelStorage } from '../../../src/raft/storage/level-storage.js';
import { KEY_INCARNATION, decodeSnapshot, encodeSnapshot } from '../../../src/raft/storage/storage-codec.js';
import type { Snapshot } from '../../../src/raft/core/types.js';
import { SEED_CONF, tempDir } from './helpers.js';

test('a new directory gets an incarnation, the same one at every open', async (t) => {
  const { dir, remove } = tempDir('inc');
  t.after(remove);
  const a = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  assert.match(a.incarnation, /^[0-9a-f]{32}$/);
  assert.equal(a.fresh, true);
  await a.close();
  const b = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  assert.equal(b.incarnation, a.incarnation);
  assert.equal(b.fresh, false);
  await b.close();
});

test('a directory from before incarnations (no i record) opens and gets one, kept from then on', async (t) => {
  const { dir, remove } = tempDir('inc-old');
  t.after(remove);
  const a = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  await a.save({ hardState: { term: 1, vote: 'n1', commit: 0 }, entries: [{ index: 1, term: 1, kind: 'noop', data: new Uint8Array(0) }] }, { sync: true });
  await a.close();
  const db = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  await db.del(KEY_INCARNATION);
  await db.close();
  const b = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  assert.match(b.incarnation, /^[0-9a-f]{32}$/);
  assert.notEqual(b.incarnation, a.incarnation);
  assert.equal(b.lastIndex(), 1, 'the old log is intact');
  await b.close();
  const c = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  assert.equal(c.incarnation, b.incarnation);
  await c.close();
});

test('snapshots keep incarnations and the cluster id; old 5-tuple snapshots still decode', () => {
  const bound: Snapshot = { meta: { index: 5, term: 2, conf: { voters: ['n1', 'n2'], learners: ['n3'], incarnations: { n1: 'aa', n2: 'bb' }, clusterId: 'aa.1' } }, data: new Uint8Array([1, 2]) };
  assert.deepEqual(decodeSnapshot(encodeSnapshot(bound)), bound);
  const plain: Snapshot = { meta: { index: 5, term: 2, conf: { voters: ['n1'], learners: [] } }, data: new Uint8Array([3]) };
  assert.deepEqual(decodeSnapshot(encodeSnapshot(plain)), plain);
});
