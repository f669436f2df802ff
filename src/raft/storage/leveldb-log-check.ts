// LevelDB's paranoid check of its write-ahead log, done before LevelDB opens the directory
// (docs/storage.md "What LevelDB does with a damaged file"). classic-level never turns on
// `paranoid_checks`, so LevelDB's recovery skips a log record whose checksum fails — and
// the rest of its 32 KiB block with it — then deletes the log once recovered: entries are
// lost and the evidence with them. When the damaged record is the directory's first
// write (a young node: everything in one block), the database comes back EMPTY and would
// be taken for a fresh directory. So every log file is read here first, record by record,
// with LevelDB's own checksum; a damaged one refuses the open, naming the file and offset.
//
// The format (leveldb doc/log_format.md): 32 KiB blocks of physical records, each
// `masked crc32c of (type, data): u32 LE | length: u16 LE | type: u8 | data`; a block's
// last < 7 bytes are zero padding. A record cut short at the end of the file is a write
// that never finished (LevelDB ignores it too), not damage.
//
// The same record format holds the MANIFEST, whose edits name the write-ahead log that is
// current (`log_number`). LevelDB replays only the logs it finds on disk, so a deleted
// current log goes unnoticed: its writes are simply gone and a young node's database
// comes back empty. currentLogMissing reads the MANIFEST's last log number and refuses
// the open when that log is not there (found by jepsen-lite's `corrupt-missing-file`).
import { access, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32c } from '@node-rs/crc32';

const BLOCK = 32 * 1024;
const HEADER = 7;
const MASK_DELTA = 0xa282ead8;

/** LevelDB's Unmask (util/crc32c.h): the stored checksum is rotated and offset */
function unmask(masked: number): number {
  const rot = (masked - MASK_DELTA) >>> 0;
  return ((rot >>> 17) | (rot << 15)) >>> 0;
}

type RecordStep = { offset: number; type: number; data: Buffer } | { offset: number; damage: string };

/** the physical records of a log-format file, in order; stops at the first damaged one
 *  (yielded with `damage`) or at a record cut short at the end of the file */
function* physicalRecords(buf: Uint8Array): Generator<RecordStep> {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = 0;
  while (pos < b.length) {
    const left = BLOCK - (pos % BLOCK);
    if (left < HEADER) {
      pos += left; // trailer padding
      continue;
    }
    if (pos + HEADER > b.length) return; // a header cut short by a crash: the end
    const length = b.readUInt16LE(pos + 4);
    const type = b[pos + 6]!;
    if (type === 0 && length === 0) {
      pos += left; // the zero-filled rest of a block
      continue;
    }
    const end = pos + HEADER + length;
    if (end > b.length) return; // a record cut short at the end of the file: an unfinished write
    if (HEADER + length > left) {
      yield { offset: pos, damage: `a record length of ${length} runs past its block` };
      return;
    }
    if (type < 1 || type > 4) {
      yield { offset: pos, damage: `unknown record type ${type}` };
      return;
    }
    const want = unmask(b.readUInt32LE(pos));
    if (crc32c(b.subarray(pos + 6, end)) !== want) {
      yield { offset: pos, damage: 'checksum mismatch' };
      return;
    }
    yield { offset: pos, type, data: b.subarray(pos + HEADER, end) };
    pos = end;
  }
}

/** the first damaged record of a log file's bytes: its offset and why, or null */
export function damagedRecord(buf: Uint8Array): { offset: number; why: string } | null {
  for (const r of physicalRecords(buf)) if ('damage' in r) return { offset: r.offset, why: r.damage };
  return null;
}

// record types (leveldb db/log_format.h): a logical record is FULL, or FIRST MIDDLE* LAST
const FULL = 1;
const FIRST = 2;
const LAST = 4;

/** the logical records (fragments joined) of an undamaged log-format file */
function* logicalRecords(buf: Uint8Array): Generator<Buffer> {
  let parts: Buffer[] | null = null;
  for (const r of physicalRecords(buf)) {
    if ('damage' in r) return;
    if (r.type === FULL) yield r.data;
    else if (r.type === FIRST) parts = [r.data];
    else if (parts !== null) {
      parts.push(r.data);
      if (r.type === LAST) {
        yield Buffer.concat(parts);
        parts = null;
      }
    }
  }
}

/** a varint32/64 at `pos` (values here stay far below 2^53) */
function varint(b: Buffer, pos: number): { value: number; next: number } {
  let value = 0;
  let mul = 1;
  for (let i = pos; i < b.length && i < pos + 10; i++) {
    value += (b[i]! & 0x7f) * mul;
    if ((b[i]! & 0x80) === 0) return { value, next: i + 1 };
    mul *= 128;
  }
  throw new Error(`bad varint at byte ${pos}`);
}

/**
 * The log number of the last VersionEdit of a MANIFEST that sets one (leveldb
 * db/version_edit.cc: tag 2 = kLogNumber), or null. Tags whose layout this reader does
 * not know end the walk of that edit; an edit never puts one before its log number in
 * practice, and null only means "not checked".
 */
export function manifestLogNumber(buf: Uint8Array): number | null {
  let found: number | null = null;
  for (const edit of logicalRecords(buf)) {
    let pos = 0;
    try {
      while (pos < edit.length) {
        const tag = varint(edit, pos);
        pos = tag.next;
        const skipVarints = (n: number): void => {
          for (let i = 0; i < n; i++) pos = varint(edit, pos).next;
        };
        const skipSlice = (): void => {
          const len = varint(edit, pos);
          pos = len.next + len.value;
        };
        switch (tag.value) {
          case 1: skipSlice(); break; // comparator
          case 2: { const v = varint(edit, pos); found = v.value; pos = v.next; break; } // log number
          case 3: case 4: case 9: skipVarints(1); break; // next file, last sequence, prev log
          case 5: skipVarints(1); skipSlice(); break; // compact pointer: level, key
          case 6: skipVarints(2); break; // deleted file: level, number
          case 7: skipVarints(3); skipSlice(); skipSlice(); break; // new file: level, number, size, keys
          default: pos = edit.length;
        }
      }
    } catch {
      // a malformed edit: LevelDB's own open reports it
    }
  }
  return found;
}

/**
 * The current write-ahead log's file name when the MANIFEST (through CURRENT) names one
 * that is not in `dir`, else null. Missing CURRENT or MANIFEST files are reported
 * elsewhere (level-storage.ts), so they return null here.
 */
export async function currentLogMissing(dir: string): Promise<string | null> {
  let manifest: Buffer;
  try {
    const current = (await readFile(join(dir, 'CURRENT'), 'latin1')).trim();
    if (!/^MANIFEST-\d+$/.test(current)) return null;
    manifest = await readFile(join(dir, current));
  } catch {
    return null;
  }
  const n = manifestLogNumber(manifest);
  if (n === null || n === 0) return null;
  const name = `${String(n).padStart(6, '0')}.log`;
  try {
    await access(join(dir, name));
    return null;
  } catch {
    return name;
  }
}

/** Every write-ahead log file of `dir` with a damaged record: `NNNNNN.log at byte N (why)`. */
export async function damagedLogs(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const f of (await readdir(dir)).filter((x) => /^\d+\.log$/.test(x)).sort()) {
    const d = damagedRecord(await readFile(join(dir, f)));
    if (d !== null) out.push(`${f} at byte ${d.offset} (${d.why})`);
  }
  return out;
}
