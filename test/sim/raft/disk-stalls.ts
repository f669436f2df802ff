// The disk-stall nemesis (docs/simulation.md "How one schedule runs"): now and then one
// node's next synced write takes whole ticks, as a slow fsync does. The node's driver then
// steps nothing until it completes, and a leader is kept heard by the production driver's
// heartbeat cover (src/raft/heartbeat-cover.ts, driver.ts); a stall longer than the cover
// lets the followers elect another leader, as they should when a leader's disk hangs.
// Its draws come from a stream of their own (options.ts stallRng), and only in the fault
// phase.
import type { Rng } from '../../../src/raft/core/rng.js';
import type { SimOptions } from '../options.js';
import type { SimNode } from './driver.js';

export interface StallTarget {
  readonly now: number;
  runningNodes(): readonly SimNode[];
  leader(): SimNode | null;
  crash(id: string, downTicks: number): void;
}

/** share of leader stalls that end in a crash (a power loss when the seed's crashes lose
 *  unsynced writes) before the write completes: the window in which a leader has answered
 *  entries its own disk does not hold yet (driver.ts receive, RawNode.stepAckDuringWrite) */
const STALL_CRASH_SHARE = 0.3;

export class DiskStalls {
  private readonly counts = { diskStalls: 0, stallCrashes: 0 };
  /** leaders to crash in the middle of their stalled write, and when */
  private crashes: { node: SimNode; at: number }[] = [];

  constructor(private readonly opts: SimOptions, private readonly cluster: StallTarget, private readonly rng: Rng) {}

  /** for the schedule's stats; stallCrashes only once one happened, so a seed without
   *  one keeps the stats (and sim:digest line) it had before they existed */
  get stats(): Record<string, number> {
    return this.counts.stallCrashes > 0 ? { ...this.counts } : { diskStalls: this.counts.diskStalls };
  }

  /** once per fault tick: crash a stalled leader that is due, maybe arm one node's next
   *  synced write to stall */
  tick(): void {
    this.crashDue();
    const d = this.opts.disk;
    if (d.stallProbability === 0 || this.rng.next() >= d.stallProbability) return;
    const leader = this.rng.next() < d.stallLeaderBias ? this.cluster.leader() : null;
    const nodes = this.cluster.runningNodes();
    const victim = leader ?? (nodes.length > 0 ? nodes[this.rng.int(0, nodes.length)]! : null);
    const ticks = 1 + Math.round(-Math.log(1 - this.rng.next()) * d.stallTicksMean);
    if (victim === null || victim.stalled || victim.stallTicks > 0) return;
    victim.stallTicks = ticks;
    this.counts.diskStalls++;
    // drawn after the stall's own draws, for leaders only, so every earlier draw is as it was
    if (victim === leader && this.rng.next() < STALL_CRASH_SHARE) this.crashes.push({ node: victim, at: this.cluster.now + this.rng.int(1, ticks + 1) });
  }

  private crashDue(): void {
    if (this.crashes.length === 0) return;
    const now = this.cluster.now;
    const due = this.crashes.filter((c) => c.at <= now);
    this.crashes = this.crashes.filter((c) => c.at > now);
    for (const c of due) {
      // only while its write is still out (a restarted or deposed node is left alone)
      if (!c.node.stalled || !this.cluster.runningNodes().includes(c.node)) continue;
      this.cluster.crash(c.node.id, 1 + Math.round(-Math.log(1 - this.rng.next()) * this.opts.crash.downTicksMean));
      this.counts.stallCrashes++;
    }
  }
}
