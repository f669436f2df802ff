// Lock clients for the simulation. Each client does one thing at a time against the node
// it believes leads, exactly as src/server/services/lock-service.ts serves it:
//  - writes (open, acquire with and without wait, release, close) are proposals through
//    driver.propose; an acquire counts as acknowledged only if, once applied, the grant
//    still stands and the leader's lessor renewed the session from the request's send
//    time (lock-service confirmGrant);
//  - keepalives are driver.readIndex (a quorum round after the request) then lessor.renew;
//  - a waiting acquire is tracked by the lessor (trackWait) and polled with read barriers;
//  - some clients stop their keepalives so their sessions expire through the lessor, and
//    some sessions carry a lock-delay;
//  - on most seeds clients also take and release shared locks and semaphore permits and
//    resize semaphores, drawn from a stream of their own (docs/simulation-lock.md "Shared
//    locks and semaphores");
//  - on some seeds clients also campaign in elections, proclaim and resign, drawn from a
//    stream of their own (docs/simulation-lock.md "Elections"). A leadership is a held
//    lock (`elect-k` names), so the lock checkers and clean-up paths cover it;
//  - on some seeds acquires, campaigns and semaphore acquires carry a max_hold_ms, and an
//    administrator now and then revokes a name's grants (one session's or all), drawn
//    from a stream of their own (docs/simulation-lock.md "Revocation and maximum hold").
//  - on some seeds clients also take lock sets (acquire-all, with and without a wait,
//    release-all) and take pairs of names one by one in opposite orders (even clients in
//    name order, odd ones in reverse), so deadlocks occur and are refused; drawn from a
//    stream of their own (docs/simulation-lock.md "Lock sets and deadlocks").
// Outcomes that are not known (timeout, leader change) leave the client unsure: it may
// retry once with the same Idempotency-Key, or abandon the session to expiry.
import type { Rng } from '../../../src/raft/core/rng.js';
import type { ApplyOutput, ApplyResult, Command } from '../../../src/lock-fsm/index.js';
import type { ProposalOutcome } from '../../../src/raft/driver.js';
import type { LockCheckers } from '../../checkers/apply/lock-checkers.js';
import type { LockNode } from './node.js';

export interface WorkloadParams {
  clients: number;
  locks: number;
  /** per idle client per tick */
  actProbability: number;
  ttlMs: number;
  lockDelayMs: number;
  /** share of sessions opened with lock-delay */
  lockDelayShare: number;
  /** share of sessions whose client stops keepalives at some point */
  abandonShare: number;
  waitMs: number;
  tickMs: number;
  readTimeoutMs: number;
  /** share of a client's steps that use shared locks and semaphores (0: the exclusive
   *  workload alone, drawn exactly as before they existed) */
  modeShare: number;
  semaphores: number;
  /** the limit a semaphore is first acquired with; resizes draw 1..maxLimit */
  semLimit: number;
  maxLimit: number;
  /** share of a client's steps that are election steps (0 or absent: none, and the
   *  election stream is never drawn from) */
  electionShare?: number;
  elections?: number;
  /** share of acquires, campaigns and semaphore acquires that carry a max hold (0 or
   *  absent: none, and the hold stream is never drawn from) */
  holdShare?: number;
  /** per client step: the share that is an administrator's revoke instead */
  revokeShare?: number;
  /** share of a client's steps that are lock-set / opposite-order steps (0 or absent: none,
   *  and the set stream is never drawn from) */
  setShare?: number;
}

export interface ClusterView {
  now(): number;
  nowMs(): number;
  leader(): LockNode | null;
  /** a checker threw inside a client's continuation: the schedule fails with it */
  fail(err: unknown): void;
}

interface Held { token: number }

class Client {
  sessionId: string | null = null;
  lockDelay = false;
  keepalives = true;
  lastKeepaliveMs = -Infinity;
  readonly held = new Map<string, Held>();
  readonly shares = new Map<string, Held>();
  readonly sems = new Map<string, Held>();
  /** name → the earliest (send + max_hold_ms) of the acquires with a max hold this session
   *  sent for it since it last let it go: a re-acquire returns the grant it holds, which
   *  keeps the max hold of whichever request made it, so only the earliest bound is safe */
  readonly holdCap = new Map<string, number>();
  busy = false;
  seq = 0;
  constructor(readonly id: number) {}
}

export interface WorkloadStats {
  ops: number;
  acquired: number;
  queued: number;
  lockHeld: number;
  released: number;
  closed: number;
  keepalives: number;
  unknown: number;
  abandoned: number;
  waitsGranted: number;
  sharedAcked: number;
  sharedReleased: number;
  semAcked: number;
  semQueued: number;
  semReleased: number;
  semResized: number;
  semMismatch: number;
  campaignsWon: number;
  campaignsQueued: number;
  proclaimed: number;
  resigned: number;
  maxHoldAsked: number;
  revokesSent: number;
  setsAcked: number;
  setsQueuedAsked: number;
  setWaitsGranted: number;
  releasedAll: number;
  deadlockAnswers: number;
  lateCopies: number;
}

export class LockWorkload {
  private readonly clients: Client[] = [];
  private sessionSeq = 0;
  readonly stats: WorkloadStats = { ops: 0, acquired: 0, queued: 0, lockHeld: 0, released: 0, closed: 0, keepalives: 0, unknown: 0, abandoned: 0, waitsGranted: 0,
    sharedAcked: 0, sharedReleased: 0, semAcked: 0, semQueued: 0, semReleased: 0, semResized: 0, semMismatch: 0,
    campaignsWon: 0, campaignsQueued: 0, proclaimed: 0, resigned: 0, maxHoldAsked: 0, revokesSent: 0,
    setsAcked: 0, setsQueuedAsked: 0, setWaitsGranted: 0, releasedAll: 0, deadlockAnswers: 0, lateCopies: 0 };
  /** the limit each semaphore is believed to have (learned from limit_mismatch answers) */
  private readonly semLimits = new Map<string, number>();

  constructor(private readonly p: WorkloadParams, private readonly cluster: ClusterView, private readonly checkers: LockCheckers, private readonly rng: Rng,
    /** the shared-lock and semaphore draws: a stream of their own, so the exclusive
     *  operations keep their draws from `rng` */
    private readonly x: Rng,
    /** the election draws: a stream of their own, so the other operations keep theirs */
    private readonly e?: Rng,
    /** the max-hold and revoke draws: a stream of their own */
    private readonly h?: Rng,
    /** the lock-set and opposite-order draws: a stream of their own */
    private readonly t?: Rng,
    /** the late copies' draws (lateCopy): a stream of their own */
    private readonly late?: Rng) {
    for (let k = 0; k < p.clients; k++) this.clients.push(new Client(k));
  }

  /** every idle client may start one operation (keepalivesOnly: only due keepalives,
   *  which are read barriers, never log entries) */
  act(keepalivesOnly = false): void {
    for (const c of this.clients) {
      if (c.busy) continue;
      const due = c.sessionId !== null && c.keepalives && this.cluster.nowMs() - c.lastKeepaliveMs >= this.p.ttlMs / 3;
      if (!due && (keepalivesOnly || this.rng.next() >= this.p.actProbability)) continue;
      const leader = this.cluster.leader();
      if (!leader) continue;
      c.busy = true;
      this.stats.ops++;
      this.step(c, leader, due).then(
        () => {
          c.busy = false;
        },
        (err: unknown) => this.cluster.fail(err),
      );
    }
  }

  private async step(c: Client, n: LockNode, keepaliveDue: boolean): Promise<void> {
    if (c.sessionId === null) return this.open(c, n);
    if (keepaliveDue) {
      await this.keepalive(c, n);
      return;
    }
    if (this.t !== undefined && (this.p.setShare ?? 0) > 0 && this.t.next() < this.p.setShare!) return this.setStep(c, n, this.t);
    if (this.h !== undefined && (this.p.revokeShare ?? 0) > 0 && this.h.next() < this.p.revokeShare!) return this.revokeStep(n, this.h);
    if (this.e !== undefined && (this.p.electionShare ?? 0) > 0 && this.e.next() < this.p.electionShare!) return this.electionStep(c, n, this.e);
    if (this.p.modeShare > 0 && this.x.next() < this.p.modeShare) return this.modeStep(c, n);
    const r = this.rng.next();
    const name = `lock-${this.rng.int(0, this.p.locks)}`;
    if (r < 0.45) return this.acquire(c, n, name, this.rng.next() < 0.4 ? this.p.waitMs : 0);
    if (r < 0.75) {
      const mine = [...c.held.keys()];
      if (mine.length > 0) return this.release(c, n, mine[this.rng.int(0, mine.length)]!);
      return this.acquire(c, n, name, 0);
    }
    if (r < 0.85) return this.close(c, n);
    if (r < 0.85 + 0.15 * this.p.abandonShare) return this.abandon(c);
    await this.keepalive(c, n);
  }

  private newSessionId(c: Client): string {
    return `s${c.id}-${++this.sessionSeq}`;
  }

  private async open(c: Client, n: LockNode): Promise<void> {
    const sent = this.cluster.nowMs();
    const sid = this.newSessionId(c);
    const delay = this.rng.next() < this.p.lockDelayShare;
    const out = await n.propose({ kind: 'openSession', sessionId: sid, ttlMs: this.p.ttlMs, owner: `c${c.id}`, lockDelayMs: delay ? this.p.lockDelayMs : 0 });
    const r = result(out);
    if (r?.ok && r.kind === 'session_opened') {
      // the lessor tracked it at apply (>= send): the client's lease starts at send
      this.checkers.onLeaseAck(sid, sent, this.p.ttlMs, 'open');
      c.sessionId = sid;
      c.lockDelay = delay;
      c.keepalives = true;
      c.lastKeepaliveMs = sent;
      c.held.clear();
      c.shares.clear();
      c.holdCap.clear();
      c.sems.clear();
    }
  }

  /** lock-service keepalive: read barrier, session still live, lessor.renew from arrival */
  private async keepalive(c: Client, n: LockNode): Promise<boolean> {
    const sid = c.sessionId!;
    const sent = this.cluster.nowMs();
    c.lastKeepaliveMs = sent; // a failed one is retried after the same interval
    if (!n.isLeader) return false;
    const rd = await n.driver.readIndex(this.p.readTimeoutMs);
    if (!rd.ok || n.dead) return false;
    const s = n.app.fsm.getSession(sid);
    if (!s) {
      this.forget(c); // session_not_found: the session is gone
      return false;
    }
    if (!n.lessor.isLeader || !n.lessor.renew(sid, sent)) return false;
    this.stats.keepalives++;
    this.checkers.onLeaseAck(sid, sent, s.ttlMs, 'keepalive');
    return true;
  }

  private async acquire(c: Client, n: LockNode, name: string, waitMs: number): Promise<void> {
    const { sid, sent, key } = this.keyed(c);
    const hold = this.maxHold();
    this.cap(c, name, sent, hold); // at the send: the request may make a grant whatever it is answered
    const cmd = { kind: 'acquire' as const, name, sessionId: sid, waitMs, ...hold };
    let out = await n.propose(cmd, key);
    const again = this.retryAt(out, this.rng);
    if (again) {
      n = again;
      out = await n.propose(cmd, key);
    }
    const r = result(out);
    // unsure whether it holds the lock: give the session up to expiry (its grant, if any,
    // ends with it), as a careful client would
    if (r === null) return this.unsure(c);
    if (r.ok && r.kind === 'acquired') {
      this.confirmGrant(c, n, name, r.sessionId, r.fencingToken, sent, out.ok ? out.index : 0, this.cap(c, name, sent, hold));
      return;
    }
    if (r.ok && r.kind === 'queued') {
      this.stats.queued++;
      await this.waitForGrant(c, n, name, sent, waitMs, this.cap(c, name, sent, hold));
      this.lateCopy(cmd, key);
      return;
    }
    this.refused(c, r);
  }

  /**
   * Sometimes, once the client is done with a request that queued, one more copy of it —
   * the same command under the same Idempotency-Key — reaches whoever leads, up to 3 s
   * later, and nobody hears its answer: a relay that sat behind a paused node (jepsen-lite
   * seed 179705514). Whatever the first copy's wait came to, the copy changes nothing; the
   * key answers what the wait ended with (ModelAgreement compares that answer with the
   * model's: docs/lock-fsm.md "Idempotency").
   */
  private lateCopy(cmd: Command, key: string): void {
    const l = this.late;
    if (l === undefined || !(l.next() < 0.3)) return;
    const ticks = l.int(1, Math.max(2, Math.round(3000 / this.p.tickMs)));
    void this.ticks(ticks).then(async () => {
      const n = this.cluster.leader();
      if (n === null || n.dead) return;
      this.stats.lateCopies++;
      await n.propose(cmd, key);
    }).catch((err: unknown) => this.cluster.fail(err));
  }

  /** a keyed request of `c` is sent now: its session, the send time and a fresh
   *  Idempotency-Key (the checkers time the key's life from this send) */
  private keyed(c: Client): { sid: string; sent: number; key: string } {
    const sid = c.sessionId!;
    const sent = this.cluster.nowMs();
    const key = `k${c.id}-${++c.seq}`;
    this.checkers.onKeySent(key, sent);
    return { sid, sent, key };
  }

  /** an acquire's outcome is unknown: counted, and the session given up to expiry */
  private unsure(c: Client): void {
    this.stats.unknown++;
    this.abandon(c);
  }

  /** after an unknown outcome of a keyed request, on a coin flip from `rng`: whoever leads
   *  now, to retry at once with the same Idempotency-Key (none: no retry) */
  private retryAt(out: ProposalOutcome, rng: Rng): LockNode | undefined {
    if (out.ok || out.kind !== 'unknown' || !(rng.next() < 0.5)) return undefined;
    const again = this.cluster.leader();
    return again && !again.dead ? again : undefined;
  }

  /** an acquire's definite refusal: counted; a session the service no longer knows is forgotten */
  private refused(c: Client, r: ApplyResult): void {
    if (!r.ok && r.code === 'lock_held') this.stats.lockHeld++;
    if (!r.ok && r.code === 'deadlock') this.stats.deadlockAnswers++;
    if (!r.ok && r.code === 'session_not_found') this.forget(c);
  }

  /** A lock-set step (docs/simulation-lock.md "Lock sets and deadlocks"): an acquire-all of
   *  2–3 names, or the next name of a pair taken one by one in this client's order (even
   *  clients in name order, odd ones in reverse: two of them deadlock, and one is refused
   *  at once), or a release-all. */
  private async setStep(c: Client, n: LockNode, t: Rng): Promise<void> {
    const pool = Array.from({ length: this.p.locks }, (_, k) => `lock-${k}`);
    const names: string[] = [];
    const want = Math.min(pool.length, 2 + t.int(0, 2));
    while (names.length < want) names.push(pool.splice(t.int(0, pool.length), 1)[0]!);
    const r = t.next();
    if (r < 0.35) return this.acquireAll(c, n, names, t.next() < 0.7 ? this.p.waitMs : 0, t.next() < 0.15, t);
    if (r < 0.7) {
      const order = names.slice(0, 2).sort();
      if (c.id % 2 === 1) order.reverse();
      const next = order.find((x) => !c.held.has(x));
      if (next === undefined) return this.releaseAll(c, n, order);
      // holding the first of the pair, wait for the second: the deadlock-prone order
      return this.acquire(c, n, next, order.some((x) => c.held.has(x)) || t.next() < 0.3 ? this.p.waitMs : 0);
    }
    const mine = [...c.held.keys()].filter((x) => x.startsWith('lock-'));
    return this.releaseAll(c, n, mine.length > 0 && t.next() < 0.8 ? mine : names);
  }

  private async acquireAll(c: Client, n: LockNode, names: string[], waitMs: number, shared: boolean, t: Rng): Promise<void> {
    const { sid, sent, key } = this.keyed(c);
    const cmd = { kind: 'acquireAll' as const, names, sessionId: sid, waitMs, ...(shared ? { mode: 'shared' as const } : {}) };
    let out = await n.propose(cmd, key);
    const again = this.retryAt(out, t);
    if (again) {
      n = again;
      out = await n.propose(cmd, key);
    }
    const r = result(out);
    if (r === null) return this.unsure(c);
    if (r.ok && r.kind === 'acquired_all') {
      if (this.confirmSet(c, n, sid, names, shared, sent, out.ok ? out.index : 0)) this.stats.setsAcked++;
      return;
    }
    if (r.ok && r.kind === 'queued_all') {
      this.stats.setsQueuedAsked++;
      await this.waitForSet(c, n, names, r.since, shared, sent, waitMs);
      return;
    }
    this.refused(c, r);
  }

  /** the whole set stands on this node and the leader renewed the session (lock-set-service):
   *  each exclusive name becomes the client's belief; a shared set's names are only let go
   *  by a later release-all or the session's end */
  private confirmSet(c: Client, n: LockNode, sid: string, names: readonly string[], shared: boolean, sent: number, index: number): boolean {
    const fsm = n.app.fsm;
    const s = fsm.getSession(sid);
    if (!s) return false;
    const mine = names.map((x) => (fsm.getLock(x).holders ?? []).find((h) => h.sessionId === sid));
    if (mine.some((h) => h === undefined)) return false;
    if (shared) return true;
    // a name the session already held keeps that grant's max hold: believed only until the
    // earliest bound of the acquires that may have made it (holdCap), as for a re-acquire
    for (let k = 0; k < names.length; k++) this.confirmGrant(c, n, names[k]!, sid, mine[k]!.fencingToken, sent, index, c.holdCap.get(names[k]!) ?? Infinity);
    return true;
  }

  /** as waitForGrant, for a waiting set: the lessor times it by its first place */
  private waitForSet(c: Client, n: LockNode, names: string[], since: number, shared: boolean, sent: number, waitMs: number): Promise<void> {
    const sid = c.sessionId!;
    const place = names.find((x) => n.app.fsm.waitOf(x, sid)?.since === since);
    return this.poll(c, n, place ?? names[0]!, sent, waitMs, place !== undefined ? { since } : undefined, false, (asked, index) => {
      if (this.confirmSet(c, n, sid, names, shared, asked, index)) {
        this.stats.setWaitsGranted++;
        return 'done';
      }
      return names.some((x) => n.app.fsm.waitOf(x, sid)?.since === since) ? 'waiting' : 'gone'; // gone: cancelled
    });
  }

  private async releaseAll(c: Client, n: LockNode, names: string[]): Promise<void> {
    const sid = c.sessionId!;
    for (const x of names) {
      // release-all frees shares too
      if (c.held.delete(x) || c.shares.delete(x)) this.checkers.onLetGo(sid, x);
    }
    const r = result(await n.propose({ kind: 'releaseAll', names, sessionId: sid }));
    for (const x of names) this.dropCap(c, n, x);
    if (r?.ok && r.kind === 'released_all') this.stats.releasedAll++;
    if (r === null) this.stats.unknown++;
  }

  /** lock-service confirmGrant: the grant stands and the leader renewed the session */
  private confirmGrant(c: Client, n: LockNode, name: string, sid: string, token: number, sent: number, index: number, untilMs = Infinity): boolean {
    const s = n.app.fsm.getSession(sid);
    const l = n.app.fsm.getLock(name);
    if (!s || !l.holder || l.holder.sessionId !== sid || l.holder.fencingToken !== token) return false;
    if (!n.lessor.isLeader || n.dead || !n.lessor.renew(sid, sent)) return false;
    this.checkers.onLeaseAck(sid, sent, s.ttlMs, 'acquire');
    this.checkers.onGrantAck(name, sid, token, index, untilMs);
    if (c.sessionId === sid) c.held.set(name, { token });
    this.stats.acquired++;
    return true;
  }

  /** the leader tracks the wait; the client polls with read barriers until it holds the
   *  lock or the wait ran out (the lessor's cancelWait ends it) */
  private waitForGrant(c: Client, n: LockNode, name: string, sent: number, waitMs: number, untilMs: number): Promise<void> {
    const sid = c.sessionId!;
    // as lock-service: only a wait the FSM still has is tracked, under its identity (a wait
    // already granted or cancelled has nothing to time out; tracking it as "unknown" would
    // make the lessor cancel whatever wait the session has next)
    return this.poll(c, n, name, sent, waitMs, n.app.fsm.waitOf(name, sid), false, (asked, index) => {
      const l = n.app.fsm.getLock(name);
      if (l.holder?.sessionId === sid) {
        if (this.confirmGrant(c, n, name, sid, l.holder.fencingToken, asked, index, untilMs)) this.stats.waitsGranted++;
        return 'done';
      }
      return n.app.fsm.getSession(sid)!.waiting.includes(name) ? 'waiting' : 'gone'; // gone: cancelled, lock_held
    });
  }

  private async release(c: Client, n: LockNode, name: string): Promise<void> {
    const sid = c.sessionId!;
    const h = c.held.get(name)!;
    c.held.delete(name);
    this.checkers.onLetGo(sid, name);
    const r = result(await n.propose({ kind: 'release', name, sessionId: sid, fencingToken: h.token }));
    this.dropCap(c, n, name);
    if (r?.ok && r.kind === 'released') this.stats.released++;
    if (r === null) this.stats.unknown++;
  }

  private async close(c: Client, n: LockNode): Promise<void> {
    const sid = c.sessionId!;
    this.forget(c);
    const r = result(await n.propose({ kind: 'closeSession', sessionId: sid }, `close-${sid}`));
    if (r?.ok && r.kind === 'session_closed') this.stats.closed++;
  }

  /** stop keepalives and walk away: the session must expire through the lessor */
  private abandon(c: Client): Promise<void> {
    if (c.sessionId !== null) this.stats.abandoned++;
    this.forget(c);
    return Promise.resolve();
  }

  private forget(c: Client): void {
    if (c.sessionId !== null) this.checkers.onLetGo(c.sessionId);
    c.sessionId = null;
    c.held.clear();
    c.shares.clear();
    c.holdCap.clear();
    c.sems.clear();
  }

  // ---- shared locks and semaphores (drawn from `x`) ----

  private modeStep(c: Client, n: LockNode): Promise<void> {
    const r = this.x.next();
    const lock = `lock-${this.x.int(0, this.p.locks)}`;
    const sem = `sem-${this.x.int(0, this.p.semaphores)}`;
    const wait = this.x.next() < 0.5 ? this.p.waitMs : 0;
    if (r < 0.3) return this.acquireShared(c, n, lock, wait);
    if (r < 0.45) {
      const mine = [...c.shares.keys()];
      if (mine.length > 0) return this.releaseShare(c, n, mine[this.x.int(0, mine.length)]!);
      return this.acquireShared(c, n, lock, 0);
    }
    if (r < 0.75) return this.semAcquire(c, n, sem, wait);
    if (r < 0.92) {
      const mine = [...c.sems.keys()];
      if (mine.length > 0) return this.semRelease(c, n, mine[this.x.int(0, mine.length)]!);
      return this.semAcquire(c, n, sem, 0);
    }
    return this.semResize(n, sem, this.x.int(1, this.p.maxLimit + 1));
  }

  private async acquireShared(c: Client, n: LockNode, name: string, waitMs: number): Promise<void> {
    const { sid, sent, key } = this.keyed(c);
    const hold = this.maxHold();
    this.cap(c, name, sent, hold);
    const r = result(await n.propose({ kind: 'acquire', name, sessionId: sid, waitMs, mode: 'shared', ...hold }, key));
    if (r === null) return this.unsure(c); // unsure whether it shares the lock
    if (r.ok && r.kind === 'acquired') {
      this.confirmShare(c, n, name, sid, r.fencingToken, sent, this.cap(c, name, sent, hold));
      return;
    }
    if (r.ok && r.kind === 'queued') {
      this.stats.queued++;
      const w = n.app.fsm.waitOf(name, sid);
      await this.poll(c, n, name, sent, waitMs, w, false, (asked) => {
        const h = n.app.fsm.getLock(name).holders?.find((x) => x.sessionId === sid);
        if (h === undefined) return n.app.fsm.getSession(sid)?.waiting.includes(name) === true ? 'waiting' : 'gone';
        if (h.mode === 'shared' && this.confirmShare(c, n, name, sid, h.fencingToken, asked, this.cap(c, name, sent, hold))) this.stats.waitsGranted++;
        return 'done';
      });
      return;
    }
    if (!r.ok && r.code === 'session_not_found') this.forget(c);
  }

  private confirmShare(c: Client, n: LockNode, name: string, sid: string, token: number, sent: number, untilMs: number): boolean {
    const s = n.app.fsm.getSession(sid);
    const h = n.app.fsm.getLock(name).holders?.find((x) => x.sessionId === sid);
    if (!s || !h || h.mode !== 'shared' || h.fencingToken !== token) return false;
    if (!n.lessor.isLeader || n.dead || !n.lessor.renew(sid, sent)) return false;
    this.checkers.onLeaseAck(sid, sent, s.ttlMs, 'shared acquire');
    this.checkers.onShareAck(name, sid, token, untilMs);
    if (c.sessionId === sid) c.shares.set(name, { token });
    this.stats.sharedAcked++;
    return true;
  }

  private async releaseShare(c: Client, n: LockNode, name: string): Promise<void> {
    const sid = c.sessionId!;
    const h = c.shares.get(name)!;
    c.shares.delete(name);
    this.checkers.onLetGo(sid, name);
    const r = result(await n.propose({ kind: 'release', name, sessionId: sid, fencingToken: h.token }));
    this.dropCap(c, n, name);
    if (r?.ok && r.kind === 'released') this.stats.sharedReleased++;
    if (r === null) this.stats.unknown++;
  }

  private async semAcquire(c: Client, n: LockNode, name: string, waitMs: number): Promise<void> {
    const limit = this.semLimits.get(name) ?? this.p.semLimit;
    const permits = this.x.int(1, limit + 1);
    const { sid, sent, key } = this.keyed(c);
    const r = result(await n.propose({ kind: 'semAcquire', name, sessionId: sid, limit, permits, waitMs, ...this.maxHold() }, key));
    if (r === null) return this.unsure(c);
    if (r.ok && r.kind === 'sem_acquired') {
      this.confirmSem(c, n, name, sid, r.fencingToken, sent);
      return;
    }
    if (r.ok && r.kind === 'sem_queued') {
      this.stats.semQueued++;
      const w = n.app.fsm.semWaitOf(name, sid);
      await this.poll(c, n, name, sent, waitMs, w, true, (asked) => {
        const h = n.app.fsm.getSemaphore(name).holders.find((x) => x.sessionId === sid);
        if (h === undefined) return n.app.fsm.semWaitOf(name, sid) !== undefined ? 'waiting' : 'gone';
        if (this.confirmSem(c, n, name, sid, h.fencingToken, asked)) this.stats.waitsGranted++;
        return 'done';
      });
      return;
    }
    if (!r.ok && r.code === 'limit_mismatch') {
      this.stats.semMismatch++;
      this.semLimits.set(name, r.limit);
    }
    if (!r.ok && r.code === 'session_not_found') this.forget(c);
  }

  private confirmSem(c: Client, n: LockNode, name: string, sid: string, token: number, sent: number): boolean {
    const s = n.app.fsm.getSession(sid);
    const h = n.app.fsm.getSemaphore(name).holders.find((x) => x.sessionId === sid);
    if (!s || !h || h.fencingToken !== token) return false;
    if (!n.lessor.isLeader || n.dead || !n.lessor.renew(sid, sent)) return false;
    this.checkers.onLeaseAck(sid, sent, s.ttlMs, 'semaphore acquire');
    if (c.sessionId === sid) c.sems.set(name, { token });
    this.stats.semAcked++;
    return true;
  }

  private async semRelease(c: Client, n: LockNode, name: string): Promise<void> {
    const sid = c.sessionId!;
    c.sems.delete(name);
    const r = result(await n.propose({ kind: 'semRelease', name, sessionId: sid }));
    if (r?.ok && r.kind === 'sem_released') this.stats.semReleased++;
    if (r === null) this.stats.unknown++;
  }

  private async semResize(n: LockNode, name: string, limit: number): Promise<void> {
    const r = result(await n.propose({ kind: 'semSetLimit', name, limit }));
    if (r?.ok && r.kind === 'sem_limit') {
      this.stats.semResized++;
      this.semLimits.set(name, limit);
    }
  }

  // ---- elections (drawn from `e`) ----

  private electionStep(c: Client, n: LockNode, e: Rng): Promise<void> {
    const r = e.next();
    const name = `elect-${e.int(0, this.p.elections ?? 1)}`;
    const mine = [...c.held.keys()].filter((k) => k.startsWith('elect-'));
    const pick = (): string => mine[e.int(0, mine.length)]!;
    // a stray proclaim or resign by a client that does not lead (or no longer does): the
    // FSM must refuse it, or the election checker sees a second voice
    if (r >= 0.9) return e.next() < 0.5 ? this.proclaim(c, n, name, `x${c.id}-${c.seq + 1}`) : this.resign(c, n, name);
    if (r < 0.5 || mine.length === 0) return this.campaign(c, n, name, e.next() < 0.5 ? this.p.waitMs : 0, `v${c.id}-${c.seq + 1}`);
    if (r < 0.75) return this.proclaim(c, n, pick(), `p${c.id}-${c.seq + 1}`);
    return this.resign(c, n, pick());
  }

  private async campaign(c: Client, n: LockNode, name: string, waitMs: number, value: string): Promise<void> {
    const { sid, sent, key } = this.keyed(c);
    const hold = this.maxHold();
    this.cap(c, name, sent, hold);
    const out = await n.propose({ kind: 'campaign', name, sessionId: sid, value, waitMs, ...hold }, key);
    const r = result(out);
    if (r === null) return this.unsure(c); // unsure whether it leads
    if (r.ok && r.kind === 'acquired') {
      if (this.confirmLead(c, n, name, sid, r.fencingToken, sent, out.ok ? out.index : 0, this.cap(c, name, sent, hold))) this.stats.campaignsWon++;
      return;
    }
    if (r.ok && r.kind === 'queued') {
      this.stats.campaignsQueued++;
      const w = n.app.fsm.waitOf(name, sid);
      await this.poll(c, n, name, sent, waitMs, w, false, (asked) => {
        const l = n.app.fsm.getElection(name).leader;
        if (l?.sessionId !== sid) return n.app.fsm.getSession(sid)?.waiting.includes(name) === true ? 'waiting' : 'gone';
        if (this.confirmLead(c, n, name, sid, l.fencingToken, asked, n.driver.appliedIndex, this.cap(c, name, sent, hold))) this.stats.campaignsWon++;
        return 'done';
      });
      return;
    }
    if (!r.ok && r.code === 'lock_held') this.stats.lockHeld++;
    if (!r.ok && r.code === 'session_not_found') this.forget(c);
  }

  /** election-service confirm: the leadership stands and the leader renewed the session */
  private confirmLead(c: Client, n: LockNode, name: string, sid: string, token: number, sent: number, index: number, untilMs: number): boolean {
    const s = n.app.fsm.getSession(sid);
    const l = n.app.fsm.getElection(name).leader;
    if (!s || l?.sessionId !== sid || l.fencingToken !== token) return false;
    if (!n.lessor.isLeader || n.dead || !n.lessor.renew(sid, sent)) return false;
    this.checkers.onLeaseAck(sid, sent, s.ttlMs, 'campaign');
    this.checkers.onGrantAck(name, sid, token, index, untilMs);
    if (c.sessionId === sid) c.held.set(name, { token });
    return true;
  }

  // ---- max holds and revokes (drawn from `h`) ----

  /** the end of the client's belief in its grant of `name`: a grant with a max hold is
   *  never freed before its acquire's send + max_hold_ms (the granting entry is stamped no
   *  earlier), so the earliest such bound of the session's requests for it */
  private cap(c: Client, name: string, sentMs: number, hold: { maxHoldMs?: number }): number {
    if (hold.maxHoldMs !== undefined) c.holdCap.set(name, Math.min(c.holdCap.get(name) ?? Infinity, sentMs + hold.maxHoldMs));
    return c.holdCap.get(name) ?? Infinity;
  }

  /** the client let `name` go (its release or resign applied): its bound starts afresh
   *  unless the session still holds or waits for the name (a wait it stopped polling may
   *  have been granted, or may be still, with its request's max hold) */
  private dropCap(c: Client, n: LockNode, name: string): void {
    const sid = c.sessionId;
    if (sid === null) return;
    const s = n.app.fsm.getSession(sid);
    const holds = s !== undefined && (s.locks.includes(name) || (n.app.fsm.getLock(name).holders ?? []).some((h) => h.sessionId === sid));
    if (s === undefined || (!s.waiting.includes(name) && !holds)) c.holdCap.delete(name);
  }

    /** a max hold for the next acquire, or none (the hold stream is drawn only when on) */
  private maxHold(): { maxHoldMs?: number } {
    const h = this.h;
    if (h === undefined || (this.p.holdShare ?? 0) === 0 || h.next() >= this.p.holdShare!) return {};
    this.stats.maxHoldAsked++;
    // from a fifth of a TTL to 1.5 TTLs: short ones expire under keepalives, long ones
    // often outlive the grant
    return { maxHoldMs: Math.max(1, Math.round(this.p.ttlMs * (0.2 + h.next() * 1.3))) };
  }

  /** an administrator revokes one session's grant of a name (as the leader sees it) or
   *  every grant of the name */
  private async revokeStep(n: LockNode, h: Rng): Promise<void> {
    const r = h.next();
    const target = r < 0.7 ? 'lock' as const : 'semaphore' as const;
    const name = target === 'semaphore' ? `sem-${h.int(0, this.p.semaphores)}` : r < 0.5 ? `lock-${h.int(0, this.p.locks)}` : `elect-${h.int(0, this.p.elections ?? 1)}`;
    const holders = target === 'lock' ? (n.app.fsm.getLock(name).holders ?? []).map((x) => x.sessionId) : n.app.fsm.getSemaphore(name).holders.map((x) => x.sessionId);
    const one = holders.length > 0 && h.next() < 0.5 ? holders[h.int(0, holders.length)] : undefined;
    this.stats.revokesSent++;
    await n.propose({ kind: 'revoke', target, name, ...(one !== undefined ? { sessionId: one } : {}) });
  }

  private async proclaim(c: Client, n: LockNode, name: string, value: string): Promise<void> {
    const sid = c.sessionId!;
    c.seq++;
    const r = result(await n.propose({ kind: 'proclaim', name, sessionId: sid, value }));
    if (r?.ok && r.kind === 'proclaimed') this.stats.proclaimed++;
    if (r !== null && !r.ok && r.code === 'not_holder') {
      c.held.delete(name); // it no longer leads (its session ended and it was not told yet)
      this.dropCap(c, n, name);
      this.checkers.onLetGo(sid, name);
    }
  }

  private async resign(c: Client, n: LockNode, name: string): Promise<void> {
    const sid = c.sessionId!;
    c.held.delete(name);
    this.checkers.onLetGo(sid, name);
    const r = result(await n.propose({ kind: 'resign', name, sessionId: sid }));
    this.dropCap(c, n, name);
    if (r?.ok && r.kind === 'resigned') this.stats.resigned++;
    if (r === null) this.stats.unknown++;
  }

  /** as waitForGrant: the leader's lessor times the wait out (the wait `w` of `name`, when
   *  there is one), the client polls with read barriers; `check` answers after each barrier */
  private async poll(c: Client, n: LockNode, name: string, sent: number, waitMs: number, w: { since: number } | undefined, semaphore: boolean,
    check: (askedMs: number, readIndex: number) => 'waiting' | 'gone' | 'done'): Promise<void> {
    const sid = c.sessionId!;
    if (!n.lessor.isLeader) return;
    if (w !== undefined) n.trackWait(name, sid, sent + waitMs, w.since, semaphore, sent);
    n.waitingSessions.add(sid);
    const giveUpMs = sent + waitMs + 4 * this.p.ttlMs;
    while (this.cluster.nowMs() < giveUpMs && !n.dead && n.isLeader && c.sessionId === sid) {
      await this.ticks(2);
      if (n.dead || !n.isLeader) return;
      const asked = this.cluster.nowMs();
      const rd = await n.driver.readIndex(this.p.readTimeoutMs);
      if (!rd.ok || n.dead) return;
      if (!n.app.fsm.getSession(sid)) {
        this.forget(c);
        return;
      }
      if (check(asked, rd.index) !== 'waiting') return;
    }
  }

  private waiters: { at: number; resolve: () => void }[] = [];
  /** resolves after `k` simulated ticks (the simulation calls wake() every tick) */
  ticks(k: number): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ at: this.cluster.now() + k, resolve }));
  }
  wake(): void {
    const now = this.cluster.now();
    const due = this.waiters.filter((w) => w.at <= now);
    this.waiters = this.waiters.filter((w) => w.at > now);
    for (const w of due) w.resolve();
  }

  // ---- the liveness phase: a fresh client, a fresh lock ----

  /** open a session and acquire `name` without waiting; resolves with the acknowledged
   *  token, or null (retry later) */
  async freshAcquire(n: LockNode, name: string): Promise<number | null> {
    const c = new Client(this.clients.length + 1000);
    await this.open(c, n);
    if (c.sessionId === null) return null;
    const sent = this.cluster.nowMs();
    const out = await n.propose({ kind: 'acquire', name, sessionId: c.sessionId, waitMs: 0 });
    const r = result(out);
    if (r?.ok && r.kind === 'acquired' && out.ok && this.confirmGrant(c, n, name, r.sessionId, r.fencingToken, sent, out.index)) return r.fencingToken;
    return null;
  }
}

/** the FSM's answer, or null when the outcome is not known (it may still apply) */
function result(out: ProposalOutcome): ApplyResult | null {
  if (out.ok) return (out.result as ApplyOutput).result;
  if (out.kind === 'rejected' || out.kind === 'lost') return NOT_APPLIED;
  return null;
}

/** refused or lost: provably not applied, nothing to learn */
const NOT_APPLIED: ApplyResult = { ok: true, kind: 'noop' };
