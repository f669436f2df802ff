// The simulator's node driver: one real RawNode over a MemoryDurableStorage (the in-memory
// disk), with the toy app. It is synchronous (the simulated disk completes at once), small,
// and follows the Ready order written on types.ts `Ready` EXACTLY, so a test failure
// points at the core, not at it:
//   1. earlyMessages may go first   2. persist (one batch; fsync iff mustSync)
//   3. messages                     4. restore snapshot, apply committed, serve reads
//   5. advance
// Every message passes the DurableBeforeSend checker as it leaves.
// A disk stall (the nemesis: disk-stalls.ts) makes one synced write take whole ticks, as
// a slow fsync does: the Ready waits between 1 and 2, and, as the production driver
// (src/raft/driver.ts) does, nothing enters the core meanwhile — messages, ticks and
// reports queue in arrival order and are fed after the write — while each tick runs the
// production driver's heartbeat cover (src/raft/heartbeat-cover.ts).
import { RawNode } from '../../../src/raft/core/raw-node.js';
import type { Entry, Message, NodeId, Ready, ReadState, TraceEvent } from '../../../src/raft/core/types.js';
import { HeartbeatCover } from '../../../src/raft/heartbeat-cover.js';
import type { Rng } from '../../../src/raft/core/rng.js';
import { ToyApp } from './app.js';
import type { Checkers } from '../../checkers/raft/safety.js';
import type { MemoryDurableStorage } from '../../../src/raft/storage/memory-durable-storage.js';
import type { SimOptions } from '../options.js';
import { mutatedRaftConfig } from './mutations.js';

/** where an armed crash strikes inside the next Ready */
export type CrashPoint = 'afterEarlyMessages' | 'afterPersist';

export interface DriverEnv {
  readonly checkers: Checkers;
  /** the current tick (a stalled write completes at a tick) */
  now(): number;
  /** the heartbeat cover sent `n` heartbeats (statistics) */
  onCoverHeartbeats(n: number): void;
  /** a leader's stalled write completed after `ticks` ticks; `deposed`: another leader
   *  was elected meanwhile (statistics) */
  onLeaderStall(ticks: number, deposed: boolean): void;
  send(m: Message, incarnation: number): void;
  /** a conf entry was applied on this node */
  onConfApplied(node: NodeId, e: Entry): void;
  trace?(line: string): void;
}

export class SimNode {
  readonly raw: RawNode;
  readonly app: ToyApp;
  private readonly reads: ReadState[] = [];
  /** set by the nemesis: the next Ready stops at this point and the node dies */
  crashPoint: CrashPoint | null = null;
  /** set by the disk-stall nemesis: the next synced write takes this many ticks */
  stallTicks = 0;
  /** the Ready whose synced write is out, and the tick it completes */
  private held: { rd: Ready; until: number; since: number; leaderTerm: number | null; applied: number } | null = null;
  /** what arrived while the write was out, in arrival order (the production driver's inbox) */
  private inbox: ({ kind: 'message'; m: Message } | { kind: 'tick' } | { kind: 'unreachable'; peer: NodeId } | { kind: 'snapshot'; peer: NodeId; ok: boolean })[] = [];
  private readonly cover: HeartbeatCover;

  constructor(
    readonly id: NodeId,
    readonly incarnation: number,
    readonly disk: MemoryDurableStorage,
    opts: SimOptions,
    rng: Rng,
    private readonly env: DriverEnv,
  ) {
    this.app = new ToyApp(disk.snapshot());
    this.raw = new RawNode({
      id, rng,
      electionTicks: opts.electionTicks, heartbeatTicks: opts.heartbeatTicks,
      preVote: opts.preVote, checkQuorum: opts.checkQuorum,
      maxInflight: opts.maxInflight, maxMsgBytes: opts.maxMsgBytes, lazyCommit: opts.lazyCommit,
      incarnation: disk.diskId,
      applied: this.app.state.applied,
      trace: (e) => this.onTrace(e),
      onLogRegression: (follower, acked, hint) => this.env.trace?.(`${this.id} hears that ${follower}'s log went back: it had acknowledged ${acked}, now ends at ${hint}`),
      ...mutatedRaftConfig(opts.mutations),
    }, disk);
    this.cover = new HeartbeatCover(opts.heartbeatCoverTicks);
  }

  /** a synced write is out: the core takes no input until it completes */
  get stalled(): boolean {
    return this.held !== null;
  }

  /** a message arrived; returns the core's refusal (stepped now) or null. During a
   *  stalled write, a leader steps a successful append acknowledgement at once and applies
   *  what it commits, as src/raft/driver.ts receive() does; the rest waits. */
  receive(m: Message): ReturnType<RawNode['step']> {
    if (this.held === null) return this.raw.step(m);
    if (this.raw.stepAckDuringWrite(m)) {
      const more = this.raw.committedDuringWrite();
      if (more.length > 0) {
        const h = this.held;
        while (h.applied < h.rd.committed.length) this.applyOne(h.rd.committed[h.applied++]!);
        for (const e of more) this.applyOne(e);
        this.serveReads();
      }
      return null;
    }
    this.inbox.push({ kind: 'message', m });
    return null;
  }

  tick(): void {
    if (this.held === null) {
      this.raw.tick();
      return;
    }
    this.inbox.push({ kind: 'tick' });
    const st = this.raw.status();
    const hbs = this.cover.onTick(this.id, st.role, st.term, () => new Set([...this.app.state.conf.voters, ...this.app.state.conf.learners]));
    if (hbs.length > 0) this.env.onCoverHeartbeats(hbs.length);
    this.sendAll(hbs);
  }

  reportUnreachable(peer: NodeId): void {
    if (this.held === null) this.raw.reportUnreachable(peer);
    else this.inbox.push({ kind: 'unreachable', peer });
  }

  reportSnapshot(peer: NodeId, ok: boolean): void {
    if (this.held === null) this.raw.reportSnapshot(peer, ok);
    else this.inbox.push({ kind: 'snapshot', peer, ok });
  }

  private onTrace(e: TraceEvent): void {
    this.env.checkers.onTrace(e, this.incarnation);
    // commits are too frequent to be worth a trace line; role changes and votes are what a
    // failing seed's story is made of
    if (this.env.trace && e.type !== 'commit') {
      const extra = e.type === 'voteGranted' ? ` to ${e.to}` : e.type === 'becomeFollower' ? ` leader ${e.leader}` : e.type === 'becomeCandidate' && e.preVote ? ' (pre-vote)' : '';
      this.env.trace(`${this.id} ${e.type} term ${e.term}${extra}`);
    }
  }

  /** run Ready iterations until the core is idle (or waits for a stalled write); false if
   *  an armed crash struck */
  drain(): boolean {
    if (this.held !== null) {
      if (this.env.now() < this.held.until) return true;
      if (!this.completeHeld()) return false;
    }
    for (let guard = 0; this.raw.hasReady(); guard++) {
      if (guard > 10_000) throw new Error(`${this.id}: Ready loop did not settle in 10000 iterations`);
      if (!this.handleReady(this.raw.ready())) return false;
      if (this.held !== null) return true;
    }
    return true;
  }

  /** the stalled write completed: finish its Ready, then feed what arrived meanwhile in
   *  arrival order (each message after the ticks that came before it, as feedInbox in
   *  src/raft/driver.ts) */
  private completeHeld(): boolean {
    const { rd, since, leaderTerm, applied } = this.held!;
    this.held = null;
    this.cover.endWait();
    this.disk.flush();
    this.env.checkers.onPersist(this.id, rd.entries, this.disk);
    if (this.crashPoint === 'afterPersist') return false;
    this.finishReady(rd, applied);
    const inbox = this.inbox;
    this.inbox = [];
    const later: typeof inbox = [];
    let ticks = 0;
    for (const x of inbox) {
      if (x.kind === 'tick') ticks++;
      else if (x.kind === 'message') {
        for (; ticks > 0; ticks--) this.raw.tick();
        const refused = this.raw.step(x.m);
        if (refused !== null) throw new Error(`RawNode.step refused a message from a correct node (${refused.reason}: ${refused.detail})`);
      } else later.push(x);
    }
    for (const x of later) {
      if (x.kind === 'unreachable') this.raw.reportUnreachable(x.peer);
      else if (x.kind === 'snapshot') this.raw.reportSnapshot(x.peer, x.ok);
    }
    for (; ticks > 0; ticks--) this.raw.tick();
    if (leaderTerm !== null) this.env.onLeaderStall(this.env.now() - since, this.raw.status().term !== leaderTerm);
    return true;
  }

  private sendAll(msgs: readonly Message[]): void {
    this.cover.noteSent(this.raw.status().role, msgs);
    for (const m of msgs) {
      if (m.from !== this.id) throw new Error(`${this.id} emitted a message from ${m.from}`);
      this.env.checkers.onSend(m, this.disk.durable, this.disk, this.disk.diskId);
      this.env.send(m, this.incarnation);
    }
  }

  private handleReady(rd: Ready): boolean {
    if (rd.soft) this.cover.noteRole(rd.soft.role);
    this.sendAll(rd.earlyMessages);
    if (this.crashPoint === 'afterEarlyMessages') return false;
    if (rd.mustSync && this.stallTicks > 0) {
      // the write is issued (the page cache has it, a crash may lose it) and completes later
      this.disk.saveSync({ hardState: rd.hardState, snapshot: rd.snapshot, entries: rd.entries }, { sync: false });
      const st = this.raw.status();
      this.held = { rd, until: this.env.now() + this.stallTicks, since: this.env.now(), leaderTerm: st.role === 'leader' ? st.term : null, applied: 0 };
      this.stallTicks = 0;
      this.cover.beginWait();
      return true;
    }
    this.disk.saveSync({ hardState: rd.hardState, snapshot: rd.snapshot, entries: rd.entries }, { sync: rd.mustSync });
    this.env.checkers.onPersist(this.id, rd.entries, this.disk);
    if (this.crashPoint === 'afterPersist') return false;
    this.finishReady(rd);
    return true;
  }

  /** steps 3 to 5: messages, snapshot and committed entries (from the `applied`-th: the
   *  ones before were applied during the write), reads, advance */
  private finishReady(rd: Ready, applied = 0): void {
    this.sendAll(rd.messages);
    if (rd.snapshot) {
      this.app.restore(rd.snapshot);
      this.env.checkers.onRestore(this.id, rd.snapshot.meta.index, this.app.state.digest);
    }
    for (const e of rd.committed.slice(applied)) this.applyOne(e);
    this.reads.push(...rd.readStates);
    this.serveReads();
    this.raw.advance(rd);
  }

  private applyOne(e: Entry): void {
    this.app.apply(e);
    this.env.checkers.onApply(this.id, e, this.app.state.digest);
    if (e.kind === 'conf') this.env.onConfApplied(this.id, e);
  }

  private serveReads(): void {
    const applied = this.app.state.applied;
    for (let k = 0; k < this.reads.length;) {
      const r = this.reads[k]!;
      if (r.index <= applied) {
        this.env.checkers.onReadServed(r.ctx, this.id, applied, this.app.state.digest);
        this.reads.splice(k, 1);
      } else {
        k++;
      }
    }
  }

  /** take an app snapshot at the applied index and compact the log through it (not while
   *  a write is out: the production driver compacts between Readies) */
  compact(): boolean {
    if (this.held !== null) return false;
    const applied = this.app.state.applied;
    if (applied <= this.disk.firstIndex() - 1) return false;
    const term = this.disk.term(applied);
    if (term === undefined) return false;
    this.disk.compactSync(this.app.snapshot(term));
    return true;
  }
}
