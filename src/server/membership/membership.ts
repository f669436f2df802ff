// The member address book and membership changes (docs/contract.md §3 "Operations",
// docs/membership.md).
//
// Membership itself lives in the Raft log: single-server changes (thesis ch. 4), one at a
// time, in force on each server as soon as appended. The URLs of each member ride in the
// conf change's context; applying the entry records them in LockApp.members, which is
// replicated state (it is in every app snapshot), so a restarted or newly joined node
// learns every address from its snapshot and log — the cluster file only seeds a new
// cluster. Addresses this node knows but the log does not carry yet (a node being added,
// the members a joiner was told about) live in `local`, which is never replicated.
//
// Adding a node follows etcd's learner flow: addLearner → wait until its log is within
// `promoteLagEntries` of the leader's → addVoter. A learner counts for no quorum, so a
// slow newcomer never stalls commits (thesis §4.2.1). The add answers once the addLearner
// entry commits — the node need not run yet (etcd's order: `member add`, then start it).
// The entry marks the learner for promotion (replicated: LockApp.promotionPending), and
// whichever node leads promotes it from its tick once it has caught up, so a promotion
// survives leader changes and nobody has to hold a request open for it.
import type { Logger } from 'pino';
import type { ConfChange, Index, NodeId } from '../../raft/core/types.js';
import type { ProposalOutcome, RaftDriver } from '../../raft/driver.js';
import type { Transport } from '../../raft/seams.js';
import { Failure } from '../../api/failure.js';
import { ok, refused, type Refusal, type Result } from '../../api/service-result.js';
import type { LockApp, MemberAddress } from '../app/lock-app.js';
import { addressContext, decodeMemberContext } from './member-address.js';
import type { PeerContact } from './peer-contact.js';

export { encodeAddressContext } from './member-address.js';

export interface MembershipOptions {
  self: NodeId;
  app: LockApp;
  driver: () => RaftDriver;
  transport: Transport;
  /** index of the newest snapshot in this node's storage (0: none yet) */
  snapshotIndex: () => Index;
  /** a learner is promoted once its match index is within this many entries of the leader's log */
  promoteLagEntries: number;
  /** how long a promote request waits for a learner to catch up before answering 504 (and
   *  the bound on taking the snapshot a newcomer starts from) */
  catchUpTimeoutMs: number;
  /** the driver's proposal timeout: a conf change is known committed or not within it */
  proposalTimeoutMs?: number;
  /** this node started with --join and an empty data dir: not a member until added */
  joining: boolean;
  /** when each peer was last heard from, and in which term (peer-contact.ts) */
  contact: PeerContact;
  /** the strict reconfiguration check counts a voter as reachable if a message of the
   *  leader's current term came from it within this long (docs/membership.md) */
  activeWindowMs?: number;
  nowMs(): number;
  logger: Logger;
}

/** Where this node stands in the configuration in force (its own log's latest conf). */
export type SelfState = 'voter' | 'learner' | 'joining' | 'removed';

const POLL_MS = 50;
/** how long a conf change waits out the core's "not yet" refusals (see change()) */
const PENDING_WAIT_MS = 2000;
/** after an automatic promotion could not be made (quorum check, a change in flight,
 *  leadership moving), the leader tries again this much later */
const PROMOTE_RETRY_MS = 1000;
/** marks a 409 that retrying cannot fix (a joining node gives up on it) */
const ADDRESS_CONFLICT = { details: { conflict: 'addresses' } };

export class Membership {
  /** one membership change at a time on this leader (the core also refuses a second
   *  uncommitted conf entry; this also covers the learner catch-up wait) */
  private changing: string | null = null;
  /** addresses not (yet) in the replicated book: a node being added, a joiner's peers */
  private readonly local = new Map<NodeId, MemberAddress>();
  /** the conf in force ever listed this node (in this process, or in its storage at start) */
  private wasMember: boolean;
  private lastState: SelfState | null = null;
  private snapshotForJoiner: Promise<boolean> | null = null;
  /** leader: no automatic promotion attempt before this time */
  private promoteNotBeforeMs = 0;

  constructor(private readonly o: MembershipOptions) {
    this.wasMember = !o.joining;
  }

  address(id: NodeId): MemberAddress | undefined {
    return this.o.app.members.get(id) ?? this.local.get(id);
  }

  /** Seed addresses from the cluster file for members the replicated book does not know.
   *  Every node of a new cluster seeds the same file, so the books stay identical. */
  seed(members: readonly MemberAddress[]): void {
    for (const m of members) if (!this.o.app.members.has(m.id)) this.o.app.members.set(m.id, m);
    this.pushPeers();
  }

  /** Addresses learned outside the log (a joiner asking GET /v1/cluster): local only. */
  learn(members: readonly MemberAddress[]): void {
    for (const m of members) if (m.id !== this.o.self && m.peer) this.local.set(m.id, m);
    this.pushPeers();
  }

  /** driver hook: a conf change entry was applied (on every node, in log order) */
  onConfApplied(cc: ConfChange): void {
    const mc = decodeMemberContext(cc.nodeId, cc.context);
    if (mc) {
      this.o.app.members.set(cc.nodeId, mc.address);
      this.local.delete(cc.nodeId);
    }
    // replicated like the URLs: set by an addLearner that asks for it, cleared by any other
    // change of that node (promoted, removed, or re-added as a learner only)
    if (cc.type === 'addLearner' && mc?.promote) this.o.app.promotionPending.add(cc.nodeId);
    else this.o.app.promotionPending.delete(cc.nodeId);
    this.pushPeers();
    this.refreshState();
  }

  /** after a snapshot replaced the application state (and its address book) */
  onRestored(): void {
    this.pushPeers();
    this.refreshState();
  }

  /** The transport accepts messages only from peers it knows: every address we know. */
  pushPeers(): void {
    const peers = new Map<NodeId, string>();
    for (const m of this.local.values()) peers.set(m.id, m.peer);
    for (const m of this.o.app.members.values()) peers.set(m.id, m.peer);
    this.o.transport.setPeers(peers);
  }

  // ---- this node's own standing --------------------------------------------------------

  /** as of the last tick or conf change (routing asks on every request: keep it cheap) */
  selfState(): SelfState {
    return this.lastState ?? this.computeState();
  }

  private computeState(): SelfState {
    const conf = this.o.driver().status().conf;
    if (conf.voters.includes(this.o.self)) return 'voter';
    if (conf.learners.includes(this.o.self)) return 'learner';
    return this.wasMember ? 'removed' : 'joining';
  }

  /** why this node should not take traffic, or null */
  notReadyReason(): string | null {
    switch (this.selfState()) {
      case 'removed':
        return 'this node was removed from the cluster and no longer takes part (stop it; to bring it back, empty its data dir and join again)';
      case 'joining':
        return 'this node is joining the cluster and is not a member yet';
      default:
        return null;
    }
  }

  /** a learner the leader will promote to voter by itself once it has caught up */
  promotionPending(id: NodeId): boolean {
    return this.o.app.promotionPending.has(id) && this.o.driver().status().conf.learners.includes(id);
  }

  /** driver tick: log changes of our own standing; on the leader, prepare snapshots for
   *  newcomers and promote learners that have caught up */
  onTick(): void {
    this.refreshState();
    if (this.o.driver().currentRole !== 'leader') return;
    const now = this.o.nowMs();
    this.ensureSnapshotForNewcomers();
    this.autoPromote(now);
  }

  /**
   * Promote one marked learner that has caught up, when no other change is in flight.
   * Runs on whichever node leads (the mark is replicated), so a leader change while the
   * learner catches up delays the promotion by a tick, never loses it.
   */
  private autoPromote(now: number): void {
    if (this.changing !== null || now < this.promoteNotBeforeMs || this.o.app.promotionPending.size === 0) return;
    const st = this.o.driver().status();
    const id = st.conf.learners.find((l) => this.o.app.promotionPending.has(l) && this.caughtUp(l));
    if (id === undefined) return;
    this.promoteNotBeforeMs = now + PROMOTE_RETRY_MS;
    const short = this.quorumAfter([...st.conf.voters, id], `promoting ${id}`);
    if (short) {
      this.o.logger.debug({ node: id, reason: short.failure.message }, 'automatic promotion postponed');
      return;
    }
    void this.exclusive(`promote ${id}`, () => this.addVoter(id)).then(
      (r) => {
        if (r.ok) {
          this.o.logger.info({ node: id }, 'promoted a learner to voter: it had caught up');
          return;
        }
        const level = r.failure.code === 'conflict' || r.failure.code === 'unavailable' ? 'debug' : 'warn';
        this.o.logger[level]({ node: id, reason: r.failure.message }, 'automatic promotion not made yet; trying again');
      },
      (err: unknown) => this.o.logger.warn({ node: id, reason: (err as Error).message }, 'automatic promotion not made yet; trying again'),
    );
  }

  /** its log holds at least our snapshot and is within promoteLagEntries of ours */
  private caughtUp(id: NodeId): boolean {
    const st = this.o.driver().status();
    const pr = st.progress?.[id];
    // match > 0: it holds at least our snapshot; the lag bound keeps the promotion from
    // adding a voter that would stall commits while it catches up (thesis §4.2.1)
    return pr !== undefined && pr.match > 0 && st.lastIndex - pr.match <= this.o.promoteLagEntries;
  }

  private refreshState(): void {
    const state = this.computeState();
    if (state === 'voter' || state === 'learner') this.wasMember = true;
    if (state !== this.lastState) {
      const prev = this.lastState;
      this.lastState = state;
      if (state === 'removed') this.o.logger.error({ previously: prev }, 'this node was removed from the cluster: it no longer serves requests, and takes no part in elections once the removal commits; stop it (and empty its data dir before it ever joins again)');
      else if (prev !== null) this.o.logger.info({ state, previously: prev }, `this node is now a ${state === 'joining' ? 'joining node' : state}`);
    }
  }

  /**
   * A node with an empty disk must start from a snapshot: conf entries replayed onto an
   * empty base would give it a wrong configuration (docs/raft-core.md "Joining nodes"), so
   * a joiner ignores appends from index 1 until it has one. A leader whose log still starts
   * at index 1 (never compacted) takes a snapshot as soon as a member has nothing, so its
   * next probe ships the snapshot. Covers leaders elected in the middle of a join.
   */
  private ensureSnapshotForNewcomers(): void {
    if (this.snapshotForJoiner || this.o.snapshotIndex() > 0) return;
    const st = this.o.driver().status();
    // a learner with nothing: a newcomer (voters at 0 are usually just not heard from yet)
    const empty = Object.entries(st.progress ?? {}).some(([id, pr]) => id !== this.o.self && pr.learner && pr.match === 0);
    if (!empty) return;
    this.snapshotForJoiner = this.o.driver().compactNow();
    void this.snapshotForJoiner.finally(() => {
      this.snapshotForJoiner = null;
    });
  }

  // ---- changes (leader only) -----------------------------------------------------------

  /**
   * Add a node as a learner; unless `learnerOnly`, marked for automatic promotion to voter
   * once caught up (autoPromote). Resolves once the addLearner entry is committed — the
   * node need not be running. Idempotent: a retry, or a second join of the same node,
   * finds the learner; a voter with the same addresses is simply reported. A learner added
   * with `learnerOnly` that is now added without it gets the mark (a new addLearner entry).
   * Refused (never rejected) when the change is not made.
   */
  async add(m: MemberAddress, o: { learnerOnly: boolean }): Promise<Result<void>> {
    const clash = this.addressClash(m);
    if (clash) return clash;
    const conf = this.o.driver().status().conf;
    if (conf.voters.includes(m.id)) return DONE; // already done (same addresses: checked above)
    if (conf.learners.includes(m.id) && (o.learnerOnly || this.o.app.promotionPending.has(m.id))) return DONE;
    if (!o.learnerOnly) {
      // one new voter at a time, as etcd allows one learner: a marked learner that never
      // catches up (never started, wrong peer URL) must be dealt with before the next
      const waiting = conf.learners.find((id) => id !== m.id && this.o.app.promotionPending.has(id));
      if (waiting !== undefined) {
        return refused(new Failure('conflict', `${waiting} was added and waits to be promoted to voter once it has caught up; one new voter at a time — start ${waiting} (or remove it), then retry`));
      }
    }
    return this.exclusive(`add ${m.id}`, async () => {
      // the leader must reach the newcomer as soon as the entry is appended
      this.local.set(m.id, m);
      this.pushPeers();
      const snap = await this.prepareSnapshot();
      if (!snap.ok) return snap;
      const r = await this.change({ type: 'addLearner', nodeId: m.id, context: addressContext(m, { promote: !o.learnerOnly }) });
      if (r.ok) this.o.logger.info({ node: m.id, api: m.api, peer: m.peer, promotion: o.learnerOnly ? 'none (learner only)' : 'automatic, once caught up' }, 'added a learner');
      return r;
    });
  }

  /** The longest add() takes on the leader before it answers (for the relay from a
   *  follower, which must not give up first): the snapshot, then one conf change. */
  addBudgetMs(): number {
    return this.o.catchUpTimeoutMs + this.changeBudgetMs();
  }

  /** The longest promote() takes on the leader: the catch-up wait, then one conf change. */
  promoteBudgetMs(): number {
    return this.o.catchUpTimeoutMs + this.changeBudgetMs();
  }

  /** One conf change: the "pending" refusal waited out, then the proposal's own timeout. */
  changeBudgetMs(): number {
    return PENDING_WAIT_MS + (this.o.proposalTimeoutMs ?? 5000);
  }

  /** Promote a learner to voter once its log is within promoteLagEntries of ours. */
  async promote(id: NodeId, signal: AbortSignal): Promise<Result<void>> {
    const conf = this.o.driver().status().conf;
    if (conf.voters.includes(id)) return DONE;
    if (!conf.learners.includes(id)) return notMember(id);
    return this.exclusive(`promote ${id}`, () => this.promoteWhenCaughtUp(id, signal));
  }

  /** Remove a member (the caller handles the leader itself: it transfers leadership first). */
  async remove(id: NodeId): Promise<Result<void>> {
    const st = this.o.driver().status();
    if (!st.conf.voters.includes(id) && !st.conf.learners.includes(id)) return notMember(id);
    if (st.conf.voters.length === 1 && st.conf.voters[0] === id) return refused(new Failure('invalid_request', 'id: cannot remove the last voting member'));
    const short = st.conf.voters.includes(id) ? this.quorumAfter(st.conf.voters.filter((v) => v !== id), `removing ${id}`) : null;
    if (short) return short;
    return this.exclusive(`remove ${id}`, async () => {
      const r = await this.change({ type: 'removeNode', nodeId: id });
      if (r.ok) this.o.logger.info({ node: id }, 'removed a member');
      return r;
    });
  }

  private async promoteWhenCaughtUp(id: NodeId, signal: AbortSignal): Promise<Result<void>> {
    const caught = await this.waitCaughtUp(id, signal);
    if (!caught.ok) return caught;
    const r = await this.addVoter(id);
    if (r.ok) this.o.logger.info({ node: id }, 'promoted a learner to voter');
    return r;
  }

  private async addVoter(id: NodeId): Promise<Result<void>> {
    const st = this.o.driver().status();
    if (st.conf.voters.includes(id)) return DONE;
    if (!st.conf.learners.includes(id)) return notMember(id);
    const short = this.quorumAfter([...st.conf.voters, id], `promoting ${id}`);
    if (short) return short;
    const addr = this.address(id);
    return this.change({ type: 'addVoter', nodeId: id, ...(addr ? { context: addressContext(addr) } : {}) });
  }

  /** the same id with other URLs, or another member at these URLs, is a mistake: refuse */
  private addressClash(m: MemberAddress): Refusal | null {
    const conf = this.o.driver().status().conf;
    const members = new Set([...conf.voters, ...conf.learners]);
    const known = this.o.app.members.get(m.id);
    if (members.has(m.id) && known && (known.api !== m.api || known.peer !== m.peer)) {
      return refused(new Failure('conflict', `${m.id} is already a member with api ${known.api} and peer ${known.peer}; remove it first to change its addresses`, ADDRESS_CONFLICT));
    }
    for (const id of members) {
      const a = this.o.app.members.get(id);
      if (id !== m.id && a && (sameOrigin(a.peer, m.peer) || sameOrigin(a.api, m.api))) {
        return refused(new Failure('conflict', `member ${id} already uses ${sameOrigin(a.peer, m.peer) ? m.peer : m.api}`, ADDRESS_CONFLICT));
      }
    }
    return null;
  }

  /**
   * etcd's strict reconfiguration check: refuse a change after which the voters this
   * leader has heard from lately would not form a quorum of the new configuration (e.g.
   * removing a healthy voter while another one is down: the remaining configuration could
   * then never elect a leader until the down one returns). "Heard from lately": a Raft
   * message of this leader's current term within activeWindowMs. Not the core's
   * recentActive flags, which a new leader starts at "active" for every member, answering
   * or not; and not a message of an earlier term (a leader that just died was heard from a
   * moment ago). 409 names the members that are missing (docs/membership.md).
   */
  private quorumAfter(voters: readonly NodeId[], what: string): Refusal | null {
    const st = this.o.driver().status();
    const since = this.o.nowMs() - (this.o.activeWindowMs ?? 5000);
    const reachable = (v: NodeId): boolean => v === this.o.self || this.o.contact.heardSince(v, since, st.term);
    const missing = voters.filter((v) => !reachable(v));
    const quorum = Math.floor(voters.length / 2) + 1;
    if (voters.length - missing.length < quorum) {
      return refused(new Failure('conflict', `${what} would leave ${voters.length - missing.length} reachable voter(s) of ${voters.length}, below the quorum of ${quorum} (not heard from lately: ${missing.join(', ')}); bring them back (or remove them) first`, { details: { missing } }));
    }
    return null;
  }

  /** the newcomer's first state must be a snapshot (see ensureSnapshotForNewcomers) */
  private async prepareSnapshot(): Promise<Result<void>> {
    if (this.o.snapshotIndex() > 0) return DONE;
    const deadline = this.o.nowMs() + this.o.catchUpTimeoutMs;
    while (!(await this.o.driver().compactNow())) {
      if (this.o.nowMs() > deadline) return refused(new Failure('unavailable', 'could not take the snapshot a new member starts from; retry'));
      await sleep(POLL_MS);
    }
    return DONE;
  }

  private async exclusive(what: string, fn: () => Promise<Result<void>>): Promise<Result<void>> {
    if (this.changing !== null) return refused(new Failure('conflict', `another membership change is in progress (${this.changing}); one change at a time — retry when it is done`));
    this.changing = what;
    try {
      return await fn();
    } finally {
      this.changing = null;
    }
  }

  private async change(cc: ConfChange): Promise<Result<void>> {
    // The core refuses a conf change (docs/membership.md "Right after a leader change"):
    // - 'term_not_committed': this leader's term has no committed entry yet. A configuration
    //   is in force once appended, so until its noop commits a new leader cannot rule out an
    //   earlier term's conf entry sitting uncommitted elsewhere, and changing membership then
    //   can split the cluster into two quorums (Raft thesis ch. 4). The noop commits within
    //   a round trip once a quorum answers;
    // - 'conf_change_pending': a conf entry of this term is not committed yet (one change at
    //   a time, thesis §4.1).
    // Both are waited out for up to PENDING_WAIT_MS, as an etcd `member add/remove` waits
    // for its leader; a change still refused then answers 503 (no quorum behind the new
    // leader yet: retry) or 409 (another change is still being committed).
    const deadline = this.o.nowMs() + PENDING_WAIT_MS;
    const waitable = (o: ProposalOutcome): boolean => !o.ok && o.kind === 'rejected' && (o.reason === 'term_not_committed' || o.reason === 'conf_change_pending');
    let out = await this.o.driver().proposeConfChange(cc);
    while (waitable(out) && this.o.nowMs() < deadline) {
      await sleep(POLL_MS / 2);
      out = await this.o.driver().proposeConfChange(cc);
    }
    if (out.ok) return DONE;
    if (out.kind === 'rejected' && out.reason === 'term_not_committed') return refused(new Failure('unavailable', `the new leader has not yet committed an entry of its term (no quorum has answered it), so it cannot change the membership yet; retry`));
    if (out.kind === 'rejected' && out.reason === 'conf_change_pending') return refused(new Failure('conflict', 'a membership change is still being committed; one change at a time — retry when it is done'));
    if (out.kind === 'rejected' && out.reason === 'incarnation_conflict') {
      return refused(new Failure('conflict', `${cc.nodeId} is a voter bound to another data directory (it lost its data): remove it first (raftlock member remove ${cc.nodeId}), wipe its data directory, then join it again`));
    }
    if (out.kind === 'unknown') return refused(new Failure('timeout', `the ${cc.type} of ${cc.nodeId} is not known to be committed; check GET /v1/cluster, then retry`));
    return refused(new Failure('unavailable', `the ${cc.type} of ${cc.nodeId} was not applied (${out.kind === 'rejected' ? out.reason : out.kind}); retry`));
  }

  private async waitCaughtUp(id: NodeId, signal: AbortSignal): Promise<Result<void>> {
    const deadline = this.o.nowMs() + this.o.catchUpTimeoutMs;
    while (this.o.nowMs() < deadline) {
      if (signal.aborted) return refused(new Failure('unavailable', `the request was aborted; ${id} stays a learner`));
      const st = this.o.driver().status();
      if (st.role !== 'leader') return refused(new Failure('unavailable', `leadership moved while ${id} was catching up; it stays a learner — retry on the new leader`));
      if (this.caughtUp(id)) return DONE;
      await sleep(POLL_MS);
    }
    return refused(new Failure('timeout', `${id} did not catch up within ${this.o.catchUpTimeoutMs} ms; it stays a learner (retry, or check that the leader can reach its peer URL)`));
  }
}

/** a change made, or found already made */
const DONE: Result<void> = ok(undefined);

function notMember(id: NodeId): Refusal {
  return refused(new Failure('not_found', `${id} is not a member`));
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return a === b;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
