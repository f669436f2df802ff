// The Raft protocol as a synchronous state machine (etcd-io/raft raft.go in spirit).
// Inputs: step(message), tick(), propose…; outputs accumulate in `msgs`, `readStates`
// and the log's unstable tail, and RawNode hands them out as a Ready. Nothing here does
// I/O, reads a clock or draws randomness except through cfg.rng.
//
// Section references are to the Raft paper (Ongaro & Ousterhout 2014) unless "thesis"
// (Ongaro's PhD thesis, 2014) is named.
import { ConfHistory, ConfChangeError, decodeConfChange, encodeConfChange, isMember, MAX_OWN_INCARNATION_LENGTH, validOwnIncarnation, validNodeId } from './conf.js';
import { mayGrant, standingOf } from './incarnation.js';
import { RaftLog } from './log.js';
import { assert } from '../../assert.js';
import type { Progress } from './progress.js';
import { ReadOnly } from './read-only.js';
import type { Rng } from './rng.js';
import type { Rejection } from './message-check.js';
import type { Storage } from './storage.js';
import { ProgressTracker } from './tracker.js';
import type {
  ConfChange, ConfState, Entry, EntryKind, HardState, Index, Message, NodeId, ProposeResult, ReadState, Role, Snapshot, SoftState, Standing, Term, TraceEvent,
} from './types.js';

export interface RaftConfig {
  id: NodeId;
  /** randomized election timeout in [electionTicks, electionTicksMax) drawn from rng */
  electionTicks: number;
  /** exclusive upper bound of the randomized timeout (default 2 * electionTicks), so a
   *  cluster file's election_timeout_ms [min, max] maps onto ticks exactly */
  electionTicksMax?: number;
  heartbeatTicks: number;
  rng: Rng;
  preVote: boolean;
  checkQuorum: boolean;
  /** max in-flight append messages per follower in 'replicate' state */
  maxInflight: number;
  /** max total entry bytes per append message (at least one entry always) */
  maxMsgBytes: number;
  /** restart: index the application already reflects (its snapshot index); default 0 */
  applied?: Index;
  /** Leader: when the commit index advances and there are no new entries to carry it, do
   *  NOT send commit-only appends at once; followers learn it with the next append or the
   *  next heartbeat (at most heartbeatTicks later). Clients never wait for followers to
   *  learn the commit index (the leader answers them), so this only delays followers'
   *  apply, and it saves, per commit and follower, one append, one appendResp and one
   *  disk write: half the peer traffic of a serial workload. Default false (eager, as etcd). */
  lazyCommit?: boolean;
  /** this data directory's incarnation: a random token made when the directory was
   *  created (docs/membership.md, "Incarnations"). Without it the node runs plain Raft
   *  and trusts every member's disk never to be lost. */
  incarnation?: string;
  /** TEST ONLY (the simulator's mutation check, docs/simulation.md "Mutation table"):
   *  ignore incarnations entirely, as before they existed. Never set in production. */
  testOnlyDisableAmnesiaGuard?: boolean;
  /** TEST ONLY — never set outside tests and the simulator's mutation table
   *  (docs/simulation.md). Switches OFF the rule that a new leader accepts no conf change
   *  until an entry of its own term has committed (see proposeConfChange), bringing back
   *  the single-server membership bug it prevents, so tests can show they catch it. */
  unsafeAllowConfChangeBeforeTermCommit?: boolean;
  /** TEST ONLY — never set outside tests and the simulator's mutation table
   *  (docs/simulation.md). Switches OFF the rule that a voter whose removal (or demotion)
   *  is appended but not yet committed may still campaign (see campaignConf), bringing
   *  back the dead end it prevents: a leader that appended its own removal and lost its
   *  quorum (or crashed) before that entry committed can leave a cluster that only it
   *  could lead, and that then never elects a leader again. */
  testOnlyNoCampaignWhileRemovalPending?: boolean;
  /** TEST ONLY — never set outside tests and the simulator's mutation table
   *  (docs/simulation.md). Switches OFF the rule that a fresh node (empty log, no bootstrap
   *  entry) always pre-votes (see freshPreVote): without Pre-Vote, a member that lost its
   *  disk then deposes every leader once per election timeout. */
  testOnlyFreshCampaignsWithoutPreVote?: boolean;
  /** TEST ONLY — as above. Switches OFF the rule that a fresh node pre-votes even when
   *  told to take over (timeoutNow): a transfer meant for the incarnation it replaced then
   *  makes it a candidate at once, and the grants that incarnation's request earned, still
   *  on their way, elect it with an empty log (a lost committed entry; sim seed 910860). */
  testOnlyFreshTransferSkipsPreVote?: boolean;
  /** TEST ONLY — as above. Switches OFF the rule that a learner whose log holds entries
   *  above its commit index may campaign (see campaignConf), bringing back the dead end
   *  it prevents: a learner holding the only copy of a newer term's entries refuses every
   *  voter its configuration needs, and can never lead itself. */
  testOnlyNoLearnerCampaign?: boolean;
  /** TEST ONLY — as above. Switches OFF the rule that the vote lease (inVoteLease) holds
   *  only with Pre-Vote on, bringing back the dead end it prevents: without Pre-Vote every
   *  losing candidate earns real votes, each renews a lease, and the leases keep refusing
   *  the one candidate whose log could win (sim seed 906559). */
  testOnlyVoteLeaseWithoutPreVote?: boolean;
  /** TEST ONLY — as above. Switches OFF the answer to a vote request of a stale term (step),
   *  as etcd-raft ignores it, bringing back the dead end it prevents: without Pre-Vote, a
   *  candidate no other candidate sends to never learns the term it is behind (sim seed
   *  1002519). */
  testOnlyIgnoreStaleVote?: boolean;
  /** TEST ONLY — as above. The leader lease (step) holds only with Check-Quorum, as in
   *  etcd-raft, bringing back the dead end it prevents without it: a removed voter the
   *  leader no longer sends to deposes each leader before its removal commits (sim seed
   *  1010906). */
  testOnlyLeaseOnlyWithCheckQuorum?: boolean;
  /** TEST ONLY — as above. Switches OFF the handling of a follower whose log went
   *  backwards (a disk that lost entries it had acknowledged: see noteRegression): the
   *  leader again takes a rejection at an index it holds as matched for a stale one, and a
   *  follower again ignores a heartbeat's commit index beyond its log, so the follower
   *  stays stuck behind until the leader next compacts its log (docs/raft-core.md "A
   *  follower whose log went backwards"). */
  testOnlyIgnoreLogRegression?: boolean;
  /** TEST ONLY — as above. A follower that looks fresh (empty log, the seed configuration)
   *  again never answers a heartbeat with `lost`: a data directory that lost its whole log,
   *  bootstrap entry included, stays behind as a probe at its old match (sim seed 7694). */
  testOnlyFreshNeverSaysLost?: boolean;
  /** TEST ONLY (mutation): a leader counts its own log toward commit as soon as it appends,
   *  before the write is durable (etcd-raft's classic leader), so an entry can commit with
   *  fewer durable copies than a quorum while the leader's write is out (onStable) */
  testOnlyCountUnsyncedSelf?: boolean;
  trace?: (e: TraceEvent) => void;
  /** Leader: `follower` rejected an append at an index at or below what it had acknowledged
   *  (`acked`), so its log went backwards (a damaged or lying disk); `hint` is where it now
   *  says its log ends. For the driver's log and metrics; the core has already stopped
   *  counting it and re-sends the entries (docs/raft-core.md "A follower whose log went
   *  backwards"). */
  onLogRegression?: (follower: NodeId, acked: Index, hint: Index) => void;
  /** RawNode.step refused a peer's message (misaddressed or malformed: message-check.ts);
   *  for the driver's log. It is dropped either way. */
  onReject?: (m: Message, why: Rejection) => void;
}

/** how many election timeouts more than a voter a learner waits before it campaigns
 *  (campaignConf): the learner rule is for a dead end no voter can leave, not a race */
const LEARNER_PATIENCE = 3;

export class RaftConfigError extends Error {
  override readonly name = 'RaftConfigError';
}

function validateConfig(cfg: RaftConfig): void {
  const bad = (msg: string): never => {
    throw new RaftConfigError(`invalid RaftConfig: ${msg}`);
  };
  const posInt = (v: number): boolean => Number.isSafeInteger(v) && v >= 1;
  if (!validNodeId(cfg.id)) bad('id must be a non-empty string');
  if (!posInt(cfg.electionTicks)) bad(`electionTicks must be an integer >= 1, got ${cfg.electionTicks}`);
  if (!posInt(cfg.heartbeatTicks)) bad(`heartbeatTicks must be an integer >= 1, got ${cfg.heartbeatTicks}`);
  if (cfg.electionTicksMax !== undefined && !(Number.isSafeInteger(cfg.electionTicksMax) && cfg.electionTicksMax > cfg.electionTicks)) bad(`electionTicksMax must be an integer above electionTicks (${cfg.electionTicks}), got ${cfg.electionTicksMax}`);
  if (cfg.heartbeatTicks >= cfg.electionTicks) bad(`heartbeatTicks (${cfg.heartbeatTicks}) must be below electionTicks (${cfg.electionTicks})`);
  if (!posInt(cfg.maxInflight)) bad(`maxInflight must be an integer >= 1, got ${cfg.maxInflight}`);
  if (!posInt(cfg.maxMsgBytes)) bad(`maxMsgBytes must be an integer >= 1, got ${cfg.maxMsgBytes}`);
  if (cfg.applied !== undefined && !(Number.isSafeInteger(cfg.applied) && cfg.applied >= 0)) bad(`applied must be an integer >= 0, got ${cfg.applied}`);
  if (cfg.incarnation !== undefined && !validOwnIncarnation(cfg.incarnation)) bad(`incarnation must be 1-${MAX_OWN_INCARNATION_LENGTH} chars of [A-Za-z0-9._:#/-]`);
}

/** hard cap on one entry's data: far above any lock command, low enough that one entry
 *  cannot exhaust memory or the transport's frame limit */
export const MAX_ENTRY_BYTES = 8 * 1024 * 1024;

const LEADER_MSGS: ReadonlySet<Message['type']> = new Set(['append', 'heartbeat', 'snapshot']);

/** What a leader still owes the followers at the next flush (proposals are batched). */
type PendingBcast = 'none' | 'entries' | 'commit';

export class Raft {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  /** current term and vote (§5.2 persistent state); durable via Ready.hardState */
  term: Term = 0;
  vote: NodeId | null = null;
  lead: NodeId | null = null;
  role: Role = 'follower';
  readonly log: RaftLog;
  /** configuration history of this log; current() is the conf in force (thesis §4.1) */
  readonly confs: ConfHistory;
  /** progress (leader), votes ((pre-)candidate) and the voter set every quorum is counted over */
  readonly tracker: ProgressTracker;
  msgs: Message[] = [];
  readStates: ReadState[] = [];
  readonly readOnly = new ReadOnly();
  /** ticks since the last valid leader contact (follower) or the last quorum check (leader) */
  electionElapsed = 0;
  heartbeatElapsed = 0;
  randomizedElectionTimeout = 0;
  /** follower: we granted our vote in this term, in this process (volatile: a vote read
   *  back from storage after a restart does not count), to a candidate we have not heard
   *  from as leader yet. Check-Quorum's lease then covers that candidate (see step). */
  grantedThisTerm = false;
  leadTransferee: NodeId | null = null;
  /** leader: index of the latest conf entry it may not yet know committed (one change at
   *  a time); a new leader starts it at its noop (see proposeConfChange) */
  pendingConfIndex: Index = 0;
  private pendingBcast: PendingBcast = 'none';
  /** whether our conf history starts from a real configuration: a bootstrap conf in the
   *  storage, or an installed snapshot. A node joining with empty storage replays conf
   *  entries onto an empty base, so until it receives a snapshot its idea of the voters
   *  may be a strict subset of the truth (e.g. only itself): it must never campaign. */
  private bootstrapped: boolean;
  /** our incarnation, or undefined when the amnesia guard is off (plain Raft) */
  private readonly inc: string | undefined;
  /** the highest commit index a leader's append has told us, in this process (an append
   *  carries the leader's commit index), or a snapshot's index: above our own commit while
   *  our log lacks those entries. A node whose applied index stays below it is behind
   *  (docs/api.md "Readiness") */
  knownCommit: Index = 0;
  /** the commit index carried by the latest append of our current leader (0 until one
   *  arrives): once our log reaches it, we hold every entry that leader had committed when
   *  it sent it — what the amnesia decision waits for (docs/membership.md "Incarnations") */
  leaderCommit: Index = 0;
  /** fresh only: in this process we heard from a leader, or from a candidate with a log,
   *  so a cluster with a log exists, and an election this node cannot win (a fresh
   *  candidate needs every voter's grant, each from an empty log). It then holds off
   *  campaigning (tickElection; docs/raft-core.md "Incarnations") */
  private sawLog = false;

  constructor(cfg: RaftConfig, storage: Storage) {
    validateConfig(cfg);
    this.cfg = cfg;
    this.id = cfg.id;
    this.inc = cfg.testOnlyDisableAmnesiaGuard === true ? undefined : cfg.incarnation;
    const { hardState, conf } = storage.initialState();
    this.log = new RaftLog(storage, cfg.applied ?? 0);
    this.confs = new ConfHistory(conf);
    this.tracker = new ProgressTracker({ self: this.id, inc: this.inc, maxInflight: cfg.maxInflight, conf: () => this.confs.current() });
    this.bootstrapped = conf.voters.length > 0 || storage.snapshot().meta.index > 0;
    // conf entries take effect when appended (thesis ch. 4), so those in the stored log
    // are in force after a restart even if not committed
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    if (last >= first) {
      for (const e of storage.entries(first, last + 1)) {
        if (e.kind === 'conf') this.confs.record(e.index, decodeStoredConf(e));
      }
    }
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.becomeFollower(this.term, null);
  }

  // ---- small queries --------------------------------------------------------------

  conf(): ConfState {
    return this.confs.current();
  }
  isVoter(id: NodeId = this.id): boolean {
    return this.tracker.isVoter(id);
  }
  /** may this node campaign? Only bootstrapped voters (see campaignConf), and not while a
   *  received snapshot is unpersisted */
  promotable(): boolean {
    if (!this.bootstrapped || this.log.unstable.snapshot !== undefined) return false;
    const conf = this.campaignConf();
    return conf !== null && this.mayCampaign(conf);
  }
  /**
   * The configuration that makes this node a voter, or null when it is none. Normally its
   * latest one. But a node that its latest configuration removes (or demotes to learner)
   * while the entry that does so is above its commit index is still a voter of the
   * committed configuration, and it may still be needed to elect anyone: thesis §4.2.2
   * ("a server that is not part of its own latest configuration should still start new
   * elections, as it might still be needed until the Cnew entry is committed"). Example:
   * the leader appended its own removal, lost its quorum before the entry committed and
   * stepped down; the others cannot win without its vote, and it refuses them because its
   * log is longer. So it campaigns; as a candidate and as a leader it counts only the
   * voters of its latest configuration — never itself — so every quorum it forms is a
   * majority of a configuration in its log, as any other candidate's is (the single-server
   * overlap argument is unchanged), and once the removal commits it steps down
   * (stepDownIfRemoved) and never campaigns again. docs/raft-core.md "Removed, but not
   * yet committed".
   */
  private campaignConf(): ConfState | null {
    const latest = this.conf();
    if (latest.voters.includes(this.id)) return latest;
    const committed = this.confs.at(this.log.committed);
    if (committed.voters.includes(this.id) && this.cfg.testOnlyNoCampaignWhileRemovalPending !== true) return committed;
    // a learner holding uncommitted entries may hold the newest log there is — newer than
    // any voter's, so that it refuses every candidate that needs its vote (the conf that
    // promotes it is only on the candidate) — and then only it can be elected. It
    // campaigns under its latest conf, counting only that conf's voters, commits, and
    // steps down (stepDownIfRemoved). docs/raft-core.md "Learners with uncommitted entries"
    return this.learnerMayCampaign() ? latest : null;
  }
  /** the learner rule of campaignConf: only with Pre-Vote (so it never bumps a term), and
   *  only after LEARNER_PATIENCE more election timeouts than a voter waits (tickElection),
   *  so the voters get every chance to elect one of themselves first */
  private learnerMayCampaign(): boolean {
    if (this.cfg.testOnlyNoLearnerCampaign === true || !this.cfg.preVote) return false;
    return this.conf().learners.includes(this.id) && this.log.lastIndex() > this.log.committed;
  }
  /** incarnations: only a member bound by `conf` (the one that makes it a voter)
   *  campaigns, or a fresh one for a new cluster's first election, or a learner of
   *  `conf` (see campaignConf) */
  private mayCampaign(conf: ConfState): boolean {
    if (this.inc === undefined) return true;
    const st = standingOf(conf, this.log.lastIndex(), this.id, this.inc);
    // a learner is never bound (only voters are); its own vote never counts
    if (conf.learners.includes(this.id)) return st === 'unbound' || st === 'bound' || st === 'legacy';
    return st === 'bound' || st === 'fresh' || st === 'legacy';
  }
  standing(): Standing | undefined {
    return this.inc === undefined ? undefined : standingOf(this.conf(), this.log.lastIndex(), this.id, this.inc);
  }
  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }
  softState(): SoftState {
    return { leader: this.lead, role: this.role };
  }
  private trace(e: TraceEvent): void {
    this.cfg.trace?.(e);
  }
  private send(m: Message): void {
    assert(m.to !== this.id, `message ${m.type} addressed to self`);
    if (this.inc !== undefined) m.inc = this.inc;
    this.msgs.push(m);
  }
  hasPendingWork(): boolean {
    return this.pendingBcast !== 'none' || (this.role === 'leader' && this.readOnly.hasQueued() && this.committedEntryInCurrentTerm());
  }

  // ---- role changes (only here) ----------------------------------------------------

  private reset(term: Term): void {
    if (term !== this.term) {
      assert(term > this.term, `term moving backwards from ${this.term} to ${term}`);
      this.term = term;
      this.vote = null;
      this.grantedThisTerm = false;
    }
    this.lead = null;
    this.leaderCommit = 0;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    // §5.2: randomized timeouts make split votes rare
    this.randomizedElectionTimeout = this.cfg.rng.int(this.cfg.electionTicks, this.cfg.electionTicksMax ?? 2 * this.cfg.electionTicks);
    this.leadTransferee = null;
    this.tracker.reset();
    this.readOnly.reset();
    this.pendingConfIndex = 0;
    this.pendingBcast = 'none';
  }

  becomeFollower(term: Term, lead: NodeId | null): void {
    this.reset(term);
    this.lead = lead;
    this.role = 'follower';
    this.trace({ type: 'becomeFollower', id: this.id, term, leader: lead });
  }

  private becomePreCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become pre-candidate');
    // Pre-Vote (thesis §9.6): no term change, so a node that cannot win disturbs no one
    this.tracker.resetVotes();
    this.lead = null;
    // campaigning itself, a node has given up on the candidate it voted for: the vote's
    // lease (inVoteLease) ends, or every pre-vote it lost would renew it for another
    // timeout and keep it refusing the others' (docs/recovery.md "A vote is a lease too")
    this.grantedThisTerm = false;
    this.role = 'preCandidate';
    this.trace({ type: 'becomeCandidate', id: this.id, term: this.term + 1, preVote: true });
  }

  private becomeCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = 'candidate';
    this.trace({ type: 'becomeCandidate', id: this.id, term: this.term, preVote: false });
    this.trace({ type: 'voteGranted', id: this.id, term: this.term, to: this.id });
  }

  private becomeLeader(): void {
    assert(this.role === 'candidate', `only a candidate becomes leader (was ${this.role})`);
    const boot = this.bootstrapEntry(); // before reset(): it reads who voted for us
    const voterIncs = this.tracker.grantedIncs();
    this.reset(this.term);
    this.lead = this.id;
    this.role = 'leader';
    const last = this.log.lastIndex();
    this.syncProgress();
    // our own log counts toward commit only once durable (thesis §10.2.1)
    const self = this.tracker.progress.get(this.id)!;
    self.match = Math.min(last, this.log.unstable.offset - 1);
    self.state = 'replicate';
    self.recentActive = true;
    if (this.inc !== undefined) self.inc = this.inc;
    // A vote that counted came from the incarnation its voter is bound to, in this term:
    // that is the same proof an answer to our first append gives. Without it, a fresh
    // progress counts for nothing (progressCounts) until that answer arrives, and the
    // check-quorum one election timeout from now deposed a leader whose followers were
    // slow to answer (a synced write each, on a loaded machine), although each is given
    // one lease period to answer (syncProgress).
    for (const [id, inc] of voterIncs) {
      const pr = this.tracker.progress.get(id);
      if (pr !== undefined && id !== this.id && pr.inc === undefined) pr.inc = inc;
    }
    this.trace({ type: 'becomeLeader', id: this.id, term: this.term });
    // §5.4.2 / §8: a noop of our term lets us commit (and learn) everything before it; the
    // first leader of a new cluster appends the bootstrap entry instead (also of our term)
    const first = boot ? this.appendEntry('conf', encodeConfChange(boot)) : this.appendEntry('noop', new Uint8Array(0));
    // No conf change before that entry commits (see proposeConfChange). The mutation flag
    // restores the old, unsafe bound: "a conf entry may exist up to our last index".
    this.pendingConfIndex = this.cfg.unsafeAllowConfChangeBeforeTermCommit === true ? last : first.index;
  }

  /** a fresh leader (it won the unanimous first election) binds every voter to the
   *  incarnation that voted for it, and names the cluster */
  private bootstrapEntry(): ConfChange | null {
    if (this.inc === undefined || this.standing() !== 'fresh') return null;
    const incarnations: Record<NodeId, string> = {};
    for (const v of this.tracker.voters()) {
      const inc = v === this.id ? this.inc : this.tracker.voteInc(v);
      if (inc === undefined) return null; // a voter without incarnations: stay plain Raft
      incarnations[v] = inc;
    }
    return { type: 'bootstrap', nodeId: this.id, incarnations, clusterId: `${this.inc}.${this.term}` };
  }

  /**
   * Leader: make the tracker's progress mirror the conf (plus self); new members start
   * probing at the end. Nodes removed by a conf entry that is not committed yet keep their
   * progress, so they still receive the entry that removes them; they are dropped once it
   * commits, after a last empty append that carries that commit (sendFarewell). They are
   * not voters meanwhile, so they never count.
   */
  private syncProgress(): void {
    const farewell = this.role === 'leader' && this.cfg.testOnlyNoCampaignWhileRemovalPending !== true;
    this.tracker.sync(this.log.lastIndex() + 1, this.log.committed >= this.confs.lastIndex(), farewell ? (id, pr) => this.sendFarewell(id, pr) : undefined);
  }

  /**
   * Last word to a node whose removal just committed: an empty append after everything we
   * sent it, carrying the commit index. Once it holds what we sent (the removal entry
   * included, as a rule: its acknowledgement is often still on the way, since the
   * removal commits without it), the consistency check passes and it learns that its
   * removal committed, so it stops campaigning (campaignConf). A node that misses this
   * may campaign until it learns the commit; followers that hear from a leader ignore it
   * meanwhile (the lease, thesis §4.2.3), and if it wins an election it commits the
   * removal and steps down.
   */
  private sendFarewell(to: NodeId, pr: Progress): void {
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === undefined) return; // compacted past it: it is far behind and holds no removal
    this.send({ type: 'append', from: this.id, to, term: this.term, prevIndex, prevTerm, entries: [], commit: this.log.committed });
  }

  // ---- time ---------------------------------------------------------------------------

  tick(): void {
    if (this.role === 'leader') this.tickHeartbeat();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    const patience = this.learnerMayCampaign() || this.freshAfterLog() ? LEARNER_PATIENCE * this.cfg.electionTicks : 0;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout + patience) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTicks) {
      this.electionElapsed = 0;
      // Check-Quorum (thesis §6.2): a leader cut off from a majority steps down, so clients
      // can find the real leader, and its lease-based vote refusals expire
      if (this.cfg.checkQuorum) {
        if (!this.tracker.quorumActive()) {
          this.becomeFollower(this.term, null);
          return;
        }
        this.tracker.resetRecentActive();
      }
      // a transfer that has not finished within an election timeout is abandoned (§3.10)
      this.leadTransferee = null;
    }
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      // a regular heartbeat re-asks the newest pending ReadIndex round: if that round's
      // heartbeats were lost, the reads still complete (an ack of round r completes all <= r)
      this.bcastHeartbeat(this.readOnly.lastPendingRound());
    }
    this.maybeBindLegacy();
  }

  /** A log written before incarnations existed: once its leader has committed an entry
   *  of its term and heard from every voter, it binds them all as they are now (the
   *  protection starts there: a disk lost before that is not detected). */
  private maybeBindLegacy(): void {
    if (this.inc === undefined || this.standing() !== 'legacy' || this.leadTransferee !== null) return;
    if (this.pendingConfIndex > this.log.committed || !this.committedEntryInCurrentTerm()) return;
    const incarnations: Record<NodeId, string> = {};
    for (const v of this.tracker.voters()) {
      const inc = v === this.id ? this.inc : this.tracker.progress.get(v)?.inc;
      if (inc === undefined) return;
      incarnations[v] = inc;
    }
    this.appendEntry('conf', encodeConfChange({ type: 'bootstrap', nodeId: this.id, incarnations, clusterId: `${this.inc}.${this.term}` }));
  }

  // ---- elections ----------------------------------------------------------------------

  /** start an election (pre-vote first unless this is a leadership transfer) */
  hup(transfer: boolean): void {
    if (this.role === 'leader' || !this.promotable()) return;
    // A fresh node pre-votes even for a transfer: a timeoutNow that reaches it was meant
    // for the incarnation whose disk it replaced (a leader never picks an empty log), and
    // the vote answers to that incarnation's transfer campaign of the same term may still
    // be on their way. Campaigning at once, it would count them and lead with an empty
    // log (simulator seed 910860: a committed entry lost). Its pre-vote can win only a
    // brand-new cluster's unanimous first election (docs/raft-core.md "Incarnations").
    const fresh = this.freshPreVote() && (!transfer || this.cfg.testOnlyFreshTransferSkipsPreVote !== true);
    if ((this.cfg.preVote && !transfer) || fresh) {
      this.becomePreCandidate();
      this.requestVotes('preVote', this.term + 1, false);
    } else {
      this.becomeCandidate();
      this.requestVotes('vote', this.term, transfer);
    }
  }

  /**
   * A fresh node (empty log, no bootstrap entry) always pre-votes, even without
   * cfg.preVote. It can only win a brand-new cluster's unanimous first election, where every
   * voter is blank and grants the pre-vote as well; but a member that lost its disk is
   * fresh too, and a real vote request of a higher term from it deposes the leader (no
   * lease without Check-Quorum) although nobody with a log grants it — every election
   * timeout, until the operator's removal commits, which those depositions keep from
   * happening (simulator seed 808003; docs/raft-core.md "Incarnations"). Its pre-votes
   * change no one's term, and a rejection carries the cluster's term, so the leader's
   * appends reach it and it learns from the log that it is superseded.
   */
  private freshPreVote(): boolean {
    return this.inc !== undefined && this.cfg.testOnlyFreshCampaignsWithoutPreVote !== true && this.standing() === 'fresh';
  }

  /**
   * A fresh node that has seen a log elsewhere (sawLog) cannot win: a fresh candidate needs
   * every voter's grant (the bootstrap election), and a voter with a log never grants an
   * empty one. It is a member that lost its data, or one whose cluster formed without it;
   * either way it waits for the leader's log. So it campaigns only after LEARNER_PATIENCE
   * more election timeouts of silence than a voter waits, like a learner: it stays quiet
   * while its peers are briefly out of reach, and still campaigns in the end. (The one
   * case where it could be needed: a brand-new cluster whose first leader lost its disk
   * before anyone stored the bootstrap entry; the others heard that leader, but the
   * leader's new process has not, and campaigns at once.) Only liveness is at stake: a
   * pre-vote changes no term and no vote. Only with Pre-Vote, as
   * raftlock nodes run: without it the rule is off, and the plain-Raft schedules the
   * simulator studied with wiped nodes (docs/simulation.md: fresh-campaigns-without-prevote,
   * vote-lease-without-prevote, stale-vote-unanswered) run as they did.
   */
  private freshAfterLog(): boolean {
    return this.sawLog && this.cfg.preVote && this.inc !== undefined && this.standing() === 'fresh';
  }

  private requestVotes(type: 'vote' | 'preVote', term: Term, transfer: boolean): void {
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    const bindings = this.inc !== undefined ? this.conf().incarnations : undefined;
    for (const v of this.tracker.voters()) {
      if (v === this.id) continue;
      const m: Message = transfer ? { type, from: this.id, to: v, term, lastIndex, lastTerm, transfer } : { type, from: this.id, to: v, term, lastIndex, lastTerm };
      const bind = bindings?.[v];
      if (bind !== undefined) m.bind = bind;
      this.send(m);
    }
    this.recordVote(this.id, true, this.inc);
  }

  private recordVote(from: NodeId, granted: boolean, inc: string | undefined): void {
    if (!this.isVoter(from)) return; // answers from non-voters do not count
    // incarnations: a grant counts only from the incarnation our conf binds that voter to
    // (in a bootstrap election nothing is bound yet: every voter must grant instead)
    const boot = this.inc !== undefined && this.standing() === 'fresh';
    this.tracker.recordVote(from, granted, inc, boot);
    const res = this.tracker.tallyVotes(boot);
    if (res === 'won') {
      if (this.role === 'preCandidate') {
        this.becomeCandidate();
        this.requestVotes('vote', this.term, false);
      } else {
        this.becomeLeader();
      }
    } else if (res === 'lost') {
      this.becomeFollower(this.term, null);
    }
  }

  /**
   * The leader lease extended to the candidate we just voted for (docs/recovery.md, "A
   * vote is a lease too"). It may have won already, and its first append is on its way:
   * until one minimum election timeout after our grant, we treat it as the leader we hear
   * from and ignore would-be leaders of later terms, as inLease does. Without this, a
   * (pre-)candidate whose requests reach us between our grant and that first append wins
   * a later term and deposes a leader that has just won. Only ever refuses: a vote we do
   * not give cannot break election safety (§5.2); a candidate that lost costs us at most
   * the one timeout we would wait for it anyway. Only with Pre-Vote: without it, every
   * candidate that is going to lose still collects real votes, each of which starts a
   * lease, and the leases of a split vote can refuse the only candidate whose log could
   * win, term after term (sim seed 906559; docs/recovery.md "A vote is a lease too").
   */
  private inVoteLease(candidate: NodeId): boolean {
    return (
      this.cfg.checkQuorum && (this.cfg.preVote || this.cfg.testOnlyVoteLeaseWithoutPreVote === true) && this.role === 'follower' && this.grantedThisTerm && this.lead === null &&
      this.vote !== null && this.vote !== candidate && this.electionElapsed < this.cfg.electionTicks
    );
  }

  /** the leader lease (step) holds: always, but for the test-only switch that ties it to
   *  Check-Quorum as etcd-raft does; a stale leader's appends are then answered with our
   *  term, since the lease makes it ignore the votes of the term that replaced it */
  private leaderLeaseOn(): boolean {
    return this.cfg.checkQuorum || this.cfg.testOnlyLeaseOnlyWithCheckQuorum !== true;
  }

  private handleVoteRequest(m: Extract<Message, { type: 'vote' | 'preVote' }>): void {
    if (m.lastIndex > 0) this.sawLog = true;
    const resp = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    // §5.2: at most one vote per term; a pre-vote for a future term promises nothing
    const canVote = this.vote === m.from || (this.vote === null && this.lead === null) || (m.type === 'preVote' && m.term > this.term);
    // incarnations: a node that is not the bound incarnation of its id grants nothing, and
    // nobody votes for a candidate that is not the incarnation our conf binds it to
    const eligible = this.inc === undefined || (mayGrant(this.standing()!, this.inc, m) && (this.conf().incarnations?.[m.from] ?? m.inc) === m.inc);
    // §5.4.1: grant only to a candidate whose log is at least as up-to-date as ours
    if (canVote && eligible && this.log.isUpToDate(m.lastIndex, m.lastTerm)) {
      // the grant carries the candidate's term (for a pre-vote: the term it will use)
      this.send({ type: resp, from: this.id, to: m.from, term: m.term, reject: false });
      if (m.type === 'vote') {
        this.electionElapsed = 0;
        this.vote = m.from;
        this.grantedThisTerm = true;
        this.trace({ type: 'voteGranted', id: this.id, term: this.term, to: m.from });
      }
    } else {
      this.send({ type: resp, from: this.id, to: m.from, term: this.term, reject: true });
    }
  }

  // ---- step ---------------------------------------------------------------------------

  /** `m` has passed the trust boundary (RawNode.step, message-check.ts): its fields are
   *  present and well-formed; what is left to judge is m against our state */
  step(m: Message): void {
    assert(m.to === this.id && m.from !== this.id, `step of a ${m.type} from ${m.from} to ${m.to}, which the boundary refuses`);
    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        // leader lease (thesis §4.2.3): while we hear from a leader, ignore would-be
        // leaders, so a rejoining or removed node cannot depose a healthy leader. With or
        // without Check-Quorum, as the thesis has it: without it, a voter whose removal it
        // has not yet seen commit (it may campaign: campaignConf) and that the leader no
        // longer sends to deposed each leader before the removal could commit (sim seed
        // 1010906; docs/raft-core.md "The leader lease")
        const inLease = this.leaderLeaseOn() && this.lead !== null && this.electionElapsed < this.cfg.electionTicks;
        if ((inLease || this.inVoteLease(m.from)) && m.transfer !== true) return;
      }
      if (m.type === 'preVote' || (m.type === 'preVoteResp' && !m.reject)) {
        // pre-votes never change our term (thesis §9.6)
      } else if (LEADER_MSGS.has(m.type)) {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, null);
      }
    } else if (m.term < this.term) {
      if ((this.leaderLeaseOn() || this.cfg.preVote) && (m.type === 'append' || m.type === 'heartbeat')) {
        // a stale leader (e.g. after a partition) learns our term and steps down; without
        // this it could never win again, since pre-vote/lease make us ignore its votes, and
        // (the lease holding without Check-Quorum too) a leader that never steps down by
        // itself would ignore the votes of the term that replaced it, for good
        this.send({ type: 'appendResp', from: this.id, to: m.from, term: this.term, index: 0, reject: true, hint: 0, hintTerm: 0 });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResp', from: this.id, to: m.from, term: this.term, reject: true });
      } else if (m.type === 'vote' && this.cfg.testOnlyIgnoreStaleVote !== true) {
        // §5.1: a request with a stale term is rejected, and the answer carries our term, so
        // the candidate adopts it. Without Pre-Vote (whose refusal above does the same) a
        // candidate that no other candidate sends to (its configuration is not theirs) can
        // otherwise fall behind in term for good: its requests are always stale, and the
        // one it needs keeps raising its own term (sim seed 1002519; docs/raft-core.md
        // "Stale vote requests")
        this.send({ type: 'voteResp', from: this.id, to: m.from, term: this.term, reject: true });
      }
      return;
    }
    if (m.type === 'vote' || m.type === 'preVote') {
      this.handleVoteRequest(m);
      return;
    }
    switch (this.role) {
      case 'leader':
        return this.stepLeader(m);
      case 'candidate':
      case 'preCandidate':
        return this.stepCandidate(m);
      case 'follower':
        return this.stepFollower(m);
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        this.electionElapsed = 0;
        this.lead = m.from;
        return this.handleFromLeader(m);
      case 'timeoutNow':
        // §3.10: the leader asks us to start an election at once, skipping pre-vote
        return this.hup(true);
      default:
        return;
    }
  }

  private stepCandidate(m: Message): void {
    switch (m.type) {
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        // §5.2: a leader of our term exists; give up
        this.becomeFollower(m.term, m.from);
        return this.handleFromLeader(m);
      case 'voteResp':
      case 'preVoteResp': {
        const expected = this.role === 'preCandidate' ? 'preVoteResp' : 'voteResp';
        if (m.type === expected) this.recordVote(m.from, !m.reject, m.inc);
        return;
      }
      default:
        return;
    }
  }

  private handleFromLeader(m: Extract<Message, { type: 'append' | 'heartbeat' | 'snapshot' }>): void {
    this.sawLog = true;
    if (m.type === 'append') {
      // the leader's own commit index (a heartbeat's is at most what we acknowledged, and
      // one beyond our log says our log went backwards: handleHeartbeat)
      this.knownCommit = Math.max(this.knownCommit, m.commit);
      this.leaderCommit = Math.max(this.leaderCommit, m.commit);
      this.handleAppend(m);
    } else if (m.type === 'heartbeat') {
      this.handleHeartbeat(m);
    } else {
      this.handleSnapshot(m);
    }
  }

  // ---- follower side of replication ----------------------------------------------------

  private respondAppend(to: NodeId, index: Index, reject: boolean, hint = 0, hintTerm = 0, lost = false): void {
    this.send(lost ? { type: 'appendResp', from: this.id, to, term: this.term, index, reject, hint, hintTerm, lost } : { type: 'appendResp', from: this.id, to, term: this.term, index, reject, hint, hintTerm });
  }

  private handleAppend(m: Extract<Message, { type: 'append' }>): void {
    if (m.prevIndex < this.log.committed) {
      // everything up to committed already matches (§5.4 leader completeness)
      this.respondAppend(m.from, this.log.committed, false);
      return;
    }
    const res = this.log.maybeAppend(m.prevIndex, m.prevTerm, m.entries, (from) => {
      // thesis §4.1: a truncated conf entry no longer applies
      this.confs.truncateFrom(from);
    });
    if (res === undefined) {
      // §5.3 fast back-tracking: the largest index <= prevIndex whose term is <= prevTerm
      const hint = this.log.findConflictByTerm(Math.min(m.prevIndex, this.log.lastIndex()), m.prevTerm);
      this.respondAppend(m.from, m.prevIndex, true, hint, this.log.term(hint) ?? 0);
      return;
    }
    for (const e of res.appended) if (e.kind === 'conf') this.confs.record(e.index, decodeStoredConf(e));
    this.commitTo(Math.min(m.commit, res.lastNew));
    this.respondAppend(m.from, res.lastNew, false);
  }

  private handleHeartbeat(m: Extract<Message, { type: 'heartbeat' }>): void {
    // the leader sends min(our match, its commit), so this prefix agrees with its log
    const last = this.log.lastIndex();
    if (m.commit <= last) this.commitTo(m.commit);
    // what the leader holds as acknowledged by us: its commit index, and our match itself
    // while it doubts we still hold it (a rejection of ours said our log ends below it)
    const acked = Math.max(m.commit, m.match ?? 0);
    // a node that looks fresh answers only a claim made of it (see below)
    const ofUs = m.match !== undefined && this.cfg.testOnlyFreshNeverSaysLost !== true;
    if (acked > last && this.cfg.testOnlyIgnoreLogRegression !== true && (ofUs || this.standing() !== 'fresh')) {
      // Beyond our log: in this term we acknowledged entries up to it (the leader sends at
      // most our match, learned from our acknowledgements, so even a delayed heartbeat says
      // so), and within a term a follower's log never shrinks below what it acknowledged.
      // So ours went backwards: a disk that lost acknowledged entries. Say so (`lost`): the
      // leader stops counting us and sends the entries again (noteRegression). The
      // rejection of an append cannot say it: on a transport that duplicates or reorders, a
      // stale one looks the same. The commit index alone is not enough: entries we lost
      // above it (an older term's, which the leader commits only with one of its own) are
      // told by `match` (sim seed 890).
      // A node that looks fresh (an empty log, the seed configuration) answers only a
      // heartbeat that carries `match`. A new data directory acknowledged nothing: a commit
      // index the leader sends it was the old directory's, whose progress the leader drops
      // as soon as this incarnation answers (stepLeader). But a directory that lost its
      // whole log, the bootstrap entry included, looks fresh as well; its own rejections
      // put the leader in doubt of the match it acknowledged, the leader's heartbeats then
      // carry it, and only this answer brings the node back (sim seed 7694: it stayed
      // silent, and with another voter superseded nothing could commit).
      this.respondAppend(m.from, acked, true, last, this.log.term(last) ?? 0, true);
    }
    this.send({ type: 'heartbeatResp', from: this.id, to: m.from, term: this.term, ctx: m.ctx });
  }

  private handleSnapshot(m: Extract<Message, { type: 'snapshot' }>): void {
    const s = m.snapshot;
    if (this.restore(s)) this.respondAppend(m.from, this.log.lastIndex(), false);
    else this.respondAppend(m.from, this.log.committed, false);
  }

  /** §7 InstallSnapshot: returns whether the log was replaced */
  private restore(s: Snapshot): boolean {
    if (s.meta.index <= this.log.committed) return false;
    if (this.log.matchTerm(s.meta.index, s.meta.term)) {
      // our log already holds it: just learn that it is committed
      this.commitTo(s.meta.index);
      return false;
    }
    this.log.restore(s);
    this.knownCommit = Math.max(this.knownCommit, s.meta.index);
    this.confs.reset(s.meta.conf);
    this.bootstrapped = true;
    this.trace({ type: 'commit', id: this.id, index: s.meta.index, term: s.meta.term });
    return true;
  }

  private commitTo(i: Index): void {
    if (this.log.commitTo(i)) {
      this.confs.compactTo(i);
      this.trace({ type: 'commit', id: this.id, index: i, term: this.log.term(i) ?? 0 });
    }
  }

  // ---- leader side -----------------------------------------------------------------------

  private stepLeader(m: Message): void {
    let pr = this.tracker.progress.get(m.from);
    if (!pr) return; // not a member (any more)
    if (this.inc !== undefined && (m.type === 'appendResp' || m.type === 'heartbeatResp')) {
      const inc = m.inc;
      if (pr.inc !== undefined && pr.inc !== inc) {
        // another data directory answers under this id (it lost its disk): what we know
        // of the old one's log says nothing about this one; start over from a probe
        pr = this.tracker.replace(m.from, this.log.lastIndex() + 1);
      }
      pr.inc = inc;
    }
    switch (m.type) {
      case 'appendResp':
        pr.recentActive = true;
        if (m.index > this.log.lastIndex()) return; // an ack beyond our log: not from a correct follower
        if (m.reject) this.handleAppendReject(m.from, pr, m);
        else this.handleAppendAck(m.from, pr, m.index);
        return;
      case 'heartbeatResp':
        return this.handleHeartbeatResp(m.from, pr, m.ctx);
      default:
        return;
    }
  }

  private handleAppendReject(from: NodeId, pr: Progress, m: Extract<Message, { type: 'appendResp' }>): void {
    let probe = m.hint;
    if (m.hintTerm > 0) probe = this.log.findConflictByTerm(probe, m.hintTerm);
    if (m.lost === true) {
      // only the follower can tell (handleHeartbeat); without the fix it stays unheard
      if (pr.match > 0 && m.index <= pr.match && this.cfg.testOnlyIgnoreLogRegression !== true) this.noteRegression(from, pr, m.index, probe);
      return;
    }
    // its log agrees with ours only below what it acknowledged: a stale rejection, or a disk
    // that lost entries; our next heartbeats ask (carry `match`) until it acknowledges again
    if (m.hint < pr.match && this.cfg.testOnlyIgnoreLogRegression !== true) pr.matchInDoubt = true;
    if (pr.maybeDecrTo(m.index, probe)) {
      if (pr.state === 'replicate') pr.becomeProbe();
      this.maybeSendAppend(from, true);
    }
  }

  /**
   * `from` says (`lost`, answering a heartbeat) that its log no longer reaches `rejected`,
   * an index at or below what it acknowledged: it lost entries it told us it had durably
   * stored (a damaged or lying disk: PAR, FAST'18). Raft's safety assumes a disk never
   * does, and nothing can undo what was already counted; what the leader can do is stop
   * counting it — for commits (its match is forgotten) and for ReadIndex rounds until it
   * holds again everything it had acknowledged (`recoverTo`) — and send the entries again
   * from where it says its log ends. Before, the leader kept sending from the old match,
   * took each rejection for a stale one, and the follower stayed stuck behind until the
   * leader next compacted its log. A `lost` answer is exact: the heartbeat it answers
   * carried at most what the follower had acknowledged in this term. (One that a
   * duplicating or reordering network delivers after the follower has acknowledged those
   * entries again makes the leader forget the match once more: safe, it costs a probe; an
   * ordered transport never does it.) docs/raft-core.md "A follower whose log went backwards".
   */
  private noteRegression(from: NodeId, pr: Progress, rejected: Index, probe: Index): void {
    const acked = pr.match;
    pr.regressed(Math.max(1, Math.min(rejected, probe + 1)));
    this.cfg.onLogRegression?.(from, acked, probe);
    this.maybeSendAppend(from, true);
  }

  private handleAppendAck(from: NodeId, pr: Progress, index: Index): void {
    const wasPaused = pr.isPaused();
    if (pr.maybeUpdate(index) || (pr.match === index && pr.state === 'probe')) {
      if (pr.state === 'probe') {
        pr.becomeReplicate();
      } else if (pr.state === 'snapshot' && (pr.match >= pr.pendingSnapshot || pr.match + 1 >= this.log.firstIndex())) {
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (pr.state === 'replicate') {
        pr.inflights.freeLE(index);
      }
      if (this.maybeCommit()) {
        this.commitAdvanced();
        if (this.stepDownIfRemoved()) return;
      } else if (wasPaused && this.pendingBcast !== 'commit') {
        // it may have missed commit updates while paused (unless a commit broadcast is due anyway)
        this.maybeSendAppend(from, true);
      }
      while (this.maybeSendAppend(from, false));
      this.maybeFinishTransfer();
    }
  }

  /** Thesis §3.10: hand over (TimeoutNow) once the target holds our whole log — and, here,
   *  once that log is committed. Proposals stop while transferring, so this waits at most
   *  a round trip; without it, entries this leader's clients are waiting for commit under
   *  the next leader, after this one stepped down, and their answer can no longer be
   *  completed here (the lease renewal of a grant needs the leader's lessor). */
  private maybeFinishTransfer(): void {
    const to = this.leadTransferee;
    if (to === null || this.role !== 'leader') return;
    const pr = this.tracker.progress.get(to);
    const last = this.log.lastIndex();
    if (pr && pr.match === last && this.log.committed === last) this.sendTimeoutNow(to);
  }

  private handleHeartbeatResp(from: NodeId, pr: Progress, ctx: number): void {
    pr.recentActive = true;
    pr.probeSent = false;
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
    if (pr.match < this.log.lastIndex()) this.maybeSendAppend(from, true);
    // a ReadIndex ack confirms our leadership only from the bound incarnation of a voter,
    // and not from one whose log went backwards until it holds again what it had
    // acknowledged: a read at our commit index must not rest on a copy it lost
    if (ctx > 0 && this.tracker.progressCounts(from) && pr.recoverTo === 0) {
      const acks = this.readOnly.recvAck(from, ctx);
      if (acks && this.tracker.hasQuorum(acks)) this.readStates.push(...this.readOnly.release(ctx));
    }
  }

  /** §5.4.2: commit by counting replicas only for an entry of the current term */
  private maybeCommit(): boolean {
    const mci = this.tracker.committed();
    if (mci > this.log.committed && this.log.term(mci) === this.term) {
      const confWasPending = this.log.committed < this.confs.lastIndex();
      this.commitTo(mci);
      if (confWasPending && this.log.committed >= this.confs.lastIndex()) this.syncProgress(); // drop removed nodes
      return true;
    }
    return false;
  }

  /** a leader removed from the conf leads until that removal commits, then steps down */
  private stepDownIfRemoved(): boolean {
    if (this.role !== 'leader' || this.isVoter() || this.log.committed < this.confs.lastIndex()) return false;
    this.pendingBcast = 'commit';
    this.flushBcast(); // let the others learn the commit before we go silent (even when lazy)
    this.becomeFollower(this.term, null);
    return true;
  }

  /** RawNode.advance: our log is durable up to `i` */
  onStable(i: Index): void {
    if (this.role !== 'leader') return;
    const self = this.tracker.progress.get(this.id);
    if (self && self.maybeUpdate(i) && this.maybeCommit()) {
      this.commitAdvanced();
      if (!this.stepDownIfRemoved()) this.maybeFinishTransfer();
    }
  }

  /** leader: the commit index moved; tell the followers now, or lazily (cfg.lazyCommit) */
  private commitAdvanced(): void {
    if (!this.cfg.lazyCommit) this.pendingBcast = 'commit';
  }

  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.tracker.progress.get(to);
    if (!pr || to === this.id || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const ents = prevTerm === undefined ? undefined : this.log.slice(pr.next, this.log.lastIndex() + 1, this.cfg.maxMsgBytes);
    if (prevTerm === undefined || ents === undefined) return this.maybeSendSnapshot(to, pr);
    if (ents.length === 0 && !sendIfEmpty) return false;
    this.send({ type: 'append', from: this.id, to, term: this.term, prevIndex, prevTerm, entries: ents, commit: this.log.committed });
    pr.sentEntries(ents.length, prevIndex + ents.length);
    return true;
  }

  private maybeSendSnapshot(to: NodeId, pr: Progress): boolean {
    // do not ship a snapshot to a node that has not answered lately (etcd does the same)
    if (!pr.recentActive) return false;
    const snapshot = this.log.snapshot();
    assert(snapshot.meta.index > 0, `follower ${to} needs entries below ${this.log.firstIndex()} but there is no snapshot`);
    this.send({ type: 'snapshot', from: this.id, to, term: this.term, snapshot });
    pr.becomeSnapshot(snapshot.meta.index);
    return true;
  }

  private bcastHeartbeat(ctx: number): void {
    for (const [id, pr] of this.tracker.progress) {
      if (id === this.id) continue;
      // never tell a follower to commit beyond what it acknowledged holding
      const commit = Math.min(pr.match, this.log.committed);
      // a follower whose rejection put its log below its match is asked whether it still
      // holds that match (handleHeartbeat); only then, so other heartbeats are unchanged.
      // Also when the match is at or below the commit index, which says the same number:
      // `match` is what tells a follower that looks fresh that the claim is about it
      if (pr.matchInDoubt) this.send({ type: 'heartbeat', from: this.id, to: id, term: this.term, commit, ctx, match: pr.match });
      else this.send({ type: 'heartbeat', from: this.id, to: id, term: this.term, commit, ctx });
    }
  }

  private sendTimeoutNow(to: NodeId): void {
    this.send({ type: 'timeoutNow', from: this.id, to, term: this.term });
  }

  /** broadcast what proposals/commits since the last flush require, batched per follower */
  private flushBcast(): void {
    if (this.role !== 'leader' || this.pendingBcast === 'none') return;
    const sendIfEmpty = this.pendingBcast === 'commit';
    this.pendingBcast = 'none';
    for (const id of this.tracker.progress.keys()) {
      if (id === this.id) continue;
      if (this.maybeSendAppend(id, sendIfEmpty)) while (this.maybeSendAppend(id, false));
    }
  }

  /** RawNode.ready: emit batched appends and start a ReadIndex round for queued reads */
  flush(): void {
    this.flushBcast();
    if (this.role === 'leader' && this.readOnly.hasQueued() && this.committedEntryInCurrentTerm()) {
      const round = this.readOnly.startRound(this.log.committed, this.id);
      const acks = this.readOnly.recvAck(this.id, round)!;
      if (this.tracker.hasQuorum(acks)) this.readStates.push(...this.readOnly.release(round));
      else this.bcastHeartbeat(round);
    }
  }

  /** §6.4 / §8: until an entry of its own term commits, a new leader may not know the commit index */
  private committedEntryInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  // ---- client requests -----------------------------------------------------------------

  private appendEntry(kind: EntryKind, data: Uint8Array): Entry {
    const e: Entry = { index: this.log.lastIndex() + 1, term: this.term, kind, data };
    this.log.append([e]);
    if (this.cfg.testOnlyCountUnsyncedSelf === true && this.role === 'leader') this.tracker.progress.get(this.id)?.maybeUpdate(e.index);
    if (this.pendingBcast === 'none') this.pendingBcast = 'entries';
    if (kind === 'conf') {
      // thesis §4.1: the new configuration takes effect as soon as it is in the log
      this.confs.record(e.index, decodeStoredConf(e));
      this.pendingConfIndex = e.index;
      this.onConfChanged();
    }
    return e;
  }

  propose(data: Uint8Array, kind: EntryKind = 'normal'): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'not_leader' };
    if (this.leadTransferee !== null) return { ok: false, reason: 'transferring' };
    // an entry above maxMsgBytes still travels (alone); only absurd sizes are refused
    if (data.length > MAX_ENTRY_BYTES) return { ok: false, reason: 'too_large' };
    const e = this.appendEntry(kind, data);
    return { ok: true, index: e.index, term: e.term };
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'not_leader' };
    if (this.leadTransferee !== null) return { ok: false, reason: 'transferring' };
    // Thesis ch. 4 and Ongaro's single-server membership bug (raft-dev, 2015): a
    // configuration is in force once appended, so a new leader must not change it until an
    // entry of its own term commits. Before that, a conf entry of an earlier term may sit
    // uncommitted on other nodes (possibly not in our log at all), and a change we derive
    // from our configuration can overlap it with two quorums that do not intersect: both
    // then commit different entries at one index. Once our noop commits, every leader of a
    // later term holds our log, and so our configuration, and the danger is gone.
    if (this.cfg.unsafeAllowConfChangeBeforeTermCommit !== true && !this.committedEntryInCurrentTerm()) return { ok: false, reason: 'term_not_committed' };
    if (this.pendingConfIndex > this.log.committed) return { ok: false, reason: 'conf_change_pending' };
    const conf = this.conf();
    if (cc.type === 'bootstrap') return { ok: false, reason: 'invalid_conf_change' }; // the core's own entry
    if (cc.type === 'addVoter' && this.inc !== undefined && conf.clusterId !== undefined) {
      // bind the incarnation we have been replicating to; never rebind a voter to another
      // one in a single step (that is a two-server change: remove it first, then add it)
      const inc = cc.incarnation ?? this.tracker.progress.get(cc.nodeId)?.inc;
      if (inc === undefined) return { ok: false, reason: 'unknown_node' };
      const bound = conf.incarnations?.[cc.nodeId];
      if (bound !== undefined && bound !== inc) return { ok: false, reason: 'incarnation_conflict' };
      if (cc.incarnation !== inc) cc = Object.assign({}, cc, { incarnation: inc });
    }
    let data: Uint8Array;
    try {
      data = encodeConfChange(cc);
    } catch (err) {
      if (err instanceof ConfChangeError) return { ok: false, reason: 'invalid_conf_change' };
      throw err;
    }
    if (cc.type === 'removeNode' && !isMember(conf, cc.nodeId)) return { ok: false, reason: 'unknown_node' };
    const voters = cc.type === 'addVoter' ? conf.voters : conf.voters.filter((v) => v !== cc.nodeId);
    if (cc.type !== 'addVoter' && voters.length === 0) return { ok: false, reason: 'invalid_conf_change' }; // would leave no quorum at all
    return this.propose(data, 'conf');
  }

  /** leader: membership changed in our log; progress, commit and reads follow the new conf */
  private onConfChanged(): void {
    if (this.role !== 'leader') return;
    this.syncProgress();
    if (this.leadTransferee !== null && !this.isVoter(this.leadTransferee)) this.leadTransferee = null;
    // a smaller majority may already hold more entries / ReadIndex acks
    if (this.maybeCommit()) this.commitAdvanced();
    for (const r of [...this.readOnly.pendingRounds()].reverse()) {
      if (this.tracker.hasQuorum(r.acks)) {
        this.readStates.push(...this.readOnly.release(r.id));
        break;
      }
    }
  }

  readIndex(ctx: number): boolean {
    if (this.role !== 'leader') return false;
    return this.readOnly.enqueue(ctx);
  }

  transferLeadership(to: NodeId): boolean {
    if (this.role !== 'leader' || to === this.id || !this.isVoter(to)) return false;
    const pr = this.tracker.progress.get(to);
    if (!pr) return false;
    if (this.leadTransferee === to) return true;
    this.leadTransferee = to;
    this.electionElapsed = 0; // the transfer must finish within one election timeout
    if (pr.match === this.log.lastIndex()) this.maybeFinishTransfer();
    else this.maybeSendAppend(to, true);
    return true;
  }

  reportUnreachable(id: NodeId): void {
    const pr = this.role === 'leader' ? this.tracker.progress.get(id) : undefined;
    // the pipeline to it is probably broken: fall back to one probe at a time
    if (pr && pr.state === 'replicate') pr.becomeProbe();
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    const pr = this.role === 'leader' ? this.tracker.progress.get(id) : undefined;
    if (!pr || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    // wait for the next heartbeat response before probing, so the snapshot lands first
    pr.probeSent = true;
  }
}

/** a conf entry already in our log (or sent by the leader after validation) must decode */
function decodeStoredConf(e: Entry): ConfChange {
  try {
    return decodeConfChange(e.data);
  } catch (err) {
    assert(false, `conf entry ${e.index}/${e.term} does not decode: ${(err as Error).message}`);
  }
}
