// The disk-stall nemesis (docs/simulation.md "How one schedule runs"): now and then one
// node's next synced write takes whole ticks, as a slow fsync does. The node's driver then
// steps nothing until it completes, and a leader is kept heard by the production driver's
// heartbeat cover (src/raft/heartbeat-cover.ts, driver.ts); a stall longer than the cover
// lets the followers elect another leader, as they should when a leader's disk hangs.
// Its draws come from a stream of their own (options.ts stallRng), and only in the fault
// phase.
import type { Rng } from '../../src/raft/core/rng.js';
import type { SimOptions } from './options.js';
import type { SimNode } from './driver.js';

export interface StallTarget {
  runningNodes(): readonly SimNode[];
  leader(): SimNode | null;
}

export class DiskStalls {
  readonly stats = { diskStalls: 0 };

  constructor(private readonly opts: SimOptions, private readonly cluster: StallTarget, private readonly rng: Rng) {}

  /** once per fault tick: maybe arm one node's next synced write to stall */
  tick(): void {
    const d = this.opts.disk;
    if (d.stallProbability === 0 || this.rng.next() >= d.stallProbability) return;
    const leader = this.rng.next() < d.stallLeaderBias ? this.cluster.leader() : null;
    const nodes = this.cluster.runningNodes();
    const victim = leader ?? (nodes.length > 0 ? nodes[this.rng.int(0, nodes.length)]! : null);
    const ticks = 1 + Math.round(-Math.log(1 - this.rng.next()) * d.stallTicksMean);
    if (victim === null || victim.stalled || victim.stallTicks > 0) return;
    victim.stallTicks = ticks;
    this.stats.diskStalls++;
  }
}
