// Shared by the storage tests and the crash child: temp dirs, a generator of random but
// Raft-valid storage writes, and a comparable dump of a storage's whole state.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Rng } from '../../../src/raft/core/rng.js';
import { MemoryStorage } from '../../../src/raft/core/storage.js';
import type { PersistBatch, Storage } from '../../../src/raft/core/storage.js';
import type { ConfState, Entry, EntryKind, HardState, Snapshot } from '../../../src/raft/core/types.js';

export const SEED_CONF: ConfState = { voters: ['n1', 'n2', 'n3'], learners: [] };

export type ReadableStorage = Storage & { hardState(): HardState };

/** a fresh temp dir; removed by the returned function (call it from t.after / finally) */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `raftlock-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function bytes(rng: Rng, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = rng.int(0, 256);
  return b;
}

export function entry(index: number, term: number, data: string | Uint8Array = `e${index}`, kind: EntryKind = 'normal'): Entry {
  return { index, term, kind, data: typeof data === 'string' ? new TextEncoder().encode(data) : data };
}

export function snapshotAt(index: number, term: number, data = `snap@${index}`, conf: ConfState = SEED_CONF): Snapshot {
  return { meta: { index, term, conf }, data: new TextEncoder().encode(data) };
}

export type Op = { kind: 'save'; batch: PersistBatch; sync: boolean } | { kind: 'compact'; snapshot: Snapshot };

const KINDS: EntryKind[] = ['normal', 'normal', 'normal', 'noop', 'conf'];
const VOTES = ['n1', 'n2', 'n3', null];

/** A random write that a correct Raft node could issue in this state: terms never go
 *  back, a vote changes only with the term, only entries above commit are truncated,
 *  compaction stays at or below commit, an installed snapshot lies above commit. */
export function genOp(rng: Rng, s: ReadableStorage, syncRatio = 1): Op {
  const hs = s.hardState();
  const snapIndex = s.snapshot().meta.index;
  const last = s.lastIndex();
  const sync = rng.next() < syncRatio;
  const r = rng.next();
  if (r < 0.55) {
    const truncate = last > hs.commit && rng.next() < 0.25;
    const start = truncate ? rng.int(hs.commit + 1, last + 1) : last + 1;
    const bump = truncate || rng.next() < 0.1;
    const term = bump ? hs.term + 1 : Math.max(hs.term, 1);
    const vote = bump ? VOTES[rng.int(0, VOTES.length)]! : hs.vote;
    const n = rng.int(1, 17);
    const entries = Array.from({ length: n }, (_, k) => entry(start + k, term, bytes(rng, rng.int(0, 200)), KINDS[rng.int(0, KINDS.length)]));
    const newLast = start + n - 1;
    const commit = rng.next() < 0.6 ? rng.int(hs.commit, newLast + 1) : hs.commit;
    return { kind: 'save', sync, batch: { hardState: { term, vote, commit }, entries } };
  }
  if (r < 0.75) {
    const hardState = rng.next() < 0.5
      ? { term: hs.term + 1, vote: VOTES[rng.int(0, VOTES.length)]!, commit: hs.commit }
      : { ...hs, commit: rng.int(hs.commit, last + 1) };
    return { kind: 'save', sync, batch: { hardState, entries: [] } };
  }
  if (r < 0.9 && hs.commit > snapIndex) {
    const idx = rng.int(snapIndex + 1, hs.commit + 1);
    return { kind: 'compact', snapshot: { meta: { index: idx, term: s.term(idx)!, conf: SEED_CONF }, data: bytes(rng, rng.int(0, 1000)) } };
  }
  // a snapshot from the leader, above our commit; it may agree with our log or not
  const idx = rng.int(hs.commit + 1, last + 4);
  const cur = s.term(idx);
  const snapTerm = cur !== undefined && rng.next() < 0.5 ? cur : Math.max(hs.term, 1);
  const term = Math.max(hs.term, snapTerm);
  const snapshot: Snapshot = { meta: { index: idx, term: snapTerm, conf: SEED_CONF }, data: bytes(rng, rng.int(0, 1000)) };
  const entries = rng.next() < 0.5 ? Array.from({ length: rng.int(1, 5) }, (_, k) => entry(idx + 1 + k, term, bytes(rng, 50))) : [];
  const hardState = rng.next() < 0.7 || term > hs.term ? { term, vote: hs.vote, commit: hs.commit } : undefined;
  return { kind: 'save', sync, batch: { ...(hardState ? { hardState } : {}), snapshot, entries } };
}

export interface StateDump {
  hardState: HardState;
  snapshot: { index: number; term: number; conf: ConfState; data: string };
  firstIndex: number;
  lastIndex: number;
  entries: { index: number; term: number; kind: EntryKind; data: string }[];
}

export function dump(s: ReadableStorage): StateDump {
  const snap = s.snapshot();
  return {
    hardState: s.hardState(),
    snapshot: { index: snap.meta.index, term: snap.meta.term, conf: snap.meta.conf, data: hex(snap.data) },
    firstIndex: s.firstIndex(),
    lastIndex: s.lastIndex(),
    entries: s.entries(s.firstIndex(), s.lastIndex() + 1).map((e) => ({ index: e.index, term: e.term, kind: e.kind, data: hex(e.data) })),
  };
}

export function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');
}

function unhex(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'hex'));
}

/** JSON with byte arrays as {"$hex": "..."}: how the crash child reports its writes */
export function opToJson(op: Op): string {
  return JSON.stringify(op, (_k, v: unknown) => (v instanceof Uint8Array ? { $hex: hex(v) } : v));
}

export function opFromJson(json: unknown): Op {
  return JSON.parse(JSON.stringify(json), (_k, v: unknown) => {
    if (v !== null && typeof v === 'object' && '$hex' in v) return unhex((v as { $hex: string }).$hex);
    return v;
  }) as Op;
}

/** an independent copy of a MemoryStorage (entries are immutable, so they are shared) */
export function cloneMemory(m: MemoryStorage): MemoryStorage {
  const snap = m.snapshot();
  const c = new MemoryStorage(snap.meta.conf);
  if (snap.meta.index > 0) c.applySnapshot(snap);
  c.setHardState(m.hardState());
  c.append(m.entries(m.firstIndex(), m.lastIndex() + 1));
  return c;
}

export function applyOp(m: MemoryStorage, op: Op): void {
  if (op.kind === 'save') m.applyBatch(op.batch);
  else m.compact(op.snapshot);
}
