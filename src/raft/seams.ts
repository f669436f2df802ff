// The seams of the Raft driver, in one file (as hashicorp/raft's api.go): what the driver
// (./driver.ts) needs from the world, each implemented outside it, each with a real
// implementation and an in-memory twin that passes the same contract suite (the twins are
// the only in-memory ones: the driver tests and both simulators use them):
//
//   Transport       HttpTransport (src/transport/http-transport.ts)
//                   MemoryTransport (src/transport/memory-transport.ts), over MemoryNetwork
//                   or the simulator's SimNetwork
//                   contract: test/transport/contract.test.ts
//   DurableStorage  LevelStorage (src/raft/storage/level-storage.ts)
//                   MemoryDurableStorage (src/raft/storage/memory-durable-storage.ts)
//                   contract: test/raft/storage/contract.test.ts
//   Application     LockApp (src/server/app/lock-app.ts); the tests' and simulator's apps
//   DriverClock     the node's monotonic clock; the simulator's virtual one
//   RawNodeLike     RawNode (src/raft/core/raw-node.ts)
//   Rng             seededRng (src/raft/core/rng.ts), injected into the core
//
// A layer of its own (docs/architecture.md#layers), right above the core, so that the
// storages, the driver and the transports all import their seam from here. Storage (the
// read side) and Rng are the pure core's own interfaces (the core calls them), so they are
// defined there and re-exported here.
import type { ConfChange, Entry, Index, Message, NodeId, ProposeResult, Ready, Snapshot, Status } from './core/types.js';
import type { PersistBatch, Storage } from './core/storage.js';

export type { Storage, PersistBatch } from './core/storage.js';

/** The write side of the log, used only by the driver (LevelStorage, MemoryDurableStorage) */
export interface DurableStorage extends Storage {
  /** persist one Ready's batch atomically; with sync, durable when the promise resolves.
   *  A rejected promise means the disk failed: the node must stop (fail-stop). */
  save(batch: PersistBatch, opts: { sync: boolean }): Promise<void>;
  /** record `snapshot` (taken by the application at snapshot.meta.index <= applied) and
   *  delete every entry <= snapshot.meta.index, in one atomic write */
  compact(snapshot: Snapshot): Promise<void>;
  close(): Promise<void>;
}
export type { Rng } from './core/rng.js';

export interface Transport {
  /** queue messages for delivery; never throws, never waits for delivery. Queues are
   *  bounded: under backpressure messages are dropped (Raft tolerates loss) and counted. */
  send(msgs: readonly Message[]): void;
  /** write what send() queued now, instead of at the end of this event-loop turn (which
   *  lets everything sent in one turn share writes). The driver calls it where a message
   *  is on the critical path: a leader's appends before its own save is issued, and the
   *  answers of a Ready right after its synced save. Twins without batching deliver on
   *  send() and make it a no-op. Required, not optional: a wrapper that forgot it (the
   *  join guard once did) silently put every append a loop turn behind the leader's save
   *  (BENCHMARKS.md "Third round"). */
  flush(): void;
  /** every decoded inbound message addressed to this node (the core's RawNode.step
   *  checks its protocol rules: src/raft/core/message-check.ts) */
  onMessage(handler: (m: Message) => void): void;
  /** a peer could not be reached (connection refused, timeout): the core probes it gently */
  onUnreachable(handler: (peer: NodeId) => void): void;
  /** outcome of sending a snapshot message to a peer (the core needs it to leave the
   *  'snapshot' progress state) */
  onSnapshotStatus(handler: (peer: NodeId, ok: boolean) => void): void;
  /** membership changed: the peer URLs to use from now on (id → peer URL) */
  setPeers(peers: ReadonlyMap<NodeId, string>): void;
  close(): Promise<void>;
}

/** The replicated application. apply() must be deterministic (same log → same state on
 *  every node, hashicorp/raft fsm.go's contract); its return value (R) goes to the proposer
 *  and to the onApplied hook. */
export interface Application<R = unknown> {
  apply(entry: Entry): R;
  /** state as of the last applied entry */
  snapshot(): Uint8Array;
  restore(data: Uint8Array, index: Index): void;
}

export interface DriverClock {
  /** monotonic milliseconds */
  nowMs(): number;
}

/** What the driver needs from the core: RawNode satisfies it. */
export interface RawNodeLike {
  tick(): void;
  step(m: Message): void;
  propose(data: Uint8Array): ProposeResult;
  proposeConfChange(cc: ConfChange): ProposeResult;
  readIndex(ctx: number): boolean;
  transferLeadership(to: NodeId): boolean;
  reportUnreachable(id: NodeId): void;
  reportSnapshot(id: NodeId, ok: boolean): void;
  hasReady(): boolean;
  ready(): Ready;
  advance(rd: Ready): void;
  /** a leader's append ack that arrived during its own write (docs/raft-core.md "Commit
   *  during the leader's write"): stepped now, or false to feed it after the write */
  stepAckDuringWrite(m: Message): boolean;
  /** entries committed during that write, to apply now */
  committedDuringWrite(): Entry[];
  status(): Status;
}
