// On-disk encoding of LevelStorage records (docs/storage.md, "Layout").
//
// Keys iterate in log order because LevelDB sorts bytewise:
//   'e' + 8-byte big-endian index → Entry      'h' → HardState
//   's' → Snapshot (meta + FSM bytes)           'v' → storage format version
// Every value is framed as [CRC32C of payload: 4 bytes BE][msgpack payload], so a flipped
// bit anywhere in a record is caught on open instead of being applied (LevelDB's own
// block checksums only cover what LevelDB itself wrote, and are off on reads by default).
import { crc32c } from '@node-rs/crc32';
import { Packr } from 'msgpackr';
import type { ConfState, Entry, EntryKind, HardState, Snapshot } from './core/types.js';

export const STORAGE_FORMAT_VERSION = 1;

export const KEY_HARD_STATE = Buffer.from('h');
export const KEY_SNAPSHOT = Buffer.from('s');
export const KEY_VERSION = Buffer.from('v');
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

/** Why a record failed to decode; the caller adds where (which key, which directory). */
export class RecordError extends Error {}

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

export function encodeEntry(e: Entry): Buffer {
  return frame([e.index, e.term, KIND_CODES[e.kind], e.data]);
}

export function decodeEntry(value: Uint8Array): Entry {
  const v = unframe(value);
  if (!Array.isArray(v) || v.length !== 4) throw new RecordError('entry is not a 4-tuple');
  const [index, term, kind, data] = v as unknown[];
  if (!isIndex(index) || !isIndex(term)) throw new RecordError('entry index/term not non-negative integers');
  const k = typeof kind === 'number' ? KINDS[kind] : undefined;
  if (k === undefined) throw new RecordError(`unknown entry kind ${String(kind)}`);
  if (!(data instanceof Uint8Array)) throw new RecordError('entry data is not bytes');
  return { index, term, kind: k, data: plainBytes(data) };
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
  return frame([index, term, conf.voters, conf.learners, s.data]);
}

export function decodeSnapshot(value: Uint8Array): Snapshot {
  const v = unframe(value);
  if (!Array.isArray(v) || v.length !== 5) throw new RecordError('snapshot is not a 5-tuple');
  const [index, term, voters, learners, data] = v as unknown[];
  if (!isIndex(index) || !isIndex(term)) throw new RecordError('snapshot index/term not non-negative integers');
  if (!isIdList(voters) || !isIdList(learners)) throw new RecordError('snapshot membership is not two lists of node ids');
  if (!(data instanceof Uint8Array)) throw new RecordError('snapshot data is not bytes');
  const conf: ConfState = { voters, learners };
  return { meta: { index, term, conf }, data: plainBytes(data) };
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
