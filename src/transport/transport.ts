// The seam between a node's driver and the network. One interface, two twins:
// HttpTransport (msgpack over HTTP/1.1, src/transport/http-transport.ts) and
// MemoryTransport (tests and the simulator).
import type { Message, NodeId } from '../raft/core/types.js';

export interface Transport {
  /** queue messages for delivery; never throws, never waits for delivery. Queues are
   *  bounded: under backpressure messages are dropped (Raft tolerates loss) and counted. */
  send(msgs: readonly Message[]): void;
  /** write what send() queued now, instead of at the end of this event-loop turn (which
   *  lets everything sent in one turn share writes). The driver calls it where a message
   *  is on the critical path: a leader's appends before its own save is issued, and the
   *  answers of a Ready right after its synced save. Optional: twins without batching
   *  deliver on send(). */
  flush?(): void;
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

/** The handler lists every Transport keeps, and their emitters: one copy for all twins. */
export abstract class TransportEvents {
  private readonly messageHandlers: ((m: Message) => void)[] = [];
  private readonly unreachableHandlers: ((peer: NodeId) => void)[] = [];
  private readonly snapshotHandlers: ((peer: NodeId, ok: boolean) => void)[] = [];

  onMessage(handler: (m: Message) => void): void {
    this.messageHandlers.push(handler);
  }
  onUnreachable(handler: (peer: NodeId) => void): void {
    this.unreachableHandlers.push(handler);
  }
  onSnapshotStatus(handler: (peer: NodeId, ok: boolean) => void): void {
    this.snapshotHandlers.push(handler);
  }

  protected emitMessage(m: Message): void {
    for (const h of this.messageHandlers) h(m);
  }
  protected emitUnreachable(peer: NodeId): void {
    for (const h of this.unreachableHandlers) h(peer);
  }
  protected emitSnapshotStatus(peer: NodeId, ok: boolean): void {
    for (const h of this.snapshotHandlers) h(peer, ok);
  }
}
