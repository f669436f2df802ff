// The workload and the nemesis: what clients and the environment do to the cluster each
// tick. Clients propose writes, issue ReadIndex reads, ask for leadership transfers and
// membership changes (add learner / promote / remove); the environment compacts logs and
// crashes nodes (between ticks or in the middle of a Ready). Every choice comes from the
// workload's or the nemesis' own Rng.
import type { Rng } from '../../../src/raft/core/rng.js';
import type { ConfChange, NodeId } from '../../../src/raft/core/types.js';
import { MAX_NODE_IDS, type SimCluster } from './cluster.js';
import type { SimNode } from './driver.js';
import type { SimOptions } from '../options.js';

const MIN_VOTERS = 3;
const MAX_VOTERS = 7;

function pick<T>(rng: Rng, xs: readonly T[]): T | undefined {
  return xs.length === 0 ? undefined : xs[rng.int(0, xs.length)];
}

export interface WorkloadStats {
  proposed: number;
  accepted: number;
  readsIssued: number;
  transfers: number;
  confChanges: number;
}

export class Workload {
  private nextWrite = 1;
  private nextRead = 1;
  readonly stats: WorkloadStats = { proposed: 0, accepted: 0, readsIssued: 0, transfers: 0, confChanges: 0 };

  constructor(
    private readonly opts: SimOptions,
    private readonly cluster: SimCluster,
    private readonly rng: Rng,
    private readonly nemesisRng: Rng,
  ) {}

  /** a client's target: usually whoever it believes leads, sometimes any running node */
  private target(): SimNode | undefined {
    const leader = this.cluster.leader();
    if (leader && this.rng.next() < 0.85) return leader;
    return pick(this.rng, this.cluster.runningNodes());
  }

  payload(writeId: number): Uint8Array {
    const len = Math.max(4, this.rng.int(1, this.opts.workload.payloadBytesMax + 1));
    const data = new Uint8Array(len);
    new DataView(data.buffer).setUint32(0, writeId);
    for (let k = 4; k < len; k++) data[k] = this.rng.int(0, 256);
    return data;
  }

  /** propose one write through `node`; returns its log slot when the core accepted it */
  propose(node: SimNode): { index: number; term: number } | null {
    this.stats.proposed++;
    if (node.stalled) return null; // its driver takes input after the write (as production's inbox)
    const res = node.raw.propose(this.payload(this.nextWrite++));
    if (!res.ok) return null;
    this.stats.accepted++;
    return { index: res.index, term: res.term };
  }

  /** issue a ReadIndex read at `node`; returns its ctx when the core took it */
  read(node: SimNode): number | null {
    const ctx = this.nextRead++;
    if (node.stalled || !node.raw.readIndex(ctx)) return null;
    this.stats.readsIssued++;
    this.cluster.checkers.onReadIssued(ctx, node.id, node.incarnation, this.cluster.now);
    return ctx;
  }

  /** client traffic: writes, reads, transfers, membership changes, compaction */
  clients(withChanges: boolean, withWrites: boolean): void {
    const w = this.opts.workload;
    if (withWrites && this.rng.next() < w.proposeProbability) {
      const n = this.target();
      if (n) this.propose(n);
    }
    if (this.rng.next() < w.readProbability) {
      const n = this.target();
      if (n) this.read(n);
    }
    if (withChanges && this.rng.next() < w.transferProbability) this.transfer();
    if (withChanges && this.rng.next() < w.confChangeProbability) this.confChange();
    for (const n of this.cluster.runningNodes()) {
      if (this.rng.next() < w.compactProbability) this.cluster.compact(n.id);
    }
  }

  private transfer(): void {
    const leader = this.cluster.leader();
    if (!leader) return;
    const to = pick(this.rng, leader.raw.status().conf.voters.filter((v) => v !== leader.id));
    if (to !== undefined && !leader.stalled && leader.raw.transferLeadership(to)) this.stats.transfers++;
  }

  private confChange(): void {
    const leader = this.cluster.leader();
    if (!leader) return;
    const { voters, learners } = leader.raw.status().conf;
    const options: (() => ConfChange | null)[] = [];
    if (this.cluster.ids.length < MAX_NODE_IDS) {
      options.push(() => ({ type: 'addLearner', nodeId: `n${this.cluster.ids.length + 1}` }));
    }
    if (learners.length > 0 && voters.length < MAX_VOTERS) {
      options.push(() => ({ type: 'addVoter', nodeId: pick(this.rng, learners)! }));
    }
    if (voters.length > MIN_VOTERS || learners.length > 0) {
      options.push(() => {
        const victims: NodeId[] = voters.length > MIN_VOTERS ? [...voters, ...learners] : [...learners];
        return { type: 'removeNode', nodeId: pick(this.rng, victims)! };
      });
    }
    const cc = pick(this.rng, options)?.();
    if (!cc || leader.stalled) return;
    const res = leader.raw.proposeConfChange(cc);
    if (!res.ok) return;
    this.stats.confChanges++;
    // the joiner starts once its addLearner is in the log (it learns the rest from there)
    if (cc.type === 'addLearner') {
      const id = this.cluster.join();
      if (id !== cc.nodeId) throw new Error(`joined ${id}, expected ${cc.nodeId}`);
    }
  }

  /** the environment: crash a node, now or in the middle of its next Ready; and, for some
   *  seeds, kill new leaders young, while their first appends are half-delivered */
  nemesis(): void {
    const c = this.opts.crash;
    this.youngLeaders();
    this.amnesia();
    this.lostTail();
    this.operator();
    if (c.crashProbability === 0 || this.nemesisRng.next() >= c.crashProbability) return;
    const leader = this.nemesisRng.next() < c.leaderBias ? this.cluster.leader() : null;
    const victim = leader ?? pick(this.nemesisRng, this.cluster.runningNodes());
    if (victim) this.crash(victim.id);
  }

  private crash(id: string): void {
    const c = this.opts.crash;
    const down = 1 + Math.round(-Math.log(1 - this.nemesisRng.next()) * c.downTicksMean);
    const mid = this.nemesisRng.next() < c.midReadyProbability;
    this.cluster.crash(id, down, mid ? (this.nemesisRng.next() < 0.5 ? 'afterEarlyMessages' : 'afterPersist') : null);
  }

  /** wiped voters and the tick the operator notices and removes them */
  private readonly wiped = new Map<NodeId, number>();

  /** A voter's disk is lost and it restarts blank under the same id. One at a time, and
   *  only while the voters are at least 3 (losing a disk in a 2-voter cluster, or two
   *  before the operator removed the first, loses a majority's data: no protocol can
   *  recover from that). */
  private amnesia(): void {
    const c = this.opts.crash;
    if (c.amnesiaProbability === 0 || this.nemesisRng.next() >= c.amnesiaProbability) return;
    if (this.wiped.size > 0) return;
    const leader = this.cluster.leader();
    if (!leader) return;
    // only under a committed configuration of at least 3 voters (the leader's conf is the
    // one it has applied): a voter whose promotion is still uncommitted is no voter yet,
    // and losing a disk of a 2-voter cluster loses a majority
    const voters = leader.raw.status().conf.voters;
    const key = [...voters].sort().join(',');
    if (voters.length < 3 || [...leader.app.state.conf.voters].sort().join(',') !== key) return;
    const victim = pick(this.nemesisRng, voters.filter((v) => this.cluster.node(v) !== undefined));
    if (victim === undefined) return;
    this.cluster.wipe(victim);
    this.wiped.set(victim, this.cluster.now + 1 + Math.round(-Math.log(1 - this.nemesisRng.next()) * c.amnesiaNoticeTicksMean));
  }

  /**
   * A follower's disk loses the newest entries it had acknowledged (synced ones: a lying or
   * damaged disk) and the node restarts at once. Only entries that a majority of the
   * leader's voters other than the victim hold durably, under a committed configuration:
   * losing more loses data no protocol can recover, and that is not what this tests. It
   * tests that the leader notices the follower went back, stops counting it, and brings it
   * up to date (docs/raft-core.md "A follower whose log went backwards").
   */
  private lostTail(): void {
    const c = this.opts.crash;
    if (c.lostTailProbability === 0 || this.nemesisRng.next() >= c.lostTailProbability) return;
    const leader = this.cluster.leader();
    if (!leader) return;
    const st = leader.raw.status();
    const voters = st.conf.voters;
    if ([...leader.app.state.conf.voters].sort().join(',') !== [...voters].sort().join(',')) return;
    const victim = pick(this.nemesisRng, [...voters, ...st.conf.learners].filter((v) => v !== leader.id && this.cluster.node(v) !== undefined));
    if (victim === undefined) return;
    const disk = this.cluster.node(victim)!.disk.durable;
    const last = disk.lastIndex();
    const keep = Math.max(disk.firstIndex() - 1, last - this.nemesisRng.int(1, 9));
    const quorum = Math.floor(voters.length / 2) + 1;
    for (let i = keep + 1; i <= last; i++) {
      const holders = voters.filter((v) => v !== victim && this.cluster.node(v)?.disk.durable.term(i) === disk.term(i)).length;
      if (holders < quorum) return;
    }
    if (keep < last) this.cluster.loseTail(victim, keep);
  }

  /** The operator's answer to a lost disk (docs/membership.md): `member remove` of the
   *  node; it is shut down once that commits (a re-join would be a new member). */
  operator(): void {
    for (const [id, at] of this.wiped) {
      if (this.cluster.decommissioned.has(id)) {
        this.wiped.delete(id);
        continue;
      }
      if (this.cluster.now < at) continue;
      const leader = this.cluster.leader();
      if (!leader || leader.id === id) continue;
      const conf = leader.raw.status().conf;
      if (!conf.voters.includes(id) && !conf.learners.includes(id)) continue;
      if (!leader.stalled && leader.raw.proposeConfChange({ type: 'removeNode', nodeId: id }).ok) this.stats.confChanges++;
    }
  }

  private lastLeader = '';
  private youngCrash: { id: string; term: number; at: number } | null = null;

  /** Figure 8 (§5.4.2) needs a leader that replicates an old-term entry to a majority and
   *  dies before its own term's entry gets there: this makes that common enough to see */
  private youngLeaders(): void {
    const c = this.opts.crash;
    if (c.youngLeaderProbability === 0) return;
    const leader = this.cluster.leader();
    const now = this.cluster.now;
    if (leader) {
      const term = leader.raw.status().term;
      const key = `${leader.id}@${term}`;
      if (key !== this.lastLeader) {
        this.lastLeader = key;
        if (this.nemesisRng.next() < c.youngLeaderProbability) {
          this.youngCrash = { id: leader.id, term, at: now + this.nemesisRng.int(1, 4 * this.opts.heartbeatTicks + 2 * Math.ceil(this.opts.network.delayMeanTicks)) };
        }
      }
    }
    const y = this.youngCrash;
    if (y && now >= y.at) {
      this.youngCrash = null;
      const n = this.cluster.node(y.id);
      if (n && n.raw.status().term === y.term) this.crash(y.id);
    }
  }
}
