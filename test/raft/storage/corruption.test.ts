// Damaged, foreign or busy data directories: open must refuse with ONE clear line that
// names what is wrong (and the index, for the log), never load a doubtful log. Also: the
// directory mode, fail-stop on a failing disk, and the bounded directory size.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Level } from 'level';
import { StorageAssertionError } from '../../../src/raft/core/storage.js';
import { LevelStorage, StorageCorruptionError, StorageFailure, StorageLockedError, StorageVersionError } from '../../../src/raft/storage/level-storage.js';
import { KEY_HARD_STATE, KEY_SNAPSHOT, KEY_VERSION, encodeSegment, encodeVersion, entryKey } from '../../../src/raft/storage/storage-codec.js';
import { manifestLogNumber } from '../../../src/raft/storage/leveldb-log-check.js';
import { SEED_CONF, entry, snapshotAt, tempDir } from './helpers.js';

const cleanups: (() => void)[] = [];
after(() => cleanups.forEach((f) => f()));

function newDir(prefix: string): string {
  const { dir, remove } = tempDir(prefix);
  cleanups.push(remove);
  return dir;
}

const term = (i: number): number => (i <= 5 ? 2 : 3);
const entries = (...indexes: number[]) => indexes.map((i) => entry(i, term(i)));

/** a closed directory holding a snapshot at 2 and entries 3..10 (terms 2,2,2,3,3,3,3,3),
 *  commit 8, stored as the segments [3 4] [5] [6] [7 8 9 10]: written as [1 2 3 4] [5] [6]
 *  [7 8 9 10], then compaction rewrote the first to start after the snapshot */
async function populated(prefix: string): Promise<string> {
  const dir = newDir(prefix);
  const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  for (const write of [[1, 2, 3, 4], [5], [6], [7, 8, 9, 10]]) await s.save({ entries: entries(...write) }, { sync: true });
  await s.save({ hardState: { term: 3, vote: 'n1', commit: 8 }, entries: [] }, { sync: true });
  await s.compact(snapshotAt(2, 2));
  await s.close();
  return dir;
}

/** byte offset of entry `k` (0-based) in a segment of entries whose data is `e<index>` */
function recordOffset(first: number, k: number): number {
  let at = 4;
  for (let i = first; i < first + k; i++) at += 25 + `e${i}`.length;
  return at;
}

/** edit the raw LevelDB behind LevelStorage's back */
async function tamper(dir: string, edit: (db: Level<Buffer, Buffer>) => Promise<void>): Promise<void> {
  const db = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  try {
    await edit(db);
  } finally {
    await db.close();
  }
}

async function flipByte(db: Level<Buffer, Buffer>, key: Buffer, offset: number): Promise<void> {
  const v = await db.get(key);
  assert.ok(v, `key ${key.toString('hex')} exists`);
  const copy = Buffer.from(v);
  const at = offset < 0 ? copy.length + offset : offset;
  copy[at] = copy[at]! ^ 0x40;
  await db.put(key, copy);
}

/** open must reject with `cls` and a one-line message matching `pattern` */
async function assertRefused(dir: string, cls: new (...args: never[]) => Error, pattern: RegExp, index?: number): Promise<void> {
  await assert.rejects(LevelStorage.open(dir, { seedConf: SEED_CONF }), (err: Error) => {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err.constructor.name}: ${err.message}`);
    assert.match(err.message, pattern);
    assert.doesNotMatch(err.message, /[\r\n]/, 'one line');
    if (index !== undefined) assert.equal((err as StorageCorruptionError).index, index);
    return true;
  });
}

const WIPE = /\(remove this node from the cluster \(raftlock member remove\), wipe its data directory, then start it with raftlock serve --join: it receives a snapshot from the leader \(docs\/recovery\.md "A damaged data directory"\)\)$/;

describe('open refuses a damaged log', () => {
  test('a flipped byte in an entry: the last of its write, and one in the middle', async () => {
    const dir = await populated('flip-entry');
    await tamper(dir, (db) => flipByte(db, entryKey(7), -1));
    await assertRefused(dir, StorageCorruptionError, new RegExp(`^corrupt log in ${dir}: entry 10 checksum mismatch ${WIPE.source}`), 10);
    const dir2 = await populated('flip-mid');
    // the first data byte of entry 8, the second record of the segment starting at 7
    await tamper(dir2, (db) => flipByte(db, entryKey(7), recordOffset(7, 1) + 25));
    await assertRefused(dir2, StorageCorruptionError, /: entry 8 checksum mismatch \(/, 8);
    const dir3 = await populated('flip-term');
    // the low byte of entry 9's term
    await tamper(dir3, (db) => flipByte(db, entryKey(7), recordOffset(7, 2) + 19));
    await assertRefused(dir3, StorageCorruptionError, /: entry 9 checksum mismatch \(/, 9);
  });

  test('a flipped byte in the checksum itself', async () => {
    const dir = await populated('flip-crc');
    await tamper(dir, (db) => flipByte(db, entryKey(3), recordOffset(3, 0)));
    await assertRefused(dir, StorageCorruptionError, /: entry 3 checksum mismatch \(/, 3);
  });

  test('a flipped byte in the entry count of a write', async () => {
    const dir = await populated('flip-count');
    await tamper(dir, (db) => flipByte(db, entryKey(7), 3));
    // 4 entries stored, the count now says 0x44 = 68: the fifth record is not there
    await assertRefused(dir, StorageCorruptionError, /: entry 11 is cut short \(its write holds 4 of 68 entries, \d+ bytes\) \(/, 11);
  });

  test('a flipped byte in the hard state', async () => {
    const dir = await populated('flip-hs');
    await tamper(dir, (db) => flipByte(db, KEY_HARD_STATE, 6));
    await assertRefused(dir, StorageCorruptionError, new RegExp(`^corrupt log in ${dir}: hard state checksum mismatch ${WIPE.source}`));
  });

  test('a flipped byte in the snapshot', async () => {
    const dir = await populated('flip-snap');
    await tamper(dir, (db) => flipByte(db, KEY_SNAPSHOT, -2));
    await assertRefused(dir, StorageCorruptionError, /: snapshot checksum mismatch \(/);
  });

  test('a truncated record', async () => {
    const dir = await populated('short');
    await tamper(dir, (db) => db.put(entryKey(5), Buffer.from([1, 2])));
    await assertRefused(dir, StorageCorruptionError, /: entry 5 record of 2 bytes is too short \(/, 5);
    const dir2 = await populated('cut');
    await tamper(dir2, async (db) => db.put(entryKey(7), (await db.get(entryKey(7)))!.subarray(0, -1)));
    await assertRefused(dir2, StorageCorruptionError, /: entry 10 is cut short \(3 data bytes announced, 2 present\) \(/, 10);
    const dir3 = await populated('trail');
    await tamper(dir3, async (db) => db.put(entryKey(5), Buffer.concat([(await db.get(entryKey(5)))!, Buffer.from([0, 0, 0])])));
    await assertRefused(dir3, StorageCorruptionError, /: entry 5's write has 3 bytes of garbage after its 1 entries \(/, 5);
  });

  test('a lost log tail that commit still points into', async () => {
    const dir = await populated('tail');
    await tamper(dir, (db) => db.del(entryKey(7)));
    await assertRefused(dir, StorageCorruptionError, /: hard state commit index 8 is beyond the last log entry 6 \(the log tail is lost\) \(remove this node/, 8);
  });

  test('a gap in the log', async () => {
    const dir = await populated('gap');
    await tamper(dir, (db) => db.del(entryKey(6)));
    await assertRefused(dir, StorageCorruptionError, /: entry 6 is missing \(log jumps from entry 5 to entry 7\) \(remove this node/, 6);
  });

  test('the first entries after the snapshot missing', async () => {
    const dir = await populated('head');
    await tamper(dir, (db) => db.del(entryKey(3)));
    await assertRefused(dir, StorageCorruptionError, /: entry 3 is missing \(log jumps from snapshot \(index 2\) to entry 5\)/, 3);
  });

  test('an entry left at or below the snapshot', async () => {
    const dir = await populated('below');
    await tamper(dir, (db) => db.put(entryKey(2), encodeSegment(entries(2))));
    await assertRefused(dir, StorageCorruptionError, /: entry 2 is at or below the snapshot index 2/, 2);
  });

  test('a term that goes backwards (valid checksum): across writes and inside one', async () => {
    const dir = await populated('term');
    await tamper(dir, (db) => db.put(entryKey(6), encodeSegment([entry(6, 1)])));
    await assertRefused(dir, StorageCorruptionError, /: entry 6 has term 1, lower than entry 5's term 2/, 6);
    const dir2 = await populated('term-in');
    await tamper(dir2, (db) => db.put(entryKey(7), encodeSegment([entry(7, 3), entry(8, 1), entry(9, 3), entry(10, 3)])));
    await assertRefused(dir2, StorageCorruptionError, /: entry 8 has term 1, lower than entry 7's term 3/, 8);
  });

  test('an entry stored under another index', async () => {
    const dir = await populated('wrongkey');
    await tamper(dir, (db) => db.put(entryKey(6), encodeSegment(entries(7))));
    await assertRefused(dir, StorageCorruptionError, /: entry 6 is stored under the wrong key \(it says index 7\)/, 6);
  });

  test('missing hard state or version record', async () => {
    const dir = await populated('nohs');
    await tamper(dir, (db) => db.del(KEY_HARD_STATE));
    await assertRefused(dir, StorageCorruptionError, /: hard state record is missing/);
    const dir2 = await populated('nov');
    await tamper(dir2, (db) => db.del(KEY_VERSION));
    await assertRefused(dir2, StorageCorruptionError, /: storage format version record is missing but other data is present/);
  });

  test('an unknown storage format version', async () => {
    const dir = await populated('version');
    await tamper(dir, (db) => db.put(KEY_VERSION, encodeVersion(99)));
    await assertRefused(dir, StorageVersionError, new RegExp(`^unsupported storage format version 99 in ${dir}: this raftlock reads version 2 only`));
  });

  test("damaged LevelDB files: a table block, or a write-ahead-log record (LevelDB would skip it and the rest of its block)", async () => {
    for (const kind of ['ldb', 'log'] as const) {
      const dir = newDir(`level-${kind}`);
      const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
      const data = new Uint8Array(200).fill(9);
      for (let i = 1; i <= 10_000; i += 100) {
        await s.save({ hardState: { term: 1, vote: null, commit: i + 99 }, entries: Array.from({ length: 100 }, (_, k) => entry(i + k, 1, data)) }, { sync: false });
      }
      await s.close();
      // reopening turns LevelDB's write-ahead log into a table file
      if (kind === 'ldb') await (await LevelStorage.open(dir, { seedConf: SEED_CONF })).close();
      const file = readdirSync(dir).filter((f) => f.endsWith(`.${kind}`)).map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
      const b = readFileSync(file);
      for (let k = 0; k < 50; k++) b[(b.length >> 1) + k]! ^= 0xff;
      writeFileSync(file, b);
      // LevelDB does not verify its log with paranoid checks (classic-level cannot turn
      // them on): raftlock reads the log with LevelDB's checksums before LevelDB does
      await assertRefused(dir, StorageCorruptionError, kind === 'ldb' ? /: LevelDB reports Corruption: / : /: LevelDB's write-ahead log \d+\.log at byte \d+ \(checksum mismatch\): LevelDB would skip the rest of that 32 KiB block/);
    }
  });

  test("a damaged first log record is refused, not taken for a fresh directory (LevelDB would recover an empty database and delete the log)", async () => {
    const dir = newDir('first-record');
    const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
    await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: entries(1, 2, 3) }, { sync: true });
    await s.close();
    const log = readdirSync(dir).find((f) => f.endsWith('.log'))!;
    const b = readFileSync(join(dir, log));
    b[20] = b[20]! ^ 1; // inside the first record: the directory's initial write
    writeFileSync(join(dir, log), b);
    await assertRefused(dir, StorageCorruptionError, new RegExp(`LevelDB's write-ahead log ${log} at byte 0 \\(checksum mismatch\\)`));
    assert.ok(readdirSync(dir).includes(log), 'the damaged log is left in place');
    // a record cut short at the end is a write that never finished, as LevelDB has it: it opens
    const torn = newDir('torn-tail');
    const t = await LevelStorage.open(torn, { seedConf: SEED_CONF });
    for (const i of [1, 2, 3]) await t.save({ hardState: { term: 2, vote: null, commit: 0 }, entries: entries(i) }, { sync: true });
    await t.close();
    const tlog = readdirSync(torn).find((f) => f.endsWith('.log'))!;
    const tb = readFileSync(join(torn, tlog));
    writeFileSync(join(torn, tlog), tb.subarray(0, tb.length - 5));
    const reopened = await LevelStorage.open(torn, { seedConf: SEED_CONF });
    assert.equal(reopened.lastIndex(), 2, 'the cut write is gone, nothing else');
    await reopened.close();
  });

  test("a missing CURRENT is refused before LevelDB sees the directory, and its files stay (LevelDB would start an empty database and delete them)", async () => {
    const dir = await populated('no-current');
    // reopen once more so the log moves into a table file, as a node restarted a few times has
    await (await LevelStorage.open(dir, { seedConf: SEED_CONF })).close();
    const before = readdirSync(dir).filter((f) => f !== 'CURRENT' && f !== 'LOCK' && !f.startsWith('LOG')).sort();
    assert.ok(before.some((f) => f.endsWith('.ldb')), `a table file to lose: ${before.join(' ')}`);
    rmSync(join(dir, 'CURRENT'));
    await assertRefused(dir, StorageCorruptionError, /LevelDB's CURRENT file is missing, but its files are there \(\d+\.ldb/);
    assert.deepEqual(readdirSync(dir).filter((f) => f !== 'LOCK' && !f.startsWith('LOG')).sort(), before, 'the refusal left every file in place');
    // CURRENT back: the directory opens whole
    writeFileSync(join(dir, 'CURRENT'), `${before.find((f) => f.startsWith('MANIFEST-'))}\n`);
    const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
    assert.equal(s.lastIndex(), 10);
    await s.close();
  });

  test('a missing LevelDB file (the MANIFEST): the message names it and the replacement procedure, not "check the disk, then restart"', async () => {
    const dir = await populated('manifest');
    const manifest = readdirSync(dir).find((f) => f.startsWith('MANIFEST-'))!;
    rmSync(join(dir, manifest));
    await assertRefused(dir, StorageCorruptionError, new RegExp(`^corrupt log in ${dir}: LevelDB's file ${manifest} is missing, so the data directory is incomplete and restarting cannot help \\(remove this node from the cluster`));
    await assertRefused(dir, StorageCorruptionError, WIPE);
  });

  test("the current write-ahead log deleted is refused, naming it: a young node's only log (LevelDB would open an empty database, taken for a fresh one), and an older node's newest", async () => {
    const young = newDir('young-log');
    const s = await LevelStorage.open(young, { seedConf: SEED_CONF });
    await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: entries(1, 2, 3) }, { sync: true });
    await s.close();
    const logs = readdirSync(young).filter((f) => f.endsWith('.log'));
    assert.equal(logs.length, 1, `one log: ${logs.join(' ')}`);
    assert.ok(!readdirSync(young).some((f) => f.endsWith('.ldb')), 'everything is in the log');
    rmSync(join(young, logs[0]!));
    await assertRefused(young, StorageCorruptionError, new RegExp(`^corrupt log in ${young}: LevelDB's write-ahead log ${logs[0]} is missing \\(the MANIFEST names it as the current log\\)`));
    await assertRefused(young, StorageCorruptionError, WIPE);
    // an older node: tables hold the start of the log, the current log the newest writes
    const old = await populated('newest-log');
    const r = await LevelStorage.open(old, { seedConf: SEED_CONF });
    await r.save({ entries: entries(11) }, { sync: true });
    await r.close();
    assert.ok(readdirSync(old).some((f) => f.endsWith('.ldb')), 'a table file holds older writes');
    const current = readdirSync(old).filter((f) => f.endsWith('.log')).sort().at(-1)!;
    rmSync(join(old, current));
    await assertRefused(old, StorageCorruptionError, new RegExp(`LevelDB's write-ahead log ${current} is missing`));
  });

  test('manifestLogNumber reads the current log from a MANIFEST, null from bytes that hold none', async () => {
    const dir = await populated('manifest-read');
    const manifest = readFileSync(join(dir, readFileSync(join(dir, 'CURRENT'), 'latin1').trim()));
    const n = manifestLogNumber(manifest);
    assert.ok(n !== null && readdirSync(dir).includes(`${String(n).padStart(6, '0')}.log`), `log ${n} exists`);
    assert.equal(manifestLogNumber(Buffer.alloc(0)), null);
    assert.equal(manifestLogNumber(Buffer.from('not a manifest at all, just text')), null);
  });

  test('the undamaged directory still opens (control)', async () => {
    const dir = await populated('control');
    const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
    assert.equal(s.firstIndex(), 3);
    assert.equal(s.lastIndex(), 10);
    await s.close();
  });
});

describe('the data directory', () => {
  test('is created with mode 0700, parents included', async () => {
    const dir = join(newDir('mode'), 'a', 'b', 'n1');
    const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
    await s.close();
    assert.equal(statSync(dir).mode & 0o777, 0o700);
  });

  test('is locked against a second opener in this process', async () => {
    const dir = newDir('lock-self');
    const s = await LevelStorage.open(dir, { seedConf: SEED_CONF });
    try {
      await assertRefused(dir, StorageLockedError, new RegExp(`^data directory ${dir} is in use by another raftlock process \\(LevelDB lock\\)`));
    } finally {
      await s.close();
    }
  });

  test('is locked against a second process', async () => {
    const dir = newDir('lock-proc');
    // another process holds the LevelDB lock until we close its stdin
    const holder = spawn(process.execPath, ['--input-type=module', '-e', `
      import { Level } from 'level';
      const db = new Level(${JSON.stringify(dir)}); await db.open();
      process.stdout.write('locked\\n');
      process.stdin.on('end', () => db.close().then(() => process.exit(0))); process.stdin.resume();
    `], { stdio: ['pipe', 'pipe', 'inherit'], cwd: process.cwd() });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
        holder.once('exit', (code) => reject(new Error(`lock holder exited early (${code})`)));
      });
      await assertRefused(dir, StorageLockedError, /is in use by another raftlock process \(LevelDB lock\)/);
    } finally {
      holder.kill('SIGKILL');
    }
  });
});

describe('a failing disk stops the node (fail-stop)', () => {
  test('a write after the database went away rejects with StorageFailure, and so does every later one', async () => {
    const s = await LevelStorage.open(newDir('fail'), { seedConf: SEED_CONF });
    // pull the database out from under the storage, as a dying disk would
    await (s as unknown as { db: { close(): Promise<void> } }).db.close();
    await assert.rejects(s.save({ entries: [entry(1, 1)] }, { sync: true }), StorageFailure);
    assert.equal(s.lastIndex(), 0, 'memory is not updated by a failed write');
    await assert.rejects(s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [] }, { sync: true }), StorageFailure);
    await assert.rejects(s.compact(snapshotAt(0, 0)), StorageFailure);
  });

  test('a full disk rejects with StorageFailure naming the cause (tmpfs; skipped without mount rights)', async (t) => {
    const mnt = newDir('full');
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { encoding: 'utf8' });
    if (m.status !== 0) {
      t.skip(`cannot mount a tmpfs here: ${(m.stderr || m.error?.message || '').trim()}`);
      return;
    }
    try {
      const s = await LevelStorage.open(join(mnt, 'n1'), { seedConf: SEED_CONF });
      let failure: unknown;
      const data = new Uint8Array(16 * 1024).fill(7);
      for (let i = 1; i <= 1000 && failure === undefined; i++) {
        await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [entry(i, 1, data)] }, { sync: true }).catch((err: unknown) => (failure = err));
      }
      assert.ok(failure instanceof StorageFailure, `expected StorageFailure, got ${String(failure)}`);
      assert.match(failure.message, /^storage failure in .* during save .*No space left on device/);
      assert.doesNotMatch(failure.message, /[\r\n]/);
      const last = s.lastIndex();
      await assert.rejects(s.save({ entries: [entry(last + 1, 1)] }, { sync: true }), StorageFailure, 'no retry-and-continue');
      await s.close().catch(() => undefined);
    } finally {
      spawnSync('umount', ['-l', mnt]);
    }
  });
});

describe('LevelStorage invariants', () => {
  test('hard state never goes backwards and a vote never changes within a term (§5.2)', async () => {
    const s = await LevelStorage.open(newDir('inv'), { seedConf: SEED_CONF });
    try {
      await s.save({ hardState: { term: 5, vote: 'n1', commit: 0 }, entries: [entry(1, 5)] }, { sync: true });
      await assert.rejects(s.save({ hardState: { term: 4, vote: 'n1', commit: 0 }, entries: [] }, { sync: true }), StorageAssertionError);
      await assert.rejects(s.save({ hardState: { term: 5, vote: 'n2', commit: 0 }, entries: [] }, { sync: true }), StorageAssertionError);
      await s.save({ hardState: { term: 5, vote: 'n1', commit: 1 }, entries: [] }, { sync: true });
      await assert.rejects(s.save({ hardState: { term: 5, vote: 'n1', commit: 0 }, entries: [] }, { sync: true }), StorageAssertionError);
      await assert.rejects(s.save({ hardState: { term: 5, vote: 'n1', commit: 3 }, entries: [] }, { sync: true }), StorageAssertionError, 'commit beyond the log');
      await assert.rejects(s.save({ entries: [entry(2, 4)] }, { sync: true }), StorageAssertionError, 'term lower than the previous entry');
      assert.deepEqual(s.hardState(), { term: 5, vote: 'n1', commit: 1 });
      assert.equal(s.lastIndex(), 1);
    } finally {
      await s.close();
    }
  });
});

test('an empty synced save after unsynced ones still syncs them', async () => {
  const s = await LevelStorage.open(newDir('flush'), { seedConf: SEED_CONF });
  // spy on the one place where LevelStorage writes to LevelDB
  const seam = s as unknown as { writeBatch(ops: readonly unknown[], sync: boolean): Promise<void> };
  const syncs: number[] = [];
  const writeBatch = seam.writeBatch.bind(s);
  seam.writeBatch = (ops, sync) => {
    if (sync) syncs.push(ops.length);
    return writeBatch(ops, sync);
  };
  try {
    await s.save({ entries: [] }, { sync: true });
    assert.deepEqual(syncs, [], 'nothing to make durable: no write');
    await s.save({ hardState: { term: 1, vote: null, commit: 0 }, entries: [entry(1, 1)] }, { sync: false });
    await s.save({ entries: [] }, { sync: true });
    assert.deepEqual(syncs, [1], 'one synced write (the hard state) makes the earlier batch durable');
    await s.save({ entries: [] }, { sync: true });
    assert.deepEqual(syncs, [1], 'already durable: no write');
  } finally {
    await s.close();
  }
});

function dirBytes(dir: string): number {
  let total = 0;
  // LevelDB deletes obsolete files in the background: one may vanish between the two calls
  for (const name of readdirSync(dir)) total += statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0;
  return total;
}

test('bounded directory: compaction keeps it near one snapshot + the live tail', async () => {
  // scaled down from the production shape (200k entries, compaction every 10k) to keep
  // npm test quick; STORAGE_BOUND_ENTRIES / STORAGE_BOUND_EVERY run the full size
  const total = Number(process.env.STORAGE_BOUND_ENTRIES ?? 40_000);
  const every = Number(process.env.STORAGE_BOUND_EVERY ?? 2_000);
  const entryBytes = 200;
  const snapshotBytes = 64 * 1024;
  const writeBufferSize = 1024 * 1024;
  const dir = newDir('bound');
  mkdirSync(dir, { recursive: true });
  const s = await LevelStorage.open(dir, { seedConf: SEED_CONF, writeBufferSize });
  // incompressible, like real commands after LevelDB's snappy pass would be at worst
  const noise = randomBytes(total * entryBytes);
  const batch = 100;
  let maxSeen = 0;
  for (let i = 1; i <= total; i += batch) {
    const entries = Array.from({ length: batch }, (_, k) => entry(i + k, 1, noise.subarray((i + k - 1) * entryBytes, (i + k) * entryBytes)));
    const last = i + batch - 1;
    await s.save({ hardState: { term: 1, vote: null, commit: last }, entries }, { sync: false });
    if (last % every === 0) {
      await s.compact({ meta: { index: last, term: 1, conf: SEED_CONF }, data: randomBytes(snapshotBytes) });
    }
    maxSeen = Math.max(maxSeen, dirBytes(dir));
  }
  await s.close(); // waits for the background compactRange
  const finalBytes = dirBytes(dir);
  const unit = snapshotBytes + every * entryBytes;
  const written = total * entryBytes + (total / every) * snapshotBytes;
  // LevelDB's write-ahead log holds up to two write buffers before they become tables
  const bound = 4 * unit + 2 * writeBufferSize;
  console.log(`bounded dir: ${total} entries, compaction every ${every}: final ${finalBytes} B, max seen ${maxSeen} B, bound ${bound} B (one snapshot + tail = ${unit} B, total written ${written} B)`);
  assert.ok(finalBytes <= bound, `directory ${finalBytes} B exceeds ${bound} B`);
  assert.ok(maxSeen <= bound, `directory peaked at ${maxSeen} B, over ${bound} B`);
  const reopened = await LevelStorage.open(dir, { seedConf: SEED_CONF });
  assert.equal(reopened.firstIndex(), total - (total % every) + 1);
  assert.equal(reopened.lastIndex(), total);
  await reopened.close();
});
