// A per-peer outbound queue bounded in messages AND bytes, that drops the OLDEST
// message when full.
//
// Why oldest: Raft messages are retransmittable state, not commands. When a peer is slow
// or down, the newest messages carry the current term, commit index and heartbeat
// context; the oldest are the likeliest to be stale (superseded heartbeats, appends the
// leader will resend from its progress state anyway, §5.3). Keeping the newest means a
// peer that comes back first hears the present, not minutes-old history it would reject
// by term. (etcd's rafthttp drops the newest instead; it can afford to because its
// buffer is tiny. A gap left by dropping old appends just costs one probe round.)
import type { Message } from '../raft/core/types.js';

/** encoded size, rounded up: the fixed part of a message plus its entries' data (msgpack
 *  maps with field names cost ~40-60 bytes per entry beyond the data) */
export function estimateSize(m: Message): number {
  let n = 96;
  if (m.type === 'append') for (const e of m.entries) n += e.data.length + 64;
  else if (m.type === 'snapshot') n += m.snapshot.data.length + 256;
  return n;
}

export class PeerQueue {
  private items: (Message | undefined)[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytesQueued = 0;

  constructor(
    private readonly maxMessages: number,
    private readonly maxBytes: number,
  ) {
    if (!(maxMessages >= 1 && maxBytes >= 1)) throw new Error(`assert: queue limits must be positive (${maxMessages}, ${maxBytes})`);
  }

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.bytesQueued;
  }

  /** append; returns how many older messages were dropped to make room */
  push(m: Message, size: number): number {
    this.items.push(m);
    this.sizes.push(size);
    this.bytesQueued += size;
    let dropped = 0;
    // never drop the message just pushed: a single message is bounded by the caller
    while (this.length > 1 && (this.length > this.maxMessages || this.bytesQueued > this.maxBytes)) {
      this.shiftOne();
      dropped++;
    }
    return dropped;
  }

  /** take from the front up to maxCount messages / maxBytes (at least one if any) */
  take(maxCount: number, maxBytes: number): Message[] {
    const out: Message[] = [];
    let bytes = 0;
    while (this.length > 0 && out.length < maxCount) {
      const size = this.sizes[this.head] ?? 0;
      if (out.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      out.push(this.shiftOne());
    }
    return out;
  }

  /** drop everything; returns how many were dropped */
  clear(): number {
    const n = this.length;
    this.items = [];
    this.sizes = [];
    this.head = 0;
    this.bytesQueued = 0;
    return n;
  }

  private shiftOne(): Message {
    const m = this.items[this.head];
    if (m === undefined) throw new Error('assert: shift from an empty queue');
    this.bytesQueued -= this.sizes[this.head] ?? 0;
    this.items[this.head] = undefined;
    this.head++;
    if (this.head === this.items.length) {
      this.items = [];
      this.sizes = [];
      this.head = 0;
    }
    // compact once the dead prefix dominates, so memory stays O(live messages)
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return m;
  }
}
