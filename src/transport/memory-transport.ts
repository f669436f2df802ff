// MemoryTransport: the one in-memory twin of HttpTransport, for the driver's tests, the
// API's in-process clusters and the lock simulator. Same contract (the suite
// test/transport/contract.test.ts runs against both): send() never throws or waits,
// delivery is asynchronous and in order per link, a cut link loses messages and reports the
// peer unreachable, a snapshot's outcome is reported to the sender. What carries the
// messages is a MessageNetwork: MemoryNetwork below (delivery on setImmediate, every
// message cloned as a wire would), or the simulator's tick-driven SimNetwork
// (test/sim/network.ts), which decides when and whether each message and report arrives.
import type { Message, NodeId } from '../raft/core/types.js';
import type { Transport } from '../raft/seams.js';
import { TransportEvents } from './transport-events.js';

/** What a MemoryTransport sends through. The network hands each message to its
 *  destination's deliver() and tells the sender, never inside send(), what it must learn:
 *  unreachable() for a refused connection, snapshotStatus() for every snapshot message. */
export interface MessageNetwork {
  /** carry `m` from `from` to m.to */
  carry(m: Message, from: MemoryTransport): void;
  /** `from` will not send `m` (its peer is not configured): a refused connection */
  refuse(m: Message, from: MemoryTransport): void;
  /** `t` closed: nothing more is delivered to it */
  detach(t: MemoryTransport): void;
}

export class MemoryTransport extends TransportEvents implements Transport {
  private peers: ReadonlyMap<NodeId, string> | null = null;
  private closed = false;
  /** messages handed to send() while open (statistics) */
  messagesSent = 0;

  constructor(
    readonly id: NodeId,
    private readonly network: MessageNetwork,
    /** the life of the node this transport belongs to (a simulated node's restart makes a
     *  new transport): reports about a message go back only to the life that sent it */
    readonly incarnation = 0,
  ) {
    super();
  }

  send(msgs: readonly Message[]): void {
    if (this.closed) return;
    this.messagesSent += msgs.length;
    for (const m of msgs) {
      // like HttpTransport: only configured peers are reachable (when peers were set)
      const known = this.peers === null || this.peers.has(m.to);
      if (known && m.from === this.id) this.network.carry(m, this);
      else this.network.refuse(m, this);
    }
  }

  /** send() hands every message to the network at once: nothing waits for a flush */
  flush(): void {}

  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    this.peers = new Map(peers);
  }

  close(): Promise<void> {
    this.closed = true;
    this.network.detach(this);
    return Promise.resolve();
  }

  // ---- what the network hands to this node (ignored once closed: a dead process) ----
  deliver(m: Message): void {
    if (!this.closed) this.emitMessage(m);
  }
  unreachable(peer: NodeId): void {
    if (!this.closed) this.emitUnreachable(peer);
  }
  snapshotStatus(peer: NodeId, ok: boolean): void {
    if (!this.closed) this.emitSnapshotStatus(peer, ok);
  }
}

/** The in-process network: delivery on setImmediate, links cut and healed by tests. */
export class MemoryNetwork implements MessageNetwork {
  private readonly nodes = new Map<NodeId, MemoryTransport>();
  private readonly cuts = new Set<string>();
  /** counters for tests */
  readonly counts = { delivered: 0, dropped: 0 };

  /** a transport for node `id`, attached to this network until closed */
  transport(id: NodeId): MemoryTransport {
    return this.attach(new MemoryTransport(id, this));
  }

  /** attach a transport built on this network (a subclass that records or queues, in tests) */
  attach<T extends MemoryTransport>(t: T): T {
    if (this.nodes.has(t.id)) throw new Error(`MemoryNetwork: node ${t.id} already attached`);
    this.nodes.set(t.id, t);
    return t;
  }

  /** drop everything between a and b, both directions */
  cut(a: NodeId, b: NodeId): void {
    this.cuts.add(linkKey(a, b));
  }

  /** cut `id` off from every other node */
  isolate(id: NodeId): void {
    for (const other of this.nodes.keys()) if (other !== id) this.cut(id, other);
  }

  /** restore the link a–b, or every link when called without arguments */
  heal(a?: NodeId, b?: NodeId): void {
    if (a === undefined || b === undefined) this.cuts.clear();
    else this.cuts.delete(linkKey(a, b));
  }

  detach(t: MemoryTransport): void {
    if (this.nodes.get(t.id) === t) this.nodes.delete(t.id);
  }

  carry(m: Message, from: MemoryTransport): void {
    const dest = this.nodes.get(m.to);
    if (!dest || this.cuts.has(linkKey(m.from, m.to))) {
      this.refuse(m, from);
      return;
    }
    // clone at send time, as serialization would: later changes by the sender do not travel
    const copy = structuredClone(m);
    setImmediate(() => {
      // the link may have been cut, or the node closed, while the message was "in flight"
      if (this.nodes.get(m.to) !== dest || this.cuts.has(linkKey(m.from, m.to))) {
        this.counts.dropped++;
        return;
      }
      this.counts.delivered++;
      dest.deliver(copy);
    });
    // handed over: the sender learns it went out (as HttpTransport once the body is written)
    if (m.type === 'snapshot') setImmediate(() => from.snapshotStatus(m.to, true));
  }

  refuse(m: Message, from: MemoryTransport): void {
    this.counts.dropped++;
    setImmediate(() => {
      if (m.type === 'snapshot') from.snapshotStatus(m.to, false);
      from.unreachable(m.to);
    });
  }
}

function linkKey(a: NodeId, b: NodeId): string {
  return a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
}
