// The core reads its durable log through this synchronous interface. Durable adapters
// (LevelStorage, the in-memory MemoryDurableStorage) keep the log tail in memory and serve reads
// from it, so the core never awaits (docs/architecture.md "Rules", "The big adaptation from Go").
import { assertStorage } from '../../assert.js';
import type { ConfState, Entry, HardState, Index, Snapshot, Term } from './types.js';

export interface Storage {
  /** hard state and the membership of the latest snapshot, as they were at open */
  initialState(): { hardState: HardState; conf: ConfState };
  /** entries in [lo, hi). Requires firstIndex() <= lo <= hi <= lastIndex() + 1.
   *  With maxBytes, returns a prefix whose data totals at most maxBytes, but always at
   *  least one entry when lo < hi. */
  entries(lo: Index, hi: Index, maxBytes?: number): Entry[];
  /** term of entry i for firstIndex() - 1 <= i <= lastIndex() (firstIndex() - 1 is the
   *  snapshot's index); undefined outside that range (compacted or not yet written) */
  term(i: Index): Term | undefined;
  /** first index still in the log: snapshot index + 1 */
  firstIndex(): Index;
  /** last index in the log, or the snapshot index when the log is empty */
  lastIndex(): Index;
  /** the latest snapshot (index 0 term 0 with empty data when none was taken yet) */
  snapshot(): Snapshot;
}

/** What one Ready asks to persist, as one atomic write (see Ready, step 2). */
export interface PersistBatch {
  hardState?: HardState;
  snapshot?: Snapshot;
  entries: readonly Entry[];
}

/** re-exported for the storages outside the core (they import it from here) */
export { StorageAssertionError } from '../../assert.js';

export const emptySnapshot = (conf: ConfState = { voters: [], learners: [] }): Snapshot => ({
  meta: { index: 0, term: 0, conf },
  data: new Uint8Array(0),
});

/**
 * In-memory Storage: the simulator's and the tests' twin of LevelStorage, and the
 * in-memory tail that durable adapters build on. Invariant: ents[k].index === snap.meta.index + 1 + k.
 */
export class MemoryStorage implements Storage {
  private hard: HardState = { term: 0, vote: null, commit: 0 };
  private snap: Snapshot;
  private ents: Entry[] = [];

  constructor(conf: ConfState = { voters: [], learners: [] }) {
    this.snap = emptySnapshot(conf);
  }

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: { ...this.hard }, conf: cloneConf(this.snap.meta.conf) };
  }
  hardState(): HardState {
    return { ...this.hard };
  }
  firstIndex(): Index {
    return this.snap.meta.index + 1;
  }
  lastIndex(): Index {
    return this.snap.meta.index + this.ents.length;
  }
  term(i: Index): Term | undefined {
    const offset = this.snap.meta.index;
    if (i === offset) return this.snap.meta.term;
    if (i < offset || i > this.lastIndex()) return undefined;
    return this.ents[i - offset - 1]!.term;
  }
  entries(lo: Index, hi: Index, maxBytes?: number): Entry[] {
    assertStorage(lo >= this.firstIndex() && lo <= hi && hi <= this.lastIndex() + 1, `entries(${lo}, ${hi}) outside [${this.firstIndex()}, ${this.lastIndex() + 1}]`);
    const offset = this.snap.meta.index + 1;
    const out = this.ents.slice(lo - offset, hi - offset);
    if (maxBytes === undefined) return out;
    let bytes = 0;
    for (let k = 0; k < out.length; k++) {
      bytes += out[k]!.data.length + 24;
      if (bytes > maxBytes && k > 0) return out.slice(0, k);
    }
    return out;
  }
  snapshot(): Snapshot {
    return this.snap;
  }

  setHardState(hs: HardState): void {
    this.hard = { ...hs };
  }

  /** append, first truncating every entry with index >= entries[0].index */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = entries[0]!.index;
    assertStorage(first > this.snap.meta.index, `append at ${first} overwrites snapshot ${this.snap.meta.index}`);
    assertStorage(first <= this.lastIndex() + 1, `append at ${first} leaves a gap after ${this.lastIndex()}`);
    for (let k = 1; k < entries.length; k++) {
      assertStorage(entries[k]!.index === first + k, 'appended entries are not contiguous');
    }
    const last = entries[entries.length - 1]!;
    this.ents.length = first - this.snap.meta.index - 1;
    for (const e of entries) this.ents.push(e);
    // postcondition: the log ends exactly with what was appended (the truncation and the
    // append are one write)
    assertStorage(this.lastIndex() === last.index && this.term(last.index) === last.term, `append up to ${last.index} left the log ending at ${this.lastIndex()}`);
  }

  /** install a snapshot received from the leader: the log is replaced, except for any
   *  suffix that provably agrees with the snapshot (same term at its index) */
  applySnapshot(s: Snapshot): void {
    const idx = s.meta.index;
    if (idx <= this.snap.meta.index) return;
    const keep = this.term(idx) === s.meta.term ? this.ents.slice(idx - this.snap.meta.index) : [];
    this.snap = s;
    this.ents = keep;
    if (this.hard.commit < idx) this.hard = { term: this.hard.term, vote: this.hard.vote, commit: idx };
    // postcondition: the log starts right after the snapshot, which is committed
    assertStorage(this.firstIndex() === idx + 1 && this.term(idx) === s.meta.term && this.hard.commit >= idx, `snapshot ${idx} installed but the log starts at ${this.firstIndex()}`);
  }

  /** record an application snapshot taken at s.meta.index and drop entries <= it */
  compact(s: Snapshot): void {
    const idx = s.meta.index;
    if (idx <= this.snap.meta.index) return;
    assertStorage(idx <= this.lastIndex(), `compact(${idx}) beyond last index ${this.lastIndex()}`);
    assertStorage(this.term(idx) === s.meta.term, `compact(${idx}): snapshot term ${s.meta.term} != log term ${this.term(idx)}`);
    const last = this.lastIndex();
    this.ents = this.ents.slice(idx - this.snap.meta.index);
    this.snap = s;
    // postcondition, paired with the precondition: only the prefix went, the tail is intact
    assertStorage(this.firstIndex() === idx + 1 && this.lastIndex() === last, `compact(${idx}) changed the log's end (${last} -> ${this.lastIndex()})`);
  }

  /** A MemoryStorage holding exactly this state (what a durable adapter loaded at open). */
  static from(state: { hardState: HardState; snapshot: Snapshot; entries: readonly Entry[] }): MemoryStorage {
    const m = new MemoryStorage(state.snapshot.meta.conf);
    if (state.snapshot.meta.index > 0) m.applySnapshot(state.snapshot);
    m.setHardState(state.hardState);
    m.append(state.entries);
    return m;
  }

  /** A MemoryStorage holding a copy of what `s` holds now (hard state, snapshot, log). */
  static copyOf(s: Storage): MemoryStorage {
    return MemoryStorage.from({ hardState: s.initialState().hardState, snapshot: s.snapshot(), entries: s.entries(s.firstIndex(), s.lastIndex() + 1) });
  }

  /** apply one persisted batch in Ready order (hard state, snapshot, entries) */
  applyBatch(b: PersistBatch): void {
    if (b.hardState) this.setHardState(b.hardState);
    if (b.snapshot) this.applySnapshot(b.snapshot);
    this.append(b.entries);
  }
}

export function cloneConf(c: ConfState): ConfState {
  return {
    voters: [...c.voters], learners: [...c.learners],
    ...(c.incarnations !== undefined ? { incarnations: { ...c.incarnations } } : {}),
    ...(c.clusterId !== undefined ? { clusterId: c.clusterId } : {}),
  };
}

/**
 * The read side every durable adapter shares: reads are served by an in-memory
 * MemoryStorage that the adapter keeps equal to what it has written (an adapter that
 * models a crash replaces it with what survived: MemoryDurableStorage).
 */
export abstract class MemoryBackedStorage implements Storage {
  constructor(protected mem: MemoryStorage) {}

  initialState(): { hardState: HardState; conf: ConfState } {
    return this.mem.initialState();
  }
  entries(lo: Index, hi: Index, maxBytes?: number): Entry[] {
    return this.mem.entries(lo, hi, maxBytes);
  }
  term(i: Index): Term | undefined {
    return this.mem.term(i);
  }
  firstIndex(): Index {
    return this.mem.firstIndex();
  }
  lastIndex(): Index {
    return this.mem.lastIndex();
  }
  snapshot(): Snapshot {
    return this.mem.snapshot();
  }
  hardState(): HardState {
    return this.mem.hardState();
  }
}
