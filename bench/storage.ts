// Storage benchmark (not a test): how fast can this disk make a Raft write durable?
//   npm run bench:storage [-- --dir /path/on/the/disk/to/test] [--seconds 3]
// Prints, measured in one run in the same directory:
//   - the raw rate of 4 KiB append + fdatasync (the ceiling any durable log can reach),
//   - synced LevelStorage.save rates for batches of 1, 16 and 256 entries of ~200 bytes,
//   - the same writes through LevelDB alone with their bytes prepared in advance: the floor
//     that LevelDB and the disk set, and by difference raftlock's own cost per save.
// The claim to check: batching is nearly free, i.e. a synced batch of 256 entries costs no
// more than 2x a synced single-entry batch (one fsync dominates either way), which is why
// the driver persists a whole Ready per save.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Level } from 'level';
import { LevelStorage } from '../src/raft/storage/level-storage.js';
import { KEY_HARD_STATE, encodeHardState, encodeSegment, entryKey } from '../src/raft/storage/storage-codec.js';
import type { Entry } from '../src/raft/core/types.js';
import { percentile } from './percentile.js';

const { values } = parseArgs({
  options: { dir: { type: 'string' }, seconds: { type: 'string', default: '3' }, 'entry-bytes': { type: 'string', default: '200' }, 'write-buffer-mib': { type: 'string' } },
  strict: true,
});
const seconds = Number(values.seconds);
const entryBytes = Number(values['entry-bytes']);
const writeBufferMiB = values['write-buffer-mib'] === undefined ? undefined : Number(values['write-buffer-mib']);
if (!(seconds > 0) || !(entryBytes >= 0)) throw new Error('--seconds must be > 0 and --entry-bytes >= 0');
if (writeBufferMiB !== undefined && !(writeBufferMiB > 0)) throw new Error('--write-buffer-mib must be > 0');
const parent = values.dir ?? tmpdir();
const dir = mkdtempSync(join(parent, 'raftlock-bench-storage-'));

const SNAPSHOT_EVERY = 10_000;

interface Result { name: string; ops: number; entries: number; elapsedS: number; latMs: number[] }

function rawFdatasync(bytes: number): Result {
  const fd = openSync(join(dir, `raw-${bytes}.log`), 'a');
  const block = Buffer.alloc(bytes, 0x5a);
  const latMs: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  try {
    while (performance.now() < end) {
      const t0 = performance.now();
      writeSync(fd, block);
      fdatasyncSync(fd);
      latMs.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
  }
  return { name: `${bytes >= 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${bytes} B`} append + fdatasync (raw)`, ops: latMs.length, entries: latMs.length, elapsedS: (performance.now() - start) / 1000, latMs };
}

/** Call `write` back to back for the benchmark's duration, timing each call; `untimed`
 *  runs after each (preparing the next write, compacting as a node would). */
async function timedWrites(name: string, entriesPerWrite: number, write: () => Promise<void>, untimed: () => Promise<void>): Promise<Result> {
  const latMs: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  while (performance.now() < end) {
    const t0 = performance.now();
    await write();
    latMs.push(performance.now() - t0);
    await untimed();
  }
  return { name, ops: latMs.length, entries: latMs.length * entriesPerWrite, elapsedS: (performance.now() - start) / 1000, latMs };
}

async function levelSaves(batchSize: number, sync = true): Promise<Result> {
  const s = await LevelStorage.open(join(dir, `level-${batchSize}-${sync}`), {
    seedConf: { voters: ['n1'], learners: [] },
    ...(writeBufferMiB !== undefined ? { writeBufferSize: writeBufferMiB * 1024 * 1024 } : {}),
  });
  const payload = Buffer.alloc(entryBytes, 0x61);
  let next = 1;
  let compacted = 0;
  let entries: Entry[] = [];
  const prepare = (): void => {
    entries = [];
    for (let k = 0; k < batchSize; k++) entries.push({ index: next + k, term: 1, kind: 'normal', data: payload });
    next += batchSize;
  };
  prepare();
  try {
    return await timedWrites(
      `LevelStorage.save, ${batchSize} × ${entryBytes} B, ${sync ? 'sync' : 'no sync (CPU + page cache)'}`,
      batchSize,
      // what a follower persists per Ready: hard state (commit moved) + the new entries
      () => s.save({ hardState: { term: 1, vote: 'n1', commit: next - 1 }, entries }, { sync }),
      async () => {
        // as a node does (snapshot_every_entries, default 10,000): without it the
        // in-memory log grows by a million entries and the GC, not the disk, sets the tail
        if (next - 1 - compacted >= SNAPSHOT_EVERY) {
          compacted = next - 1;
          await s.compact({ meta: { index: compacted, term: 1, conf: { voters: ['n1'], learners: [] } }, data: payload });
        }
        prepare();
      },
    );
  } finally {
    await s.close();
  }
}

/**
 * The floor under LevelStorage: LevelDB alone, with the bytes of each write prepared
 * before the clock starts. Each write is what LevelStorage.save puts for a batch of
 * `batchSize` entries (one segment value under its entry key, plus the hard state), with
 * the same options and the same deletes every 10,000 entries, so the difference between
 * this row and the LevelStorage row is raftlock's own cost (planning, encoding, checksums,
 * the in-memory log), and the ratio between two of these rows is what LevelDB and the disk
 * allow batching to cost.
 */
async function levelOnly(batchSize: number): Promise<Result> {
  const db = new Level<Buffer, Buffer>(join(dir, `leveldb-only-${batchSize}`), {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
    ...(writeBufferMiB !== undefined ? { writeBufferSize: writeBufferMiB * 1024 * 1024 } : {}),
  });
  await db.open();
  const payload = Buffer.alloc(entryBytes, 0x61);
  const entries: Entry[] = [];
  for (let k = 0; k < batchSize; k++) entries.push({ index: 1 + k, term: 1, kind: 'normal', data: payload });
  // index and term are inside the records, so one encoding serves every write: the
  // bytes and their size are the same as LevelStorage's
  const value = encodeSegment(entries);
  const hardState = encodeHardState({ term: 1, vote: 'n1', commit: 1 });
  let next = 1;
  let compacted = 1;
  let key = entryKey(next);
  try {
    return await timedWrites(
      `LevelDB alone (prepared value), ${batchSize} × ${entryBytes} B, sync`,
      batchSize,
      () => db.batch().put(key, value).put(KEY_HARD_STATE, hardState).write({ sync: true }),
      async () => {
        next += batchSize;
        if (next - compacted >= SNAPSHOT_EVERY) {
          const dels = db.batch();
          for (let i = compacted; i < next; i += batchSize) dels.del(entryKey(i));
          await dels.write({ sync: true });
          compacted = next;
        }
        key = entryKey(next);
      },
    );
  } finally {
    await db.close();
  }
}

function row(r: Result, baseMeanMs?: number): string {
  const sorted = [...r.latMs].sort((a, b) => a - b);
  const mean = r.latMs.reduce((a, b) => a + b, 0) / r.latMs.length;
  const ratio = baseMeanMs === undefined ? '' : `${(mean / baseMeanMs).toFixed(2)}×`;
  return `| ${r.name} | ${(r.ops / r.elapsedS).toFixed(0)} | ${(r.entries / r.elapsedS).toFixed(0)} | ${mean.toFixed(3)} | ${percentile(sorted, 50).toFixed(3)} | ${percentile(sorted, 99).toFixed(3)} | ${ratio} |`;
}

async function main(): Promise<void> {
  console.log(`storage benchmark in ${dir} (${seconds} s per case, node ${process.version})`);
  try {
    // 4 KiB: the disk's fsync rate; 256 x (entry + ~20 B framing): the same bytes a
    // 256-entry batch puts in LevelDB's log, to tell disk bandwidth from CPU cost
    const raw = [rawFdatasync(4096), rawFdatasync(256 * (entryBytes + 20))];
    const results = [await levelSaves(1), await levelSaves(16), await levelSaves(256)];
    const mean = (r: Result): number => r.latMs.reduce((a, b) => a + b, 0) / r.latMs.length;
    const base = mean(results[0]!);
    console.log('');
    console.log('| case | writes/s | entries/s | mean ms | p50 ms | p99 ms | cost vs 1-entry batch |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const r of raw) console.log(row(r));
    for (const r of results) console.log(row(r, base));
    // the same 256-entry batch without fsync: what the batch costs in CPU alone
    console.log(row(await levelSaves(256, false), base));
    const floor = [await levelOnly(1), await levelOnly(256)];
    // against LevelDB's own 1-entry write, so the column reads as the floor's ratio
    for (const r of floor) console.log(row(r, mean(floor[0]!)));
    const median = (r: Result): number => percentile([...r.latMs].sort((a, b) => a - b), 50);
    const ratios = (one: Result, many: Result): string => `${(mean(many) / mean(one)).toFixed(2)}x by mean (${(median(many) / median(one)).toFixed(2)}x by median)`;
    const ratio = mean(results[2]!) / base;
    console.log('');
    console.log(`target: a synced 256-entry batch costs <= 2x a synced 1-entry batch: ${ratios(results[0]!, results[2]!)} -> ${ratio <= 2 ? 'MET' : 'NOT MET'}`);
    console.log(`floor:  LevelDB alone, the same writes prepared in advance: ${ratios(floor[0]!, floor[1]!)}`);
    console.log(`        raftlock's own cost per 256-entry save: ${(mean(results[2]!) - mean(floor[1]!)).toFixed(3)} ms by mean (${(median(results[2]!) - median(floor[1]!)).toFixed(3)} ms by median)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
