// The node driver: the only place where the pure Raft core meets I/O and `await`
// (docs/architecture.md "Rules", rule 2). It runs the Ready loop one iteration at a time:
//
//   inbox (messages, ticks, proposals, reads)  →  core.step/tick/propose/readIndex
//   Ready: send earlyMessages → apply committed entries already durable here → persist
//          (one synced batch when mustSync; a commit-only change waits for the next one)
//          → send messages → restore snapshot → apply the rest of committed → serve read
//          states → advance
//
// Nothing touches the core while a Ready is in flight: everything that arrives during
// `await storage.save(...)` waits in the inbox and enters the core after advance(). That is
// group commit for free (every proposal that arrives during one fsync rides the next) and
// it keeps the core's ready()/advance() pairing trivially correct. One exception: a
// leader steps a follower's successful append acknowledgement the moment it arrives
// (RawNode.stepAckDuringWrite), so an entry that a majority of the others has written
// commits, applies and is answered in that turn, without waiting for the leader's own
// write (thesis §10.2.1; the core counts the leader's log only once durable).
//
// The same driver runs in production (autoRun: setImmediate scheduling, a real timer
// calling tick()) and inside the simulator (autoRun: false; the simulator calls drain()).
import type { ConfState, Entry, HardState, Index, Message, NodeId, Ready, Role, Status, Term, ConfChange } from './core/types.js';
import type { Application, DriverClock, DurableStorage, RawNodeLike, Transport } from './seams.js';
import { applyConfChange, decodeConfChange } from './core/conf.js';
import { cloneConf } from './core/storage.js';
import { assertDriver as assert } from '../assert.js';
import { trace, tracing } from './trace.js';
import { HeartbeatCover } from './heartbeat-cover.js';

/** R: what Application.apply returned for the entry (undefined for a configuration change,
 *  which the Application never sees) */
export type ProposalOutcome<R = unknown> =
  | { ok: true; index: Index; term: Term; result: R }
  /** provably not applied: refused before entering the log, or another entry won its slot */
  | { ok: false; kind: 'rejected'; reason: string }
  | { ok: false; kind: 'lost' }
  /** proposed, but not known to be committed in time: it may still apply. index and term:
   *  the slot it took in this node's log, when it got one; once this node has applied that
   *  index, the entry either was applied there or can never be */
  | { ok: false; kind: 'unknown'; index?: Index; term?: Term };

export type ReadOutcome = { ok: true; index: Index } | { ok: false; reason: 'not_leader' | 'timeout' | 'stopped' };

export interface DriverHooks<R = unknown> {
  /** a persist batch took `seconds` (raftlock_storage_sync_seconds) */
  onPersist?(seconds: number, synced: boolean, entries: number): void;
  onRoleChange?(role: Role, leader: NodeId | null, term: Term): void;
  /** after each committed entry was applied (normal, noop and conf entries alike; the
   *  result is the Application's for a normal entry, undefined for the others) */
  onApplied?(entry: Entry, result: R | undefined): void;
  onConfApplied?(conf: ConfState, cc: ConfChange, index: Index): void;
  onSnapshotRestored?(index: Index, conf: ConfState): void;
  onCommitLatency?(seconds: number): void;
  /** storage failed: the node must stop (fail-stop, never retry-and-continue) */
  onFatal(err: unknown): void;
}

export interface RaftDriverOptions<R = unknown> {
  id: NodeId;
  raw: RawNodeLike;
  storage: DurableStorage;
  transport: Transport;
  app: Application<R>;
  /** configuration as of the storage's snapshot (the driver follows conf entries from there) */
  snapshotConf: ConfState;
  /** applied index the app reflects at start (the snapshot index it was restored from) */
  applied: Index;
  snapshotEveryEntries: number;
  /** how long a proposal may wait for its entry to apply before answering 'unknown' */
  proposalTimeoutMs: number;
  clock: DriverClock;
  hooks: DriverHooks<R>;
  /** production: schedule the loop with setImmediate on every input. The simulator passes
   *  false and calls drain() itself. */
  autoRun: boolean;
  /** bound on proposals waiting to enter the core or to apply (memory bound) */
  maxPendingProposals?: number;
  /**
   * A leader waiting for its disk (a synced write, a compaction) sends a bare heartbeat
   * to its followers on every tick, for at most this many ticks of the wait (default 0: off).
   * The core is not touched during a write, so without this a write that outlasts the
   * followers' election timeout silences the leader and they elect another one, although
   * heartbeats depend on nothing being written (docs/recovery.md). The bound keeps failover
   * for a leader whose disk hangs: past it, followers time out as before.
   */
  heartbeatCoverTicks?: number;
}

/** Who waits for a proposal: a command's proposer gets the Application's result, a
 *  configuration change's gets nothing (the entry never reaches the Application).
 *  `resolve` is a method (its parameter is checked both ways) so that these private lists
 *  keep the driver covariant in R, as its public surface is (R only comes out; the class's
 *  `out R` is checked by the compiler): a RaftDriver<ApplyOutput> is a RaftDriver to code
 *  that needs no results (membership, status). */
type ProposalWaiter<R> =
  | { conf: false; data: Uint8Array; resolve(o: ProposalOutcome<R>): void }
  | { conf: true; cc: ConfChange; resolve(o: ProposalOutcome<undefined>): void };

interface PendingProposal<R> {
  term: Term;
  deadlineMs: number;
  startMs: number;
  waiter: ProposalWaiter<R>;
}
interface InboxProposal<R> {
  waiter: ProposalWaiter<R>;
  startMs: number;
}
interface PendingRead {
  resolve: (o: ReadOutcome) => void;
  deadlineMs: number;
}

export class RaftDriver<out R = unknown> {
  private readonly raw: RawNodeLike;
  private readonly opts: RaftDriverOptions<R>;

  // Inputs that arrived while a Ready was being handled; they enter the core in order.
  private inboxMessages: Message[] = [];
  /** for each inbox message, how many of inboxTicks had arrived before it (feedInbox keeps
   *  that order: see there) */
  private inboxMessageTicks: number[] = [];
  private inboxTicks = 0;
  private inboxProposals: InboxProposal<R>[] = [];
  private inboxReads: PendingRead[] = [];
  private inboxUnreachable: NodeId[] = [];
  private inboxSnapshotStatus: { id: NodeId; ok: boolean }[] = [];
  private inboxTransfers: { to: NodeId; resolve: (ok: boolean) => void }[] = [];

  /** index → proposal waiting for its entry to be applied */
  private readonly pending = new Map<Index, PendingProposal<R>>();
  /** ReadIndex ctx → reads that share the round; then index → reads waiting for apply */
  private readonly readRounds = new Map<number, PendingRead[]>();
  private readonly readsAwaitingApply: { index: Index; reads: PendingRead[] }[] = [];
  private nextReadCtx = 1;

  private applied: Index;
  private appliedConf: ConfState;
  private role: Role = 'follower';
  private leader: NodeId | null = null;
  private term: Term = 0;

  /** the Ready whose synced write is out, and how many of its committed entries are
   *  applied (acks stepped meanwhile may apply the rest, and more: receive()) */
  private writing: { rd: Ready; applied: number } | null = null;
  private running = false;
  private scheduled = false;
  private stopped = false;
  private fatal = false;
  private idleWaiters: (() => void)[] = [];
  private compacting = false;
  /** heartbeats while the loop waits for a write or compaction (see options) */
  private readonly cover: HeartbeatCover;
  /** a commit-only hard state not written yet: the next synced batch carries it */
  private deferredHardState: HardState | undefined;
  /** callers of compactNow() waiting for the forced snapshot (true: taken or not needed) */
  private compactWaiters: ((ok: boolean) => void)[] = [];

  constructor(opts: RaftDriverOptions<R>) {
    this.opts = opts;
    this.raw = opts.raw;
    this.applied = opts.applied;
    this.appliedConf = cloneConf(opts.snapshotConf); // incarnations and cluster id included
    this.cover = new HeartbeatCover(opts.heartbeatCoverTicks ?? 0);
    const st = this.raw.status();
    this.role = st.role;
    this.leader = st.leader;
    this.term = st.term;
    opts.transport.onMessage((m) => this.receive(m));
    opts.transport.onUnreachable((id) => {
      this.inboxUnreachable.push(id);
      this.kick();
    });
    opts.transport.onSnapshotStatus((id, ok) => {
      this.inboxSnapshotStatus.push({ id, ok });
      this.kick();
    });
  }

  // ---- inputs -------------------------------------------------------------------------

  receive(m: Message): void {
    if (this.stopped) return;
    if (this.writing !== null && this.raw.stepAckDuringWrite(m)) {
      this.applyCommittedDuringWrite(this.writing);
      return;
    }
    this.inboxMessages.push(m);
    this.inboxMessageTicks.push(this.inboxTicks);
    // A follower steps what the leader sent as soon as the frame (every message of the
    // socket read) is handed over: receive → step → save issued in the same turn, no
    // setImmediate hop. A leader keeps the hop: acks and proposals that arrive in one
    // turn share a Ready (group commit).
    if (this.role === 'leader') this.kick();
    else this.kickNow();
  }

  tick(): void {
    if (this.stopped) return;
    if (tracing) trace('tick', this.opts.id, -1);
    this.inboxTicks++;
    // while the loop waits for the disk (heartbeat-cover.ts); the answers wait in the inbox
    // like every message and enter the core after the write
    const hbs = this.cover.onTick(this.opts.id, this.role, this.term, () => new Set([...this.appliedConf.voters, ...this.appliedConf.learners]));
    if (hbs.length > 0) this.opts.transport.send(hbs);
    this.expireDeadlines();
    this.kick();
  }

  propose(data: Uint8Array): Promise<ProposalOutcome<R>> {
    return new Promise((resolve) => this.enqueueProposal({ conf: false, data, resolve }));
  }

  proposeConfChange(cc: ConfChange): Promise<ProposalOutcome<undefined>> {
    return new Promise((resolve) => this.enqueueProposal({ conf: true, cc, resolve }));
  }

  private enqueueProposal(waiter: ProposalWaiter<R>): void {
    if (this.stopped) return waiter.resolve({ ok: false, kind: 'rejected', reason: 'stopped' });
    if (this.role !== 'leader') return waiter.resolve({ ok: false, kind: 'rejected', reason: 'not_leader' });
    const max = this.opts.maxPendingProposals ?? 100_000;
    if (this.pending.size + this.inboxProposals.length >= max) {
      return waiter.resolve({ ok: false, kind: 'rejected', reason: 'overloaded' });
    }
    this.inboxProposals.push({ waiter, startMs: this.opts.clock.nowMs() });
    this.kick();
  }

  /** Linearizable read barrier (§6.4): resolves with an index once this node, as leader,
   *  confirmed leadership with a quorum round that started after this call, and has applied
   *  at least up to that index. Concurrent calls share one round. */
  readIndex(timeoutMs: number): Promise<ReadOutcome> {
    if (this.stopped) return Promise.resolve({ ok: false, reason: 'stopped' });
    if (this.role !== 'leader') return Promise.resolve({ ok: false, reason: 'not_leader' });
    return new Promise((resolve) => {
      this.inboxReads.push({ resolve, deadlineMs: this.opts.clock.nowMs() + timeoutMs });
      this.kick();
    });
  }

  transferLeadership(to: NodeId): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.inboxTransfers.push({ to, resolve });
      this.kick();
    });
  }

  /**
   * Take a snapshot at the applied index now, whatever snapshotEveryEntries says. A leader
   * does this before adding a node with an empty disk, so the newcomer's first state is a
   * snapshot carrying the configuration, never conf entries replayed onto an empty base
   * (docs/raft-core.md "Joining nodes"; docs/membership.md). Resolves true once the
   * snapshot is durable (or one at the applied index already exists), false when the
   * driver stopped or the applied entries are not all durable yet (retry later).
   */
  compactNow(): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.compactWaiters.push(resolve);
      this.kick();
    });
  }

  status(): Status & { appliedConf: ConfState } {
    return Object.assign(this.raw.status(), { appliedConf: this.appliedConf });
  }

  get appliedIndex(): Index {
    return this.applied;
  }
  get currentRole(): Role {
    return this.role;
  }
  get currentLeader(): NodeId | null {
    return this.leader;
  }
  get currentTerm(): Term {
    return this.term;
  }

  // ---- the loop -----------------------------------------------------------------------

  private kick(): void {
    if (!this.opts.autoRun || this.scheduled || this.running || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  /** like kick(), but the loop runs once the current callback returns (a microtask) */
  private kickNow(): void {
    if (!this.opts.autoRun || this.scheduled || this.running || this.stopped) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  /** Run the loop until the core has nothing more to do. Safe to call concurrently: a
   *  second caller waits for the running loop to go idle. */
  async drain(): Promise<void> {
    if (this.running) {
      return new Promise((resolve) => this.idleWaiters.push(resolve));
    }
    this.running = true;
    try {
      while (!this.stopped) {
        this.feedInbox();
        if (!this.raw.hasReady()) {
          // forced snapshots run between Readies, like the periodic one, never beside a save
          if (this.compactWaiters.length > 0) await this.forceCompact();
          break;
        }
        await this.handleReady(this.raw.ready());
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
    // inputs that arrived during the last await are fed by the next kick
    if (this.hasInbox()) this.kick();
  }

  private hasInbox(): boolean {
    return (
      this.inboxMessages.length > 0 || this.inboxTicks > 0 || this.inboxProposals.length > 0 ||
      // reads waiting for the round that is out are not work until it completes (feedInbox)
      (this.inboxReads.length > 0 && this.readRounds.size === 0) ||
      this.inboxUnreachable.length > 0 || this.inboxSnapshotStatus.length > 0 || this.inboxTransfers.length > 0 ||
      this.compactWaiters.length > 0
    );
  }

  /** Hand everything that arrived since the last Ready to the core, in a fixed order. */
  private feedInbox(): void {
    // Ticks and messages enter in the order they arrived. While a Ready waits for a slow
    // write, both pile up; stepping every message first and then every tick made a follower
    // count the whole wait AFTER the leader's latest heartbeat, so a write longer than its
    // election timeout had it campaign against a leader it had just heard from (a needless
    // election: docs/recovery.md). In arrival order, only the ticks after the last
    // heartbeat count, as they would have without the wait.
    const msgs = this.inboxMessages;
    const ticksBefore = this.inboxMessageTicks;
    this.inboxMessages = [];
    this.inboxMessageTicks = [];
    let ticked = 0;
    for (let i = 0; i < msgs.length; i++) {
      for (; ticked < ticksBefore[i]!; ticked++) this.raw.tick();
      this.raw.step(msgs[i]!);
    }
    for (const id of this.inboxUnreachable.splice(0)) this.raw.reportUnreachable(id);
    for (const s of this.inboxSnapshotStatus.splice(0)) this.raw.reportSnapshot(s.id, s.ok);
    for (; ticked < this.inboxTicks; ticked++) this.raw.tick();
    this.inboxTicks = 0;
    for (const t of this.inboxTransfers.splice(0)) t.resolve(this.raw.transferLeadership(t.to));

    const props = this.inboxProposals;
    this.inboxProposals = [];
    const now = this.opts.clock.nowMs();
    for (const p of props) {
      const w = p.waiter;
      const r = w.conf ? this.raw.proposeConfChange(w.cc) : this.raw.propose(w.data);
      if (!r.ok) {
        w.resolve({ ok: false, kind: 'rejected', reason: r.reason });
        continue;
      }
      const older = this.pending.get(r.index);
      if (older !== undefined) {
        // This node proposed at r.index in an earlier term, lost leadership, had that entry
        // truncated and leads again before applying r.index (followers apply late, e.g.
        // with lazy commit). The old entry may still commit through another leader that
        // holds it, so its outcome can no longer be told from here: 'unknown' (the client
        // retries with its Idempotency-Key). Two proposals in one term for one index
        // would be a bug.
        assert(older.term < r.term, `two proposals for index ${r.index} in term ${r.term}`);
        this.pending.delete(r.index);
        older.waiter.resolve({ ok: false, kind: 'unknown', index: r.index, term: older.term });
      }
      this.pending.set(r.index, { term: r.term, waiter: w, startMs: p.startMs, deadlineMs: now + this.opts.proposalTimeoutMs });
      if (tracing) trace('propose', this.opts.id, r.index);
    }

    // One ReadIndex round at a time, as etcd's linearizableReadLoop: reads that arrive
    // while a round is out wait for the next one, so under load one heartbeat round per
    // round trip serves every read and keepalive, instead of one round per event-loop turn
    // (each a heartbeat and a response per follower). A round whose acks were lost is
    // confirmed by the next tick's heartbeat (it carries the latest round).
    if (this.inboxReads.length > 0 && this.readRounds.size === 0) {
      const reads = this.inboxReads;
      this.inboxReads = [];
      const ctx = this.nextReadCtx++;
      if (this.raw.readIndex(ctx)) this.readRounds.set(ctx, reads);
      else for (const r of reads) r.resolve({ ok: false, reason: 'not_leader' });
    }
  }

  private async handleReady(rd: Ready): Promise<void> {
    const { storage } = this.opts;
    if (rd.soft) this.onSoftState(rd.soft.role, rd.soft.leader);
    if (rd.hardState) this.term = rd.hardState.term;
    if (tracing && this.role === 'leader') for (const e of rd.committed) trace('commit', this.opts.id, e.index);

    // 1. messages that depend on nothing in this Ready (a leader's appends in a durable term).
    //    Before a synced save they go to the wire now, not at the end of this turn: the
    //    followers' saves then run in parallel with ours (a leader may persist in parallel
    //    with sending, thesis §10.2.1; commit counts us only once our own write is durable).
    if (rd.earlyMessages.length > 0) {
      this.sendMessages(rd.earlyMessages);
      if (rd.mustSync) this.opts.transport.flush();
    }

    // 2. committed entries that are already durable HERE are applied before this Ready's
    //    write, as etcd's server applies concurrently with its WAL save: they are
    //    committed (durable on a quorum, and a leader counts itself only once its own copy
    //    is stable), and they lie below every entry this Ready writes, so no crash can
    //    take them back. Under load this matters: otherwise an entry committed while the
    //    leader's previous fsync ran waits for the NEXT fsync before its client hears.
    //    Read states do not depend on this Ready's write either. With a snapshot in the
    //    Ready, everything waits for the write (the snapshot is restored after it).
    const firstNew = rd.entries.length > 0 ? rd.entries[0]!.index : Infinity;
    const cursor = { rd, applied: 0 };
    if (!rd.snapshot) {
      while (cursor.applied < rd.committed.length && rd.committed[cursor.applied]!.index < firstNew) this.applyEntry(rd.committed[cursor.applied++]!);
      this.takeReadStates(rd);
    }

    // 3. persist as one atomic batch
    if (rd.mustSync) {
      // A commit-only change of an earlier Ready rides this synced batch (see below); a
      // hard state of this Ready is newer and carries that commit index already.
      const hardState = rd.hardState ?? this.deferredHardState;
      this.deferredHardState = undefined;
      const batch = { entries: rd.entries, ...(hardState ? { hardState } : {}), ...(rd.snapshot ? { snapshot: rd.snapshot } : {}) };
      const t0 = this.opts.clock.nowMs();
      if (tracing) trace('save_start', this.opts.id, rd.entries.at(-1)?.index ?? -1, '-', rd.entries.length);
      this.writing = cursor;
      try {
        await this.waitForDisk(storage.save(batch, { sync: true }));
      } finally {
        this.writing = null;
      }
      this.opts.hooks.onPersist?.((this.opts.clock.nowMs() - t0) / 1000, true, rd.entries.length);
      if (tracing && rd.entries.length > 0) trace(this.role === 'leader' ? 'leader_saved' : 'saved', this.opts.id, rd.entries.at(-1)!.index);
    } else if (rd.hardState) {
      // Only the commit index changed (mustSync is false: no entries, snapshot, term or
      // vote). The commit index is volatile state (§5, Figure 2): a restarted node learns
      // it again from the leader, and nothing applied depends on it being on disk (every
      // committed entry is durable here already: none is unstable once the previous Ready
      // was advanced). So it is not written on its own (a LevelDB write and a thread-pool
      // round trip per commit); the next synced batch carries it, or the flush before a
      // compaction (docs/storage.md "What is written when").
      this.deferredHardState = rd.hardState;
    }
    if (this.stopped) return;

    // 4. messages that rely on what was just persisted (votes, append responses, …); after
    //    a synced save they are what the sender waits for (a follower's ack), so they are
    //    written at once
    if (rd.messages.length > 0) {
      this.sendMessages(rd.messages);
      if (rd.mustSync) this.opts.transport.flush();
    }

    // 5. snapshot, the remaining committed entries (those written by this Ready), read states
    if (rd.snapshot) this.restoreSnapshot(rd.snapshot.meta.index, rd.snapshot.meta.conf, rd.snapshot.data);
    while (cursor.applied < rd.committed.length) this.applyEntry(rd.committed[cursor.applied++]!);
    if (rd.snapshot) this.takeReadStates(rd);
    this.serveReads();

    // 6. acknowledge
    this.raw.advance(rd);
    await this.maybeCompact();
  }

  /** An acknowledgement stepped during the leader's write may have committed entries: the
   *  rest of the Ready's committed entries first, then the new ones, then the reads they
   *  unblock. The messages the step produced go out with the next Ready, which the loop
   *  takes as soon as the write completes. */
  private applyCommittedDuringWrite(w: { rd: Ready; applied: number }): void {
    const more = this.raw.committedDuringWrite();
    if (more.length === 0) return;
    if (tracing) for (const e of more) trace('commit', this.opts.id, e.index);
    while (w.applied < w.rd.committed.length) this.applyEntry(w.rd.committed[w.applied++]!);
    for (const e of more) this.applyEntry(e);
    this.serveReads();
  }

  /** send, remembering which followers the leader replicates to (heartbeat cover) */
  private sendMessages(msgs: readonly Message[]): void {
    this.cover.noteSent(this.role, msgs);
    this.opts.transport.send(msgs);
  }

  /** the loop waits for the disk: ticks meanwhile may repeat the leader's heartbeats */
  private async waitForDisk(p: Promise<void>): Promise<void> {
    this.cover.beginWait();
    try {
      await p;
    } finally {
      this.cover.endWait();
    }
  }

  /** Reads confirmed by a quorum wait for the apply of their index (serveReads). */
  private takeReadStates(rd: Ready): void {
    for (const rs of rd.readStates) {
      const reads = this.readRounds.get(rs.ctx);
      if (!reads) continue;
      this.readRounds.delete(rs.ctx);
      this.readsAwaitingApply.push({ index: rs.index, reads });
    }
    this.serveReads();
  }

  private onSoftState(role: Role, leader: NodeId | null): void {
    const wasLeader = this.role === 'leader';
    this.cover.noteRole(role);
    this.role = role;
    this.leader = leader;
    if (wasLeader && role !== 'leader') {
      // Reads not yet confirmed can no longer be: a deposed leader must not answer them.
      for (const reads of this.readRounds.values()) for (const r of reads) r.resolve({ ok: false, reason: 'not_leader' });
      this.readRounds.clear();
      for (const p of this.inboxProposals.splice(0)) p.waiter.resolve({ ok: false, kind: 'rejected', reason: 'not_leader' });
      // Pending proposals stay: their entries may still commit under the next leader, and
      // this node will learn which entry took each slot when it applies that index.
    }
    this.opts.hooks.onRoleChange?.(role, leader, this.raw.status().term);
  }

  private applyEntry(e: Entry): void {
    assert(e.index === this.applied + 1, `apply out of order: entry ${e.index} after applied ${this.applied}`);
    if (e.kind === 'normal') {
      const result = this.opts.app.apply(e);
      this.markApplied(e, result);
      const w = this.takeWaiter(e);
      if (w) {
        assert(!w.conf, `entry ${e.index} is a command, its proposal a configuration change`);
        w.resolve({ ok: true, index: e.index, term: e.term, result });
      }
      return;
    }
    if (e.kind === 'conf') {
      const cc = decodeConfChange(e.data);
      this.appliedConf = applyConfChange(this.appliedConf, cc);
      this.opts.hooks.onConfApplied?.(this.appliedConf, cc, e.index);
    }
    this.markApplied(e, undefined);
    const w = this.takeWaiter(e);
    if (w) {
      assert(w.conf, `entry ${e.index} is a ${e.kind} entry, its proposal a command`);
      w.resolve({ ok: true, index: e.index, term: e.term, result: undefined });
    }
  }

  private markApplied(e: Entry, result: R | undefined): void {
    this.applied = e.index;
    if (tracing && this.role === 'leader') trace('apply', this.opts.id, e.index);
    this.opts.hooks.onApplied?.(e, result);
  }

  /** The proposal answered by applied entry e, if this node made it: one with e's index and
   *  term is e itself (Log Matching), so a command meets its command and a configuration
   *  change its conf entry. A proposal of another term lost its slot: answered here. */
  private takeWaiter(e: Entry): ProposalWaiter<R> | undefined {
    const p = this.pending.get(e.index);
    if (!p) return undefined;
    this.pending.delete(e.index);
    if (p.term !== e.term) {
      p.waiter.resolve({ ok: false, kind: 'lost' });
      return undefined;
    }
    this.opts.hooks.onCommitLatency?.((this.opts.clock.nowMs() - p.startMs) / 1000);
    return p.waiter;
  }

  private restoreSnapshot(index: Index, conf: ConfState, data: Uint8Array): void {
    this.opts.app.restore(data, index);
    this.applied = index;
    this.appliedConf = cloneConf(conf);
    // Proposals at or below the snapshot: we cannot tell whether ours took the slot.
    for (const [idx, p] of this.pending) {
      if (idx <= index) {
        this.pending.delete(idx);
        p.waiter.resolve({ ok: false, kind: 'unknown', index: idx, term: p.term });
      }
    }
    this.opts.hooks.onSnapshotRestored?.(index, conf);
  }

  private serveReads(): void {
    for (let k = 0; k < this.readsAwaitingApply.length; ) {
      const w = this.readsAwaitingApply[k]!;
      if (w.index <= this.applied) {
        for (const r of w.reads) r.resolve({ ok: true, index: w.index });
        this.readsAwaitingApply.splice(k, 1);
      } else k++;
    }
  }

  /** Take an application snapshot and compact the log every snapshotEveryEntries. */
  private async maybeCompact(): Promise<void> {
    if (this.applied - this.opts.storage.snapshot().meta.index < this.opts.snapshotEveryEntries) return;
    await this.compact();
  }

  private async forceCompact(): Promise<void> {
    const waiters = this.compactWaiters;
    this.compactWaiters = [];
    let ok = this.applied <= this.opts.storage.snapshot().meta.index;
    if (!ok) ok = await this.compact();
    for (const w of waiters) w(ok);
  }

  /** snapshot the application at the applied index and drop the log up to it */
  private async compact(): Promise<boolean> {
    const { storage } = this.opts;
    if (this.compacting) return false;
    const term = storage.term(this.applied);
    if (term === undefined) return false; // applied entries not all durable here yet
    this.compacting = true;
    try {
      // the snapshot is of applied (so committed) state: the stored commit index must
      // reach it first (storage refuses a compaction beyond it). Entries applied during the
      // leader's own write (receive) may be above the commit index of every hard state a
      // Ready has carried yet; they are committed, so the commit index written here is the
      // applied one (term and vote are the durable ones: nothing but acks entered the core)
      const deferred = this.deferredHardState;
      this.deferredHardState = undefined;
      const stored = storage.initialState().hardState; // the stored hard state, as of now
      const hs = deferred ?? stored;
      const commit = Math.max(hs.commit, this.applied);
      if (deferred !== undefined || commit > stored.commit) {
        await this.waitForDisk(storage.save({ hardState: { term: hs.term, vote: hs.vote, commit }, entries: [] }, { sync: false }));
      }
      if (tracing) trace('compact_start', this.opts.id, this.applied);
      const data = this.opts.app.snapshot();
      await this.waitForDisk(storage.compact({ meta: { index: this.applied, term, conf: this.appliedConf }, data }));
      if (tracing) trace('compact_done', this.opts.id, this.applied);
      return true;
    } finally {
      this.compacting = false;
    }
  }

  private expireDeadlines(): void {
    const now = this.opts.clock.nowMs();
    for (const [idx, p] of this.pending) {
      if (p.deadlineMs <= now) {
        this.pending.delete(idx);
        p.waiter.resolve({ ok: false, kind: 'unknown', index: idx, term: p.term });
      }
    }
    for (const [ctx, reads] of this.readRounds) {
      const live = reads.filter((r) => {
        if (r.deadlineMs > now) return true;
        r.resolve({ ok: false, reason: 'timeout' });
        return false;
      });
      if (live.length === 0) this.readRounds.delete(ctx);
      else this.readRounds.set(ctx, live);
    }
    this.inboxReads = this.inboxReads.filter((r) => {
      if (r.deadlineMs > now) return true;
      r.resolve({ ok: false, reason: 'timeout' });
      return false;
    });
    for (const w of this.readsAwaitingApply) {
      w.reads = w.reads.filter((r) => {
        if (r.deadlineMs > now) return true;
        r.resolve({ ok: false, reason: 'timeout' });
        return false;
      });
    }
  }

  private fail(err: unknown): void {
    if (this.fatal) return;
    this.fatal = true;
    this.stopped = true;
    this.rejectAll('stopped');
    this.opts.hooks.onFatal(err);
  }

  private rejectAll(reason: string): void {
    for (const p of this.inboxProposals.splice(0)) p.waiter.resolve({ ok: false, kind: 'rejected', reason });
    for (const p of this.pending.values()) p.waiter.resolve({ ok: false, kind: 'unknown' });
    this.pending.clear();
    for (const r of this.inboxReads.splice(0)) r.resolve({ ok: false, reason: 'stopped' });
    for (const reads of this.readRounds.values()) for (const r of reads) r.resolve({ ok: false, reason: 'stopped' });
    this.readRounds.clear();
    for (const w of this.readsAwaitingApply.splice(0)) for (const r of w.reads) r.resolve({ ok: false, reason: 'stopped' });
    for (const t of this.inboxTransfers.splice(0)) t.resolve(false);
    for (const w of this.compactWaiters.splice(0)) w(false);
  }

  /** Stop taking input, let the Ready in flight finish, answer everything still waiting.
   *  writeCommit: a graceful shutdown (not a simulated crash) also writes the deferred
   *  commit index. */
  async stop(o: { writeCommit?: boolean } = {}): Promise<void> {
    if (this.stopped && !this.running) return;
    this.stopped = true;
    if (this.running) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.rejectAll('stopped');
    // A graceful stop leaves the commit index on disk as it is in memory (a commit-only
    // change waits for the next synced batch, see step 3 of the Ready loop), so a restart
    // applies at once everything this node knew committed, and tools that read the data
    // directory see it (docs/storage.md "What is written when").
    const hs = this.deferredHardState;
    if (o.writeCommit === true && hs !== undefined) {
      this.deferredHardState = undefined;
      // a failing or stuck disk must not hold the shutdown: the next start learns the commit again
      const saved = this.opts.storage.save({ hardState: hs, entries: [] }, { sync: false }).catch(() => undefined);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([saved, new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_WRITE_WAIT_MS)))]);
      clearTimeout(timer);
    }
  }
}

/** how long stop() waits for its last write of the commit index */
const STOP_WRITE_WAIT_MS = 1000;

