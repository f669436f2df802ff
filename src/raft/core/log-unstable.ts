// Log entries (and at most one incoming snapshot) that are not yet durable (etcd-io/raft
// log_unstable.go). They are handed to the driver in Ready and leave this structure only
// when advance() reports them persisted (stableTo / stableSnapTo).
//
// Invariants:
//   entries[k].index === offset + k
//   snapshot, when set, has meta.index === offset - 1 (entries continue right after it)
import { assert } from '../../assert.js';
import type { Entry, Index, Snapshot, Term } from './types.js';

export class Unstable {
  snapshot: Snapshot | undefined = undefined;
  entries: Entry[] = [];
  /** index of entries[0] (or where the next unstable entry would go) */
  offset: Index;

  constructor(offset: Index) {
    this.offset = offset;
  }

  /** index of the first entry, known only when a snapshot is pending */
  maybeFirstIndex(): Index | undefined {
    return this.snapshot ? this.snapshot.meta.index + 1 : undefined;
  }
  maybeLastIndex(): Index | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot ? this.snapshot.meta.index : undefined;
  }
  maybeTerm(i: Index): Term | undefined {
    if (i < this.offset) {
      return this.snapshot && this.snapshot.meta.index === i ? this.snapshot.meta.term : undefined;
    }
    const last = this.maybeLastIndex();
    if (last === undefined || i > last) return undefined;
    return this.entries[i - this.offset]!.term;
  }

  /** entries up to (i, t) were persisted: drop them, unless the log changed meanwhile */
  stableTo(i: Index, t: Term): Index | undefined {
    const got = this.maybeTerm(i);
    if (got === undefined || got !== t || i < this.offset) return undefined;
    this.entries = this.entries.slice(i + 1 - this.offset);
    this.offset = i + 1;
    return i;
  }
  stableSnapTo(i: Index): void {
    if (this.snapshot && this.snapshot.meta.index === i) this.snapshot = undefined;
  }

  restore(s: Snapshot): void {
    this.offset = s.meta.index + 1;
    this.entries = [];
    this.snapshot = s;
  }

  /** append, first dropping every unstable entry at or after ents[0].index */
  truncateAndAppend(ents: readonly Entry[]): void {
    if (ents.length === 0) return;
    const after = ents[0]!.index;
    if (after === this.offset + this.entries.length) {
      this.appendAll(ents);
    } else if (after <= this.offset) {
      // replaces everything unstable; storage truncates >= after when this is persisted
      this.offset = after;
      this.entries = [...ents];
    } else {
      this.entries = this.entries.slice(0, after - this.offset);
      this.appendAll(ents);
    }
    assert(this.entries[0]!.index === this.offset, `unstable.entries[0].index ${this.entries[0]!.index} != offset ${this.offset}`);
  }

  /** one push per entry: push(...ents) passes every entry on the stack, and a peer's
   *  append may carry up to maxEntriesPerRequest (100,000) of them */
  private appendAll(ents: readonly Entry[]): void {
    for (const e of ents) this.entries.push(e);
  }

  slice(lo: Index, hi: Index): Entry[] {
    assert(lo >= this.offset && hi <= this.offset + this.entries.length && lo <= hi, `unstable.slice(${lo}, ${hi}) outside [${this.offset}, ${this.offset + this.entries.length}]`);
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
