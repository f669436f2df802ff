// Why this node should not take traffic yet, or null: the reason /readyz gives with its 503
// and GET /v1/cluster with `not_ready` (docs/api.md "Readiness"). Ready means: a member
// whose vote and acknowledgements count (bound to its incarnation) or a learner, that knows
// a leader, and that has applied what it knows to be committed. In order:
//  - removed, or joining and not a member yet (membership.ts);
//  - bootstrapping: a brand-new cluster's first election needs every voter, and waits for
//    the ones not heard from — said here, and in a log line every few seconds;
//  - not bound: a fresh data directory under a member's id (a member that lost its data,
//    waiting for the leader's log, which tells it so), or one the cluster binds to another
//    data directory (superseded: it stops);
//  - no leader known;
//  - behind: its applied index has not reached a commit index it knows of — since it
//    started, or for longer than a grace period (a follower whose log lost entries it had
//    acknowledged). The grace keeps a follower under load, always a few entries behind the
//    newest commit, ready. A learner counts as caught up within the leader's promotion
//    bound (membership.promote_max_lag_entries) of the commit index it knows of.
import type { Logger } from 'pino';
import type { Index, NodeId } from '../../raft/core/types.js';
import type { RaftDriver } from '../../raft/driver.js';
import type { Membership } from './membership.js';
import type { PeerContact } from './peer-contact.js';

export interface ReadinessOptions {
  self: NodeId;
  driver: () => RaftDriver;
  membership: Membership;
  contact: PeerContact;
  nowMs(): number;
  /** how long the applied index may stay below a commit index this node knows of */
  applyGraceMs: number;
  /** a learner is caught up once its applied index is within this many entries of the
   *  commit index it knows of (the leader's promotion bound: membership.promote_max_lag_entries) */
  learnerLagEntries: number;
  /** a voter not heard from for this long counts as "not heard from" while bootstrapping */
  heardWindowMs: number;
  /** how often the bootstrap wait is logged */
  logEveryMs?: number;
  logger: Logger;
}

export class Readiness {
  /** the commit index the applied index is working towards, and since when (null: caught up) */
  private target: Index | null = null;
  private since = 0;
  /** the applied index has reached a commit index it knew of at least once in this process */
  private reached = false;
  private nextLogMs = 0;
  private readonly startedMs: number;

  constructor(private readonly o: ReadinessOptions) {
    this.startedMs = o.nowMs();
  }

  /** driver tick: follow the applied index; log a bootstrap that waits for voters */
  onTick(): void {
    const d = this.o.driver();
    const st = d.status();
    const applied = d.appliedIndex;
    const now = this.o.nowMs();
    if (applied >= st.knownCommit) {
      this.target = null;
      this.reached = true;
    } else if (this.target === null || applied >= this.target) {
      if (this.target !== null) this.reached = true;
      this.target = st.knownCommit;
      this.since = now;
    }
    const waiting = this.bootstrapWaitingFor();
    if (waiting !== null && waiting.length > 0 && now >= this.nextLogMs) {
      this.nextLogMs = now + (this.o.logEveryMs ?? 5000);
      // not the first moments: a node started a second before its peers is not news
      if (now - this.startedMs >= this.o.heardWindowMs) {
        this.o.logger.warn({ waitingFor: waiting, voters: st.conf.voters, term: st.term },
          `first election: waiting for ${waiting.join(', ')} (a new cluster's first election needs every voter of the cluster file to answer; start ${waiting.length === 1 ? 'it' : 'them'}, or, if this cluster already exists and this node lost its data, see docs/membership.md)`);
      }
    }
  }

  /**
   * A brand-new cluster's first election waits for every voter (docs/membership.md
   * "Incarnations"): the voters this node has not heard from lately, or null when this node
   * is not waiting for a first election (it has a log, it is no voter, a leader is known).
   */
  bootstrapWaitingFor(): NodeId[] | null {
    const st = this.o.driver().status();
    if (st.standing !== 'fresh' || st.leader !== null || !st.conf.voters.includes(this.o.self) || st.conf.voters.length < 2) return null;
    const since = this.o.nowMs() - this.o.heardWindowMs;
    return st.conf.voters.filter((v) => v !== this.o.self && !this.o.contact.heardSince(v, since));
  }

  reason(): string | null {
    const membership = this.o.membership.notReadyReason();
    if (membership !== null) return membership;
    const d = this.o.driver();
    const st = d.status();
    const self = this.o.self;
    const waiting = this.bootstrapWaitingFor();
    if (waiting !== null) {
      return waiting.length > 0
        ? `bootstrapping: waiting for ${waiting.join(', ')} (a new cluster's first election needs every voter to answer)`
        : 'bootstrapping: every voter has answered; waiting for the first election';
    }
    if (st.standing === 'superseded') return `this node lost its data: the cluster's configuration binds ${self} to another data directory (it stops; remove it, wipe its data directory, then join it again: docs/membership.md)`;
    if ((st.standing === 'fresh' || st.standing === 'unbound') && st.conf.voters.includes(self)) {
      return 'not bound to the cluster yet: this data directory is new and holds no log of the cluster (a member that lost its data waits for the leader\'s log, which tells it so: docs/membership.md)';
    }
    if (st.leader === null) return 'no leader known';
    if (d.appliedIndex < st.commit) return `not caught up: applied index ${d.appliedIndex} is below this node's commit index ${st.commit}`;
    if (this.o.membership.selfState() === 'learner' && st.knownCommit - d.appliedIndex > this.o.learnerLagEntries) {
      return `not caught up: a learner ${st.knownCommit - d.appliedIndex} entries behind the commit index ${st.knownCommit} the leader told it (ready within ${this.o.learnerLagEntries})`;
    }
    if (!this.reached && this.target !== null) return `not caught up: applied index ${d.appliedIndex} has not reached the commit index ${this.target} the leader told it (catching up from the leader)`;
    const behindMs = this.target === null ? 0 : this.o.nowMs() - this.since;
    if (behindMs > this.o.applyGraceMs) {
      return `not caught up: applied index ${d.appliedIndex} has stayed below the commit index ${this.target} the leader told it for ${Math.round(behindMs)} ms (its log lacks entries; they come from the leader)`;
    }
    return null;
  }
}
