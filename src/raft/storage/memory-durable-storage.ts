// MemoryDurableStorage: the one in-memory DurableStorage, for the driver's tests, in-process
// clusters and both simulators (docs/storage.md, docs/simulation.md "The disk"). It keeps
// WRITTEN and SYNCED state apart, so a simulator can model what a power loss does to a node
// that sent a message relying on a write that was never fsynced (the classic "vote granted
// before it is durable" bug); used without crash() it behaves like LevelStorage with
// nothing surviving the process. The storage contract suite
// (test/raft/storage/contract.test.ts) runs against it and LevelStorage.
//
//  - reads (the Storage view the core sees, MemoryBackedStorage's `mem`) come from what was
//    written: the OS page cache.
//  - save({sync: false}) only writes; save({sync: true}) writes, then makes EVERY earlier
//    write durable too (LevelDB's log is sequential: one fsync covers all before it).
//  - compact() is one synced atomic write (like LevelStorage's compaction batch).
//  - crash(loseUnsynced): process death keeps the page cache (everything written survives);
//    power loss keeps the synced state plus a random PREFIX of the unsynced batches (a torn
//    sequential log never skips a batch, and each batch is atomic).
import { MemoryBackedStorage, MemoryStorage, StorageAssertionError } from '../core/storage.js';
import type { DurableStorage, PersistBatch } from '../seams.js';
import type { ConfState, Index, Snapshot } from '../core/types.js';
import type { Rng } from '../core/rng.js';

/** one write not yet made durable, as both in-memory disks keep them (this one, and
 *  UnsyncedLossStorage in front of a real one) */
export type PendingWrite = { kind: 'batch'; batch: PersistBatch } | { kind: 'compact'; snapshot: Snapshot };

export interface DiskStats {
  saves: number;
  syncs: number;
  compactions: number;
  /** unsynced batches lost by power-loss crashes */
  lostBatches: number;
}

export interface MemoryDurableStorageOptions {
  /** draws how many unsynced batches a power loss keeps (crash(true)); required for it */
  rng?: Rng;
  /** this data directory's incarnation (RaftConfig.incarnation): unique per disk, so a
   *  wiped node comes back as another one */
  diskId?: string;
}

function settle(write: () => void): Promise<void> {
  try {
    write();
    return Promise.resolve();
  } catch (err) {
    return Promise.reject(err as Error);
  }
}

export function applyWrite(s: MemoryStorage, op: PendingWrite): void {
  if (op.kind === 'batch') s.applyBatch(op.batch);
  else s.compact(op.snapshot);
}

export class MemoryDurableStorage extends MemoryBackedStorage implements DurableStorage {
  private synced: MemoryStorage;
  /** written but not yet synced, oldest first */
  private pending: PendingWrite[] = [];
  private closed = false;
  private readonly rng: Rng | undefined;
  readonly stats: DiskStats = { saves: 0, syncs: 0, compactions: 0, lostBatches: 0 };
  readonly diskId: string;

  constructor(conf: ConfState = { voters: [], learners: [] }, opts: MemoryDurableStorageOptions = {}) {
    // the Storage the core reads (MemoryBackedStorage) is what was written
    super(new MemoryStorage(conf));
    this.rng = opts.rng;
    this.diskId = opts.diskId ?? 'd';
    this.synced = new MemoryStorage(conf);
  }

  /** what survives a power loss right now (read-only use: the checkers) */
  get durable(): Pick<MemoryStorage, 'hardState' | 'term' | 'lastIndex' | 'firstIndex'> {
    return this.synced;
  }

  // ---- the write side, synchronous (the raft-mode simulator's driver never awaits) ----
  saveSync(batch: PersistBatch, opts: { sync: boolean }): void {
    // copy the containers: the core owns the arrays it hands out
    const op: PendingWrite = { kind: 'batch', batch: { hardState: batch.hardState && { ...batch.hardState }, snapshot: batch.snapshot, entries: [...batch.entries] } };
    applyWrite(this.mem, op);
    this.pending.push(op);
    this.stats.saves++;
    if (opts.sync) this.sync();
  }

  compactSync(snapshot: Snapshot): void {
    const op: PendingWrite = { kind: 'compact', snapshot };
    applyWrite(this.mem, op);
    this.pending.push(op);
    this.stats.compactions++;
    this.sync();
  }

  /** a write issued without sync completes: it and everything before it is durable (the
   *  end of a stalled synced write) */
  flush(): void {
    this.sync();
  }

  private sync(): void {
    for (const op of this.pending) applyWrite(this.synced, op);
    this.pending = [];
    this.stats.syncs++;
  }

  /** the node died (or closed); with loseUnsynced, so did the machine's page cache. The
   *  next incarnation opens the same disk: writes are accepted again. */
  crash(loseUnsynced: boolean): void {
    this.closed = false;
    if (!loseUnsynced || this.pending.length === 0) {
      this.sync();
      return;
    }
    if (this.rng === undefined) throw new Error('MemoryDurableStorage: crash(loseUnsynced) needs the rng option');
    const keep = this.rng.int(0, this.pending.length + 1);
    for (let k = 0; k < keep; k++) applyWrite(this.synced, this.pending[k]!);
    this.stats.lostBatches += this.pending.length - keep;
    this.pending = [];
    this.mem = MemoryStorage.copyOf(this.synced);
  }

  /**
   * A disk that lost SYNCED data (after a crash): the log keeps only entries up to `keep`,
   * though the node had acknowledged more (a lying or damaged disk: a torn last record of
   * LevelDB's log, PAR FAST'18). The hard state survives, its commit index cut to `keep`
   * (the record that raised it was lost with the entries). Never below the snapshot.
   */
  loseTail(keep: Index): void {
    this.sync();
    const s = this.synced;
    if (keep >= s.lastIndex() || keep < s.firstIndex() - 1) return;
    const hs = s.hardState();
    this.synced = MemoryStorage.from({
      hardState: { term: hs.term, vote: hs.vote, commit: Math.min(hs.commit, keep) }, snapshot: s.snapshot(), entries: s.entries(s.firstIndex(), keep + 1),
    });
    this.mem = MemoryStorage.copyOf(this.synced);
  }

  // ---- DurableStorage (the async face the production driver uses) ----
  // A broken invariant rejects the promise rather than throwing at the call site, as from
  // LevelStorage; the raft-mode simulator's driver calls the synchronous face above and
  // sees the throw.
  save(batch: PersistBatch, opts: { sync: boolean }): Promise<void> {
    if (this.closed) return this.rejectClosed();
    return settle(() => this.saveSync(batch, opts));
  }

  compact(snapshot: Snapshot): Promise<void> {
    if (this.closed) return this.rejectClosed();
    return settle(() => {
      // as LevelStorage: a snapshot is of committed state, so the stored commit index must
      // reach it first (the production driver writes it before compacting; the raft-mode
      // simulator's own driver, which calls compactSync, does not promise that)
      const commit = this.mem.hardState().commit;
      if (snapshot.meta.index > this.mem.firstIndex() - 1 && snapshot.meta.index > commit) {
        throw new StorageAssertionError(`compact(${snapshot.meta.index}) beyond the commit index ${commit}`);
      }
      this.compactSync(snapshot);
    });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private rejectClosed(): Promise<void> {
    return Promise.reject(new Error('MemoryDurableStorage is closed'));
  }
}
