// The handler lists of a Transport (src/raft/seams.ts), shared by its twins.
import type { Message, NodeId } from '../raft/core/types.js';

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
