// Lock-level safety checkers over every node's applied stream, as the lock simulation
// (test/sim/lock, docs/simulation-lock.md) feeds them. The simulator sees every node, so
// they check what no single node can:
//  - State Machine Safety on the lock app: every node applies, at each index, the same
//    entry with the same result and events (a digest per index, first applier wins);
//  - at most one holder per lock: assertFsmInvariants after every apply on every node,
//    plus a shadow of the holders over the applied stream in which a grant of a lock that
//    someone else still holds fails at once; shared holders, semaphore permits and FIFO
//    queues: mode-checkers.ts;
//  - fencing tokens strictly increase in every node's apply order, and one token names
//    one (lock, session) grant everywhere;
//  - replicas agree: equal applied index → identical application snapshot bytes;
//  - no acknowledged grant lost: an acknowledged (lock, session, token) is a grant of the
//    applied stream, and every node that applies that index later applies the same;
//  - never-early expiry: a session expires no earlier than ttl after the send time of its
//    last acknowledged keepalive/acquire, and nothing is acknowledged for an expired one;
//  - client-side mutual exclusion: when a grant is acknowledged, no other client may still
//    believe it holds the lock (its lease = last acknowledged send + ttl, unreleased);
//  - lock-delay holds: a lock-delay ends no earlier than its delay after it began;
//  - waits run their course: a wait is cancelled no earlier than wait_ms after the send
//    of the acquire that queued it; and ends in time, whoever proposed it (wait-checker.ts);
//  - Idempotency-Keys live 10 minutes of real (simulated) time on every node: the oldest
//    key younger than that is still in the table of every node that applied it;
//  - lock sets are never partly held, every `deadlock` answer names a real cycle of the
//    state before its apply, and no cycle persists after any apply (set-checkers.ts);
//  - the committed log, applied once in index order to the reference model
//    (test/model/lock-model.ts), gives every result and event the nodes gave
//    (model-checker.ts).
import { assertFsmInvariants, type ApplyOutput, type Envelope, type LockFsm } from '../../../src/lock-fsm/index.js';
import { decodeCommand } from '../../../src/server/app/command-codec.js';
import { ModeShadow, checkLockModes, checkSemLimits, lockModesOf, semsOf } from './mode-checkers.js';
import { HoldShadow, type StampInfo } from './hold-checker.js';
import { ElectionShadow } from './election-checker.js';
import { ModelAgreement } from './model-checker.js';
import { WaitShadow } from './wait-checker.js';
import { SetShadow } from './set-checkers.js';

/** what the checkers read of a node (the lock simulator's LockNode, test/sim/lock/node.ts) */
export interface CheckedNode {
  readonly id: string;
  readonly app: { readonly fsm: LockFsm; snapshot(): Uint8Array };
  readonly lessor: { readonly isLeader: boolean };
  readonly driver: { readonly currentTerm: number; readonly appliedIndex: number };
}

export class LockViolation extends Error {
  constructor(readonly checker: string, message: string) {
    super(`${checker}: ${message}`);
    this.name = 'LockViolation';
  }
}

function violation(checker: string, msg: string): never {
  throw new LockViolation(checker, msg);
}

function bytesKey(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
}

/** FNV-1a over bytes, then over a string */
function fnv(bytes: Uint8Array, s = ''): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < bytes.length; k++) h = Math.imul(h ^ (bytes[k] as number), 0x01000193);
  for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

/** JSON with sorted keys: a result read back from a snapshot's idempotency table may have
 *  another key order than the one built by apply, and must still compare equal */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${stable(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

interface Canonical { term: number; digest: number; first: string }
interface Grant { name: string; sessionId: string; index: number }

export class LockCheckers {
  private readonly canonical = new Map<number, Canonical>();
  private maxCanonical = 0;
  private readonly grants = new Map<number, Grant>();
  /** holders by mode, semaphore permits and FIFO queues over the applied stream */
  readonly modes = new ModeShadow(violation);
  readonly elections = new ElectionShadow(violation);
  /** the reference model over the committed log (model-checker.ts) */
  readonly model = new ModelAgreement(stable);
  /** max holds and revocations (hold-checker.ts) */
  readonly holds: HoldShadow;
  /** every wait ends in time, however many leaders came between (wait-checker.ts) */
  readonly waitBound: WaitShadow;
  /** lock sets whole, deadlock answers real, no cycle persists (set-checkers.ts) */
  readonly sets = new SetShadow(violation);
  /** (term, entry bytes) → who stamped it and when (the first stamp of those bytes in that
   *  term: two leaders of different terms may stamp the same command at the same log time,
   *  and the entry's term says whose the applied one is) */
  private readonly stamps = new Map<string, StampInfo>();
  private readonly stateAt = new Map<number, { hash: number; node: string }>();
  private readonly lastToken = new Map<string, number>();
  private readonly lastChecked = new Map<string, number>();
  /** session → send time of its last acknowledged keepalive/acquire/open, and its ttl */
  private readonly leases = new Map<string, { sentMs: number; ttlMs: number; what: string }>();
  private readonly expiredAt = new Map<string, number>();
  /** lock → the client session that believes it holds it (acknowledged grant, unreleased) */
  private readonly beliefs = new Map<string, { sessionId: string; token: number; untilMs: number }>();
  /** lock → the sessions told they share it (and not yet let go), with the end of their
   *  belief (a max hold: the send of the acquire + max_hold_ms, else never) */
  private readonly shareBeliefs = new Map<string, Map<string, { token: number; untilMs: number }>>();
  /** lock → when its current lock-delay began (first apply anywhere) and how long it is */
  private readonly delays = new Map<string, { startMs: number; delayMs: number }>();
  /** (lock, session) → the send time of the acquire that queued the current wait */
  private readonly waits = new Map<string, { sentMs: number; waitMs: number }>();
  /** idempotency key → the send time of its first request (the workload tells) */
  private readonly keySent = new Map<string, number>();
  /** keys in the order of their first apply, which is the table's eviction order */
  private readonly keys: { key: string; index: number; atMs: number }[] = [];
  private readonly keysSeen = new Set<string>();
  private youngKey = 0;
  readonly counts = { applied: 0, grants: 0, expiries: 0, ackedGrants: 0, ackedKeepalives: 0, stateCompares: 0, delaysEnded: 0, waitsCancelled: 0, ackedShares: 0 };
  maxAckedIndex = 0;

  constructor(private readonly nowMs: () => number, opts: { tickMs?: number; timedHolds?: boolean } = {}) {
    this.holds = new HoldShadow(violation, opts.tickMs ?? 10, opts.timedHolds ?? true);
    this.waitBound = new WaitShadow(violation, opts.tickMs ?? 10, opts.timedHolds ?? true);
  }

  /** a node stamped these entry bytes at real time realMs, leading `term` */
  onProposed(node: string, term: number, data: Uint8Array, realMs: number): void {
    const k = `${term}:${bytesKey(data)}`;
    if (!this.stamps.has(k)) this.stamps.set(k, { node, term, realMs });
  }

  get maxApplied(): number {
    return this.maxCanonical;
  }

  /** a node (re)started or installed a snapshot: its token watermark is the FSM's */
  onRestored(node: CheckedNode): void {
    this.lastToken.set(node.id, node.app.fsm.lastToken);
    this.lastChecked.delete(node.id);
    this.sets.onRestored(node.id, node.app.fsm);
  }

  onApplied(node: CheckedNode, index: number, term: number, kind: string, data: Uint8Array, out: ApplyOutput | undefined): void {
    this.counts.applied++;
    const digest = fnv(data, `${kind}|${out ? stable(out) : ''}`);
    const c = this.canonical.get(index);
    const first = c === undefined;
    let modelCheck: (() => void) | undefined;
    if (c === undefined) {
      if (index !== this.maxCanonical + 1) violation('AppliedPrefix', `${node.id} applied ${index} first, but the highest index applied anywhere is ${this.maxCanonical}`);
      this.canonical.set(index, { term, digest, first: node.id });
      this.maxCanonical = index;
      const env = out && kind === 'normal' ? decodeCommand(data) : undefined;
      if (out) {
        this.counts.grants += out.events.filter((e) => e.type === 'granted').length;
        this.modes.onApplied(index, out.replayed ? undefined : env?.cmd, out);
        this.elections.onApplied(index, out.replayed ? undefined : env?.cmd, out);
        const k = `${term}:${bytesKey(data)}`;
        const stamp = kind === 'normal' ? this.stamps.get(k) : undefined;
        this.stamps.delete(k);
        this.holds.onApplied(index, out.replayed ? undefined : env?.cmd, env?.atMs, stamp, out, node.app.fsm, this.nowMs());
        this.waitBound.onApplied(index, out.replayed ? undefined : env?.cmd, env?.atMs, stamp, out, node.app.fsm, this.nowMs());
        // a revoked holder is not told until its next renew: fencing tokens, not the
        // client's belief, protect the resource from then on (docs/contract.md §4)
        for (const e of out.events) if (e.type === 'revoked') this.dropBelief(e.sessionId, e.name);
      }
      if (out && env) {
        this.timing(index, env, out);
        // last of all below: a mutation keeps being reported by the property checker named for it
        modelCheck = () => {
          const why = this.model.onFirstApply(index, env, out);
          if (why !== null) violation('ModelAgreement', `${node.id} ${why}`);
        };
      }
    } else if (c.term !== term || c.digest !== digest) {
      violation('StateMachineSafety', `${node.id} applied at ${index} term ${term} digest ${digest}, ${c.first} applied term ${c.term} digest ${c.digest}` +
        (out ? ` (${node.id}'s output ${stable(out)})` : ''));
    }
    if (out) {
      for (const e of out.events) {
        if (e.type === 'sessionEnded' && e.reason === 'expired') this.onExpired(e.sessionId);
        if (e.type !== 'granted' && e.type !== 'semGranted') continue;
        const last = this.lastToken.get(node.id) ?? 0;
        if (!(e.fencingToken > last)) violation('FencingTokens', `${node.id} granted ${e.name} to ${e.sessionId} with token ${e.fencingToken} at ${index}, not above ${last}`);
        this.lastToken.set(node.id, e.fencingToken);
        const g = this.grants.get(e.fencingToken);
        const gname = e.type === 'semGranted' ? `semaphore ${e.name}` : e.name;
        if (g === undefined) this.grants.set(e.fencingToken, { name: gname, sessionId: e.sessionId, index });
        else if (g.name !== gname || g.sessionId !== e.sessionId || g.index !== index) {
          violation('FencingTokens', `token ${e.fencingToken}: ${node.id} granted ${e.name}/${e.sessionId} at ${index}, before ${g.name}/${g.sessionId} at ${g.index}`);
        }
      }
    }
    // before the FSM's own invariants (which assert no cycle too): a mutation is reported by
    // the checker named for what it breaks
    this.sets.onApplied(node.id, index, out, () => (kind === 'normal' ? decodeCommand(data).cmd : undefined), node.app.fsm, first);
    try {
      assertFsmInvariants(node.app.fsm);
    } catch (err) {
      violation('FsmInvariants', `${node.id} after applying ${index}: ${(err as Error).message}`);
    }
    checkLockModes(lockModesOf(node.app.fsm), violation, `${node.id} after applying ${index}`);
    checkSemLimits(semsOf(node.app.fsm), this.modes.grantLimit, violation, `${node.id} after applying ${index}`);
    this.elections.checkNode(node.app.fsm, index, `${node.id} after applying ${index}`);
    this.holds.checkNode(node.app.fsm, index, `${node.id} after applying ${index}`);
    // the leader's lessor arms a max hold when it applies the grant (Lessor.observe)
    if (out && node.lessor.isLeader) {
      const tokens = out.events.flatMap((e) => ((e.type === 'granted' || e.type === 'semGranted') && e.maxHoldMs !== undefined ? [e.fencingToken] : []));
      if (tokens.length > 0) this.holds.onTracked(`${node.id}/${node.driver.currentTerm}`, node.app.fsm, this.nowMs(), tokens);
      // and a wait when it applies the entry that queued it (Lessor.observe)
      const queued = out.events.flatMap((e) => (e.type === 'waiting' || e.type === 'semWaiting' ? [{ target: e.type === 'waiting' ? 'lock' as const : 'semaphore' as const, name: e.name, sid: e.sessionId }] : []));
      if (queued.length > 0) this.waitBound.onTracked(`${node.id}/${node.driver.currentTerm}`, node.app.fsm, this.nowMs(), queued);
    }
    modelCheck?.();
  }

  /** a node took office: its lessor armed every max hold and wait it has applied (Lessor.promote) */
  onPromoted(node: CheckedNode): void {
    this.holds.onTracked(`${node.id}/${node.driver.currentTerm}`, node.app.fsm, this.nowMs());
    this.waitBound.onTracked(`${node.id}/${node.driver.currentTerm}`, node.app.fsm, this.nowMs());
  }

  /** a request with this key (its first attempt) was sent at sentMs */
  onKeySent(key: string, sentMs: number): void {
    if (!this.keySent.has(key)) this.keySent.set(key, sentMs);
  }

  /** the time-based checks, on the first apply of each entry anywhere */
  private timing(index: number, env: Envelope, out: ApplyOutput): void {
    const now = this.nowMs();
    const r = out.result;
    const key = env.idempotencyKey;
    if (key !== undefined && !this.keysSeen.has(key) && !(!r.ok && r.code === 'too_many_requests')) {
      this.keysSeen.add(key);
      this.keys.push({ key, index, atMs: now });
    }
    const cmd = env.cmd;
    if ((cmd.kind === 'acquire' || cmd.kind === 'campaign') && r.ok && r.kind === 'queued') {
      const k = `${cmd.name}\u0000${r.sessionId}`;
      if (!this.waits.has(k)) this.waits.set(k, { sentMs: (key !== undefined ? this.keySent.get(key) : undefined) ?? now, waitMs: cmd.waitMs });
    }
    if (cmd.kind === 'acquireAll' && r.ok && r.kind === 'queued_all') {
      // a set waits at each of its places (its `waiting` events): a later single acquire of
      // one of those names answers that place, and keeps the set's wait
      for (const e of out.events) {
        if (e.type !== 'waiting' || e.sessionId !== r.sessionId) continue;
        const k = `${e.name}\u0000${r.sessionId}`;
        if (!this.waits.has(k)) this.waits.set(k, { sentMs: (key !== undefined ? this.keySent.get(key) : undefined) ?? now, waitMs: cmd.waitMs });
      }
    }
    if (cmd.kind === 'semAcquire' && r.ok && r.kind === 'sem_queued') {
      const k = `sem\u0000${cmd.name}\u0000${r.sessionId}`;
      if (!this.waits.has(k)) this.waits.set(k, { sentMs: (key !== undefined ? this.keySent.get(key) : undefined) ?? now, waitMs: cmd.waitMs });
    }
    for (const e of out.events) {
      switch (e.type) {
        case 'lockDelayStarted':
          this.delays.set(e.name, { startMs: now, delayMs: e.delayMs });
          break;
        case 'lockDelayEnded': {
          const d = this.delays.get(e.name);
          this.delays.delete(e.name);
          this.counts.delaysEnded++;
          if (d && now < d.startMs + d.delayMs) violation('LockDelayHeld', `lock-delay of ${e.name} (${d.delayMs} ms from ${d.startMs}) ended at ${now} ms by entry ${index} ${JSON.stringify(cmd)}`);
          break;
        }
        case 'granted':
        case 'waitEnded':
        case 'semGranted':
        case 'semWaitEnded': {
          const sem = e.type === 'semGranted' || e.type === 'semWaitEnded';
          const k = `${sem ? 'sem\u0000' : ''}${e.name}\u0000${e.sessionId}`;
          const w = this.waits.get(k);
          this.waits.delete(k);
          // only the timeouts (the lessor's cancels) must wait for wait_ms: a candidate's own
          // resign withdraws its wait when it likes (docs/lock-fsm.md "Elections"), a
          // release-all ends the session's waits on its names, and a set whose counted-on
          // grant ended (max hold, revoke, release) is withdrawn (docs/lock-fsm.md "Lock sets")
          if ((e.type === 'waitEnded' || e.type === 'semWaitEnded') && e.reason === 'cancelled' && w && (cmd.kind === 'cancelWait' || cmd.kind === 'semCancelWait')) {
            this.counts.waitsCancelled++;
            if (now < w.sentMs + w.waitMs) violation('WaitHeld', `wait of ${e.sessionId} for ${sem ? 'semaphore ' : ''}${e.name} (${w.waitMs} ms, acquire sent at ${w.sentMs}) cancelled at ${now} ms by entry ${index} ${JSON.stringify(cmd)}`);
          }
          break;
        }
        default:
      }
    }
  }

  /** after a tick: every node that applied the oldest key younger than `ttlMs` of real
   *  time still remembers it (keys are evicted oldest first, so it stands for them all) */
  checkKeys(nodes: readonly CheckedNode[], ttlMs = 600_000): void {
    const now = this.nowMs();
    while (this.youngKey < this.keys.length && now - this.keys[this.youngKey]!.atMs >= ttlMs) this.youngKey++;
    const k = this.keys[this.youngKey];
    if (k === undefined) return;
    for (const n of nodes) {
      if (n.driver.appliedIndex < k.index) continue;
      if (n.app.fsm.core.idem.get(k.key) === undefined) {
        violation('IdempotencyLifetime', `${n.id} forgot key ${k.key} (first applied at ${k.index}, ${now - k.atMs} ms ago); its log time is ${n.app.fsm.logTimeMs}`);
      }
    }
  }

  private onExpired(sessionId: string): void {
    if (this.expiredAt.has(sessionId)) return;
    const now = this.nowMs();
    this.expiredAt.set(sessionId, now);
    this.counts.expiries++;
    const l = this.leases.get(sessionId);
    if (l && now < l.sentMs + l.ttlMs) {
      violation('EarlyExpiry', `session ${sessionId} expired at ${now} ms, before ${l.sentMs + l.ttlMs} (last acknowledged request, ${l.what}, sent at ${l.sentMs}, ttl ${l.ttlMs})`);
    }
  }

  /** a keepalive/acquire/open sent at sentMs was acknowledged now */
  onLeaseAck(sessionId: string, sentMs: number, ttlMs: number, what: string): void {
    const e = this.expiredAt.get(sessionId);
    if (e !== undefined) violation('EarlyExpiry', `${what} for session ${sessionId} (sent at ${sentMs}) acknowledged at ${this.nowMs()} after it expired at ${e}`);
    const l = this.leases.get(sessionId);
    if (!l || sentMs > l.sentMs) this.leases.set(sessionId, { sentMs, ttlMs, what });
    if (what === 'keepalive') this.counts.ackedKeepalives++;
  }

  private leaseEnd(sessionId: string): number {
    const l = this.leases.get(sessionId);
    return l ? l.sentMs + l.ttlMs : -Infinity;
  }

  /** the client was told it holds `name` with `token` (proposal at `index`); untilMs: a
   *  grant with a max hold is believed until its acquire's send + max_hold_ms (it is never
   *  freed earlier: MaxHoldEarly) */
  onGrantAck(name: string, sessionId: string, token: number, index: number, untilMs = Infinity): void {
    this.counts.ackedGrants++;
    this.maxAckedIndex = Math.max(this.maxAckedIndex, index);
    const g = this.grants.get(token);
    if (!g || g.name !== name || g.sessionId !== sessionId) {
      violation('LostGrant', `acknowledged ${name}/${sessionId} token ${token} (answered at index ${index}) is not a grant of the applied stream` +
        (g ? ` (token ${token} is ${g.name}/${g.sessionId} at ${g.index})` : ''));
    }
    const b = this.beliefs.get(name);
    const now = this.nowMs();
    if (b && b.sessionId !== sessionId && this.beliefEnd(b.sessionId, b.untilMs) > now) {
      violation('MutualExclusion', `${name} acknowledged to ${sessionId} (token ${token}) at ${now} while ${b.sessionId} (token ${b.token}) holds it until ${this.beliefEnd(b.sessionId, b.untilMs)}`);
    }
    for (const [sid, t] of this.shareBeliefs.get(name) ?? []) {
      if (sid !== sessionId && this.beliefEnd(sid, t.untilMs) > now) violation('SharedExclusion', `${name} acknowledged exclusively to ${sessionId} (token ${token}) at ${now} while ${sid} (token ${t.token}) shares it until ${this.beliefEnd(sid, t.untilMs)}`);
    }
    // a re-acquire of a held lock returns the same grant, which keeps its first max hold
    const until = b?.sessionId === sessionId && b.token === token ? Math.min(b.untilMs, untilMs) : untilMs;
    this.beliefs.set(name, { sessionId, token, untilMs: until });
  }

  private beliefEnd(sessionId: string, untilMs: number): number {
    return Math.min(this.leaseEnd(sessionId), untilMs);
  }

  /** the client was told it shares `name` with `token` */
  onShareAck(name: string, sessionId: string, token: number, untilMs = Infinity): void {
    this.counts.ackedShares++;
    const g = this.grants.get(token);
    if (!g || g.name !== name || g.sessionId !== sessionId) violation('LostGrant', `acknowledged share of ${name} by ${sessionId} token ${token} is not a grant of the applied stream`);
    const b = this.beliefs.get(name);
    const now = this.nowMs();
    if (b && b.sessionId !== sessionId && this.beliefEnd(b.sessionId, b.untilMs) > now) {
      violation('SharedExclusion', `${name} acknowledged shared to ${sessionId} (token ${token}) at ${now} while ${b.sessionId} (token ${b.token}) holds it exclusively until ${this.beliefEnd(b.sessionId, b.untilMs)}`);
    }
    let m = this.shareBeliefs.get(name);
    if (m === undefined) this.shareBeliefs.set(name, (m = new Map()));
    const was = m.get(sessionId);
    m.set(sessionId, { token, untilMs: was?.token === token ? Math.min(was.untilMs, untilMs) : untilMs });
  }

  /** a revoke took `name` from the session: nobody tells its client before its next renew */
  private dropBelief(sessionId: string, name: string): void {
    if (this.beliefs.get(name)?.sessionId === sessionId) this.beliefs.delete(name);
    this.shareBeliefs.get(name)?.delete(sessionId);
  }

  /** the client stops believing it holds name (release sent) or anything (close sent) */
  onLetGo(sessionId: string, name?: string): void {
    for (const [n, b] of this.beliefs) if (b.sessionId === sessionId && (name === undefined || n === name)) this.beliefs.delete(n);
    for (const [n, m] of this.shareBeliefs) if (name === undefined || n === name) m.delete(sessionId);
  }

  /** after a tick: replicas at the same applied index hold identical application state */
  compareStates(nodes: readonly CheckedNode[]): void {
    for (const n of nodes) {
      const idx = n.driver.appliedIndex;
      if (this.lastChecked.get(n.id) === idx) continue;
      this.lastChecked.set(n.id, idx);
      const hash = fnv(n.app.snapshot());
      this.counts.stateCompares++;
      const s = this.stateAt.get(idx);
      if (s === undefined) this.stateAt.set(idx, { hash, node: n.id });
      else if (s.hash !== hash) violation('ReplicaState', `${n.id} at applied index ${idx} has state ${hash}, ${s.node} had ${s.hash}`);
    }
  }

  /** every acknowledged grant survives: each node applied through it, and its FSM's token
   *  counter covers every grant at or below its applied index */
  assertConverged(nodes: readonly CheckedNode[]): void {
    for (const n of nodes) {
      if (n.driver.appliedIndex < this.maxAckedIndex) violation('LostGrant', `${n.id} applied ${n.driver.appliedIndex} < acknowledged index ${this.maxAckedIndex}`);
      for (const [token, g] of this.grants) {
        if (g.index <= n.driver.appliedIndex && token > n.app.fsm.lastToken) violation('LostGrant', `${n.id}'s last token ${n.app.fsm.lastToken} is below granted token ${token} (${g.name} at ${g.index})`);
      }
    }
  }
}
