// DurableStorage over MemoryStorage: nothing survives the process, everything else
// behaves like LevelStorage (same batch semantics, writes applied in call order, memory
// updated when the write "completes"). For unit tests and in-process clusters; the
// storage contract suite (test/raft/storage/contract.test.ts) runs against it, LevelStorage and
// the simulator's SimDisk.
import { MemoryBackedStorage, MemoryStorage, StorageAssertionError } from '../core/storage.js';
import type { DurableStorage, PersistBatch } from '../seams.js';
import type { ConfState, Snapshot } from '../core/types.js';

export class MemoryDurableStorage extends MemoryBackedStorage implements DurableStorage {
  private closed = false;

  constructor(conf: ConfState = { voters: [], learners: [] }) {
    super(new MemoryStorage(conf));
  }


  save(batch: PersistBatch, _opts: { sync: boolean }): Promise<void> {
    // async like a disk: a broken invariant rejects the promise rather than throwing at
    // the call site, as it would from LevelStorage
    return this.run(() => this.mem.applyBatch(batch));
  }

  compact(snapshot: Snapshot): Promise<void> {
    return this.run(() => {
      // as LevelStorage: a snapshot is of committed state, so the stored commit index must
      // reach it first (the driver writes it before compacting)
      const commit = this.mem.hardState().commit;
      if (snapshot.meta.index > this.mem.firstIndex() - 1 && snapshot.meta.index > commit) {
        throw new StorageAssertionError(`compact(${snapshot.meta.index}) beyond the commit index ${commit}`);
      }
      this.mem.compact(snapshot);
    });
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
