// Durable Raft storage in LevelDB (docs/architecture.md "Rules", "The big adaptation from Go").
//
// The core reads synchronously, LevelDB in Node is async, so open() loads the hard state,
// the latest snapshot and the whole log tail into a MemoryStorage and every read is
// served from memory. Each write is ONE atomic db.batch (Ready step 2: hard state,
// snapshot, entries together), fsynced when asked. The entries of one write are stored as
// one log segment (storage-codec.ts), so a write costs one LevelDB put however many
// entries it carries; this class tracks where every segment starts.
//
// Memory is updated AFTER the batch resolves, never before: until then reads keep showing
// the durable state, which is what the Storage contract promises (the core keeps the
// not-yet-durable part in its unstable log, and reads storage for it only after
// advance(), which the driver calls after save resolves). A failed write leaves memory
// as it was and the storage refuses every later write (fail-stop, see StorageFailure).
//
// Writes are serialised in call order, so a compact() issued while a save() is in flight
// plans its deletions against the state that save produced.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir } from 'node:fs/promises';
import { Level } from 'level';
import { MemoryBackedStorage, MemoryStorage } from '../core/storage.js';
import { assertStorage as check, failStorage as fail } from '../../assert.js';
import type { PersistBatch } from '../core/storage.js';
import type { DurableStorage } from '../seams.js';
import type { ConfState, Entry, HardState, Index, Snapshot, Term } from '../core/types.js';
import { ENTRY_KEY_START, KEY_HARD_STATE, KEY_INCARNATION, KEY_SNAPSHOT, KEY_VERSION, SEGMENT_MAX_ENTRIES, STORAGE_FORMAT_VERSION, encodeHardState, encodeIncarnation, encodeSegment, encodeSnapshot, encodeVersion, entryKey } from './storage-codec.js';
import { StorageCorruptionError, StorageError, StorageFailure, StorageLockedError } from './storage-errors.js';
import { loadState, type Db } from './storage-load.js';
import { currentLogMissing, damagedLogs } from './leveldb-log-check.js';

export { StorageCorruptionError, StorageFailure, StorageLockedError, StorageVersionError, StorageError } from './storage-errors.js';

/** the subset of pino's Logger we use */
export interface StorageLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LevelStorageOptions {
  /** membership for a brand-new directory only; ignored when data exists */
  seedConf: ConfState;
  logger?: StorageLogger;
  /** ask LevelDB to compact the deleted key range after each compact() so the directory
   *  shrinks promptly (default true; runs in the background, close() waits for it) */
  compactRange?: boolean;
  /** LevelDB memtable / write-ahead-log size in bytes (default LevelDB's 4 MiB) */
  writeBufferSize?: number;
}

/** a new data directory's incarnation: 128 random bits */
export function newIncarnation(): string {
  return randomBytes(16).toString('hex');
}

type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

export class LevelStorage extends MemoryBackedStorage implements DurableStorage {
  /** tail of the write queue: every write waits for the previous one */
  private queue: Promise<void> = Promise.resolve();
  private background: Promise<void> = Promise.resolve();
  /** set once a write failed: the disk state is unknown, nothing more may be written */
  private failure: StorageFailure | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** an unsynced write happened since the last synced one */
  private unsynced = false;
  /** first index of every stored log segment, ascending; each runs up to the next one's
   *  start, the last one up to lastIndex(). Like memory, updated after a write lands. */
  private segments: number[];
  /** what `segments` becomes when the write being planned lands: a new list, or (the
   *  common case, appending after the last entry) starts to add without copying it */
  private plannedSegments: { replace: number[] } | { append: number[] } | undefined;
  /** this directory's incarnation (RaftConfig.incarnation, docs/membership.md) */
  readonly incarnation: string;
  /** the directory held no data when opened: it was initialised now */
  readonly fresh: boolean;

  private constructor(
    private readonly db: Db,
    readonly dir: string,
    loaded: { hardState: HardState; snapshot: Snapshot; entries: Entry[]; segments: number[]; incarnation: string; fresh: boolean },
    private readonly opts: LevelStorageOptions,
  ) {
    // reads are served from memory (MemoryBackedStorage): the core never awaits
    super(MemoryStorage.from(loaded));
    this.segments = loaded.segments;
    this.incarnation = loaded.incarnation;
    this.fresh = loaded.fresh;
  }

  /** Open (creating with mode 0700 if needed), load and verify. Rejects with
   *  StorageLockedError, StorageCorruptionError, StorageVersionError or StorageFailure. */
  static async open(dir: string, opts: LevelStorageOptions): Promise<LevelStorage> {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StorageFailure(dir, 'creating the data directory', err);
    }
    await refuseOrphanedFiles(dir);
    await refuseDamagedLog(dir);
    const db = new Level<Buffer, Buffer>(dir, {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
      createIfMissing: true,
      errorIfExists: false,
      ...(opts.writeBufferSize !== undefined ? { writeBufferSize: opts.writeBufferSize } : {}),
    }) as Db;
    try {
      await db.open();
    } catch (err) {
      throw openError(dir, err);
    }
    try {
      const loaded = await loadState(db, dir, opts.seedConf, newIncarnation);
      const s = new LevelStorage(db, dir, loaded, opts);
      opts.logger?.info(
        { dir, fresh: loaded.fresh, term: loaded.hardState.term, commit: loaded.hardState.commit, snapshotIndex: s.mem.snapshot().meta.index, firstIndex: s.firstIndex(), lastIndex: s.lastIndex() },
        loaded.fresh ? 'storage initialised' : 'storage loaded',
      );
      return s;
    } catch (err) {
      await db.close().catch(() => undefined);
      if (err instanceof StorageError) throw err;
      if (isLevelCorruption(err)) throw new StorageCorruptionError(dir, `LevelDB reports ${describe(err)}`, undefined, { cause: err });
      throw new StorageFailure(dir, 'loading', err);
    }
  }

  /**
   * Seed a NEW node's data directory with `snapshot` (backup restore, docs/operations.md):
   * the node then starts exactly as if it had compacted its log at snapshot.meta.index —
   * empty log, commit = snapshot index, membership = snapshot.meta.conf. Refuses a
   * directory that holds anything at all: seeding over a live log would fork it. The
   * hard state starts at the snapshot's term with no vote, so the first election of the
   * restored cluster is in a later term and every new entry gets an index above the
   * snapshot's (the FSM's fencing tokens, max(index, lastToken + 1), stay above it too).
   * Written as one synced batch, version record included: a crash leaves all or nothing.
   */
  static async seed(dir: string, snapshot: Snapshot): Promise<void> {
    const { index, term } = snapshot.meta;
    // a restored cluster is a new one: the backup's incarnations name the old directories
    // (they would make every restored node 'superseded'); it binds its own after its
    // first election, as a log from before incarnations does (docs/membership.md)
    const conf = { voters: [...snapshot.meta.conf.voters], learners: [...snapshot.meta.conf.learners] };
    snapshot = { meta: { index, term, conf }, data: snapshot.data };
    if (!Number.isSafeInteger(index) || index < 1) throw new StorageFailure(dir, 'seeding', new Error(`snapshot index must be >= 1, got ${index}`));
    if (!Number.isSafeInteger(term) || term < 1) throw new StorageFailure(dir, 'seeding', new Error(`snapshot term must be >= 1, got ${term}`));
    if (conf.voters.length === 0) throw new StorageFailure(dir, 'seeding', new Error('snapshot membership has no voters'));
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StorageFailure(dir, 'creating the data directory', err);
    }
    let present: string[];
    try {
      present = await readdir(dir);
    } catch (err) {
      throw new StorageFailure(dir, 'reading the data directory', err);
    }
    if (present.length > 0) {
      throw new StorageFailure(dir, 'seeding', new Error(`the directory is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}): a restore only seeds a new node; move the old data away first`));
    }
    const db = new Level<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', createIfMissing: true, errorIfExists: true }) as Db;
    try {
      await db.open();
    } catch (err) {
      throw openError(dir, err);
    }
    try {
      await db.batch([
        { type: 'put', key: KEY_HARD_STATE, value: encodeHardState({ term, vote: null, commit: index }) },
        { type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(snapshot) },
        { type: 'put', key: KEY_INCARNATION, value: encodeIncarnation(newIncarnation()) },
        { type: 'put', key: KEY_VERSION, value: encodeVersion(STORAGE_FORMAT_VERSION) },
      ], { sync: true });
    } catch (err) {
      throw new StorageFailure(dir, 'seeding', err);
    } finally {
      await db.close().catch(() => undefined);
    }
  }


  // ---- DurableStorage (writes) ----
  save(batch: PersistBatch, opts: { sync: boolean }): Promise<void> {
    return this.enqueue('save', () => this.planSave(batch), opts.sync, () => {
      this.mem.applyBatch(batch);
      this.landSegments();
    });
  }

  compact(snapshot: Snapshot): Promise<void> {
    return this.enqueue('compact', () => this.planCompact(snapshot), true, () => {
      this.mem.compact(snapshot);
      this.landSegments();
      if (this.opts.compactRange !== false) this.compactInBackground(snapshot.meta.index);
    }, () => this.background); // back-pressure: at most one LevelDB compaction behind
  }

  /** Waits for queued writes and the background compaction, then closes LevelDB.
   *  Idempotent: every call gets the same promise. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      await this.queue.catch(() => undefined);
      await this.background;
      await this.db.close();
    })();
    return this.closing;
  }

  /** Run one write after the previous ones. `plan` computes the ops against the memory
   *  state at that moment (throwing StorageAssertionError for a batch that breaks the log
   *  invariants, before anything is written); `commit` updates memory after the write;
   *  `before` may hold the write back (compact waits for the previous LevelDB compaction,
   *  so a slow disk cannot let the directory grow without bound). */
  private enqueue(operation: string, plan: () => BatchOp[] | null, sync: boolean, commit: () => void, before?: () => Promise<void>): Promise<void> {
    // a write issued after close() is a driver bug; writes queued before it still run
    if (this.closed) return Promise.reject(new StorageFailure(this.dir, operation, new Error('storage is closed')));
    const run = async (): Promise<void> => {
      if (before) await before();
      if (this.failure) throw this.failure;
      const ops = plan();
      if (ops === null) return;
      // a synced call must make earlier unsynced writes durable even when it has nothing
      // of its own to write: rewrite the hard state, which makes LevelDB fsync its log
      if (ops.length === 0 && sync && this.unsynced) ops.push({ type: 'put', key: KEY_HARD_STATE, value: encodeHardState(this.mem.hardState()) });
      if (ops.length > 0) {
        try {
          await this.writeBatch(ops, sync);
          this.unsynced = !sync;
        } catch (err) {
          this.failure = new StorageFailure(this.dir, `${operation} (${ops.length} ops, sync=${sync})`, err);
          this.opts.logger?.warn({ dir: this.dir, err: this.failure.message }, 'storage write failed: node must stop');
          throw this.failure;
        }
      }
      commit();
    };
    const p = this.queue.then(run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  /** One atomic LevelDB write. A chained batch, not db.batch(array): abstract-level checks
   *  and transcodes every op of an array batch, which cost about 3x more CPU per entry
   *  (7.8 vs 2.4 µs with encoding, measured on 256-entry batches) — the followers' biggest
   *  cost under load. Atomicity and the sync flag are the same. */
  private async writeBatch(ops: readonly BatchOp[], sync: boolean): Promise<void> {
    const b = this.db.batch();
    for (const op of ops) {
      if (op.type === 'put') b.put(op.key, op.value);
      else b.del(op.key);
    }
    await b.write({ sync });
  }

  /** Ready step 2 as one batch: hard state, then snapshot, then entries (same semantics
   *  as MemoryStorage.applyBatch, which updates memory afterwards). */
  private planSave(b: PersistBatch): BatchOp[] {
    const ops: BatchOp[] = [];
    const cur = this.mem.hardState();
    let hs = b.hardState ? { ...b.hardState } : cur;
    if (b.hardState) assertHardStateStep(cur, hs);
    let snapIndex = this.mem.snapshot().meta.index;
    let last = this.lastIndex();
    // copied only when the write changes existing segments (a snapshot, a conflict)
    let segs: number[] | null = null;
    const added: number[] = [];
    if (b.snapshot && b.snapshot.meta.index > snapIndex) {
      const s = b.snapshot;
      const idx = s.meta.index;
      // keep the suffix only if it provably agrees with the snapshot (same term at its
      // index: Log Matching, §5.3); otherwise the whole log goes (§7)
      const agrees = this.term(idx) === s.meta.term;
      if (agrees) {
        segs = this.planDropThrough(idx, [...this.segments], last, ops);
      } else {
        for (const first of this.segments) ops.push({ type: 'del', key: entryKey(first) });
        segs = [];
        last = idx;
      }
      ops.push({ type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(s) });
      snapIndex = idx;
      // a snapshot is of committed state: memory raises commit to it, so must the disk
      if (hs.commit < idx) hs = { term: hs.term, vote: hs.vote, commit: idx };
    }
    if (b.entries.length > 0) {
      const first = b.entries[0]!.index;
      check(first > snapIndex, `save: entries start at ${first}, at or below the snapshot index ${snapIndex}`);
      check(first <= last + 1, `save: entries start at ${first}, leaving a gap after ${last}`);
      let prevTerm = this.termAfterPlan(first - 1, snapIndex, b.snapshot);
      // per entry: messages are built only on failure (a template per entry costs as much
      // as encoding it)
      for (let k = 0; k < b.entries.length; k++) {
        const e = b.entries[k]!;
        if (e.index !== first + k) fail(`save: entries not contiguous at ${first + k} (got ${e.index})`);
        if (prevTerm !== undefined && e.term < prevTerm) fail(`save: entry ${e.index} term ${e.term} lower than the previous entry's ${prevTerm}`);
        prevTerm = e.term;
      }
      // stored entries from `first` on are replaced; those beyond the new ones were
      // written by an older leader and conflict (§5.3)
      if (first <= last) segs = this.planTruncateFrom(first, segs ?? [...this.segments], last, ops);
      for (let from = 0; from < b.entries.length; from += SEGMENT_MAX_ENTRIES) {
        const start = first + from;
        ops.push({ type: 'put', key: entryKey(start), value: encodeSegment(b.entries, from, Math.min(b.entries.length, from + SEGMENT_MAX_ENTRIES)) });
        added.push(start);
      }
      last = first + b.entries.length - 1;
    }
    if (b.hardState || hs.commit !== cur.commit) {
      check(hs.commit <= last, `save: commit ${hs.commit} beyond the last index ${last}`);
      ops.push({ type: 'put', key: KEY_HARD_STATE, value: encodeHardState(hs) });
    }
    this.plannedSegments = segs === null ? { append: added } : { replace: [...segs, ...added] };
    return ops;
  }

  /** term at i as it will be once the snapshot part of a batch is applied */
  private termAfterPlan(i: Index, snapIndex: Index, snap: Snapshot | undefined): Term | undefined {
    if (snap && i === snapIndex && snap.meta.index === snapIndex) return snap.meta.term;
    return this.term(i);
  }

  private planCompact(s: Snapshot): BatchOp[] | null {
    const idx = s.meta.index;
    const first = this.firstIndex();
    if (idx < first) return null; // already covered by the current snapshot
    check(idx <= this.lastIndex(), `compact(${idx}) beyond the last index ${this.lastIndex()}`);
    check(this.term(idx) === s.meta.term, `compact(${idx}): snapshot term ${s.meta.term} != log term ${this.term(idx)}`);
    check(idx <= this.mem.hardState().commit, `compact(${idx}) beyond the commit index ${this.mem.hardState().commit}`);
    // explicit dels in the same batch as the snapshot (never clear(): it is not atomic)
    const ops: BatchOp[] = [{ type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(s) }];
    this.plannedSegments = { replace: this.planDropThrough(idx, [...this.segments], this.lastIndex(), ops) };
    return ops;
  }

  /** Ops that remove every stored entry <= idx from the log `segs` (ending at `last`):
   *  whole segments are deleted, one that straddles idx is rewritten to start at idx + 1
   *  (so no entry at or below the snapshot stays on disk). Returns the segments after. */
  private planDropThrough(idx: Index, segs: number[], last: Index, ops: BatchOp[]): number[] {
    let k = 0;
    while (k < segs.length && segmentEnd(segs, k, last) <= idx) ops.push({ type: 'del', key: entryKey(segs[k++]!) });
    const rest = segs.slice(k);
    if (rest.length > 0 && rest[0]! <= idx) {
      const end = segmentEnd(rest, 0, last);
      ops.push({ type: 'del', key: entryKey(rest[0]!) });
      ops.push({ type: 'put', key: entryKey(idx + 1), value: encodeSegment(this.storedEntries(idx + 1, end)) });
      rest[0] = idx + 1;
    }
    return rest;
  }

  /** Ops that remove every stored entry >= first from `segs` (ending at `last`): segments
   *  starting there or later are deleted, one that straddles `first` is rewritten to end
   *  at first - 1. Returns the segments after. */
  private planTruncateFrom(first: Index, segs: number[], last: Index, ops: BatchOp[]): number[] {
    let end = last;
    while (segs.length > 0 && segs.at(-1)! >= first) {
      const start = segs.pop()!;
      ops.push({ type: 'del', key: entryKey(start) });
      end = start - 1;
    }
    const straddler = segs.at(-1);
    if (straddler !== undefined && end >= first) {
      ops.push({ type: 'put', key: entryKey(straddler), value: encodeSegment(this.storedEntries(straddler, first - 1)) });
    }
    return segs;
  }

  /** entries lo..hi (inclusive) as stored now, for rewriting part of a segment */
  private storedEntries(lo: Index, hi: Index): Entry[] {
    const out = this.mem.entries(lo, hi + 1);
    check(out.length === hi - lo + 1 && out[0]?.index === lo, `segment rewrite: entries ${lo}..${hi} not all in memory`);
    return out;
  }

  private landSegments(): void {
    const p = this.plannedSegments;
    if (p !== undefined) {
      if ('replace' in p) this.segments = p.replace;
      else for (const start of p.append) this.segments.push(start);
    }
    this.plannedSegments = undefined;
    // the segments cover exactly the log in memory: first starts at firstIndex(), the last
    // starts within the log (a wrong list would make a later write delete the wrong keys)
    const segs = this.segments;
    const empty = this.lastIndex() < this.firstIndex();
    if (empty ? segs.length !== 0 : segs[0] !== this.firstIndex() || segs.at(-1)! > this.lastIndex()) {
      fail(`segment list out of step with the log (${segs.length} segments from ${segs[0]} to ${segs.at(-1)}, log ${this.firstIndex()}..${this.lastIndex()})`);
    }
  }

  /** Deleted keys linger in LevelDB's files until compaction reaches them; ask for it now
   *  over the deleted entries and the snapshot key (rewritten on every compaction), so
   *  the directory stays near one snapshot plus the live tail. Best effort: a failure
   *  here loses nothing, so it is logged, not fatal. */
  private compactInBackground(throughIndex: Index): void {
    const run = async (): Promise<void> => {
      if (this.closed) return;
      try {
        await this.db.compactRange(ENTRY_KEY_START, entryKey(throughIndex + 1));
        await this.db.compactRange(KEY_HARD_STATE, KEY_SNAPSHOT);
      } catch (err) {
        this.opts.logger?.warn({ dir: this.dir, err: describe(err) }, 'LevelDB compactRange failed (disk space may not be reclaimed yet)');
      }
    };
    // chain, so at most one runs at a time and close() can wait for the last
    this.background = this.background.then(run);
  }
}

/** Raft's persistent state only moves forward: the term never decreases, a vote is never
 *  changed within a term (§5.2: at most one vote per term), commit never decreases. */
function assertHardStateStep(cur: HardState, next: HardState): void {
  check(next.term >= cur.term, `hard state term went backwards (${cur.term} -> ${next.term})`);
  check(next.term > cur.term || cur.vote === null || next.vote === cur.vote, `vote changed within term ${cur.term} (${cur.vote} -> ${next.vote})`);
  check(next.commit >= cur.commit, `hard state commit went backwards (${cur.commit} -> ${next.commit})`);
}

/** last index of segment k of `segs` in a log ending at `last` */
function segmentEnd(segs: readonly number[], k: number, last: Index): Index {
  return k + 1 < segs.length ? segs[k + 1]! - 1 : last;
}

/**
 * LevelDB finds its files through CURRENT, which names the MANIFEST. Without CURRENT, an
 * open with createIfMissing starts an EMPTY database in the directory and deletes every
 * table and log it does not know as obsolete (measured: classic-level 3, LevelDB 1.20;
 * docs/storage.md "What LevelDB does with a damaged file"): the log would be destroyed by
 * the attempt to read it. So a directory with LevelDB's files but no CURRENT is refused
 * before LevelDB sees it, naming what is there, and its files are left as they are.
 */
async function refuseOrphanedFiles(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new StorageFailure(dir, 'reading the data directory', err);
  }
  if (names.includes('CURRENT')) return;
  const level = names.filter((f) => /^MANIFEST-\d+$/.test(f) || /^\d+\.(ldb|sst|log)$/.test(f)).sort();
  if (level.length === 0) return;
  const shown = level.slice(0, 4).join(', ') + (level.length > 4 ? `, … (${level.length} files)` : '');
  throw new StorageCorruptionError(dir, `LevelDB's CURRENT file is missing, but its files are there (${shown}): opening would start an empty database and delete them; put CURRENT back (the MANIFEST file's name and a newline), or recover the node`);
}

/** LevelDB's recovery would skip a damaged log record and the rest of its block, then delete
 *  the log, and would not notice the current log deleted (leveldb-log-check.ts): both are
 *  refused first, naming the file (and the offset) */
async function refuseDamagedLog(dir: string): Promise<void> {
  let damaged: string[];
  try {
    damaged = await damagedLogs(dir);
  } catch (err) {
    throw new StorageFailure(dir, 'reading the write-ahead log', err);
  }
  if (damaged.length > 0) {
    throw new StorageCorruptionError(dir, `LevelDB's write-ahead log ${damaged[0]}: LevelDB would skip the rest of that 32 KiB block, recover without it and delete the log`);
  }
  // LevelDB replays the logs it finds: a deleted current log loses its writes without a
  // word, and a young node (everything in that log) would come back as an empty, "fresh"
  // directory with a new incarnation
  const gone = await currentLogMissing(dir);
  if (gone !== null) {
    throw new StorageCorruptionError(dir, `LevelDB's write-ahead log ${gone} is missing (the MANIFEST names it as the current log), so the writes since the last table file are gone and restarting cannot help`);
  }
}

function openError(dir: string, err: unknown): StorageError {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  if (cause?.code === 'LEVEL_LOCKED') return new StorageLockedError(dir, { cause: err });
  if (isLevelCorruption(err)) return new StorageCorruptionError(dir, `LevelDB cannot open it: ${describe(err)}`, undefined, { cause: err });
  // One of LevelDB's own files is gone (CURRENT names a MANIFEST that is not there, a
  // table file the MANIFEST lists is missing): the directory is incomplete, and no restart
  // brings the file back. Say which file, and how to replace the node (docs/recovery.md).
  const gone = missingLevelFile(dir, err);
  if (gone !== null) return new StorageCorruptionError(dir, `LevelDB's file ${gone} is missing, so the data directory is incomplete and restarting cannot help`, undefined, { cause: err });
  return new StorageFailure(dir, 'opening', err);
}

/** the name of a file of `dir` that LevelDB reports missing ("IO error: <dir>/MANIFEST-000002:
 *  No such file or directory"), or null */
function missingLevelFile(dir: string, err: unknown): string | null {
  const text = describe(err);
  const m = /IO error: (\S+?): No such file or directory/.exec(text);
  if (m === null) return null;
  const path = m[1]!;
  const name = path.slice(path.lastIndexOf('/') + 1);
  return path.startsWith(dir) && /^(MANIFEST-\d+|CURRENT|\d+\.(ldb|sst|log))$/.test(name) ? name : null;
}

function isLevelCorruption(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown; message?: unknown } } | undefined;
  return e?.code === 'LEVEL_CORRUPTION' || e?.cause?.code === 'LEVEL_CORRUPTION' || (typeof e?.cause?.message === 'string' && e.cause.message.startsWith('Corruption'));
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
}
