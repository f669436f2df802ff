// The in-memory twin of HttpTransport, for tests of the node driver and the API (the
// deterministic simulator has its own tick-driven SimNetwork). Same contract: send() never
// throws or waits, delivery is asynchronous and in order per link, every message is
// cloned (no aliasing between nodes, as over a real wire), a cut link loses messages and
// reports the peer unreachable, a snapshot's outcome is reported to the sender. The
// contract suite test/transport/contract.test.ts runs against both twins.
import type { Message, NodeId } from '../raft/core/types.js';
import type { Transport } from '../raft/seams.js';
import { TransportEvents } from './transport-events.js';

export class MemoryNetwork {
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

  /** @internal */
  detach(id: NodeId): void {
    this.nodes.delete(id);
  }

  /** @internal: whether the message could be handed to its destination right now */
  route(m: Message): boolean {
    const dest = this.nodes.get(m.to);
    if (!dest || this.cuts.has(linkKey(m.from, m.to))) {
      this.counts.dropped++;
      return false;
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
    return true;
  }
}

function linkKey(a: NodeId, b: NodeId): string {
  return a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
}

export class MemoryTransport extends TransportEvents implements Transport {
  private peers: ReadonlyMap<NodeId, string> | null = null;
  private closed = false;

  constructor(
    readonly id: NodeId,
    private readonly network: MemoryNetwork,
  ) {
    super();
  }

  send(msgs: readonly Message[]): void {
    if (this.closed) return;
    const unreachable = new Set<NodeId>();
    for (const m of msgs) {
      // like HttpTransport: only configured peers are reachable (when peers were set)
      const known = this.peers === null || this.peers.has(m.to);
      const ok = known && m.from === this.id && this.network.route(m);
      if (!ok) unreachable.add(m.to);
      if (m.type === 'snapshot') this.later(() => this.emitSnapshotStatus(m.to, ok));
    }
    for (const p of unreachable) this.later(() => this.emitUnreachable(p));
  }

  /** send() delivers at once: nothing waits for a flush */
  flush(): void {}

  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    this.peers = new Map(peers);
  }

  close(): Promise<void> {
    this.closed = true;
    this.network.detach(this.id);
    return Promise.resolve();
  }

  /** @internal called by the network */
  deliver(m: Message): void {
    if (this.closed) return;
    this.emitMessage(m);
  }

  private later(fn: () => void): void {
    setImmediate(() => {
      if (!this.closed) fn();
    });
  }
}
