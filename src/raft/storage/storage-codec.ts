// On-disk encoding of LevelStorage records (docs/storage.md, "Layout").
//
// Keys iterate in log order because LevelDB sorts bytewise:
//   'e' + 8-byte big-endian index → a log segment: the entries of ONE write, from that index
//   'h' → HardState     's' → Snapshot (meta + FSM bytes)     'v' → storage format version
// h, s and v are framed as [CRC32C of payload: 4 bytes BE][msgpack payload]. A segment is a
// fixed binary layout (below) in which every entry carries its own CRC32C. Either way a
// flipped bit anywhere is caught on open instead of being applied (LevelDB's own block
// checksums only cover what LevelDB itself wrote, and are off on reads by default).
//
// Why segments and not one key per entry (format 1): a LevelDB put and a msgpack frame per
// entry cost ~2.4 µs of CPU each, so on a disk whose fsync takes 0.2–0.3 ms a 256-entry
// batch cost 3–4× a single-entry one. One put per write and a hand-laid record per entry
// (~0.35 µs) make batching nearly free, which is the point of group commit.
import { crc32c } from '@node-rs/crc32';
import { Packr } from 'msgpackr';
import { MAX_OWN_INCARNATION_LENGTH, validOwnIncarnation } from '../core/conf.js';
import type { ConfState, Entry, EntryKind, HardState, Snapshot } from '../core/types.js';

export const STORAGE_FORMAT_VERSION = 2;

export const KEY_HARD_STATE = Buffer.from('h');
export const KEY_SNAPSHOT = Buffer.from('s');
export const KEY_VERSION = Buffer.from('v');
/** this data directory's incarnation (docs/membership.md, "Incarnations"); added after
 *  format 2 without a version bump: older code reads only h, s, v and the entries, and a
 *  directory without it gets one at its next open */
export const KEY_INCARNATION = Buffer.from('i');
const ENTRY_PREFIX = 0x65; // 'e'
/** smallest key after every entry key: 'f' */
export const ENTRY_KEY_END = Buffer.from('f');
export const ENTRY_KEY_START = Buffer.from([ENTRY_PREFIX]);

// Explicit options: plain arrays and bin, no record extension or shared structures, so the
// bytes depend on nothing but the value (a record written today decodes in any later
// process, with no structure table to lose).
const packr = new Packr({
  useRecords: false,
  moreTypes: false,
  structuredClone: false,
  bundleStrings: false,
  mapsAsObjects: true,
  encodeUndefinedAsNil: false,
  int64AsType: 'number',
  copyBuffers: false,
});

export function entryKey(index: number): Buffer {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`entry index ${index} is not a non-negative safe integer`);
  const key = Buffer.allocUnsafe(9);
  key[0] = ENTRY_PREFIX;
  key.writeUInt32BE(Math.floor(index / 2 ** 32), 1);
  key.writeUInt32BE(index % 2 ** 32, 5);
  return key;
}

/** index of an entry key, or undefined if `key` is not one */
export function entryKeyIndex(key: Uint8Array): number | undefined {
  if (key.length !== 9 || key[0] !== ENTRY_PREFIX) return undefined;
  const b = Buffer.from(key.buffer, key.byteOffset, key.length);
  return b.readUInt32BE(1) * 2 ** 32 + b.readUInt32BE(5);
}

/** Why a record failed to decode; the caller adds where (which directory). `index` names
 *  the log entry concerned, when the record is a segment. */
export class RecordError extends Error {
  constructor(message: string, readonly index?: number) {
    super(message);
  }
}

function frame(payload: unknown): Buffer {
  const body = packr.pack(payload);
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32BE(crc32c(body), 0);
  body.copy(out, 4);
  return out;
}

function unframe(value: Uint8Array): unknown {
  if (value.length < 5) throw new RecordError(`record of ${value.length} bytes is too short`);
  const buf = Buffer.from(value.buffer, value.byteOffset, value.length);
  const body = buf.subarray(4);
  if (buf.readUInt32BE(0) !== crc32c(body)) throw new RecordError('checksum mismatch');
  try {
    return packr.unpack(body);
  } catch (err) {
    throw new RecordError(`undecodable payload (${(err as Error).message})`);
  }
}

const KIND_CODES: Record<EntryKind, number> = { normal: 0, noop: 1, conf: 2 };
const KINDS: readonly EntryKind[] = ['normal', 'noop', 'conf'];

// Segment layout (all integers big-endian):
//   [count: u32] then `count` entry records, each
//   [crc: u32][index: u64][term: u64][kind: u8][length: u32][data: length bytes]
// where crc is the CRC32C of everything in the record after it. Indexes are consecutive
// from the segment's key; the loader checks that, the count, and that nothing trails.
const SEGMENT_HEADER = 4;
const RECORD_HEADER = 25;
/** a write with more entries is split into several segments, so that rewriting one (after
 *  a conflict or a compaction inside it) stays cheap */
export const SEGMENT_MAX_ENTRIES = 1024;

function writeU64(buf: Buffer, value: number, at: number): void {
  // value is a safe integer (Entry's contract): `>>> 0` is exactly value mod 2^32
  const lo = value >>> 0;
  buf.writeUInt32BE((value - lo) / 2 ** 32, at);
  buf.writeUInt32BE(lo, at + 4);
}

function readU64(buf: Buffer, at: number): number {
  return buf.readUInt32BE(at) * 2 ** 32 + buf.readUInt32BE(at + 4);
}

/** entries[from, to) as one segment; they must be consecutive (the caller checked) */
export function encodeSegment(entries: readonly Entry[], from = 0, to = entries.length): Buffer {
  let size = SEGMENT_HEADER;
  for (let k = from; k < to; k++) size += RECORD_HEADER + entries[k]!.data.length;
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32BE(to - from, 0);
  let at = SEGMENT_HEADER;
  for (let k = from; k < to; k++) {
    const e = entries[k]!;
    const start = at;
    writeU64(out, e.index, at + 4);
    writeU64(out, e.term, at + 12);
    out[at + 20] = KIND_CODES[e.kind];
    out.writeUInt32BE(e.data.length, at + 21);
    out.set(e.data, at + RECORD_HEADER);
    at += RECORD_HEADER + e.data.length;
    out.writeUInt32BE(crc32c(out.subarray(start + 4, at)), start);
  }
  return out;
}

/** the entries of the segment stored under `firstIndex`; throws RecordError naming the
 *  first entry that is damaged. Entry data are views into `value`, not copies. */
export function decodeSegment(firstIndex: number, value: Uint8Array): Entry[] {
  const buf = Buffer.from(value.buffer, value.byteOffset, value.length);
  if (buf.length < SEGMENT_HEADER + RECORD_HEADER) throw new RecordError(`entry ${firstIndex} record of ${buf.length} bytes is too short`, firstIndex);
  const count = buf.readUInt32BE(0);
  const out: Entry[] = [];
  let at = SEGMENT_HEADER;
  for (let k = 0; k < count; k++) {
    const expected = firstIndex + k;
    const fail = (what: string): never => {
      throw new RecordError(`entry ${expected} ${what}`, expected);
    };
    if (at + RECORD_HEADER > buf.length) fail(`is cut short (its write holds ${k} of ${count} entries, ${buf.length} bytes)`);
    const length = buf.readUInt32BE(at + 21);
    const end = at + RECORD_HEADER + length;
    if (end > buf.length) fail(`is cut short (${length} data bytes announced, ${buf.length - at - RECORD_HEADER} present)`);
    if (buf.readUInt32BE(at) !== crc32c(buf.subarray(at + 4, end))) fail('checksum mismatch');
    const index = readU64(buf, at + 4);
    const term = readU64(buf, at + 12);
    const kind = KINDS[buf[at + 20]!];
    if (!Number.isSafeInteger(index) || !Number.isSafeInteger(term)) fail('index/term not safe integers');
    if (kind === undefined) fail(`has unknown kind ${buf[at + 20]}`);
    if (index !== expected) fail(`is stored under the wrong key (it says index ${index})`);
    out.push({ index, term, kind: kind!, data: new Uint8Array(buf.buffer, buf.byteOffset + at + RECORD_HEADER, length) });
    at = end;
  }
  if (at !== buf.length) throw new RecordError(`entry ${firstIndex}'s write has ${buf.length - at} bytes of garbage after its ${count} entries`, firstIndex);
  return out;
}

export function encodeHardState(hs: HardState): Buffer {
  return frame([hs.term, hs.vote, hs.commit]);
}

export function decodeHardState(value: Uint8Array): HardState {
  const v = unframe(value);
  if (!Array.isArray(v) || v.length !== 3) throw new RecordError('hard state is not a 3-tuple');
  const [term, vote, commit] = v as unknown[];
  if (!isIndex(term) || !isIndex(commit)) throw new RecordError('hard state term/commit not non-negative integers');
  if (vote !== null && typeof vote !== 'string') throw new RecordError('hard state vote is neither null nor a node id');
  return { term, vote, commit };
}

export function encodeSnapshot(s: Snapshot): Buffer {
  const { index, term, conf } = s.meta;
  // a conf without incarnations keeps the 5-tuple older versions wrote and read
  const bound = conf.incarnations !== undefined || conf.clusterId !== undefined;
  const out = frame(bound ? [index, term, conf.voters, conf.learners, s.data, conf.incarnations ?? null, conf.clusterId ?? null] : [index, term, conf.voters, conf.learners, s.data]);
  // msgpackr keeps ONE module-level working buffer at the largest size it ever needed;
  // frame() copied the bytes out, so hand it a small one again (else a 9 MiB snapshot pins
  // ~19-30 MiB for the life of the process: heap snapshots, 100,000 sessions)
  packr.useBuffer(Buffer.allocUnsafeSlow(8192));
  return out;
}

export function decodeSnapshot(value: Uint8Array): Snapshot {
  const v = unframe(value);
  if (!Array.isArray(v) || (v.length !== 5 && v.length !== 7)) throw new RecordError('snapshot is not a 5- or 7-tuple');
  const [index, term, voters, learners, data, incarnations, clusterId] = v as unknown[];
  if (!isIndex(index) || !isIndex(term)) throw new RecordError('snapshot index/term not non-negative integers');
  if (!isIdList(voters) || !isIdList(learners)) throw new RecordError('snapshot membership is not two lists of node ids');
  if (!(data instanceof Uint8Array)) throw new RecordError('snapshot data is not bytes');
  const conf: ConfState = { voters, learners };
  if (incarnations !== undefined && incarnations !== null) {
    if (typeof incarnations !== 'object' || Array.isArray(incarnations) || !Object.values(incarnations).every((x) => typeof x === 'string')) throw new RecordError('snapshot incarnations are not a map of strings');
    conf.incarnations = { ...(incarnations as Record<string, string>) };
  }
  if (clusterId !== undefined && clusterId !== null) {
    if (typeof clusterId !== 'string') throw new RecordError('snapshot cluster id is not a string');
    conf.clusterId = clusterId;
  }
  return { meta: { index, term, conf }, data: plainBytes(data) };
}

export function encodeIncarnation(inc: string): Buffer {
  return frame(inc);
}

export function decodeIncarnation(value: Uint8Array): string {
  const v = unframe(value);
  if (!validOwnIncarnation(v)) throw new RecordError(`incarnation is not a token of 1-${MAX_OWN_INCARNATION_LENGTH} characters`);
  return v;
}

export function encodeVersion(version: number): Buffer {
  return frame(version);
}

export function decodeVersion(value: Uint8Array): unknown {
  return unframe(value);
}

function isIndex(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

function isIdList(x: unknown): x is string[] {
  return Array.isArray(x) && x.every((id) => typeof id === 'string');
}

/** msgpackr hands out Buffers; the core's types promise plain Uint8Array (deepEqual
 *  against a Uint8Array must hold), so expose the same bytes through a plain view. */
function plainBytes(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}
