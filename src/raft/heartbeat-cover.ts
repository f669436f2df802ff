// The heartbeat cover (docs/recovery.md): a leader whose Ready loop waits for its disk (a
// synced write, a compaction) touches nothing in the core meanwhile, so without help a
// write that outlasts the followers' election timeout silences it and they elect another
// leader, although heartbeats depend on nothing being written. While the loop waits, each
// tick sends a bare heartbeat ("I lead this term": commit 0, which a follower never lowers
// its commit index to, and ctx 0, no ReadIndex round) to the followers the leader has been
// replicating to in that term, for at most `maxTicks` ticks of the wait: past it,
// followers time out as before, so a leader whose disk hangs is still replaced. The core
// cannot change role or term while the loop waits, so the claim holds.
// Used by the production driver (src/raft/driver.ts) and by test/sim's driver, so the
// simulators run the code production runs.
import type { Message, NodeId, Role, Term } from './core/types.js';

export class HeartbeatCover {
  private waiting = false;
  private ticks = 0;
  /** the term of `peers`: the followers the leader replicated to in it */
  private term: Term = 0;
  private readonly peers = new Set<NodeId>();

  /** maxTicks: 0 switches the cover off */
  constructor(private readonly maxTicks: number) {}

  /** the node sent these as `role`: a leader's appends, heartbeats and snapshots name the
   *  followers it replicates to in their term */
  noteSent(role: Role, msgs: readonly Message[]): void {
    if (role !== 'leader') return;
    for (const m of msgs) {
      if (m.type !== 'append' && m.type !== 'heartbeat' && m.type !== 'snapshot') continue;
      if (m.term !== this.term) {
        this.peers.clear();
        this.term = m.term;
      }
      this.peers.add(m.to);
    }
  }

  /** the node's role changed: one that no longer leads covers nobody */
  noteRole(role: Role): void {
    if (role !== 'leader') this.peers.clear();
  }

  /** the loop starts waiting for the disk */
  beginWait(): void {
    this.waiting = true;
    this.ticks = 0;
  }

  endWait(): void {
    this.waiting = false;
  }

  /** A tick: the heartbeats to send now. None unless the node leads `term` and waits for
   *  its disk, within the bound, and only to members of its applied configuration (a
   *  removed node hears nothing more). */
  onTick(self: NodeId, role: Role, term: Term, members: () => ReadonlySet<NodeId>): Message[] {
    if (!this.waiting || role !== 'leader' || this.ticks >= this.maxTicks || this.term !== term) return [];
    this.ticks++;
    const m = members();
    return [...this.peers].filter((to) => m.has(to)).map((to): Message => ({ type: 'heartbeat', from: self, to, term, commit: 0, ctx: 0 }));
  }
}
