// Reads a LevelStorage directory into memory and checks that it can be trusted before
// the Raft core sees any of it. A node that starts from a damaged log could vote for
// or acknowledge something it no longer holds (Raft §5.2 assumes stable storage), so
// every doubt is a StorageCorruptionError, never a silent repair.
import type { Level } from 'level';
import type { ConfState, Entry, HardState, Snapshot } from '../core/types.js';
import {
  ENTRY_KEY_END, ENTRY_KEY_START, KEY_HARD_STATE, KEY_INCARNATION, KEY_SNAPSHOT, KEY_VERSION, RecordError, STORAGE_FORMAT_VERSION,
  decodeHardState, decodeIncarnation, decodeSegment, decodeSnapshot, decodeVersion, encodeHardState, encodeIncarnation, encodeSnapshot, encodeVersion, entryKeyIndex,
} from './storage-codec.js';
import { StorageCorruptionError, StorageVersionError } from './storage-errors.js';

/** `level` is classic-level in Node; its typings omit classic-level's extras we use */
export type Db = Level<Buffer, Buffer> & { compactRange(start: Buffer, end: Buffer): Promise<void> };

export interface LoadedState {
  hardState: HardState;
  snapshot: Snapshot;
  /** the log after the snapshot: entries[k].index === snapshot.meta.index + 1 + k */
  entries: Entry[];
  /** first index of every stored log segment, ascending (each runs to the next one's start) */
  segments: number[];
  fresh: boolean;
  /** this directory's incarnation (docs/membership.md, "Incarnations") */
  incarnation: string;
}

/** Load and verify; on a directory with no data at all, initialise it (synced) with an
 *  empty log and a snapshot {index 0, term 0, conf: seedConf}: the configured membership
 *  only ever seeds a NEW cluster, afterwards membership comes from the log. */
export async function loadState(db: Db, dir: string, seedConf: ConfState, newIncarnation: () => string): Promise<LoadedState> {
  const [v, h, s, i] = await db.getMany([KEY_VERSION, KEY_HARD_STATE, KEY_SNAPSHOT, KEY_INCARNATION]);
  const rawSegments = await readSegments(db, dir);
  if (v === undefined && h === undefined && s === undefined && rawSegments.length === 0) {
    return initialise(db, seedConf, i !== undefined ? decodeOr(() => decodeIncarnation(i), (m) => new StorageCorruptionError(dir, m)) : newIncarnation());
  }
  const corrupt = (what: string, index?: number) => new StorageCorruptionError(dir, what, index);
  if (v === undefined) throw corrupt('storage format version record is missing but other data is present');
  const version = decodeOr(() => decodeVersion(v), (m) => corrupt(`storage format version record: ${m}`));
  if (version !== STORAGE_FORMAT_VERSION) throw new StorageVersionError(dir, version, STORAGE_FORMAT_VERSION);
  if (h === undefined) throw corrupt('hard state record is missing');
  if (s === undefined) throw corrupt('snapshot record is missing');
  const hardState = decodeOr(() => decodeHardState(h), (m) => corrupt(`hard state ${m}`));
  const snapshot = decodeOr(() => decodeSnapshot(s), (m) => corrupt(`snapshot ${m}`));
  const entries = verifyLog(dir, snapshot, rawSegments);
  verifyHardState(dir, hardState, snapshot, entries);
  let incarnation: string;
  if (i !== undefined) {
    incarnation = decodeOr(() => decodeIncarnation(i), (m) => corrupt(m));
  } else {
    // a directory from before incarnations: it gets one now (its cluster binds it once
    // its leader has heard from every voter, docs/membership.md)
    incarnation = newIncarnation();
    await db.put(KEY_INCARNATION, encodeIncarnation(incarnation), { sync: true });
  }
  return { hardState, snapshot, entries, segments: rawSegments.map((r) => r.index), fresh: false, incarnation };
}

async function initialise(db: Db, seedConf: ConfState, incarnation: string): Promise<LoadedState> {
  const hardState: HardState = { term: 0, vote: null, commit: 0 };
  const snapshot: Snapshot = { meta: { index: 0, term: 0, conf: { voters: [...seedConf.voters], learners: [...seedConf.learners] } }, data: new Uint8Array(0) };
  // version last in key order but in the same atomic batch: a crash leaves all or nothing
  await db.batch([
    { type: 'put', key: KEY_HARD_STATE, value: encodeHardState(hardState) },
    { type: 'put', key: KEY_SNAPSHOT, value: encodeSnapshot(snapshot) },
    { type: 'put', key: KEY_INCARNATION, value: encodeIncarnation(incarnation) },
    { type: 'put', key: KEY_VERSION, value: encodeVersion(STORAGE_FORMAT_VERSION) },
  ], { sync: true });
  return { hardState, snapshot, entries: [], segments: [], fresh: true, incarnation };
}

/** a stored segment: the entries of one write, starting at `index` */
interface RawSegment { index: number; value: Buffer }

async function readSegments(db: Db, dir: string): Promise<RawSegment[]> {
  const out: RawSegment[] = [];
  const it = db.iterator({ gte: ENTRY_KEY_START, lt: ENTRY_KEY_END, highWaterMarkBytes: 1 << 20 });
  try {
    while (true) {
      const batch = await it.nextv(4096);
      if (batch.length === 0) break;
      for (const [key, value] of batch) {
        const index = entryKeyIndex(key);
        if (index === undefined) throw new StorageCorruptionError(dir, `unexpected key 0x${key.toString('hex')} among log entries`);
        out.push({ index, value });
      }
    }
  } finally {
    await it.close();
  }
  return out;
}

/** checksums, index contiguity from the snapshot, term monotonicity (Log Matching, §5.3,
 *  implies terms never decrease along a log) */
function verifyLog(dir: string, snap: Snapshot, raw: RawSegment[]): Entry[] {
  const entries: Entry[] = [];
  let prevIndex = snap.meta.index;
  let prevTerm = snap.meta.term;
  let prevName = `snapshot (index ${prevIndex})`;
  for (const { index, value } of raw) {
    if (index <= snap.meta.index) throw new StorageCorruptionError(dir, `entry ${index} is at or below the snapshot index ${snap.meta.index} (compaction left it behind)`, index);
    if (index !== prevIndex + 1) {
      const missing = prevIndex + 1;
      throw new StorageCorruptionError(dir, `entry ${missing} is missing (log jumps from ${prevName} to entry ${index})`, missing);
    }
    let segment: Entry[];
    try {
      segment = decodeSegment(index, value);
    } catch (err) {
      if (err instanceof RecordError) throw new StorageCorruptionError(dir, err.message, err.index);
      throw err;
    }
    for (const e of segment) {
      if (e.term < prevTerm) throw new StorageCorruptionError(dir, `entry ${e.index} has term ${e.term}, lower than ${prevName}'s term ${prevTerm}`, e.index);
      entries.push(e);
      prevIndex = e.index;
      prevTerm = e.term;
      prevName = `entry ${e.index}`;
    }
  }
  return entries;
}

function verifyHardState(dir: string, hs: HardState, snap: Snapshot, entries: Entry[]): void {
  const last = entries.at(-1);
  const lastIndex = last?.index ?? snap.meta.index;
  const lastTerm = last?.term ?? snap.meta.term;
  const corrupt = (what: string, index: number) => new StorageCorruptionError(dir, `hard state ${what}`, index);
  if (hs.commit > lastIndex) throw corrupt(`commit index ${hs.commit} is beyond the last log entry ${lastIndex} (the log tail is lost)`, hs.commit);
  // compaction only covers applied (so committed) entries, and installing a snapshot
  // raises commit in the same batch
  if (hs.commit < snap.meta.index) throw corrupt(`commit index ${hs.commit} is below the snapshot index ${snap.meta.index}`, hs.commit);
  if (hs.term < lastTerm) throw corrupt(`term ${hs.term} is lower than the term ${lastTerm} of entry ${lastIndex}`, lastIndex);
}

function decodeOr<T>(decode: () => T, wrap: (msg: string) => Error): T {
  try {
    return decode();
  } catch (err) {
    if (err instanceof RecordError) throw wrap(err.message);
    throw err;
  }
}
