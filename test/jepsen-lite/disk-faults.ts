// The `corrupt` fault's surgery on a stopped node's LevelDB directory (docs/jepsen-lite.md
// "Faults", docs/storage.md "What LevelDB does with a damaged file"): a torn tail of the
// write-ahead log (cut inside a record, as a write the disk never finished — or, cut
// behind what the node had synced and acknowledged, a disk that lost synced data), one
// flipped bit in a table or in the log, a missing file. Only ever called on a directory
// whose process is dead (kill -9): LevelDB's files are then exactly what the disk holds.
//
// LevelDB's log format (leveldb doc/log_format.md): 32 KiB blocks of physical records,
// each `crc32c: u32 LE | length: u16 LE | type: u8 | data`, type 1 FULL, 2 FIRST,
// 3 MIDDLE, 4 LAST; a block's last < 7 bytes are zero padding. One logical record is one
// write batch (a FULL record, or FIRST MIDDLE* LAST).
import { readdirSync, readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Rng } from '../../src/raft/core/rng.js';

const BLOCK = 32 * 1024;
const HEADER = 7;

/** a logical record of a LevelDB log file: [start, end) in bytes, headers included */
export interface WalRecord {
  start: number;
  end: number;
}

/** The logical records of a LevelDB log file, in order. Stops at the first byte that is
 *  not a well-formed record (a torn tail, or zeros LevelDB never wrote). */
export function walRecords(buf: Buffer): WalRecord[] {
  const out: WalRecord[] = [];
  let pos = 0;
  let open: number | null = null; // start of a FIRST not yet closed by its LAST
  while (pos < buf.length) {
    const left = BLOCK - (pos % BLOCK);
    if (left < HEADER) {
      pos += left; // trailer padding
      continue;
    }
    if (pos + HEADER > buf.length) break;
    const len = buf.readUInt16LE(pos + 4);
    const type = buf[pos + 6]!;
    if (type === 0 && len === 0) {
      pos += left; // zero-filled rest of a block (preallocation)
      continue;
    }
    const end = pos + HEADER + len;
    if (type < 1 || type > 4 || end > buf.length || HEADER + len > left) break;
    if (type === 1) out.push({ start: pos, end });
    else if (type === 2) open = pos;
    else if (type === 4 && open !== null) {
      out.push({ start: open, end });
      open = null;
    }
    pos = end;
  }
  return out;
}

const num = (f: string): number => Number(f.split('.')[0]);

/** LevelDB's write-ahead log files of a directory, oldest first */
export function logFiles(dir: string): string[] {
  return readdirSync(dir).filter((f) => /^\d+\.log$/.test(f)).sort((a, b) => num(a) - num(b));
}

/** the newest log file and its size (null: none) */
export function newestLog(dir: string): { file: string; size: number } | null {
  const f = logFiles(dir).at(-1);
  return f === undefined ? null : { file: f, size: statSync(join(dir, f)).size };
}

export interface Surgery {
  /** what was done, one line for the fault log and the summary */
  detail: string;
  /** the file it touched (relative to the directory), null when there was nothing to do */
  file: string | null;
}

/**
 * Cut the newest log file inside a record: the first whole record that starts at or after
 * `from` (a byte offset in `since.file`, recorded earlier while the node ran), or the last
 * record when `since` is not given. Everything after the cut is lost with it. When the
 * log rotated after `since` was recorded (a new file number), the new file is cut inside
 * its first record.
 */
export function tearLogTail(dir: string, rng: Rng, since?: { file: string; size: number }): Surgery {
  const log = newestLog(dir);
  if (!log) return { detail: 'no write-ahead log file to tear', file: null };
  const buf = readFileSync(join(dir, log.file));
  const recs = walRecords(buf);
  if (recs.length === 0) return { detail: `${log.file} holds no record to tear (${buf.length} bytes)`, file: null };
  let r: WalRecord;
  if (since === undefined) r = recs.at(-1)!;
  else if (since.file !== log.file) r = recs[0]!;
  else {
    const later = recs.find((x) => x.start >= since.size);
    if (!later) return { detail: `${log.file}: nothing written after byte ${since.size} to tear`, file: null };
    r = later;
  }
  // inside the record: past its first header, before its end
  const cut = r.start + HEADER + rng.int(1, Math.max(2, r.end - r.start - HEADER));
  const dropped = recs.filter((x) => x.start >= r.start).length;
  truncateSync(join(dir, log.file), Math.min(cut, r.end - 1));
  return { detail: `${log.file} cut at byte ${Math.min(cut, r.end - 1)} of ${buf.length}, inside the record at ${r.start}: ${dropped} write batch(es) lost`, file: log.file };
}

/** Flip one bit of a table file (`table`) or inside a record of a log file (`log`). */
export function flipBit(dir: string, rng: Rng, where: 'table' | 'log'): Surgery {
  const files = readdirSync(dir).filter((f) => (where === 'table' ? /^\d+\.(ldb|sst)$/.test(f) : /^\d+\.log$/.test(f)));
  const sized = files.map((f) => ({ f, size: statSync(join(dir, f)).size })).filter((x) => x.size > HEADER + 1);
  if (sized.length === 0) return { detail: `no ${where} file with data to damage`, file: null };
  const { f } = sized[rng.int(0, sized.length)]!;
  const path = join(dir, f);
  const buf = readFileSync(path);
  let at: number;
  if (where === 'log') {
    const recs = walRecords(buf);
    if (recs.length === 0) return { detail: `${f} holds no record to damage`, file: null };
    const r = recs[rng.int(0, recs.length)]!;
    at = rng.int(r.start, r.end);
  } else at = rng.int(0, buf.length);
  const bit = rng.int(0, 8);
  buf[at] = buf[at]! ^ (1 << bit);
  writeFileSync(path, buf);
  return { detail: `${f}: bit ${bit} of byte ${at} (of ${buf.length}) flipped`, file: f };
}

/** Delete one of LevelDB's own files: a table, the newest log, the MANIFEST or CURRENT. */
export function removeFile(dir: string, rng: Rng): Surgery {
  const all = readdirSync(dir);
  const candidates = [
    ...all.filter((f) => /^\d+\.(ldb|sst)$/.test(f)),
    ...logFiles(dir).slice(-1),
    ...all.filter((f) => /^MANIFEST-\d+$/.test(f)),
    ...all.filter((f) => f === 'CURRENT'),
  ];
  if (candidates.length === 0) return { detail: 'no LevelDB file to delete', file: null };
  const f = candidates[rng.int(0, candidates.length)]!;
  const size = statSync(join(dir, f)).size;
  unlinkSync(join(dir, f));
  return { detail: `${f} (${size} bytes) deleted`, file: f };
}
