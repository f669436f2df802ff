// One simulated raftlock node: the REAL RawNode + RaftDriver + LockApp (real LockFsm) +
// Lessor, wired as src/server/compose.ts and src/server/leader/leader-coordinator.ts wire them, over
// the in-memory twins: a MemoryDurableStorage (written vs synced, crash drops the unsynced)
// and a MemoryTransport over the SimNetwork. The driver runs with autoRun: false; the
// cluster calls drain() and awaits it, and every await in the driver resolves on a sim
// promise, so a seed replays exactly.
import { RawNode } from '../../../src/raft/core/raw-node.js';
import type { NodeId, Role, Snapshot } from '../../../src/raft/core/types.js';
import type { Rng } from '../../../src/raft/core/rng.js';
import type { DurableStorage, PersistBatch } from '../../../src/raft/seams.js';
import { RaftDriver, type ProposalOutcome } from '../../../src/raft/driver.js';
import { LockApp } from '../../../src/server/app/lock-app.js';
import { encodeCommand } from '../../../src/server/app/command-codec.js';
import { LessorProposer } from '../../../src/server/leader/lessor-proposer.js';
import { LogClock } from '../../../src/server/leader/log-clock.js';
import { Lessor, type ApplyOutput, type Command, type Envelope } from '../../../src/lock-fsm/index.js';
import type { MemoryDurableStorage } from '../../../src/raft/storage/memory-durable-storage.js';
import type { SimOptions } from '../options.js';
import type { MemoryTransport } from '../../../src/transport/memory-transport.js';

/** the Raft knobs the lock simulation shares with test/sim's swarm (same seed → same mix) */
export const RAFT_KNOBS = ['electionTicks', 'heartbeatTicks', 'preVote', 'checkQuorum', 'maxInflight', 'maxMsgBytes', 'lazyCommit', 'heartbeatCoverTicks'] as const;

export interface NodeParams extends Pick<SimOptions, (typeof RAFT_KNOBS)[number]> {
  tickMs: number;
  snapshotEveryEntries: number;
  proposalTimeoutMs: number;
}

/** Fixes switched off, to show the simulator finds what they fix (docs/simulation-lock.md
 *  "Mutation table"). TEST ONLY. */
export interface LockMutations {
  /** the lessor proposes endLockDelay without naming the delay (no `since`) */
  legacyEndLockDelay?: boolean;
  /** the lessor proposes cancelWait without naming the wait (no `since`) */
  legacyCancelWait?: boolean;
  /** entries are stamped with the node's wall clock, not its log clock */
  wallClockStamps?: boolean;
  /** expireHold ends the session's current grant of the name whatever its token */
  testExpireHoldIgnoresToken?: boolean;
  /** a new leader's lessor arms every max hold a full max_hold_ms from taking office */
  testRearmFullMaxHold?: boolean;
  /** the lessor tracks only the waits its API layer queued or that were applied when it
   *  took office (re-armed in full), and gives a cancel up after three tries */
  testLegacyWaitTracking?: boolean;
  /** the state machine refuses no wait as `deadlock` (docs/lock-fsm.md "Deadlock detection" off) */
  testNoDeadlockDetection?: boolean;
  /** a hold that ends withdraws its session's waiting sets before its lock-delay starts */
  testWithdrawSetsBeforeDelay?: boolean;
  /** waits that end together end one at a time, each serving its queues first */
  testEndWaitsOneByOne?: boolean;
  /** a wait that ends without a grant leaves its key's stored answer 'queued' */
  testKeepQueuedAnswers?: boolean;
  /** an acquire joins its session's wait for the name whatever its mode */
  testJoinAnyWait?: boolean;
}

/** what the lessor fault does to one lessor proposal: hold it back `delayTicks` before
 *  proposing, and/or propose more copies, each `copies[k]` ticks later (copies
 *  re-proposed after 'unknown' answers while the first was still in the log) */
export interface LessorFault {
  delayTicks: number;
  copies: number[];
  /** endLockDelay / cancelWait / expireHold: one more copy, held until (at least
   *  `afterTicks` from now) the next lock-delay of the same lock starts, the next wait of
   *  the same session on the same lock is tracked, or the same session is granted the same
   *  name again, on this leader, then proposed at once: the adversary's choice of when a
   *  slow copy commits */
  landInNext?: { afterTicks: number };
}

export interface NodeEnv {
  nowMs(): number;
  /** every entry this node applies, with the app's output (checkers) */
  onApplied(node: LockNode, index: number, term: number, kind: string, data: Uint8Array, out: ApplyOutput | undefined): void;
  onRestored(node: LockNode, index: number): void;
  onRoleChange(node: LockNode, role: Role, term: number): void;
  /** the driver stopped (fail-stop): an armed crash, or a real error — a checker or an
   *  assertion thrown inside the driver's loop lands here too */
  onFatal(node: LockNode, err: unknown): void;
  /** the lessor asked for this command (statistics: retries show as repeats) */
  onLessorProposal(cmd: Command): void;
  /** this node's wall clock (ms): the sim clock plus its step, if one stepped */
  wallMs(node: NodeId): number;
  /** the fault to apply to a lessor proposal (0/0: none) */
  lessorFault(cmd: Command): LessorFault;
  /** the current tick */
  tick(): number;
  /** the workload's request tracked a wait on this leader (the API layer's trackWait:
   *  arrival + wait_ms replaces the lessor's bound from the log, or extends it for a
   *  later request of the same wait) */
  onWaitTracked(node: LockNode, target: 'lock' | 'semaphore', name: string, sessionId: string, since: number, deadlineMs: number): void;
  /** the driver's heartbeat cover sent `n` heartbeats while a write was out (statistics) */
  onCoverHeartbeats(n: number): void;
  /** this node stamped an entry (its encoded bytes) while leading `term` */
  onProposed(node: LockNode, term: number, data: Uint8Array): void;
}

export class SimulatedCrash extends Error {
  constructor() {
    super('simulated crash after persist');
  }
}

/** The disk (MemoryDurableStorage) behind a switch: an armed crash makes the next synced
 *  save write its batch and then fail, so the driver dies after persisting and before
 *  sending (a crash in the middle of a Ready; the driver's fail-stop path runs as it would
 *  on a disk error). A stall makes the next synced save take whole ticks (a slow fsync):
 *  the batch is written at once, durable and answered at the tick the stall ends
 *  (release), and lost to a crash before that as unsynced writes are (abort). */
class CrashableDisk implements DurableStorage {
  armed = false;
  /** the next synced save takes this many ticks */
  stallTicks = 0;
  /** the save that is out, and the tick it completes */
  stalled: { until: number; resolve: () => void; reject: (err: unknown) => void } | null = null;
  /** told when a stalled save begins (the cluster stops awaiting this driver's loop) */
  onStall: (() => void) | null = null;
  constructor(readonly disk: MemoryDurableStorage, private readonly tick: () => number) {}
  initialState() { return this.disk.initialState(); }
  entries(lo: number, hi: number, maxBytes?: number) { return this.disk.entries(lo, hi, maxBytes); }
  term(i: number) { return this.disk.term(i); }
  firstIndex() { return this.disk.firstIndex(); }
  lastIndex() { return this.disk.lastIndex(); }
  snapshot() { return this.disk.snapshot(); }
  save(b: PersistBatch, o: { sync: boolean }): Promise<void> {
    if (o.sync && this.stallTicks > 0 && !this.armed) {
      this.disk.saveSync(b, { sync: false });
      const until = this.tick() + this.stallTicks;
      this.stallTicks = 0;
      return new Promise((resolve, reject) => {
        this.stalled = { until, resolve, reject };
        this.onStall?.();
      });
    }
    const p = this.disk.save(b, o);
    if (this.armed && o.sync) return p.then(() => Promise.reject(new SimulatedCrash()));
    return p;
  }

  /** the stalled save completes if its tick has come */
  release(tick: number): void {
    const s = this.stalled;
    if (s === null || tick < s.until) return;
    this.stalled = null;
    this.disk.flush();
    s.resolve();
  }

  /** the node dies with its save out (the batch is as unsynced as any) */
  abort(): void {
    const s = this.stalled;
    this.stalled = null;
    s?.reject(new SimulatedCrash());
  }
  compact(s: Snapshot): Promise<void> { return this.disk.compact(s); }
  close(): Promise<void> { return Promise.resolve(); }
}

function staleKey(name: string, sessionId: string | undefined): string {
  return sessionId === undefined ? `d\u0000${name}` : `w\u0000${name}\u0000${sessionId}`;
}

/** a stale expireHold copy waits for the same session's next grant of the same name */
function holdStaleKey(target: string, name: string, sessionId: string): string {
  return `h\u0000${target}\u0000${name}\u0000${sessionId}`;
}

export class LockNode {
  readonly raw: RawNode;
  readonly driver: RaftDriver;
  readonly app: LockApp;
  readonly lessor: Lessor;
  readonly transport: MemoryTransport;
  private readonly storage: CrashableDisk;
  /** sessions with a waiting acquire on this leader: kept alive while they wait
   *  (leader-coordinator onTick does the same through its WaitRegistry) */
  readonly waitingSessions = new Set<string>();
  /** the gate reads the driver's term and applied index, as leader-coordinator.ts wires it */
  private readonly proposerView = {
    node: this as LockNode,
    get currentTerm(): number { return this.node.driver.currentTerm; },
    get appliedIndex(): number { return this.node.driver.appliedIndex; },
  };
  /** the production gate: one copy per item that can still commit (lessor-proposer.ts) */
  private readonly lessorProposer = new LessorProposer((cmd) => {
    this.env.onLessorProposal(cmd);
    const f = this.env.lessorFault(cmd);
    const term = this.driver.currentTerm;
    for (const lag of f.copies) this.later.push({ at: this.env.tick() + lag, cmd, resolve: null, term });
    if (f.landInNext && (cmd.kind === 'endLockDelay' || cmd.kind === 'cancelWait' || cmd.kind === 'expireHold')) {
      const k = cmd.kind === 'expireHold' ? holdStaleKey(cmd.target, cmd.name, cmd.sessionId) : staleKey(cmd.name, cmd.kind === 'cancelWait' ? cmd.sessionId : undefined);
      const held = this.stale.get(k) ?? [];
      held.push({ cmd, readyAt: this.env.tick() + f.landInNext.afterTicks });
      this.stale.set(k, held);
    }
    return f.delayTicks === 0 ? this.propose(cmd) : new Promise<ProposalOutcome>((resolve) => this.later.push({ at: this.env.tick() + f.delayTicks, cmd, resolve, term }));
  }, this.proposerView);
  /** copies waiting for the next lock-delay of their lock or wait of their session (landInNext) */
  private readonly stale = new Map<string, { cmd: Command; readyAt: number }[]>();
  /** lessor proposals held back by the lessor fault, proposed at tick `at` if this node
   *  still leads the term it decided them in (`term`). A held-back proposal stands for an
   *  entry already in that term's log and slow to commit; Raft never commits such an
   *  entry in a later term of the same leader after another leader's term came between
   *  (a newer leader's log replaces it), so one the node decided in an earlier term is
   *  lost, not proposed fresh with that term's stale view of the leases. */
  private later: { at: number; cmd: Command; resolve: ((o: ProposalOutcome) => void) | null; term: number }[] = [];
  /** stamps every proposal, as leader-log.ts does */
  private readonly logClock: LogClock;
  dead = false;

  constructor(readonly id: NodeId, readonly incarnation: number, readonly disk: MemoryDurableStorage, transport: MemoryTransport, p: NodeParams, rng: Rng, private readonly env: NodeEnv, mutations: LockMutations = {}) {
    this.transport = transport;
    this.storage = new CrashableDisk(disk, env.tick);
    const snap = disk.snapshot();
    this.app = new LockApp({ ...(mutations.testExpireHoldIgnoresToken ? { testExpireHoldIgnoresToken: true } : {}), ...(mutations.testNoDeadlockDetection ? { testNoDeadlockDetection: true } : {}), ...(mutations.testWithdrawSetsBeforeDelay ? { testWithdrawSetsBeforeDelay: true } : {}), ...(mutations.testEndWaitsOneByOne ? { testEndWaitsOneByOne: true } : {}), ...(mutations.testKeepQueuedAnswers ? { testKeepQueuedAnswers: true } : {}), ...(mutations.testJoinAnyWait ? { testJoinAnyWait: true } : {}) }, (index, err) => {
      throw new Error(`${id}: malformed entry ${index} applied: ${err.message}`);
    });
    if (snap.meta.index > 0) this.app.restore(snap.data, snap.meta.index);
    const legacy = [...(mutations.legacyEndLockDelay ? ['endLockDelay' as const] : []), ...(mutations.legacyCancelWait ? ['cancelWait' as const] : [])];
    this.lessor = new Lessor({ tickMs: p.tickMs, legacyCommands: legacy, ...(mutations.testRearmFullMaxHold ? { testRearmFullMaxHold: true } : {}), ...(mutations.testLegacyWaitTracking ? { testLegacyWaitTracking: true } : {}) });
    this.logClock = new LogClock({ monoMs: env.nowMs, appliedLogTimeMs: () => this.app.fsm.logTimeMs, ...(mutations.wallClockStamps ? { wallMs: () => env.wallMs(id) } : {}) });
    this.raw = new RawNode({
      id, rng, electionTicks: p.electionTicks, heartbeatTicks: p.heartbeatTicks, preVote: p.preVote, checkQuorum: p.checkQuorum,
      maxInflight: p.maxInflight, maxMsgBytes: p.maxMsgBytes, lazyCommit: p.lazyCommit, applied: snap.meta.index,
    }, this.storage);
    this.driver = new RaftDriver({
      id, raw: this.raw, storage: this.storage, transport, app: this.app,
      snapshotConf: snap.meta.conf, applied: snap.meta.index,
      snapshotEveryEntries: p.snapshotEveryEntries, proposalTimeoutMs: p.proposalTimeoutMs,
      // as production (src/server/compose.ts): a slow fsync must not silence a leader
      heartbeatCoverTicks: p.heartbeatCoverTicks,
      clock: { nowMs: env.nowMs }, autoRun: false,
      hooks: {
        onRoleChange: (role, _leader, term) => {
          // as leader-coordinator onRoleChange: promote with the FSM on taking office, demote on leaving
          if (role === 'leader') {
            this.logClock.takeOffice();
            this.lessor.promote(env.nowMs(), this.app.fsm);
          } else {
            this.lessor.demote();
            this.waitingSessions.clear();
          }
          env.onRoleChange(this, role, term);
        },
        onApplied: (entry, result) => {
          const out = result as ApplyOutput | undefined;
          if (out && out.events.length > 0) this.lessor.observe(out.events, env.nowMs(), this.app.fsm);
          if (out && this.stale.size > 0 && this.driver.currentRole === 'leader') this.releaseStale(out);
          if (out) for (const e of out.events) if (e.type === 'granted' || e.type === 'waitEnded' || e.type === 'semGranted' || e.type === 'semWaitEnded') this.waitingSessions.delete(e.sessionId);
          env.onApplied(this, entry.index, entry.term, entry.kind, entry.data, out);
        },
        onSnapshotRestored: (index) => env.onRestored(this, index),
        onFatal: (err) => {
          this.dead = true;
          env.onFatal(this, err);
        },
      },
    });
    if (snap.meta.index > 0) env.onRestored(this, snap.meta.index);
  }

  get isLeader(): boolean {
    return !this.dead && this.driver.currentRole === 'leader';
  }

  /** the production ticker: driver.tick(), then the service's onTick (lessor → proposals) */
  tick(): void {
    const before = this.transport.messagesSent;
    this.driver.tick();
    // a driver's tick sends nothing but the heartbeat cover's heartbeats
    if (this.transport.messagesSent > before) this.env.onCoverHeartbeats(this.transport.messagesSent - before);
    this.proposeLate();
    if (this.driver.currentRole !== 'leader') return;
    const now = this.env.nowMs();
    for (const sid of this.waitingSessions) this.lessor.renew(sid, now);
    // as leader-coordinator.ts: a max hold or wait that ended otherwise is dropped unproposed
    const fsm = this.app.fsm;
    this.lessorProposer.proposeDue(this.lessor.due(now,
      (target, name, sid, token) => fsm.holdsGrant(target, name, sid, token),
      (target, name, sid, since) => fsm.waitStands(target, name, sid, since)));
  }

  propose(cmd: Command, idempotencyKey?: string): Promise<ProposalOutcome> {
    const env: Envelope = { atMs: this.logClock.stamp(), cmd, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) };
    const data = encodeCommand(env);
    if (this.isLeader) this.env.onProposed(this, this.driver.currentTerm, data);
    return this.driver.propose(data);
  }

  /** a lock-delay started: its lock's waiting stale copies are proposed next tick */
  private releaseStale(out: ApplyOutput): void {
    for (const e of out.events) {
      if (e.type === 'lockDelayStarted') this.releaseStaleFor(staleKey(e.name, undefined));
      if (e.type === 'granted') this.releaseStaleFor(holdStaleKey('lock', e.name, e.sessionId));
      if (e.type === 'semGranted') this.releaseStaleFor(holdStaleKey('semaphore', e.name, e.sessionId));
    }
  }

  private releaseStaleFor(k: string): void {
    const held = this.stale.get(k);
    if (!held) return;
    const now = this.env.tick();
    const ready = held.filter((h) => h.readyAt <= now);
    if (ready.length === 0) return;
    const rest = held.filter((h) => h.readyAt > now);
    if (rest.length > 0) this.stale.set(k, rest);
    else this.stale.delete(k);
    for (const h of ready) this.later.push({ at: now + 1, cmd: h.cmd, resolve: null, term: this.driver.currentTerm });
  }

  /** leader-coordinator's awaitGrant (trackWait): the lessor times the wait out; a stale cancelWait copy of
   *  an earlier wait of this session on this lock is let go now (landInNext) */
  trackWait(name: string, sessionId: string, deadlineMs: number, since: number, semaphore = false, arrivalMs?: number): void {
    this.lessor.trackWait(name, sessionId, deadlineMs, since, semaphore, arrivalMs);
    if (this.lessor.isLeader) this.env.onWaitTracked(this, semaphore ? 'semaphore' : 'lock', name, sessionId, since, deadlineMs);
    if (this.stale.size > 0 && this.driver.currentRole === 'leader') this.releaseStaleFor(staleKey(name, sessionId));
  }

  /** the lessor fault's held-back proposals and late copies whose tick has come (a
   *  follower's driver refuses them, as it would any proposal) */
  private proposeLate(): void {
    if (this.later.length === 0) return;
    const now = this.env.tick();
    const due = this.later.filter((l) => l.at <= now);
    if (due.length === 0) return;
    this.later = this.later.filter((l) => l.at > now);
    for (const l of due) {
      if (l.term !== this.driver.currentTerm) {
        l.resolve?.({ ok: false, kind: 'lost' } as ProposalOutcome);
        continue;
      }
      const p = this.propose(l.cmd);
      if (l.resolve) void p.then(l.resolve);
    }
  }

  /** the disk-stall fault: this node's next synced write takes `ticks` ticks */
  armStall(ticks: number): void {
    this.storage.stallTicks = ticks;
  }

  /** a synced write is out (or armed to stall): the driver's loop waits for it */
  get diskStalled(): boolean {
    return this.storage.stalled !== null;
  }

  get stallArmed(): boolean {
    return this.storage.stallTicks > 0;
  }

  /** resolves when a stalled write begins (the cluster then stops awaiting the loop) */
  stallBegan(): Promise<void> {
    return new Promise((resolve) => {
      this.storage.onStall = resolve;
    });
  }

  /** a new tick: a stalled write whose time has come completes */
  releaseDisk(tick: number): void {
    this.storage.release(tick);
  }

  armCrash(): void {
    this.storage.armed = true;
  }

  async stop(): Promise<void> {
    this.dead = true;
    this.storage.abort(); // a write that is out dies with the node
    await this.transport.close();
    await this.driver.stop();
  }
}
