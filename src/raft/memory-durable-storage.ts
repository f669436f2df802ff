// DurableStorage over MemoryStorage: nothing survives the process, everything else
// behaves like LevelStorage (same batch semantics, writes applied in call order, memory
// updated when the write "completes"). For unit tests and in-process clusters; the
// storage contract suite (test/storage/contract.test.ts) runs against both.
import { MemoryStorage } from './core/storage.js';
import type { DurableStorage, PersistBatch } from './core/storage.js';
import type { ConfState, Entry, HardState, Index, Snapshot, Term } from './core/types.js';

export class MemoryDurableStorage implements DurableStorage {
  readonly mem: MemoryStorage;
  private closed = false;

  constructor(conf: ConfState = { voters: [], learners: [] }) {
    this.mem = new MemoryStorage(conf);
  }

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

  save(batch: PersistBatch, _opts: { sync: boolean }): Promise<void> {
    // async like a disk: a broken invariant rejects the promise rather than throwing at
    // the call site, as it would from LevelStorage
    return this.run(() => this.mem.applyBatch(batch));
  }

  compact(snapshot: Snapshot): Promise<void> {
    return this.run(() => this.mem.compact(snapshot));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private run(f: () => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error('MemoryDurableStorage is closed'));
    try {
      f();
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
