// RawNode: the driver-facing API of the core (etcd-io/raft rawnode.go). It wraps Raft and
// turns its accumulated output into Ready values, enforcing the ready/advance hand-shake
// and the persistence order written on the Ready type (types.ts).
import { assert } from '../../assert.js';
import { checkMessage, type RejectReason, type Rejection } from './message-check.js';
import { Raft, type RaftConfig } from './raft.js';
import type { Storage } from './storage.js';
import type { ConfChange, Entry, HardState, Message, NodeId, ProposeResult, ProgressStatus, Ready, SoftState, Standing, Status, Term } from './types.js';

export type { RaftConfig } from './raft.js';
export type { RejectReason, Rejection } from './message-check.js';

/** leader traffic that depends only on its (durable) term may leave before the Ready is persisted */
const EARLY_TYPES: ReadonlySet<Message['type']> = new Set(['append', 'heartbeat', 'snapshot', 'timeoutNow']);

export class RawNode {
  private readonly raft: Raft;
  /** soft and hard state as of the last Ready handed out */
  private prevSoft: SoftState;
  private prevHard: HardState;
  /** highest term whose hard state is durable (persisted and advanced) */
  private durableTerm: Term;
  /** the Ready handed out and not yet advanced */
  private outstanding: Ready | null = null;
  /** the last index committedDuringWrite() handed out for the outstanding Ready (0: none) */
  private handedOutEarly = 0;
  /** messages step() refused, by reason */
  private readonly rejected = new Map<RejectReason, number>();
  private readonly onReject: RaftConfig['onReject'];

  /** hard state + conf from storage.initialState(), then conf entries in the stored log are re-applied */
  constructor(cfg: RaftConfig, storage: Storage) {
    this.raft = new Raft(cfg, storage);
    this.onReject = cfg.onReject;
    this.prevSoft = this.raft.softState();
    this.prevHard = storage.initialState().hardState;
    this.durableTerm = this.prevHard.term;
  }

  tick(): void {
    this.raft.tick();
  }
  /** this node's standing as an incarnation (undefined without one); cheap */
  standing(): Standing | undefined {
    return this.raft.standing();
  }
  /** the cluster id of the configuration in force, once bootstrapped; cheap */
  clusterId(): string | undefined {
    return this.raft.conf().clusterId;
  }
  /**
   * The core's trust boundary for peer messages (message-check.ts): a message that is
   * misaddressed or malformed is refused here, counted (rejections()), reported to
   * RaftConfig.onReject and returned, and never reaches the protocol. Anything else is
   * stepped (a stale one is then ignored, as Raft says) and null returned. Never throws on
   * a peer's message, whatever it holds.
   */
  step(m: Message): Rejection | null {
    const bad = checkMessage(m, this.raft.id);
    if (bad !== null) {
      this.rejected.set(bad.reason, (this.rejected.get(bad.reason) ?? 0) + 1);
      this.onReject?.(m, bad);
      return bad;
    }
    this.raft.step(m);
    return null;
  }
  /**
   * A leader's append acknowledgement that arrived while the outstanding Ready is being
   * written. A leader may commit an entry before its own write of it is durable, once a
   * majority without it has written it (thesis §10.2.1): the core counts its own log only
   * once durable (Raft.onStable), so what commits here is on a quorum's disks. Only a
   * successful acknowledgement of the current term enters mid-write: it moves a
   * follower's match and perhaps the commit index, and relies on nothing being persisted.
   * Returns false, without stepping, for anything else (feed it after the write), and for
   * a Ready that restores a snapshot.
   */
  stepAckDuringWrite(m: Message): boolean {
    const rd = this.outstanding;
    assert(rd !== null, 'stepAckDuringWrite() without an outstanding Ready');
    const r = this.raft;
    if (rd.snapshot || r.role !== 'leader' || m.type !== 'appendResp' || m.reject || m.lost || m.term !== r.term) return false;
    if (checkMessage(m, r.id) !== null) return false;
    r.step(m);
    return true;
  }

  /** The entries that committed while the outstanding Ready is being written, above those
   *  it carries and those an earlier call returned, in order: the driver applies them now,
   *  after the Ready's own committed entries; advance() counts them as applied. Empty
   *  unless this node still leads. */
  committedDuringWrite(): Entry[] {
    const rd = this.outstanding;
    assert(rd !== null, 'committedDuringWrite() without an outstanding Ready');
    const r = this.raft;
    if (r.role !== 'leader') return [];
    const from = Math.max(r.log.applied, rd.committed.at(-1)?.index ?? 0, this.handedOutEarly) + 1;
    if (from > r.log.committed) return [];
    const ents = r.log.slice(from, r.log.committed + 1);
    assert(ents !== undefined && ents.length === r.log.committed + 1 - from, `committed entries ${from}..${r.log.committed} are not all in the log`);
    this.handedOutEarly = r.log.committed;
    return ents;
  }

  /** how many messages step() refused, by reason (a copy) */
  rejections(): Map<RejectReason, number> {
    return new Map(this.rejected);
  }
  /** start an election now (pre-vote first when enabled) */
  campaign(): void {
    this.raft.hup(false);
  }
  propose(data: Uint8Array): ProposeResult {
    return this.raft.propose(data, 'normal');
  }
  /** refused with 'term_not_committed' until an entry of the leader's term commits (its
   *  noop), and with 'conf_change_pending' while an uncommitted conf entry exists */
  proposeConfChange(cc: ConfChange): ProposeResult {
    return this.raft.proposeConfChange(cc);
  }
  /** leader only; the ReadState {index, ctx} appears in a later Ready once a heartbeat
   *  round started after this call is acked by a quorum. Dropped if leadership is lost
   *  (watch Ready.soft). */
  readIndex(ctx: number): boolean {
    return this.raft.readIndex(ctx);
  }
  transferLeadership(to: NodeId): boolean {
    return this.raft.transferLeadership(to);
  }
  reportUnreachable(id: NodeId): void {
    this.raft.reportUnreachable(id);
  }
  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.reportSnapshot(id, ok);
  }

  /** whether ready() would return something; false while a Ready awaits advance() */
  hasReady(): boolean {
    if (this.outstanding !== null) return false;
    const r = this.raft;
    const soft = r.softState();
    return (
      soft.leader !== this.prevSoft.leader ||
      soft.role !== this.prevSoft.role ||
      !sameHardState(r.hardState(), this.prevHard) ||
      r.log.unstable.snapshot !== undefined ||
      r.log.unstable.entries.length > 0 ||
      r.log.hasNextCommittedEntries() ||
      r.readStates.length > 0 ||
      r.msgs.length > 0 ||
      r.hasPendingWork()
    );
  }

  ready(): Ready {
    assert(this.outstanding === null, 'ready() called again before advance() of the previous Ready');
    const r = this.raft;
    r.flush();
    const soft = r.softState();
    const hard = r.hardState();
    const softChanged = soft.leader !== this.prevSoft.leader || soft.role !== this.prevSoft.role;
    const hardChanged = !sameHardState(hard, this.prevHard);
    const snapshot = r.log.unstable.snapshot;
    const entries = [...r.log.unstable.entries];
    const earlyMessages: Message[] = [];
    const messages: Message[] = [];
    for (const m of r.msgs) {
      // votes, responses and anything of a term not yet durable wait for step 2 (persist)
      if (EARLY_TYPES.has(m.type) && m.term <= this.durableTerm) earlyMessages.push(m);
      else messages.push(m);
    }
    r.msgs = [];
    const rd: Ready = {
      entries,
      committed: r.log.nextCommittedEntries(),
      readStates: r.readStates,
      earlyMessages,
      messages,
      // a commit-only change may be lost in a crash (it is re-learned); term, vote,
      // entries and snapshots may not (§5.2 persistent state)
      mustSync: entries.length > 0 || snapshot !== undefined || hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote,
      // the optional parts last: a spread before named fields costs a hidden class per
      // call (BENCHMARKS.md "Tenth round", eslint.config.js)
      ...(softChanged ? { soft } : {}),
      ...(hardChanged ? { hardState: hard } : {}),
      ...(snapshot ? { snapshot } : {}),
    };
    r.readStates = [];
    this.prevSoft = soft;
    this.prevHard = hard;
    this.outstanding = rd;
    return rd;
  }

  /** rd.entries are now stable, rd.committed applied, rd.snapshot installed */
  advance(rd: Ready): void {
    assert(this.outstanding !== null && this.outstanding === rd, 'advance() of a Ready that is not the outstanding one');
    this.outstanding = null;
    const r = this.raft;
    if (rd.hardState) this.durableTerm = Math.max(this.durableTerm, rd.hardState.term);
    let applied = r.log.applied;
    if (rd.snapshot) {
      r.log.unstable.stableSnapTo(rd.snapshot.meta.index);
      applied = Math.max(applied, rd.snapshot.meta.index);
    }
    const last = rd.entries[rd.entries.length - 1];
    if (last) {
      const stable = r.log.unstable.stableTo(last.index, last.term);
      if (stable !== undefined) r.onStable(stable);
    }
    const lastCommitted = rd.committed[rd.committed.length - 1];
    if (lastCommitted) applied = Math.max(applied, lastCommitted.index);
    applied = Math.max(applied, this.handedOutEarly);
    this.handedOutEarly = 0;
    if (applied > r.log.applied) r.log.appliedTo(applied);
  }

  status(): Status {
    const r = this.raft;
    const st: Status = {
      id: r.id,
      role: r.role,
      term: r.term,
      vote: r.vote,
      leader: r.lead,
      commit: r.log.committed,
      applied: r.log.applied,
      lastIndex: r.log.lastIndex(),
      knownCommit: Math.max(r.knownCommit, r.log.committed),
      leaderCommit: r.leaderCommit,
      conf: { voters: [...r.conf().voters], learners: [...r.conf().learners] },
      leadTransferee: r.leadTransferee,
    };
    const standing = r.standing();
    if (standing !== undefined) st.standing = standing;
    if (r.conf().clusterId !== undefined) st.conf.clusterId = r.conf().clusterId;
    if (r.role === 'leader') {
      const progress: Record<NodeId, ProgressStatus> = {};
      for (const [id, pr] of r.tracker.progress) progress[id] = pr.status();
      st.progress = progress;
    }
    return st;
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
