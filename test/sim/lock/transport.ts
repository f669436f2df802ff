// SimTransport: the production Transport interface over the simulator's SimNetwork, so the
// real RaftDriver runs unchanged (docs/simulation-lock.md). One instance per node
// incarnation: once the node crashes the instance is closed and anything it still sends is
// ignored, as a dead process sends nothing.
import type { Message, NodeId } from '../../../src/raft/core/types.js';
import type { Transport } from '../../../src/raft/seams.js';
import type { SimNetwork } from '../network.js';

export class SimTransport implements Transport {
  private messageHandler: (m: Message) => void = () => undefined;
  private unreachableHandler: (peer: NodeId) => void = () => undefined;
  private snapshotHandler: (peer: NodeId, ok: boolean) => void = () => undefined;
  private closed = false;

  constructor(
    private readonly network: SimNetwork,
    readonly incarnation: number,
    private readonly now: () => number,
  ) {}

  /** messages handed to send() (statistics) */
  sent = 0;

  send(msgs: readonly Message[]): void {
    if (this.closed) return;
    this.sent += msgs.length;
    for (const m of msgs) this.network.send(m, this.now(), this.incarnation);
  }
  /** send() hands every message to the network at once */
  flush(): void {}
  onMessage(h: (m: Message) => void): void {
    this.messageHandler = h;
  }
  onUnreachable(h: (peer: NodeId) => void): void {
    this.unreachableHandler = h;
  }
  onSnapshotStatus(h: (peer: NodeId, ok: boolean) => void): void {
    this.snapshotHandler = h;
  }
  setPeers(): void {
    // the simulated network routes by node id; there are no URLs
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  // ---- what the simulated network hands to this node ----
  deliver(m: Message): void {
    if (!this.closed) this.messageHandler(m);
  }
  unreachable(peer: NodeId): void {
    if (!this.closed) this.unreachableHandler(peer);
  }
  snapshotStatus(peer: NodeId, ok: boolean): void {
    if (!this.closed) this.snapshotHandler(peer, ok);
  }
}
