// RaftLog: the durable log (Storage) plus the not-yet-durable tail (Unstable), and the
// commit/applied watermarks (etcd-io/raft log.go).
//
// Invariants: firstIndex() - 1 <= applied <= committed <= lastIndex().
import { Unstable } from './log-unstable.js';
import { assert } from '../../assert.js';
import type { Storage } from './storage.js';
import type { Entry, Index, Snapshot, Term } from './types.js';

/** bytes an entry counts for under maxMsgBytes; the +24 approximates its framing and
 *  matches MemoryStorage.entries(), so both halves of the log limit alike */
export function entrySize(e: Entry): number {
  return e.data.length + 24;
}

/** the longest prefix of ents whose sizes total at most maxBytes, but at least one entry */
export function limitSize(ents: Entry[], maxBytes: number): Entry[] {
  let bytes = 0;
  for (let k = 0; k < ents.length; k++) {
    bytes += entrySize(ents[k]!);
    if (bytes > maxBytes && k > 0) return ents.slice(0, k);
  }
  return ents;
}

export class RaftLog {
  readonly storage: Storage;
  readonly unstable: Unstable;
  /** highest index known committed (durable on a majority) */
  committed: Index;
  /** highest index the application reflects (acknowledged through advance) */
  applied: Index;

  constructor(storage: Storage, applied: Index) {
    this.storage = storage;
    this.unstable = new Unstable(storage.lastIndex() + 1);
    const hs = storage.initialState().hardState;
    const first = storage.firstIndex();
    this.committed = Math.max(hs.commit, first - 1);
    assert(this.committed <= storage.lastIndex(), `hardState.commit ${hs.commit} beyond stored last index ${storage.lastIndex()}`);
    // the application restored the snapshot at first-1, so it reflects at least that
    this.applied = Math.max(applied, first - 1);
    assert(this.applied <= this.committed, `applied ${applied} beyond commit ${this.committed}`);
  }

  firstIndex(): Index {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }
  lastIndex(): Index {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }
  lastTerm(): Term {
    const t = this.term(this.lastIndex());
    assert(t !== undefined, `no term for last index ${this.lastIndex()}`);
    return t;
  }
  /** term of entry i, or undefined when i is compacted or beyond the log */
  term(i: Index): Term | undefined {
    const u = this.unstable.maybeTerm(i);
    if (u !== undefined) return u;
    if (i < this.firstIndex() - 1 || i > this.lastIndex()) return undefined;
    if (i >= this.unstable.offset) return undefined;
    return this.storage.term(i);
  }
  matchTerm(i: Index, t: Term): boolean {
    const got = this.term(i);
    return got !== undefined && got === t;
  }

  /** §5.4.1 up-to-date check: compare last TERM first, then last index */
  isUpToDate(lastIndex: Index, lastTerm: Term): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Follower side of AppendEntries (§5.3): if our log holds (prevIndex, prevTerm), append
   * ents (dropping a conflicting suffix; `onTruncate(i)` hears that entries >= i go) and
   * return the index of the last new entry plus the entries actually appended.
   * Returns undefined when our log does not hold (prevIndex, prevTerm).
   */
  maybeAppend(prevIndex: Index, prevTerm: Term, ents: readonly Entry[], onTruncate: (from: Index) => void): { lastNew: Index; appended: readonly Entry[] } | undefined {
    if (!this.matchTerm(prevIndex, prevTerm)) return undefined;
    const lastNew = prevIndex + ents.length;
    const ci = this.findConflict(ents);
    if (ci === 0) return { lastNew, appended: [] };
    // §5.4: a committed entry is never overwritten; a leader asking for it is broken
    assert(ci > this.committed, `entry ${ci} conflicts with committed entry (committed ${this.committed})`);
    if (ci <= this.lastIndex()) onTruncate(ci);
    const appended = ents.slice(ci - ents[0]!.index);
    this.append(appended);
    return { lastNew, appended };
  }

  /** append at the end or over a suffix; returns the new last index */
  append(ents: readonly Entry[]): Index {
    if (ents.length === 0) return this.lastIndex();
    const after = ents[0]!.index - 1;
    assert(after >= this.committed, `append after ${after} would overwrite committed ${this.committed}`);
    assert(after <= this.lastIndex(), `append after ${after} leaves a gap after ${this.lastIndex()}`);
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  /** index of the first entry in ents whose term differs from ours (or that we lack), 0 if none */
  findConflict(ents: readonly Entry[]): Index {
    for (const e of ents) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * Fast back-tracking: the largest index <= index whose term is <= term. Every entry
   * above it has a higher term than `term`, so it cannot match an entry of term `term`
   * (log matching, §5.3). Returns the first index we know (firstIndex - 1) at worst.
   */
  findConflictByTerm(index: Index, term: Term): Index {
    let i = Math.min(index, this.lastIndex());
    for (; i >= this.firstIndex() - 1; i--) {
      const t = this.term(i);
      if (t === undefined || t <= term) return i;
    }
    return Math.max(i, 0);
  }

  /** entries in [lo, hi) totalling at most maxBytes (at least one); undefined if lo is compacted */
  slice(lo: Index, hi: Index, maxBytes = Infinity): Entry[] | undefined {
    if (lo >= hi) return [];
    if (lo < this.firstIndex()) return undefined;
    assert(hi <= this.lastIndex() + 1, `slice(${lo}, ${hi}) beyond last index ${this.lastIndex()}`);
    const off = this.unstable.offset;
    let out: Entry[] = [];
    if (lo < off) {
      out = this.storage.entries(lo, Math.min(hi, off), Number.isFinite(maxBytes) ? maxBytes : undefined);
      // storage may return fewer (size limit): then the unstable part is not needed
      if (out.length < Math.min(hi, off) - lo) return limitSize(out, maxBytes);
    }
    if (hi > off) out = out.concat(this.unstable.slice(Math.max(lo, off), hi));
    return limitSize(out, maxBytes);
  }

  /** committed entries the application has not been handed yet */
  nextCommittedEntries(maxBytes = Infinity): Entry[] {
    const lo = Math.max(this.applied + 1, this.firstIndex());
    const hi = this.committed + 1;
    if (lo >= hi) return [];
    const ents = this.slice(lo, hi, maxBytes);
    assert(ents !== undefined, `committed entries from ${lo} are compacted`);
    return ents;
  }
  hasNextCommittedEntries(): boolean {
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  commitTo(c: Index): boolean {
    if (c <= this.committed) return false;
    assert(c <= this.lastIndex(), `commitTo(${c}) beyond last index ${this.lastIndex()}`);
    this.committed = c;
    return true;
  }
  appliedTo(i: Index): void {
    if (i === 0) return;
    assert(i <= this.committed && i >= this.applied, `appliedTo(${i}) outside [applied ${this.applied}, committed ${this.committed}]`);
    this.applied = i;
  }

  /** replace the whole log with an incoming snapshot (follower side, §7) */
  restore(s: Snapshot): void {
    this.committed = s.meta.index;
    this.unstable.restore(s);
  }

  /** the snapshot to send a follower that needs compacted entries */
  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }
}
