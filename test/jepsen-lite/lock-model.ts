// The sequential model of ONE lock, for the WGL checker, and the per-lock partitioning of a
// history (P-compositionality: a history is linearizable iff each lock's sub-history is,
// since the locks share no state the clients can observe except the global token counter,
// which the fencing checker covers).
//
// State: who holds the lock, the token of the latest grant, and the sessions known to have
// ended. A session can end without any client operation on this lock (TTL expiry), so
// every session gets a synthetic `expire` operation whose window runs from the call of its
// last successful operation (it was alive then) to the first answer that proved it dead
// (session_not_found, or its own close); Infinity when nobody ever saw it die. The model
// lets expire happen anywhere in that window; the lease checker holds the timing to the TTL.
import type { Op, OpValue } from './history.js';
import { checkOperations, type CheckResult, type Model, type Operation } from './wgl.js';

export interface LockState {
  /** session index, -1 = free */
  holder: number;
  /** token of the latest grant of this lock (0 = never granted) */
  token: number;
  /** false after an indeterminate grant: the token is some value above `token` */
  exact: boolean;
  /** sessions that ended, sorted */
  dead: readonly number[];
}

export type LockInput =
  | { f: 'acquire' | 'release' | 'renew' | 'close' | 'expire'; s: number; token?: number }
  | { f: 'read' }
  | { f: 'check'; token: number };

export interface LockOutput {
  type: 'ok' | 'fail';
  code?: string;
  token?: number;
  /** read / lock_held answer: holder index (-1 none) and its token */
  holder?: number;
  holderToken?: number;
  current?: boolean;
  /** close ok: whether this lock was among the locks the session's end released */
  releasedThis?: boolean;
}

const isDead = (st: LockState, s: number): boolean => st.dead.includes(s);

function kill(st: LockState, s: number): LockState {
  const dead = isDead(st, s) ? st.dead : [...st.dead, s].sort((a, b) => a - b);
  return { ...st, holder: st.holder === s ? -1 : st.holder, dead };
}

/** does the state's token agree with an observed token t of the current grant? */
function tokenFits(st: LockState, t: number): boolean {
  return st.exact ? st.token === t : t > st.token;
}

function stepAcquire(st: LockState, s: number, out: LockOutput | undefined): LockState[] {
  if (out === undefined) {
    // indeterminate: it failed, or it granted (with a token we never saw)
    if (isDead(st, s) || st.holder !== -1) return [st];
    return [st, { ...st, holder: s, exact: false }];
  }
  if (out.type === 'ok') {
    const t = out.token!;
    if (isDead(st, s)) return [];
    if (st.holder === -1 && t > st.token) return [{ ...st, holder: s, token: t, exact: true }];
    if (st.holder === s && tokenFits(st, t)) return [{ ...st, token: t, exact: true }];
    return [];
  }
  if (out.code === 'lock_held') {
    if (out.holder === undefined || out.holder === -1) return st.holder === -1 ? [st] : []; // lock-delay: no holder
    return st.holder === out.holder && st.holder !== s && tokenFits(st, out.holderToken!) ? [{ ...st, token: out.holderToken!, exact: true }] : [];
  }
  return [st]; // unavailable, too_many_requests…: definite "nothing applied"
}

function stepRelease(st: LockState, s: number, token: number | undefined, out: LockOutput | undefined): LockState[] {
  const mine = st.holder === s && (token === undefined || tokenFits(st, token));
  if (out === undefined) return mine ? [st, { ...st, holder: -1 }] : [st];
  if (out.type === 'ok') return mine ? [{ ...st, holder: -1 }] : [];
  if (out.code === 'not_holder') return mine ? [] : [st];
  if (out.code === 'session_not_found') return isDead(st, s) ? [st] : [];
  return [st];
}

function stepRenew(st: LockState, s: number, out: LockOutput): LockState[] {
  if (out.type === 'ok') return st.holder === s && !isDead(st, s) && tokenFits(st, out.token!) ? [{ ...st, token: out.token!, exact: true }] : [];
  if (out.code === 'not_holder') return st.holder !== s ? [st] : [];
  if (out.code === 'session_not_found') return isDead(st, s) ? [st] : [];
  return [st];
}

function stepRead(st: LockState, out: LockOutput): LockState[] {
  const h = out.holder ?? -1;
  if (h === -1) return st.holder === -1 ? [st] : [];
  return st.holder === h && tokenFits(st, out.holderToken!) ? [{ ...st, token: out.holderToken!, exact: true }] : [];
}

function stepCheck(st: LockState, token: number, out: LockOutput): LockState[] {
  if (out.current) return st.holder !== -1 && tokenFits(st, token) ? [{ ...st, token, exact: true }] : [];
  // false: free, or held under another token (an inexact token may or may not equal it)
  return st.holder === -1 || !st.exact || st.token !== token ? [st] : [];
}

export const lockModel: Model<LockState, LockInput, LockOutput> = {
  init: () => ({ holder: -1, token: 0, exact: true, dead: [] }),
  key: (st) => `${st.holder},${st.token},${st.exact ? 1 : 0},${st.dead.join('.')}`,
  // Search hints (see wgl.ts). An indeterminate acquire, release or close may never have
  // been applied: that no-op can wait for the end of its window. An expiry of a session
  // that does not hold the lock only marks it dead, which nothing needs before the first
  // answer that proved it dead, and that answer's return is where the window ends; so it
  // is tried early only while the session holds the lock (the expiry frees it).
  deferrable: (input, out) => out === undefined,
  defer(st, input, _out, outcomes) {
    if (input.f === 'expire') return { late: kill(st, input.s), early: st.holder === input.s ? [kill(st, input.s)] : [] };
    const k = lockModel.key(st);
    return { late: st, early: outcomes.filter((x) => lockModel.key(x) !== k) };
  },
  step(st, input, out) {
    switch (input.f) {
      case 'acquire':
        return stepAcquire(st, input.s, out);
      case 'release':
        return stepRelease(st, input.s, input.token, out);
      case 'renew':
        return out === undefined ? [st] : stepRenew(st, input.s, out);
      case 'read':
        return out === undefined || out.type === 'fail' ? [st] : stepRead(st, out);
      case 'check':
        return out === undefined || out.type === 'fail' ? [st] : stepCheck(st, input.token, out);
      case 'close':
        if (out === undefined) return [st, kill(st, input.s)];
        // a close answered ok ended a live session (an expired one answers
        // session_not_found), and its `released` names exactly the locks it held then
        if (out.type === 'ok') return !isDead(st, input.s) && (st.holder === input.s) === (out.releasedThis ?? st.holder === input.s) ? [kill(st, input.s)] : [];
        if (out.code === 'session_not_found') return isDead(st, input.s) ? [st] : [];
        return [st];
      case 'expire':
        return [kill(st, input.s)];
    }
  },
};

// ---------------------------------------------------------------------------------------
// Partitioning a history per lock

export interface LockPartition {
  lock: string;
  /** session index → session id */
  sessions: string[];
  ops: Operation<LockInput, LockOutput>[];
  /** the history op behind each partition op (undefined for synthetic expire ops) */
  source: (Op | undefined)[];
}

const LOCK_FNS = new Set(['acquire', 'release', 'renew', 'read', 'check']);
/** answers that prove the session is alive at the op's linearization point */
const aliveProof = (op: Op): boolean => op.type === 'ok' && ['acquire', 'release', 'renew', 'keepalive', 'close'].includes(op.f);
const deathProof = (op: Op): boolean => (op.type === 'fail' && op.output.code === 'session_not_found') || (op.type === 'ok' && op.f === 'close');

/** The window in which each session may have ended: [last call proving it alive, first answer proving it dead]. */
export function sessionLifetimes(ops: readonly Op[]): Map<string, { lastAlive: number; deadBy: number }> {
  const m = new Map<string, { lastAlive: number; deadBy: number }>();
  for (const op of ops) {
    const s = op.input.session ?? (op.f === 'open' && op.type === 'ok' ? op.output.session : undefined);
    if (!s) continue;
    const e = m.get(s) ?? { lastAlive: op.invoke, deadBy: Infinity };
    if (aliveProof(op) || op.f === 'open') e.lastAlive = Math.max(e.lastAlive, op.invoke);
    if (deathProof(op)) e.deadBy = Math.min(e.deadBy, op.complete);
    m.set(s, e);
  }
  return m;
}

function toOutput(op: Op, idx: (s: string | undefined) => number): LockOutput | undefined {
  if (op.type === 'info') return undefined;
  const v: OpValue = op.output;
  const out: LockOutput = { type: op.type };
  if (v.code !== undefined) out.code = v.code;
  if (v.token !== undefined) out.token = v.token;
  if (v.holder !== undefined) out.holder = idx(v.holder);
  else if (op.f === 'read' && op.type === 'ok') out.holder = -1;
  if (v.holder_token !== undefined) out.holderToken = v.holder_token;
  if (v.current !== undefined) out.current = v.current;
  return out;
}

export function partitionByLock(ops: readonly Op[]): LockPartition[] {
  const lives = sessionLifetimes(ops);
  const byLock = new Map<string, LockPartition>();
  const sessionIdx = new Map<string, Map<string, number>>();
  const part = (lock: string): LockPartition => {
    let p = byLock.get(lock);
    if (!p) {
      p = { lock, sessions: [], ops: [], source: [] };
      byLock.set(lock, p);
      sessionIdx.set(lock, new Map());
    }
    return p;
  };
  const indexer = (p: LockPartition) => (s: string | undefined): number => {
    if (s === undefined) return -1;
    const m = sessionIdx.get(p.lock)!;
    let i = m.get(s);
    if (i === undefined) {
      i = p.sessions.length;
      p.sessions.push(s);
      m.set(s, i);
    }
    return i;
  };
  for (const op of ops) {
    if (!LOCK_FNS.has(op.f) || !op.input.lock) continue;
    // an unknown read changes nothing: drop it (as Jepsen does)
    if (op.type === 'info' && (op.f === 'read' || op.f === 'check' || op.f === 'renew')) continue;
    const p = part(op.input.lock);
    const idx = indexer(p);
    let out = toOutput(op, idx);
    let ret = op.complete;
    const s = idx(op.input.session);
    // An acquire answered session_not_found may still have granted first (the grant, then
    // the expiry, then an idempotent retry that found the session gone): indeterminate.
    if (op.f === 'acquire' && out?.type === 'fail' && out.code === 'session_not_found') {
      out = undefined;
    }
    // An indeterminate op of a session cannot take effect after the session is known dead.
    if (out === undefined && op.input.session) ret = Math.max(op.invoke, lives.get(op.input.session)?.deadBy ?? Infinity);
    const input: LockInput =
      op.f === 'read' ? { f: 'read' } : op.f === 'check' ? { f: 'check', token: op.input.token! } : { f: op.f as 'acquire' | 'release' | 'renew', s, ...(op.input.token !== undefined ? { token: op.input.token } : {}) };
    p.ops.push({ input, output: out, call: op.invoke, ret });
    p.source.push(op);
  }
  // session ends: its own close (when it touched this lock) and the synthetic expiry
  for (const p of byLock.values()) {
    const idx = indexer(p);
    const members = new Set(p.sessions);
    for (const op of ops) {
      if (op.f !== 'close' || !op.input.session || !members.has(op.input.session)) continue;
      const out = toOutput(op, idx);
      if (out?.type === 'ok' && Array.isArray(op.output.released)) out.releasedThis = op.output.released.includes(p.lock);
      p.ops.push({ input: { f: 'close', s: idx(op.input.session) }, output: out, call: op.invoke, ret: op.complete });
      p.source.push(op);
    }
    for (const s of members) {
      const life = lives.get(s);
      if (!life) continue; // a session seen only as a holder in an answer: never alive for us
      // an alive proof after a death proof is a violation: let the model see it
      p.ops.push({ input: { f: 'expire', s: idx(s) }, output: undefined, call: Math.min(life.lastAlive, life.deadBy), ret: life.deadBy });
      p.source.push(undefined);
    }
  }
  for (const p of byLock.values()) dropUngrantedAcquires(p);
  return [...byLock.values()].sort((a, b) => a.lock.localeCompare(b.lock));
}

/**
 * Drop the indeterminate acquires that a later close of the same session proves were never
 * granted. A close answered ok ended a live session and lists the locks it held; if it does
 * not list this lock, a grant by the acquire would have had to end before the close, and
 * only the session's own release ends a hold while the session lives. So when the close
 * leaves the lock out and no release by the session could come after the acquire, the
 * acquire did nothing. The model would find the same by search, but only after trying the
 * grant at every point of a window that runs to the close, once per combination of the
 * other pending operations: the typical history after a crash (every client's acquire
 * indeterminate, every client closing its suspect session) made that exponential.
 * A server that did grant would still be caught: whatever observed the grant (a read, a
 * lock_held answer) has nothing left to explain it.
 */
function dropUngrantedAcquires(p: LockPartition): void {
  const keep = p.ops.map((o, i) => {
    const a = o.input;
    if (a.f !== 'acquire' || o.output !== undefined) return true;
    const closedWithout = p.ops.some((c) => c.input.f === 'close' && c.input.s === a.s && c.output?.type === 'ok' && c.output.releasedThis === false);
    if (!closedWithout) return true;
    const releaseAfter = p.ops.some((r, j) => j !== i && r.input.f === 'release' && r.input.s === a.s && r.ret >= o.call);
    return releaseAfter;
  });
  p.ops = p.ops.filter((_, i) => keep[i]);
  p.source = p.source.filter((_, i) => keep[i]);
}

export interface LinearizabilityReport {
  valid: boolean | 'unknown';
  perLock: { lock: string; ops: number; result: CheckResult<LockState>['result']; steps: number; detail?: string }[];
}

export function checkLinearizable(ops: readonly Op[], opts: { maxSteps?: number } = {}): LinearizabilityReport {
  const perLock: LinearizabilityReport['perLock'] = [];
  let valid: boolean | 'unknown' = true;
  for (const p of partitionByLock(ops)) {
    const r = checkOperations(lockModel, p.ops, opts);
    const row: LinearizabilityReport['perLock'][number] = { lock: p.lock, ops: p.ops.length, result: r.result, steps: r.steps };
    if (r.result === 'illegal') {
      valid = false;
      row.detail = explain(p, r);
    } else if (r.result === 'unknown') {
      if (valid === true) valid = 'unknown';
      row.detail = `${r.reason}\n${explain(p, r)}`;
    }
    perLock.push(row);
  }
  return { valid, perLock };
}

function explain(p: LockPartition, r: Extract<CheckResult<LockState>, { result: 'illegal' | 'unknown' }>): string {
  const name = (i: number): string => (i < 0 ? 'nobody' : (p.sessions[i] ?? '?').slice(0, 8));
  const describe = (i: number): string => {
    const o = p.ops[i]!;
    const src = p.source[i];
    if (!src) return `expire(${name((o.input as { s: number }).s)}) window [${o.call.toFixed(1)}, ${Number.isFinite(o.ret) ? o.ret.toFixed(1) : '∞'}]`;
    return `${src.id} ${src.f} session=${(src.input.session ?? '').slice(0, 8)} ${JSON.stringify({ ...src.output, holder: src.output.holder?.slice(0, 8) })} ${src.type} [${src.invoke.toFixed(1)}, ${Number.isFinite(src.complete) ? src.complete.toFixed(1) : '∞'}]`;
  };
  const tail = r.deepest.slice(-8).map(describe);
  return [
    `lock ${p.lock}: no linearization; the deepest one placed ${r.deepest.length} of ${p.ops.length} ops, ending in state holder=${name(r.state.holder)} token=${r.state.token}${r.state.exact ? '' : '+'}`,
    `  last ops placed:`,
    ...tail.map((l) => `    ${l}`),
    `  could not place: ${describe(r.stuckOp)}`,
  ].join('\n');
}
