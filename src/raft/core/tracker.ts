// What a leader or a candidate tracks about the other members (etcd-io/raft
// tracker/tracker.go in spirit): each member's Progress (leader), the votes received
// ((pre-)candidate), and the voter set that every quorum is counted over — commit
// (committed), elections (tallyVotes), Check-Quorum (quorumActive) and ReadIndex acks
// (hasQuorum). The voters are always those of the configuration in force in our log
// (thesis §4.1: a conf entry applies once appended), read through `conf` on every count,
// so a conf change is seen by the next count without anything to keep in step.
//
// Incarnations (docs/membership.md, "Incarnations"; incarnation.ts): a member's answer
// counts only from the data directory its id is bound to. Progress records which one it
// has heard from (Progress.inc), and votes which one granted each.
import { assert } from '../../assert.js';
import { countsUnder, unanimous } from './incarnation.js';
import { Progress } from './progress.js';
import { committedIndex, hasQuorum, voteResult, type VoteResult } from './quorum.js';
import type { ConfState, Index, NodeId } from './types.js';

export interface TrackerConfig {
  /** this node */
  self: NodeId;
  /** this node's incarnation, or undefined when the amnesia guard is off (plain Raft:
   *  every answer counts) */
  inc: string | undefined;
  /** max in-flight appends per follower (RaftConfig.maxInflight) */
  maxInflight: number;
  /** the configuration in force (ConfHistory.current) */
  conf: () => ConfState;
}

export class ProgressTracker {
  /** leader only: one entry per member, plus this node itself; iteration order is the
   *  order members were added, which is the order messages go out in */
  readonly progress = new Map<NodeId, Progress>();
  /** (pre-)candidate only: answers received, by voter */
  private readonly votes = new Map<NodeId, boolean>();
  /** (pre-)candidate only: the incarnation each granted answer came from */
  private readonly voteIncs = new Map<NodeId, string>();

  constructor(private readonly cfg: TrackerConfig) {}

  voters(): readonly NodeId[] {
    return this.cfg.conf().voters;
  }
  isVoter(id: NodeId): boolean {
    return this.voters().includes(id);
  }

  /** does an answer from `id` (incarnation `inc`) count toward votes, commits and quorum
   *  checks? Our own counts through our own incarnation. */
  counts(id: NodeId, inc: string | undefined): boolean {
    if (this.cfg.inc === undefined) return true;
    return countsUnder(this.cfg.conf(), id, id === this.cfg.self ? this.cfg.inc : inc);
  }
  /** leader: does this member's progress count (it is from the bound incarnation)? */
  progressCounts(id: NodeId): boolean {
    return this.counts(id, this.progress.get(id)?.inc);
  }

  /** forget everything (a new term, or a role change) */
  reset(): void {
    this.resetVotes();
    this.progress.clear();
  }

  // ---- progress (leader) ---------------------------------------------------------------

  /**
   * Make the progress map mirror `conf`'s members plus this node; new members start
   * probing at `next`, and are given one lease period to answer (recentActive). Members
   * the conf no longer names are dropped only when `dropRemoved` (their removal is
   * committed), each after `farewell`; until then they keep receiving the log.
   */
  sync(next: Index, dropRemoved: boolean, farewell: ((id: NodeId, pr: Progress) => void) | undefined): void {
    const conf = this.cfg.conf();
    const members = [...conf.voters, ...conf.learners];
    if (!members.includes(this.cfg.self)) members.push(this.cfg.self);
    for (const id of members) {
      const learner = conf.learners.includes(id);
      const pr = this.progress.get(id);
      if (pr) {
        pr.learner = learner;
      } else {
        const fresh = new Progress(next, this.cfg.maxInflight, learner);
        fresh.recentActive = true; // a new member is given one lease period to answer
        this.progress.set(id, fresh);
      }
    }
    if (!dropRemoved) return;
    for (const [id, pr] of [...this.progress]) {
      if (members.includes(id)) continue;
      farewell?.(id, pr);
      this.progress.delete(id);
    }
    // postcondition: exactly the members, and this node
    assert(members.every((id) => this.progress.has(id)) && this.progress.size === members.length, 'progress does not mirror the configuration');
  }

  /** another data directory answers under `id`: what we knew of the old one's log says
   *  nothing about this one, so it starts over from a probe (keeping only recentActive) */
  replace(id: NodeId, next: Index): Progress {
    const old = this.progress.get(id);
    assert(old !== undefined, `replace of ${id}, which has no progress`);
    const fresh = new Progress(next, this.cfg.maxInflight, old.learner);
    fresh.recentActive = old.recentActive;
    this.progress.set(id, fresh);
    return fresh;
  }

  /** §5.4.2's replica count: the largest index a majority of the voters holds durably,
   *  counting only progress from bound incarnations (a leader commits it only if it is
   *  of its own term) */
  committed(): Index {
    return committedIndex(this.voters(), (id) => (this.progressCounts(id) ? this.progress.get(id)?.match : 0));
  }

  /** Check-Quorum (thesis §6.2): did a majority of the voters (bound incarnations, this
   *  node included) answer since the last check? */
  quorumActive(): boolean {
    const active = new Set<NodeId>();
    for (const [id, pr] of this.progress) if ((id === this.cfg.self || pr.recentActive) && this.progressCounts(id)) active.add(id);
    return hasQuorum(this.voters(), active);
  }
  /** start the next Check-Quorum period */
  resetRecentActive(): void {
    for (const [id, pr] of this.progress) if (id !== this.cfg.self) pr.recentActive = false;
  }

  /** whether `acks` (e.g. a ReadIndex round's) include a majority of the voters */
  hasQuorum(acks: ReadonlySet<NodeId>): boolean {
    return hasQuorum(this.voters(), acks);
  }

  // ---- votes ((pre-)candidate) ------------------------------------------------------------

  resetVotes(): void {
    this.votes.clear();
    this.voteIncs.clear();
  }

  /**
   * Record `from`'s answer (incarnation `inc`); the first answer of each voter counts,
   * answers from non-voters are ignored. In a bootstrap election (`boot`: a fresh
   * candidate; nothing is bound yet) every grant is taken as it is, since every voter must
   * grant (tallyVotes); otherwise a grant counts only from the incarnation our
   * configuration binds that voter to.
   */
  recordVote(from: NodeId, granted: boolean, inc: string | undefined, boot: boolean): void {
    if (!this.isVoter(from)) return;
    if (granted && !boot && !this.counts(from, inc)) granted = false;
    if (this.votes.has(from)) return;
    this.votes.set(from, granted);
    if (granted && inc !== undefined) this.voteIncs.set(from, inc);
  }

  /** the election's outcome so far: a majority of the voters, or all of them in a
   *  bootstrap election (incarnation.ts, unanimous) */
  tallyVotes(boot: boolean): VoteResult {
    return boot ? unanimous(this.voters(), this.votes) : voteResult(this.voters(), this.votes);
  }

  /** the incarnation that granted `id`'s vote, if it did */
  voteInc(id: NodeId): string | undefined {
    return this.voteIncs.get(id);
  }
  /** every granted vote's incarnation, by voter (a copy) */
  grantedIncs(): Map<NodeId, string> {
    return new Map(this.voteIncs);
  }
}
