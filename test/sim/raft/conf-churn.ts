// Membership churn around failovers: the schedule that finds a leader changing membership
// before an entry of its own term has committed (Raft thesis ch. 4; Ongaro's single-server
// membership bug, raft-dev 2015). With an even number of voters C0, a promotion C1 = C0 + x
// and any change C2 that shrinks or grows C0 by one have quorums that need not intersect;
// the rule "no conf change before your term commits" is all that keeps both from
// committing. An episode:
//   1. the leader L1 promotes a learner x (C1) and is crashed a tick or two later, before
//      the promotion commits (a leader crash between appending a conf change and its
//      commit); its links to the other voters are clogged meanwhile, so C1 reaches x only;
//   2. as soon as another node L2 leads, it is asked every tick to demote L1 (an
//      operator's `member remove <dead leader>` right after a failover, with the dead node
//      kept running as a learner, so that it can come back with its C1 and campaign),
//      while C1 is still uncommitted on L1 and x; L2's links to x and to as many voters
//      as C1 needs beside L1 and x are clogged for a while, so that those do not learn of
//      L2's entries (nor hear its heartbeats) before L1 is back; with some probability L2
//      is crashed right after appending its change too.
// Between episodes it keeps the voter count even and a learner available (demote, promote,
// or add a fresh learner). Every choice comes from the churn's own Rng, so the other
// subsystems' streams are untouched.
import type { Rng } from '../../../src/raft/core/rng.js';
import type { ConfChange, NodeId } from '../../../src/raft/core/types.js';
import { MAX_NODE_IDS, type SimCluster } from './cluster.js';
import type { SimNode } from './driver.js';
import type { SimOptions } from '../options.js';

const MIN_VOTERS = 3;
const MAX_VOTERS = 7;

export interface ConfChurnOptions {
  /** per tick, while no episode runs: try the next step (0: churn off for this seed) */
  stepProbability: number;
  /** a proposer to be crashed dies 1..crashDelayMaxTicks ticks after its conf change was appended */
  crashDelayMaxTicks: number;
  /** probability that the new leader is crashed after appending its change, too */
  crashNewLeaderProbability: number;
  /** a crashed node stays down 1 + Exp(mean) ticks */
  downTicksMean: number;
  /** how long the new leader is asked for its change before the episode is given up */
  followUpTicks: number;
  /** how long the new leader's links to the nodes a C1 quorum needs stay clogged */
  clogTicks: number;
}

export interface ConfChurnStats {
  churnChanges: number;
  churnEpisodes: number;
  churnFollowUps: number;
}

function pick<T>(rng: Rng, xs: readonly T[]): T | undefined {
  return xs.length === 0 ? undefined : xs[rng.int(0, xs.length)];
}

type State =
  | { kind: 'idle' }
  | { kind: 'armed'; victim: NodeId; term: number; at: number; promoted: NodeId }
  | { kind: 'failover'; dead: NodeId; term: number; promoted: NodeId; until: number; clogged: boolean };

export class ConfChurn {
  readonly stats: ConfChurnStats = { churnChanges: 0, churnEpisodes: 0, churnFollowUps: 0 };
  private state: State = { kind: 'idle' };
  private pendingCrash: { id: NodeId; term: number; at: number } | null = null;

  constructor(
    private readonly opts: SimOptions,
    private readonly cluster: SimCluster,
    private readonly rng: Rng,
    private readonly trace?: (line: string) => void,
  ) {}

  private note(line: string): void {
    this.trace?.(`[${this.cluster.now}] churn: ${line}`);
  }

  private get o(): ConfChurnOptions {
    return this.opts.churn;
  }

  /** one fault-phase tick (after the workload, before endTick) */
  tick(): void {
    if (this.o.stepProbability === 0) return;
    const now = this.cluster.now;
    this.crashDue(now);
    const s = this.state;
    if (s.kind === 'armed') {
      if (now < s.at) return;
      this.crashIf(s.victim, s.term);
      this.state = { kind: 'failover', dead: s.victim, term: s.term, promoted: s.promoted, until: now + this.o.followUpTicks, clogged: false };
      return;
    }
    if (s.kind === 'failover') {
      if (now >= s.until) {
        this.state = { kind: 'idle' };
        return;
      }
      this.followUp(s);
      return;
    }
    if (this.rng.next() < this.o.stepProbability) this.step();
  }

  /** crash `id` unless it restarted or moved on to another term meanwhile */
  private crashIf(id: NodeId, term: number): void {
    const n = this.cluster.node(id);
    if (!n || n.raw.status().term !== term) return;
    const down = 1 + Math.round(-Math.log(1 - this.rng.next()) * this.o.downTicksMean);
    this.note(`crash ${id} for ${down} ticks`);
    this.cluster.crash(id, down);
  }

  private crashDue(now: number): void {
    const c = this.pendingCrash;
    if (c && now >= c.at) {
      this.pendingCrash = null;
      this.crashIf(c.id, c.term);
    }
  }

  private propose(leader: SimNode, cc: ConfChange): boolean {
    if (leader.stalled || !leader.raw.proposeConfChange(cc).ok) return false;
    this.stats.churnChanges++;
    this.note(`${leader.id} appended ${cc.type} ${cc.nodeId}`);
    if (cc.type === 'addLearner' && !this.cluster.ids.includes(cc.nodeId)) {
      const id = this.cluster.join();
      if (id !== cc.nodeId) throw new Error(`joined ${id}, expected ${cc.nodeId}`);
    }
    return true;
  }

  /** between episodes: start one when C0 is even and a learner exists, else steer there */
  private step(): void {
    const leader = this.cluster.leader();
    if (!leader) return;
    const st = leader.raw.status();
    const { voters, learners } = st.conf;
    const others = voters.filter((v) => v !== leader.id);
    if (voters.length % 2 === 0 && learners.length > 0 && voters.length < MAX_VOTERS) {
      const x = pick(this.rng, learners)!;
      if (this.propose(leader, { type: 'addVoter', nodeId: x })) {
        this.stats.churnEpisodes++;
        const at = this.cluster.now + this.rng.int(1, this.o.crashDelayMaxTicks + 1);
        // held until the others have elected someone else (then L1's appends are stale)
        for (const v of others) this.cluster.network.clog(leader.id, v, at + 3 * this.opts.electionTicks);
        this.state = { kind: 'armed', victim: leader.id, term: st.term, at, promoted: x };
      }
      return;
    }
    let cc: ConfChange | null = null;
    if (voters.length % 2 === 1 && voters.length > MIN_VOTERS && (learners.length === 0 || this.rng.next() < 0.5)) {
      cc = { type: 'addLearner', nodeId: pick(this.rng, others)! }; // demote: voters even, one learner more
    } else if (voters.length % 2 === 1 && learners.length >= 2 && voters.length < MAX_VOTERS) {
      cc = { type: 'addVoter', nodeId: pick(this.rng, learners)! }; // promote one, keep one
    } else if (this.cluster.ids.length < MAX_NODE_IDS) {
      cc = { type: 'addLearner', nodeId: `n${this.cluster.ids.length + 1}` }; // a fresh learner
    }
    if (cc) this.propose(leader, cc);
  }

  /** after the failover: the new leader is asked to demote the dead one, every tick, until it accepts */
  private followUp(s: Extract<State, { kind: 'failover' }>): void {
    const dead = s.dead;
    const leader = this.cluster.leader();
    if (!leader || leader.id === dead) return;
    const st = leader.raw.status();
    if (st.term <= s.term) return;
    const voters = st.conf.voters;
    if (!s.clogged) {
      // a C1 quorum is L1, x and half of C0 minus one more: keep those from L2 for a while
      s.clogged = true;
      const until = this.cluster.now + this.o.clogTicks;
      const pool = voters.filter((v) => v !== dead && v !== leader.id);
      const need = Math.max(0, Math.floor(voters.length / 2) - 1);
      const keep = [s.promoted];
      for (let k = 0; k < need && pool.length > 0; k++) keep.push(pool.splice(this.rng.int(0, pool.length), 1)[0]!);
      for (const v of keep) if (v !== leader.id) this.cluster.network.clog(leader.id, v, until);
      this.note(`clog ${leader.id} -> ${keep.join(',')} until ${until}`);
    }
    let target: NodeId | undefined = dead;
    if (!voters.includes(dead) || voters.length <= MIN_VOTERS) {
      target = voters.length > MIN_VOTERS ? pick(this.rng, voters.filter((v) => v !== leader.id)) : undefined;
    }
    const cc: ConfChange | null = target !== undefined
      ? { type: 'addLearner', nodeId: target }
      : st.conf.learners.length > 0 ? { type: 'addVoter', nodeId: pick(this.rng, st.conf.learners)! } : null;
    if (!cc || !this.propose(leader, cc)) return;
    this.stats.churnFollowUps++;
    this.state = { kind: 'idle' };
    if (this.rng.next() < this.o.crashNewLeaderProbability) {
      this.pendingCrash = { id: leader.id, term: st.term, at: this.cluster.now + this.rng.int(1, this.o.crashDelayMaxTicks + 1) };
    }
  }
}
