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
import { readdir, readFile } from 'node:fs/promises';
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

/** the first damaged record of a log file's bytes: its offset and why, or null */
export function damagedRecord(buf: Uint8Array): { offset: number; why: string } | null {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = 0;
  while (pos < b.length) {
    const left = BLOCK - (pos % BLOCK);
    if (left < HEADER) {
      pos += left; // trailer padding
      continue;
    }
    if (pos + HEADER > b.length) return null; // a header cut short by a crash: the end
    const length = b.readUInt16LE(pos + 4);
    const type = b[pos + 6]!;
    if (type === 0 && length === 0) {
      pos += left; // the zero-filled rest of a block
      continue;
    }
    const end = pos + HEADER + length;
    if (end > b.length) return null; // a record cut short at the end of the file: an unfinished write
    if (HEADER + length > left) return { offset: pos, why: `a record length of ${length} runs past its block` };
    if (type < 1 || type > 4) return { offset: pos, why: `unknown record type ${type}` };
    const want = unmask(b.readUInt32LE(pos));
    if (crc32c(b.subarray(pos + 6, end)) !== want) return { offset: pos, why: 'checksum mismatch' };
    pos = end;
  }
  return null;
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
