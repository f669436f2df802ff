// ReadIndex bookkeeping (thesis §6.4). Requests queue here until the leader starts a
// heartbeat round for them; a round is identified by a positive id carried as the
// heartbeat ctx. When a majority has acknowledged round r, the leader was still leader
// after every request in rounds <= r arrived, so all of them complete with the commit
// index recorded when their round started.
import { assert } from '../../assert.js';
import type { Index, NodeId, ReadState } from './types.js';

/** bound on queued requests: beyond it readIndex() refuses (the caller retries) */
export const MAX_PENDING_READS = 65536;

interface Round {
  id: number;
  index: Index;
  ctxs: number[];
  acks: Set<NodeId>;
}

export class ReadOnly {
  private queued: number[] = [];
  private rounds: Round[] = [];
  private nextId = 1;

  pendingCount(): number {
    let n = this.queued.length;
    for (const r of this.rounds) n += r.ctxs.length;
    return n;
  }
  enqueue(ctx: number): boolean {
    if (this.pendingCount() >= MAX_PENDING_READS) return false;
    this.queued.push(ctx);
    return true;
  }
  hasQueued(): boolean {
    return this.queued.length > 0;
  }
  /** move every queued request into a new round answered at `index`; returns its id */
  startRound(index: Index, self: NodeId): number {
    assert(this.queued.length > 0, 'ReadOnly.startRound with nothing queued');
    const id = this.nextId++;
    this.rounds.push({ id, index, ctxs: this.queued, acks: new Set([self]) });
    this.queued = [];
    return id;
  }
  /** record `from`'s ack of round `id`; returns the acks of that round, if it is pending */
  recvAck(from: NodeId, id: number): ReadonlySet<NodeId> | undefined {
    const r = this.rounds.find((x) => x.id === id);
    if (!r) return undefined;
    r.acks.add(from);
    return r.acks;
  }
  /** id of the newest round still waiting for a quorum, or 0 */
  lastPendingRound(): number {
    return this.rounds[this.rounds.length - 1]?.id ?? 0;
  }
  /** the acks of every pending round, newest last (for re-checking after a conf change) */
  pendingRounds(): readonly { id: number; acks: ReadonlySet<NodeId> }[] {
    return this.rounds;
  }
  /** complete every round with id <= id; returns their read states in request order */
  release(id: number): ReadState[] {
    const out: ReadState[] = [];
    while (this.rounds.length > 0 && this.rounds[0]!.id <= id) {
      const r = this.rounds.shift()!;
      for (const ctx of r.ctxs) out.push({ index: r.index, ctx });
    }
    return out;
  }
  /** leadership lost: every pending request is dropped unanswered */
  reset(): void {
    this.queued = [];
    this.rounds = [];
  }
}
