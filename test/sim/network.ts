// SimNetwork: a deterministic packet simulator (after TigerBeetle's
// src/testing/packet_simulator.zig and etcd-io/raft's test `network` with its
// drop/cut/isolate/recover verbs). Each directed link (from, to) is a priority queue keyed
// by deliverAtTick. Faults: random loss, duplication, reordering (extra delay), bounded
// link capacity, clogs (a link holds its packets for a while), and partitions of several
// shapes, all drawn from the injected Rng so a seed replays exactly. It is also a
// MessageNetwork, so the lock simulator's nodes talk through the one in-memory transport
// (MemoryTransport, src/transport/memory-transport.ts); the raft-mode simulator's driver
// calls send() itself.
import type { Message, NodeId } from '../../src/raft/core/types.js';
import type { Rng } from '../../src/raft/core/rng.js';
import type { MemoryTransport, MessageNetwork } from '../../src/transport/memory-transport.js';
import type { NetworkOptions } from './options.js';
import { MinHeap, type Keyed } from './heap.js';

interface Packet extends Keyed {
  msg: Message;
  /** incarnation of the sender when it sent: status reports go back only to that life */
  inc: number;
}

/** What a delivery round hands to the cluster, in a fixed order. */
export type NetEvent =
  | { kind: 'message'; msg: Message }
  /** tell `node` (incarnation `inc`) that `peer` could not be reached (connection refused) */
  | { kind: 'unreachable'; node: NodeId; inc: number; peer: NodeId }
  /** tell `node` how sending a snapshot to `peer` ended (the core leaves 'snapshot' state on it) */
  | { kind: 'snapshotStatus'; node: NodeId; inc: number; peer: NodeId; ok: boolean };

export interface NodeLiveness {
  /** the incarnation of a running node, or null when it is down or gone */
  incarnation(id: NodeId): number | null;
}

export interface NetStats {
  sent: number;
  delivered: number;
  dropped: number;
  duplicated: number;
}

const MAX_NODES = 8;

export class SimNetwork implements MessageNetwork {
  private readonly ids: NodeId[] = [];
  private readonly links: MinHeap<Packet>[] = [];
  /** blocked[f * MAX_NODES + t]: the partition cuts f → t */
  private readonly blocked = new Uint8Array(MAX_NODES * MAX_NODES);
  private readonly clogUntil = new Float64Array(MAX_NODES * MAX_NODES);
  /** extra loss on one directed link, on top of the global dropProbability */
  private readonly linkDrop = new Float64Array(MAX_NODES * MAX_NODES);
  private notes: { at: number; seq: number; ev: NetEvent }[] = [];
  private seq = 0;
  private partitioned = false;
  private partitionChangedAt = 0;
  /** a one-line description of the partition in force, for traces */
  partitionLabel = 'none';
  readonly stats: NetStats = { sent: 0, delivered: 0, dropped: 0, duplicated: 0 };

  /** `clock`: the current tick, for messages that come through a MemoryTransport (carry) */
  constructor(private opts: NetworkOptions, private readonly rng: Rng, private readonly clock?: () => number) {
    for (let k = 0; k < MAX_NODES * MAX_NODES; k++) this.links.push(new MinHeap<Packet>());
  }

  addNode(id: NodeId): void {
    if (this.ids.includes(id)) return;
    if (this.ids.length >= MAX_NODES) throw new Error(`SimNetwork: more than ${MAX_NODES} nodes`);
    this.ids.push(id);
  }

  private slot(id: NodeId): number {
    return this.ids.indexOf(id);
  }

  // ---- verbs (etcd raft_test.go `network`: drop / cut / isolate / recover) ----

  /** lose this share of the packets on from → to (etcd's network.drop) */
  drop(from: NodeId, to: NodeId, probability: number): void {
    const f = this.slot(from), t = this.slot(to);
    if (f >= 0 && t >= 0) this.linkDrop[f * MAX_NODES + t] = probability;
  }
  /** cut the one-way link from → to */
  cut(from: NodeId, to: NodeId): void {
    const f = this.slot(from), t = this.slot(to);
    if (f >= 0 && t >= 0) this.blocked[f * MAX_NODES + t] = 1;
  }
  cutBoth(a: NodeId, b: NodeId): void {
    this.cut(a, b);
    this.cut(b, a);
  }
  isolate(id: NodeId): void {
    for (const other of this.ids) if (other !== id) this.cutBoth(id, other);
  }
  /** clog from → to until tick `until`: packets wait on the link, nothing is lost */
  clog(from: NodeId, to: NodeId, until: number): void {
    const f = this.slot(from), t = this.slot(to);
    if (f >= 0 && t >= 0) this.clogUntil[f * MAX_NODES + t] = until;
  }
  /** lift every partition, clog and per-link loss */
  recover(now: number): void {
    this.blocked.fill(0);
    this.clogUntil.fill(0);
    this.linkDrop.fill(0);
    this.partitioned = false;
    this.partitionChangedAt = now;
    this.partitionLabel = 'none';
  }
  /** the fault-free network of the liveness phase: delays stay, every fault goes */
  heal(now: number): void {
    this.recover(now);
    this.opts = {
      ...this.opts, dropProbability: 0, duplicateProbability: 0, reorderProbability: 0,
      partitionProbability: 0, clogProbability: 0, partitionMode: 'none',
    };
  }
  isCut(from: NodeId, to: NodeId): boolean {
    const f = this.slot(from), t = this.slot(to);
    return f < 0 || t < 0 || this.blocked[f * MAX_NODES + t] === 1;
  }

  /** Howard's partial partition on n1..n5: n1,n2,n3 fully connected, n4↔n2 only, n5↔n3 only */
  howardPartition(now: number): void {
    const allowed = new Set(['n1-n2', 'n1-n3', 'n2-n3', 'n2-n4', 'n3-n5']);
    for (const a of this.ids) {
      for (const b of this.ids) {
        if (a === b) continue;
        const key = a < b ? `${a}-${b}` : `${b}-${a}`;
        if (!allowed.has(key)) this.cut(a, b);
      }
    }
    this.partitioned = true;
    this.partitionChangedAt = now;
    this.partitionLabel = 'howard';
  }

  // ---- traffic ----

  send(m: Message, now: number, inc: number): void {
    this.stats.sent++;
    const f = this.slot(m.from), t = this.slot(m.to);
    if (f < 0 || t < 0 || m.from === m.to || this.blocked[f * MAX_NODES + t] === 1) {
      this.lost(m, now, inc, true);
      return;
    }
    if (this.rng.next() < Math.max(this.opts.dropProbability, this.linkDrop[f * MAX_NODES + t]!)) {
      this.lost(m, now, inc, false);
      return;
    }
    this.enqueue(m, f, t, now, inc);
    if (this.rng.next() < this.opts.duplicateProbability) {
      this.stats.duplicated++;
      this.enqueue(m, f, t, now, inc);
    }
  }

  // ---- MessageNetwork: a MemoryTransport's messages, stamped with its node's incarnation;
  // the cluster hands what deliverDue() returns to the transports of the running nodes ----

  carry(m: Message, from: MemoryTransport): void {
    this.send(m, this.now(), from.incarnation);
  }
  refuse(m: Message, from: MemoryTransport): void {
    this.stats.sent++;
    this.lost(m, this.now(), from.incarnation, true);
  }
  /** nothing to do: whether a node is up is the cluster's NodeLiveness, asked at delivery */
  detach(): void {}

  private now(): number {
    if (this.clock === undefined) throw new Error('SimNetwork: a MemoryTransport needs the clock argument');
    return this.clock();
  }

  private enqueue(m: Message, f: number, t: number, now: number, inc: number): void {
    const link = this.links[f * MAX_NODES + t]!;
    if (link.size >= this.opts.linkCapacity) {
      this.lost(m, now, inc, false); // a full queue drops what arrives (bounded, like the transport)
      return;
    }
    const o = this.opts;
    let delay = o.delayMinTicks + -Math.log(1 - this.rng.next()) * (o.delayMeanTicks - o.delayMinTicks);
    if (this.rng.next() < o.reorderProbability) delay += this.rng.next() * 4 * o.delayMeanTicks;
    link.push({ key: now + Math.max(1, Math.round(delay)), seq: this.seq++, msg: m, inc });
  }

  /** a packet is gone: a snapshot's sender always learns the outcome (the transport reports
   *  it); a refused connection (cut link, dead peer) is reported as unreachable */
  private lost(m: Message, now: number, inc: number, refused: boolean): void {
    this.stats.dropped++;
    if (m.type === 'snapshot') this.note(now, { kind: 'snapshotStatus', node: m.from, inc, peer: m.to, ok: false });
    if (refused) this.note(now, { kind: 'unreachable', node: m.from, inc, peer: m.to });
  }

  private note(now: number, ev: NetEvent): void {
    this.notes.push({ at: now + 1, seq: this.seq++, ev });
  }

  /** hand every due event to `handle`: status notes first, then packets link by link in
   *  fixed (from, to) order, each link in deliverAt order */
  deliverDue(now: number, nodes: NodeLiveness, handle: (ev: NetEvent) => void): void {
    if (this.notes.length > 0) {
      const due = this.notes.filter((n) => n.at <= now);
      this.notes = this.notes.filter((n) => n.at > now);
      for (const n of due) handle(n.ev);
    }
    const n = this.ids.length;
    for (let f = 0; f < n; f++) {
      for (let t = 0; t < n; t++) {
        const k = f * MAX_NODES + t;
        const link = this.links[k]!;
        if (link.size === 0 || this.clogUntil[k]! > now) continue;
        while (link.size > 0 && link.peek()!.key <= now) {
          const p = link.pop()!;
          if (this.blocked[k] === 1) {
            this.lost(p.msg, now, p.inc, false);
          } else if (nodes.incarnation(p.msg.to) === null) {
            this.lost(p.msg, now, p.inc, true);
          } else {
            this.stats.delivered++;
            handle({ kind: 'message', msg: p.msg });
            if (p.msg.type === 'snapshot') {
              this.note(now, { kind: 'snapshotStatus', node: p.msg.from, inc: p.inc, peer: p.msg.to, ok: true });
            }
          }
        }
      }
    }
  }

  /** random partition and clog events for this tick (the nemesis) */
  tickFaults(now: number, leader: () => NodeId | null): void {
    const o = this.opts;
    if (o.clogProbability > 0) {
      const n = this.ids.length;
      if (this.rng.next() < o.clogProbability * n * (n - 1)) {
        const f = this.rng.int(0, n), t = this.rng.int(0, n);
        if (f !== t) this.clogUntil[f * MAX_NODES + t] = now + 1 + Math.round(-Math.log(1 - this.rng.next()) * o.clogDurationMeanTicks);
      }
    }
    if (o.partitionMode === 'none') return;
    const since = now - this.partitionChangedAt;
    if (this.partitioned) {
      if (since >= o.partitionStabilityTicks && this.rng.next() < o.unpartitionProbability) {
        this.blocked.fill(0);
        this.partitioned = false;
        this.partitionChangedAt = now;
        this.partitionLabel = 'none';
      }
    } else if (since >= o.unpartitionStabilityTicks && this.rng.next() < o.partitionProbability) {
      this.partition(now, leader());
    }
  }

  private partition(now: number, leader: NodeId | null): void {
    const mode = this.opts.partitionMode;
    if (mode === 'howard') {
      this.howardPartition(now);
      return;
    }
    if (mode === 'isolateLeader') {
      const victim = leader ?? this.ids[this.rng.int(0, this.ids.length)]!;
      this.isolate(victim);
      this.partitionLabel = `isolate ${victim}`;
    } else {
      // a random split with both sides non-empty
      const n = this.ids.length;
      const mask = this.rng.int(1, (1 << n) - 1);
      const sideA = this.ids.filter((_, k) => (mask >> k) & 1);
      const sideB = this.ids.filter((_, k) => !((mask >> k) & 1));
      for (const a of sideA) {
        for (const b of sideB) {
          this.cut(a, b);
          if (mode === 'symmetric') this.cut(b, a);
        }
      }
      this.partitionLabel = `${sideA.join(',')} ${mode === 'symmetric' ? '<-/->' : '-/->'} ${sideB.join(',')}`;
    }
    this.partitioned = true;
    this.partitionChangedAt = now;
  }

  inFlight(): number {
    let n = 0;
    for (const l of this.links) n += l.size;
    return n;
  }
}
