// The grants a history proves and how long each is known to be held: the ground the
// window checkers (lease safety, shared locks, semaphores, elections, token order) stand on.
import type { Op } from './history.js';
import { maxOf, minOf } from '../../support/extrema.js';

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
  /** when an acquire's max hold can end the grant it made or returned, from its invoke: its
   *  own max_hold_ms, and an ok answer's max_hold_ms (the server's word on the grant's
   *  remaining hold, docs/contract.md §4: a re-acquire that returned a grant an earlier
   *  request made keeps that request's max hold, jepsen-lite seed 380155236) */
  const holdEndOf = (c: Op): number => {
    const scale = scaleAt(ttl, c.invoke);
    const asked = c.input.max_hold_ms === undefined ? Infinity : c.invoke + c.input.max_hold_ms * scale;
    const told = c.type === 'ok' && c.output.max_hold_ms !== undefined ? c.invoke + c.output.max_hold_ms * scale : Infinity;
    return Math.min(asked, told);
  };
  /** the earliest a max hold can end g: its own acquire's; for a grant only reads saw, the
   *  earliest of every acquire of the name by the session sent before the read answered
   *  that can have made it (any but an ok answer naming another token): a later request
   *  without a max hold can be in flight while an earlier one's grant, with one, is read */
  const maxHoldEnd = (g: Grant): number => {
    const own = acquires.find((c) => c.type === 'ok' && c.output.token === g.token && c.input.session === g.session && c.input.lock === g.lock);
    if (own) return holdEndOf(own);
    let end = Infinity;
    for (const c of acquires) {
      if (c.input.session !== g.session || c.input.lock !== g.lock || c.invoke >= g.complete) continue;
      if (c.type === 'ok' && c.output.token !== g.token) continue;
      end = Math.min(end, holdEndOf(c));
    }
    return end;
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
