// The seam between the driver and the network, beside the driver's other seams
// (Application in ./driver.ts, DurableStorage in ./core/storage.ts): the driver defines
// what it needs, src/transport implements it. Two twins: HttpTransport (msgpack over
// HTTP/1.1, src/transport/http-transport.ts) and MemoryTransport (tests and the simulator).
import type { Message, NodeId } from './core/types.js';

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
  /** every validated inbound message addressed to this node */
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
