// A DurableStorage wrapper that makes "not synced" mean "lost on crash".
//
// A real disk usually keeps unsynced writes across a process kill (they sit in the page
// cache), so a SIGKILL test cannot tell whether Raft acknowledged something it had only
// written, not fsynced. This wrapper holds every `sync: false` save (and every compact)
// in process memory, serves reads from that view, and hands them to the inner storage
// only together with the next `sync: true` save. A SIGKILL then loses exactly the writes
// that were never synced, as a power cut would (worst case), and a test can check that
// everything Raft acknowledged survives. Test-only in spirit; it lives in src so real
// processes can use it behind a flag (jepsen-lite).
import { MemoryBackedStorage, MemoryStorage } from '../core/storage.js';
import { failStorage } from '../../assert.js';
import type { DurableStorage, PersistBatch } from '../seams.js';
import type { Snapshot } from '../core/types.js';
import { applyWrite, type PendingWrite } from './memory-durable-storage.js';

/** Reads (MemoryBackedStorage.mem) see the inner storage's state plus every pending write. */
export class UnsyncedLossStorage extends MemoryBackedStorage implements DurableStorage {
  /** writes the inner storage has not seen yet, in order */
  private pending: PendingWrite[] = [];
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly inner: DurableStorage) {
    super(MemoryStorage.copyOf(inner));
  }

  /** how many writes would be lost if the process died now */
  pendingWrites(): number {
    return this.pending.length;
  }


  save(batch: PersistBatch, opts: { sync: boolean }): Promise<void> {
    return this.enqueue(async () => {
      if (!opts.sync) {
        const w: PendingWrite = { kind: 'batch', batch };
        applyWrite(this.mem, w);
        this.pending.push(w);
        return;
      }
      await this.flush();
      await this.inner.save(batch, { sync: true });
      this.mem.applyBatch(batch);
      this.assertInSync();
    });
  }

  compact(snapshot: Snapshot): Promise<void> {
    return this.enqueue(async () => {
      const w: PendingWrite = { kind: 'compact', snapshot };
      applyWrite(this.mem, w);
      this.pending.push(w);
    });
  }

  /** Pending writes are dropped, as a crash would drop them. */
  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
    this.pending = [];
    await this.inner.close();
  }

  /** Hand the pending writes to the inner storage, in order, unsynced: the sync:true save
   *  that follows makes them durable too (LevelDB's write-ahead log is sequential, so one
   *  fsync covers every earlier write). A crash half-way leaves a prefix of them, which is
   *  a state a real disk can also be left in. */
  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const p = this.pending[0]!;
      if (p.kind === 'batch') await this.inner.save(p.batch, { sync: false });
      else await this.inner.compact(p.snapshot);
      this.pending.shift();
    }
  }

  private enqueue(f: () => Promise<void>): Promise<void> {
    const p = this.queue.then(f);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private assertInSync(): void {
    const a = this.mem;
    const b = this.inner;
    const same = a.firstIndex() === b.firstIndex() && a.lastIndex() === b.lastIndex() && a.term(a.lastIndex()) === b.term(b.lastIndex());
    if (!same) {
      failStorage(`unsynced-loss view [${a.firstIndex()}, ${a.lastIndex()}] differs from the inner storage [${b.firstIndex()}, ${b.lastIndex()}] after a sync`);
    }
  }
}
