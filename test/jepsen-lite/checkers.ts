// The checkers besides linearizability (linearizability.ts). Each returns a list of
// violations, each a sentence with the ops that prove it, so a report can be acted on.
import { describeOp, type Op } from './history.js';
import type { ResourceLogEntry } from './resource-proc.js';
import { maxOf, minOf } from '../support/extrema.js';

export interface FaultRecord {
  variant: string;
  detail: string;
  start: number;
  /** when the heal finished */
  end: number;
  /** a node's clock ran at this rate from start to end (the `clock` fault) */
  clock?: { node: string; rate: number };
  /** the injection failed part way (what it did is still a fault window) */
  failed?: boolean;
}

/**
 * The lease the window checkers hold the service to: a TTL in ms, or one whose length
 * depends on when the renewal was sent — `scale(sentAt)` ≤ 1 shortens the TTL and the max
 * holds measured from then, while a clock fault let the leader's clock run fast
 * (summary.ts leaseFor, docs/jepsen-lite.md "Clocks and the lease checkers").
 */
export type Ttl = number | { ms: number; scale(sentAt: number): number };

/** the TTL a renewal sent at `t` is owed */
export function ttlAt(ttl: Ttl, t: number): number {
  return typeof ttl === 'number' ? ttl : ttl.ms * ttl.scale(t);
}

/** how much of a duration the leader measures from `t` on the real clock is owed (≤ 1) */
export function scaleAt(ttl: Ttl, t: number): number {
  return typeof ttl === 'number' ? 1 : ttl.scale(t);
}

/** A grant we know of: an acquire that returned ok, or a read/renew that saw the holder. */
export interface Grant {
  /** the lock's (or the semaphore's) name */
  lock: string;
  session: string;
  token: number;
  /** locks: the mode the acquire or renew named (exclusive when none did: a read's holder
   *  is always exclusive); semaphores: exclusive, unused */
  mode: 'exclusive' | 'shared';
  /** semaphores: the permits of the grant (1 for locks) */
  permits: number;
  /** the earliest call that could have seen the grant happen */
  invoke: number;
  /** the earliest completion that proves the grant */
  complete: number;
  op: Op;
}

function push(m: Map<string, number[]>, k: string, t: number): void {
  const a = m.get(k);
  if (a) a.push(t);
  else m.set(k, [t]);
}

/** which ops acquire, release, renew and read grants: locks, semaphores, or elections
 *  (a campaign is an acquire, a resign a release without a token) */
export type GrantKind = 'lock' | 'semaphore' | 'election';
const KIND_FNS: Record<GrantKind, { acquire: Op['f']; release: Op['f']; renew: Op['f'] | null }> = {
  lock: { acquire: 'acquire', release: 'release', renew: 'renew' },
  semaphore: { acquire: 'sem-acquire', release: 'sem-release', renew: null },
  election: { acquire: 'campaign', release: 'resign', renew: null },
};

export function knownGrants(ops: readonly Op[], kind: GrantKind = 'lock'): Grant[] {
  const F = KIND_FNS[kind];
  const m = new Map<string, Grant>();
  // `invoke` is a lower bound of the grant's time: only the acquire/renew that got the
  // token gives one. A read proves the grant had happened by the time the read completed,
  // nothing about when it started (the acquire may have been answered 504 long before),
  // so a grant seen by reads only has no lower bound (-Infinity).
  // An acquire or renew answered with a token need not be the one that got it: a renew,
  // a re-acquire by the holder, or a retry whose Idempotency-Key replays the first answer
  // (docs/api.md) returns a grant made earlier, perhaps by an attempt answered 504. So the
  // lower bound is the earliest acquire of that lock by that session (any outcome but
  // "fail") since the session last released it before this op.
  const releasesOf = new Map<string, number[]>();
  const acquiresOf = new Map<string, number[]>();
  for (const o of ops) {
    if (!o.input.lock) continue;
    if (o.f === F.release && o.type === 'ok' && o.input.session) push(releasesOf, `${o.input.session}#${o.input.lock}`, o.complete);
    const s = o.input.session ?? o.output.session;
    if (o.f === F.acquire && o.type !== 'fail' && s) push(acquiresOf, `${s}#${o.input.lock}`, o.invoke);
  }
  const cycleStart = (lock: string, session: string, before: number): number => {
    const sk = `${session}#${lock}`;
    const cut = maxOf((releasesOf.get(sk) ?? []).filter((t) => t < before));
    return minOf((acquiresOf.get(sk) ?? []).filter((t) => t <= before && t > cut), before);
  };
  const add = (lock: string, session: string, token: number, op: Op, fromRead: boolean, permits = 1): void => {
    const k = `${lock}#${token}`;
    const start = fromRead ? -Infinity : cycleStart(lock, session, op.invoke);
    const mode = op.input.mode ?? 'exclusive';
    const g = m.get(k);
    if (!g) m.set(k, { lock, session, token, mode, permits, invoke: start, complete: op.complete, op });
    else {
      if (!fromRead && op.input.mode !== undefined) g.mode = op.input.mode;
      if (g.session !== session) g.session = `${g.session}|${session}`; // reported below
      if (op.complete < g.complete) {
        g.complete = op.complete;
        g.op = op;
      }
      if (!fromRead) g.invoke = g.invoke === -Infinity ? start : Math.min(g.invoke, start);
    }
  };
  for (const op of ops) {
    if (op.type !== 'ok' || !op.input.lock) continue;
    if (kind === 'election') {
      if (op.f === 'campaign' && op.input.session && op.output.token !== undefined) add(op.input.lock, op.input.session, op.output.token, op, false);
      if (op.f === 'el-read' && op.output.holder && op.output.holder_token !== undefined) add(op.input.lock, op.output.holder, op.output.holder_token, op, true);
      continue;
    }
    if (kind === 'semaphore') {
      if (op.f === 'sem-acquire' && op.input.session && op.output.token !== undefined) add(op.input.lock, op.input.session, op.output.token, op, false, op.output.permits ?? op.input.permits ?? 1);
      if (op.f === 'sem-read') for (const h of op.output.holders ?? []) add(op.input.lock, h.session, h.token, op, true, h.permits);
      continue;
    }
    if ((op.f === F.acquire || op.f === F.renew) && op.input.session && op.output.token !== undefined) add(op.input.lock, op.input.session, op.output.token, op, false);
    if (op.f === 'read' && op.output.holder && op.output.holder_token !== undefined) add(op.input.lock, op.output.holder, op.output.holder_token, op, true);
  }
  return [...m.values()];
}

// ---- 2. lease safety ------------------------------------------------------------------

/**
 * No lock is granted to another session while the holder's safe window is open: from the
 * SEND time of any acknowledged acquire/renew/keepalive of the holder's session plus the
 * TTL (the contract's "never early"), unless the holder released the lock (or closed its
 * session) before. A grant to s2 is proven by the time its acquire returned, so the check
 * is: s2's grant completed before s1's window closed, and s1 had not started to let go.
 */
export function checkLeaseSafety(ops: readonly Op[], ttl: Ttl): string[] {
  const violations: string[] = [];
  const win = grantWindows(ops, ttl);
  // a grant is proven by its acquire's answer or by an earlier read or renew that saw it
  const grants = knownGrants(ops);
  const byLock = new Map<string, Grant[]>();
  for (const g of grants) byLock.set(g.lock, [...(byLock.get(g.lock) ?? []), g]);
  for (const [lock, gs] of byLock) {
    gs.sort((a, b) => a.token - b.token);
    for (let i = 0; i < gs.length; i++) {
      const g1 = gs[i]!;
      const w = win.safeUntil(g1.session);
      if (!w) continue;
      const end = win.end(g1);
      for (let j = i + 1; j < gs.length; j++) {
        const g2 = gs[j]!;
        if (g2.session === g1.session) continue;
        if (g2.complete < end) {
          violations.push(
            `lease: ${lock} granted to ${g2.session.slice(0, 8)} (token ${g2.token}) by t=${g2.complete.toFixed(1)} while ${g1.session.slice(0, 8)} (token ${g1.token}) was safe until ${w.t.toFixed(1)} ` +
              `(acknowledged ${w.op.f} sent at ${w.op.invoke.toFixed(1)}) and had not released it, nor been revoked or reached a max hold${end < w.t ? ` before ${end.toFixed(1)}` : ''}\n    ${describeOp(g1.op)}${w.op === g1.op ? '' : `\n    ${describeOp(w.op)}`}\n    ${describeOp(g2.op)}`,
          );
        }
        break; // only the next grant after g1 matters; later ones follow from it
      }
    }
  }
  return violations;
}

export interface GrantWindows {
  /** the session's lease is safe until `t`: an acknowledged op of it sent at t − TTL */
  safeUntil(session: string): { t: number; op: Op } | undefined;
  /** when the holder of `g` started to let go of it (Infinity: never seen) */
  releasedAt(g: Grant): number;
  /** the earliest moment the service may end `g` by itself: its acquire's send time plus
   *  max_hold_ms (log time never runs faster than real time, docs/contract.md §4), or the
   *  send of a revocation that can have hit it (Infinity: neither) */
  endedBy(g: Grant): number;
  /** the end of g's safe window: min(safeUntil, releasedAt, endedBy); −Infinity without a lease */
  end(g: Grant): number;
}

/**
 * How long each grant is known to be held: from its proof (the acquire's answer) until its
 * session's lease may lapse — the SEND time of any acknowledged acquire/renew/keepalive of
 * the session (or semaphore acquire) plus the TTL (the contract's "never early") — or
 * until the holder started to let go: a release of that token, the session's close, or a
 * release without a token sent after the acquire that can have produced the grant started
 * (a client cleaning up after an acquire it gave up on lets go of whatever grant of the
 * name that acquire got). For semaphores every release is tokenless.
 */
export function grantWindows(ops: readonly Op[], ttl: Ttl, kind: GrantKind = 'lock'): GrantWindows {
  const F = KIND_FNS[kind];
  const safe = new Map<string, { t: number; op: Op }>();
  for (const op of ops) {
    if (op.type !== 'ok' || !op.input.session) continue;
    if (op.f !== 'acquire' && op.f !== 'renew' && op.f !== 'keepalive' && op.f !== 'sem-acquire' && op.f !== 'campaign') continue;
    const until = op.invoke + ttlAt(ttl, op.invoke);
    const cur = safe.get(op.input.session);
    if (!cur || until > cur.t) safe.set(op.input.session, { t: until, op });
  }
  // when each (session, lock, token) started to let go: release of that token, or session
  // close; or a release without a token (see the comment above)
  const letGo = new Map<string, number>();
  const closeAt = new Map<string, number>();
  const tokenless = new Map<string, Op[]>();
  const acquiresOf = new Map<string, Op[]>();
  for (const op of ops) {
    if (!op.input.session) continue;
    if (op.f === F.release && op.input.lock && (op.input.token === undefined || kind !== 'lock')) {
      const k = `${op.input.session}#${op.input.lock}`;
      tokenless.set(k, [...(tokenless.get(k) ?? []), op]);
    }
    if (op.f === F.acquire && op.input.lock && op.type !== 'fail') {
      const k = `${op.input.session}#${op.input.lock}`;
      acquiresOf.set(k, [...(acquiresOf.get(k) ?? []), op]);
    }
    if (op.f === F.release && op.input.lock && op.input.token !== undefined && kind === 'lock') {
      const k = `${op.input.session}#${op.input.lock}#${op.input.token}`;
      letGo.set(k, Math.min(letGo.get(k) ?? Infinity, op.invoke));
    }
    if (op.f === 'close') closeAt.set(op.input.session, Math.min(closeAt.get(op.input.session) ?? Infinity, op.invoke));
  }
  const releasedAt = (g: Grant): number => {
    // A tokenless release lets go of g only if it was sent after the acquire that can
    // have produced g started: g's own acquire, or for a grant only reads saw, the last
    // acquire of the name by that session (not answered "failed") sent before the read
    // completed.
    const sk = `${g.session}#${g.lock}`;
    const from = Number.isFinite(g.invoke) ? g.invoke : maxOf((acquiresOf.get(sk) ?? []).filter((a) => a.invoke < g.complete).map((a) => a.invoke));
    const any = minOf((tokenless.get(sk) ?? []).filter((r) => r.invoke >= from).map((r) => r.invoke));
    return Math.min(letGo.get(`${g.session}#${g.lock}#${g.token}`) ?? Infinity, closeAt.get(g.session) ?? Infinity, any);
  };
  // a grant the service ends by itself: a max hold, a revocation (the nemesis's `revoke`)
  const acquires = ops.filter((o) => o.f === F.acquire && o.input.lock !== undefined && o.input.session !== undefined);
  const target = kind === 'semaphore' ? 'semaphore' : 'lock';
  const revokes = ops.filter((o) => o.f === 'revoke' && o.input.lock !== undefined && (o.input.target ?? 'lock') === target);
  /** the max hold of the acquire that made g: its own, or for a grant only reads saw, the
   *  last acquire of the name by the session sent before the read answered */
  const maxHoldEnd = (g: Grant): number => {
    const own = acquires.find((c) => c.type === 'ok' && c.output.token === g.token && c.input.session === g.session && c.input.lock === g.lock);
    const c = own ?? acquires.filter((x) => x.input.session === g.session && x.input.lock === g.lock && x.type !== 'fail' && x.invoke < g.complete).at(-1);
    if (!c || c.input.max_hold_ms === undefined) return Infinity;
    return c.invoke + c.input.max_hold_ms * scaleAt(ttl, c.invoke);
  };
  /** the earliest send of a revocation that can have taken g away */
  const revokedFrom = (g: Grant): number => {
    let t = Infinity;
    for (const r of revokes) {
      if (r.type === 'fail' || r.input.lock !== g.lock) continue;
      if (r.input.session !== undefined && r.input.session !== g.session) continue;
      if (r.complete < g.invoke) continue; // answered before the acquire was sent: it cannot have hit this one
      t = Math.min(t, r.invoke);
    }
    return t;
  };
  const endedBy = (g: Grant): number => Math.min(maxHoldEnd(g), revokedFrom(g));
  return {
    safeUntil: (session) => safe.get(session),
    releasedAt,
    endedBy,
    end: (g) => Math.min(safe.get(g.session)?.t ?? -Infinity, releasedAt(g), endedBy(g)),
  };
}

// ---- 3. fencing ------------------------------------------------------------------------

/** Tokens strictly increase in real-time grant order, across all locks and semaphores
 *  (one global sequence: docs/contract.md §4). */
export function checkTokenOrder(ops: readonly Op[]): string[] {
  const violations: string[] = [];
  const sems = knownGrants(ops, 'semaphore');
  // an election's leadership is a grant of the lock of its name (its own names: je-…)
  const grants = [...knownGrants(ops), ...knownGrants(ops, 'election'), ...sems];
  for (const g of grants) if (g.session.includes('|')) violations.push(`fencing: token ${g.token} of ${g.lock} was granted to two sessions (${g.session})`);
  // one token is one grant: not a lock's and a semaphore's
  const lockTokens = new Map(grants.filter((g) => !sems.includes(g)).map((g) => [g.token, g]));
  for (const g of sems) {
    const l = lockTokens.get(g.token);
    if (l) violations.push(`fencing: token ${g.token} was granted for lock ${l.lock} and for semaphore ${g.lock}\n    ${describeOp(l.op)}\n    ${describeOp(g.op)}`);
  }
  // When g was made: after its earliest acquire was invoked — unless something showed g
  // before that (a read, or an earlier answer): then that acquire found g already made (a
  // same-session acquire answers the grant it holds, e.g. one an acquire given up on got
  // later: docs/api.md "Release"), and g's start is not known.
  const from = (g: Grant): number => (g.complete < g.invoke ? -Infinity : g.invoke);
  const byInvoke = [...grants].sort((a, b) => from(a) - from(b));
  const byComplete = [...grants].sort((a, b) => a.complete - b.complete);
  let k = 0;
  let best: Grant | null = null;
  for (const g of byInvoke) {
    // every grant that completed before g was invoked came before it in real time
    while (k < byComplete.length && byComplete[k]!.complete < from(g)) {
      const c = byComplete[k++]!;
      if (!best || c.token > best.token) best = c;
    }
    if (best && g.token <= best.token && !(g.lock === best.lock && g.token === best.token)) {
      violations.push(`fencing: token ${g.token} (${g.lock}) was granted after token ${best.token} (${best.lock}) had been granted\n    ${describeOp(best.op)}\n    ${describeOp(g.op)}`);
    }
  }
  return violations;
}

export interface ResourceReport {
  reads: number;
  writes: number;
  rejected: number;
  lostUpdates: number;
  staleAccepted: number;
  violations: string[];
}

/** The fenced register: never accepts a token below one it has seen; lost updates counted. */
export function checkResource(log: readonly ResourceLogEntry[], fencing: boolean): ResourceReport {
  const r: ResourceReport = { reads: 0, writes: 0, rejected: 0, lostUpdates: 0, staleAccepted: 0, violations: [] };
  const highest = new Map<string, number>();
  for (const e of [...log].sort((a, b) => a.seq - b.seq)) {
    if (e.op === 'read') r.reads++;
    else r.writes++;
    if (!e.accepted) {
      r.rejected++;
      continue;
    }
    const h = highest.get(e.lock) ?? 0;
    if (e.token < h) {
      r.staleAccepted++;
      if (fencing) r.violations.push(`fencing: the resource accepted token ${e.token} on ${e.lock} after token ${h} (entry ${e.seq})`);
    }
    highest.set(e.lock, Math.max(h, e.token));
    if (e.op === 'write' && e.lost) {
      r.lostUpdates++;
      if (fencing) r.violations.push(`lost update on ${e.lock}: write of ${e.value} with token ${e.token} was based on ${e.read}, but the register held ${e.before} (entry ${e.seq})`);
    }
  }
  return r;
}

// ---- 3b. no grant left behind ------------------------------------------------------------

/**
 * No lock stays held by a session whose client was told that every acquire of it failed
 * (docs/client.md "An acquire that fails never leaves a grant behind"). Evidence that
 * session s held lock L: a read of L naming s as holder, a `lock_held` answer naming s, or
 * a close of s whose `released` lists L. For each piece of evidence, the acquires of L by
 * s invoked before the evidence completed decide:
 * - all answered `fail` (a definite "not applied": lock_held, 503, 4xx): the evidence is
 *   a violation — the server answered "no" and granted anyway (e.g. a queued acquire
 *   answered 503 whose committed wait a later leader granted);
 * - all `fail` or given up (info `gave-up`) and each given-up one followed by a release
 *   of L in s (the client's cleanup): allowed up to s's next close after the give-up (a
 *   copy of the acquire the cluster applies after the cleanup can grant it until then),
 *   a violation after that close completed;
 * - an acquire answered `session_not_found` may have granted just before the session died
 *   (expiry after the grant, before the answer): that grant ends with the session, so the
 *   evidence may come until that answer, a violation after it;
 * - any other (an `ok` acquire, an info one the client did not clean up): no claim.
 */
export function checkNoOrphanGrants(ops: readonly Op[]): string[] {
  const violations: string[] = [];
  const acquires = new Map<string, Op[]>();
  const cleanups = new Map<string, Op[]>();
  const closes = new Map<string, Op[]>();
  const push = <T>(m: Map<string, T[]>, k: string, v: T): void => void m.set(k, [...(m.get(k) ?? []), v]);
  for (const op of ops) {
    const s = op.input.session;
    if (!s) continue;
    if (op.f === 'acquire' && op.input.lock) push(acquires, `${s}#${op.input.lock}`, op);
    if (op.f === 'release' && op.input.lock && op.input.token === undefined && op.type !== 'info') push(cleanups, `${s}#${op.input.lock}`, op);
    if (op.f === 'close' && op.type === 'ok') push(closes, s, op);
  }
  const evidence: { session: string; lock: string; op: Op }[] = [];
  for (const op of ops) {
    if (op.type === 'ok' && op.f === 'read' && op.input.lock && op.output.holder) evidence.push({ session: op.output.holder, lock: op.input.lock, op });
    if (op.type === 'fail' && op.f === 'acquire' && op.output.code === 'lock_held' && op.input.lock && op.output.holder) evidence.push({ session: op.output.holder, lock: op.input.lock, op });
    if (op.type === 'ok' && op.f === 'close' && op.input.session) for (const l of op.output.released ?? []) evidence.push({ session: op.input.session, lock: l, op });
  }
  const seen = new Set<string>();
  for (const e of evidence) {
    const k = `${e.session}#${e.lock}`;
    if (seen.has(k)) continue; // one report per session and lock
    const before = (acquires.get(k) ?? []).filter((a) => a.invoke < e.op.complete && a !== e.op);
    if (before.length === 0) continue;
    let graceEnds = -Infinity; // the evidence must come before this (the give-ups' next close)
    let claim = true;
    let diedWithIt = false;
    for (const a of before) {
      if (a.type === 'fail' && a.output.code === 'session_not_found') {
        // It may have granted just before the session died (the lock model treats this
        // answer as indeterminate: grant, expiry, then the answer). The session's end
        // released that grant, so it may be seen until this answer proved the session dead.
        graceEnds = Math.max(graceEnds, a.complete);
        diedWithIt = true;
        continue;
      }
      if (a.type === 'fail') continue;
      const gaveUp = a.type === 'info' && a.output.code === 'gave-up';
      const cleaned = gaveUp && (cleanups.get(k) ?? []).some((r) => r.invoke >= a.completedAt);
      if (!cleaned) {
        claim = false;
        break;
      }
      const close = (closes.get(e.session) ?? []).find((c) => c.invoke >= a.completedAt);
      graceEnds = Math.max(graceEnds, close ? close.complete : Infinity);
    }
    if (!claim) continue;
    const allFailed = graceEnds === -Infinity;
    if (!allFailed && e.op.invoke < graceEnds) continue;
    seen.add(k);
    const why = allFailed
      ? 'every acquire of it by that session was answered as failed'
      : diedWithIt
        ? 'every acquire of it by that session failed, was given up and cleaned up, or found the session gone, and the session has ended since'
        : 'its client gave up on every acquire of it, released it, and the session was closed since';
    violations.push(`orphan grant: ${e.lock} held by ${e.session.slice(0, 8)} although ${why}\n    ${describeOp(e.op)}\n${before.map((a) => `    ${describeOp(a)}`).join('\n')}`);
  }
  return violations;
}

// ---- 4. durability ---------------------------------------------------------------------

/**
 * After a crash of every node (or of a majority that lost its unsynced writes), nothing
 * acknowledged before the crash is gone: the first linearizable read of each lock after
 * the restart shows no token below the highest grant acknowledged before the crash, and
 * no lock whose release was acknowledged is back with that token; no grant after the
 * crash reuses or goes below a token acknowledged before it.
 */
export function checkDurability(ops: readonly Op[], crashes: readonly FaultRecord[]): string[] {
  const violations: string[] = [];
  for (const c of crashes) {
    const before = ops.filter((o) => o.type === 'ok' && o.complete < c.start);
    const maxToken = new Map<string, number>();
    let globalMax = 0;
    const released = new Set<string>();
    for (const o of before) {
      if (o.f === 'acquire' && o.input.lock && o.output.token !== undefined) {
        maxToken.set(o.input.lock, Math.max(maxToken.get(o.input.lock) ?? 0, o.output.token));
        globalMax = Math.max(globalMax, o.output.token);
      }
      if (o.f === 'release' && o.input.lock && o.input.token !== undefined) released.add(`${o.input.lock}#${o.input.token}`);
    }
    const seen = new Set<string>();
    for (const o of ops) {
      if (o.type !== 'ok' || o.invoke < c.end || !o.input.lock) continue;
      if (o.f === 'read' && !seen.has(o.input.lock)) {
        seen.add(o.input.lock);
        const want = maxToken.get(o.input.lock) ?? 0;
        if (o.output.held && o.output.holder_token !== undefined && o.output.holder_token < want) {
          violations.push(`durability (${c.variant} at ${c.start.toFixed(0)}): ${o.input.lock} is held with token ${o.output.holder_token} after the restart, below token ${want} acknowledged before the crash\n    ${describeOp(o)}`);
        }
        if (o.output.held && released.has(`${o.input.lock}#${o.output.holder_token}`)) {
          violations.push(`durability (${c.variant} at ${c.start.toFixed(0)}): ${o.input.lock} is held again with token ${o.output.holder_token}, whose release was acknowledged before the crash\n    ${describeOp(o)}`);
        }
      }
      if (o.f === 'acquire' && o.output.token !== undefined && o.output.token <= globalMax) {
        const sameGrant = before.some((b) => b.f === 'acquire' && b.input.lock === o.input.lock && b.output.token === o.output.token && b.input.session === o.input.session);
        if (!sameGrant) violations.push(`durability (${c.variant} at ${c.start.toFixed(0)}): new grant with token ${o.output.token} after the restart, not above ${globalMax} acknowledged before the crash\n    ${describeOp(o)}`);
      }
    }
  }
  return violations;
}

// ---- 5. liveness -----------------------------------------------------------------------

export interface Recovery {
  variant: string;
  healedAt: number;
  /** ms from the heal to the next successful acquire; null if none came */
  recoveryMs: number | null;
}

export function recoveries(ops: readonly Op[], faults: readonly FaultRecord[], runEnd: number): Recovery[] {
  const grants = ops.filter((o) => (o.f === 'acquire' || o.f === 'sem-acquire' || o.f === 'campaign') && o.type === 'ok').map((o) => o.complete).sort((a, b) => a - b);
  return faults.map((f) => {
    const next = grants.find((t) => t >= f.end);
    return { variant: f.variant, healedAt: f.end, recoveryMs: next === undefined || next > runEnd ? null : next - f.end };
  });
}

export function checkLiveness(rs: readonly Recovery[], boundMs: number): string[] {
  return rs
    .filter((r) => r.recoveryMs === null || r.recoveryMs > boundMs)
    .map((r) => `liveness: after healing ${r.variant} at t=${r.healedAt.toFixed(0)} the next successful acquire took ${r.recoveryMs === null ? 'forever (none before the end)' : `${r.recoveryMs.toFixed(0)} ms`}, above the bound of ${boundMs} ms`);
}

// ---- 6. nodes ---------------------------------------------------------------------------

export function checkMemory(rss: ReadonlyMap<string, [number, number][]>, limitBytes: number): { violations: string[]; maxMb: Record<string, number>; trendMb: Record<string, [number, number]> } {
  const violations: string[] = [];
  const maxMb: Record<string, number> = {};
  const trendMb: Record<string, [number, number]> = {};
  const mb = (xs: [number, number][]): number => Math.round(xs.reduce((m, [, b]) => Math.max(m, b), 0) / 1048576);
  for (const [id, samples] of rss) {
    if (samples.length) {
      const t0 = samples[0]![0];
      const t1 = samples[samples.length - 1]![0];
      trendMb[id] = [mb(samples.filter(([t]) => t <= t0 + 60_000)), mb(samples.filter(([t]) => t >= t1 - 60_000))];
    }
    const max = samples.reduce((m, [, b]) => Math.max(m, b), 0);
    maxMb[id] = Math.round(max / 1048576);
    if (max > limitBytes) violations.push(`memory: ${id} reached ${maxMb[id]} MB resident, above the bound of ${Math.round(limitBytes / 1048576)} MB`);
  }
  return { violations, maxMb, trendMb };
}

// ---- 7. leader stability ---------------------------------------------------------------

/** A node took office: from its log's `role changed` line with role `leader`. */
export interface LeaderElection {
  /** run time (ms since the run started, the history's clock) */
  t: number;
  node: string;
  term: number;
}

/**
 * No leader change without a fault. A fault explains every election from its start until
 * `graceMs` after its heal: a partition or a pause deposes the leader while it lasts, and a
 * restarted cluster needs up to one election timeout before its first campaign plus one
 * more for a split vote (graceMs = 2 × the maximum election timeout). The first election of
 * the run is the cluster forming, not a change. Anything else is a needless election: the
 * leader went silent (a blocked loop, a slow disk, a link in backoff) or a node disrupted a
 * healthy leader — each costs clients an election and every session's TTL restarting.
 */
export function checkLeaderChanges(elections: readonly LeaderElection[], faults: readonly FaultRecord[], graceMs: number, runEnd: number): string[] {
  const byTerm = new Map<number, LeaderElection>();
  for (const e of elections) {
    const cur = byTerm.get(e.term);
    if (!cur || e.t < cur.t) byTerm.set(e.term, e);
  }
  const sorted = [...byTerm.values()].sort((a, b) => a.term - b.term);
  const violations: string[] = [];
  for (const e of sorted.slice(1)) {
    if (e.t > runEnd) continue; // the final restart and the clients' goodbyes are not the workload
    const explained = faults.some((f) => e.t >= f.start && e.t <= f.end + graceMs);
    if (explained) continue;
    const before = faults.filter((f) => f.end <= e.t).at(-1);
    const last = before ? `the last fault (${before.variant}) healed at t=${before.end.toFixed(0)}, ${(e.t - before.end).toFixed(0)} ms before` : 'no fault had happened yet';
    violations.push(`leader change without a fault: ${e.node} became leader of term ${e.term} at t=${e.t.toFixed(0)}; ${last} (grace ${graceMs} ms after a heal)`);
  }
  return violations;
}

/** The elections in a node's JSON log (pino lines; `time` is wall-clock ms), on the run's
 *  clock: `wallAtZero` is Date.now() when the run's clock read 0. */
export function electionsInLog(node: string, text: string, wallAtZero: number): LeaderElection[] {
  const out: LeaderElection[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"role changed"')) continue;
    try {
      const j = JSON.parse(line) as { time?: unknown; role?: unknown; term?: unknown; msg?: unknown };
      if (j.msg !== 'role changed' || j.role !== 'leader' || typeof j.time !== 'number' || typeof j.term !== 'number') continue;
      out.push({ t: j.time - wallAtZero, node, term: j.term });
    } catch {
      /* a line cut short by kill -9 */
    }
  }
  return out;
}

// ---- 7b. followers kept up to date ----------------------------------------------------

/** the leader's view at time t: each member's lag (entries behind the leader's last index) */
export interface LagSample {
  t: number;
  lags: Record<string, number>;
}

/**
 * No member stays far behind the leader while nothing explains it: a member whose lag is
 * at least `minLag` entries in every sample over `minMs` or more, none of it during a
 * fault or within `graceMs` after one healed, was left behind — the leader stopped feeding
 * it (a replication stall) while it, knowing only what the leader tells it, may even say
 * it is ready. A slow but working follower catches up within a second or two.
 */
export function checkFollowersBehind(samples: readonly LagSample[], faults: readonly FaultRecord[], o: { minLag: number; minMs: number; graceMs: number }): { violations: string[]; worstMs: Record<string, number> } {
  const quiet = (t: number): boolean => !faults.some((f) => t >= f.start && t <= f.end + o.graceMs);
  const violations: string[] = [];
  const worstMs: Record<string, number> = {};
  const ids = new Set(samples.flatMap((x) => Object.keys(x.lags)));
  for (const id of ids) {
    let from: LagSample | null = null;
    let reported = false;
    for (const x of samples) {
      const lag = x.lags[id];
      if (lag === undefined || lag < o.minLag || !quiet(x.t)) {
        from = null;
        continue;
      }
      from ??= x;
      const ms = x.t - from.t;
      worstMs[id] = Math.max(worstMs[id] ?? 0, ms);
      if (ms >= o.minMs && !reported) {
        reported = true;
        violations.push(`follower behind: ${id} was ${from.lags[id]}–${lag} entries behind the leader's log from t=${from.t.toFixed(0)} to t=${x.t.toFixed(0)} (${(ms / 1000).toFixed(1)} s) with no fault active or just healed`);
      }
    }
  }
  return { violations, worstMs };
}

